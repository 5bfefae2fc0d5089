#pragma once
// The console's files, embedded at build time by embed_assets.cmake (the generated
// ui_assets_data.cpp in the build dir defines ui_assets()). Read-only, static storage.
#include <span>
#include <string_view>

namespace rc::api::ui {

struct ui_asset {
    std::string_view path;          // below /ui/: "index.html", "js/app.js", "vendor/uPlot.esm.js"
    std::string_view content_type;  // from the extension
    std::string_view body;
    std::string_view etag;          // quoted: "\"<first 16 hex digits of the SHA-256>\""
};

// Sorted by path.
std::span<const ui_asset> ui_assets();

// The asset at `path` (below /ui/), or null.
const ui_asset * find_ui_asset(std::string_view path);

}  // namespace rc::api::ui
