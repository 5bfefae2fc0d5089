#pragma once
// One model's manifest: which blobs make it (in order), how to run it (template, system prompt,
// Ollama-style parameters), what it is (facts from its GGUF header), where it came from, and
// whether it has passed the quarantine check. Stored as JSON at <root>/manifests/<host>/<ns>/<model>/<tag>.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "store/digest.h"
#include "store/timestamps.h"
#include "util/result.h"

namespace rc::store {

enum class layer_kind { model, projector, adapter };
enum class source_kind { hf, create, copy, import };
enum class model_status {
    quarantined,  // stored but not yet checked: not servable
    ready,
    failed,       // the check refused it; status_reason says why
};

std::string_view to_string(layer_kind k);
std::string_view to_string(source_kind k);
std::string_view to_string(model_status s);
std::optional<model_status> parse_model_status(std::string_view s);

struct layer {
    layer_kind kind = layer_kind::model;
    blob_digest digest;
    uint64_t size = 0;
    std::string filename;  // the file's original name (informational; never used as a path here)
};

struct model_source {
    source_kind kind = source_kind::import;
    std::string repo;      // hf: owner/repo; copy: the source model's full name
    std::string revision;  // hf: the commit the files came from
    std::vector<std::string> files;
};

struct manifest {
    static constexpr int schema_version = 1;

    std::string name;           // model_name::full()
    std::vector<layer> layers;  // several "model" layers are one split GGUF, in order
    std::optional<std::string> template_text;
    std::optional<std::string> system;
    nlohmann::ordered_json parameters = nlohmann::ordered_json::object();  // Ollama option names
    std::string quantization;
    std::optional<int64_t> file_type;
    std::string architecture;
    std::optional<uint64_t> parameter_count;
    std::optional<uint64_t> context_length;
    model_source source;
    model_status status = model_status::quarantined;
    std::string status_reason;
    std::optional<sys_time> checked_at;
    sys_time created_at{};

    const layer * first_model_layer() const;
    uint64_t total_size() const;
};

nlohmann::ordered_json to_json(const manifest & m);
std::string serialize(const manifest & m);  // pretty JSON with a trailing newline

// Strict: missing required fields, wrong types, unknown enum values, invalid digests or names and
// a newer schema version are errc::invalid_argument with the field named. Unknown extra fields are
// ignored, so an older build can read what a newer one added without a version bump.
result<manifest> parse_manifest(std::string_view text);
result<manifest> manifest_from_json(const nlohmann::ordered_json & j);

// Fills architecture, context_length, parameter_count, file_type and quantization from the GGUF
// header at `path` (the first model layer's blob). Errors: those of llama::read_gguf_metadata.
status fill_from_gguf(manifest & m, const std::filesystem::path & path);

}  // namespace rc::store
