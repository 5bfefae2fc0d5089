#include "models/recent_models.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>

#include <nlohmann/json.hpp>

#include "util/log.h"
#include "util/small_file.h"

namespace rc::models {

namespace {

using json = nlohmann::json;

struct use {
    std::string name;
    int64_t at = 0;
};

// The file as the server wrote it, or an empty list: it is read at start (`--preload auto`) and at
// every load, so nothing in it may fail the caller. A FIFO or a device in its place, a file too
// large, bad JSON, a name that is not a string or a time that is not an integer: logged, ignored.
std::vector<use> read_uses(const std::filesystem::path & file) {
    std::vector<use> out;
    auto text = rc::read_small_file(file, size_t{1} << 20);
    if (!text) {
        if (text.err().code != errc::not_found) rc::log::warn("models", "recent_models_ignored", {{"error", text.err().message}});
        return out;
    }
    auto j = json::parse(*text, nullptr, false);
    if (!j.is_object() || !j.contains("models") || !j["models"].is_array()) {
        rc::log::warn("models", "recent_models_ignored", {{"file", file.string()}, {"error", "not the expected JSON document"}});
        return out;
    }
    for (const auto & m : j["models"]) {
        if (out.size() >= recent_models::max_models) break;
        if (!m.is_object() || !m.contains("name") || !m["name"].is_string()) continue;
        const auto used = m.find("used");
        out.push_back({m["name"].get<std::string>(), used != m.end() && used->is_number_integer() ? used->get<int64_t>() : 0});
    }
    std::stable_sort(out.begin(), out.end(), [](const use & a, const use & b) { return a.at > b.at; });
    return out;
}

}  // namespace

void recent_models::note_use(const std::string & name) {
    std::lock_guard lock(mutex_);
    auto uses = read_uses(file_);
    std::erase_if(uses, [&](const use & u) { return u.name == name; });
    const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    uses.insert(uses.begin(), {name, now});
    if (uses.size() > max_models) uses.resize(max_models);
    json doc = {{"schema", 1}, {"models", json::array()}};
    for (const auto & u : uses) doc["models"].push_back({{"name", u.name}, {"used", u.at}});
    const auto tmp = file_.string() + ".tmp-" + std::to_string(::getpid());
    std::error_code ec;
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        out << doc.dump(1) << '\n';
        if (!out.flush()) ec = std::make_error_code(std::errc::io_error);
    }
    if (!ec) std::filesystem::rename(tmp, file_, ec);
    if (ec) {
        std::filesystem::remove(tmp, ec);
        if (!warned_) rc::log::warn("models", "recent_models_not_written", {{"file", file_.string()}});
        warned_ = true;
    }
}

std::vector<std::string> recent_models::newest_first() const {
    std::lock_guard lock(mutex_);
    std::vector<std::string> out;
    for (auto & u : read_uses(file_)) out.push_back(std::move(u.name));
    return out;
}

}  // namespace rc::models
