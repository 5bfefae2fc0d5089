#include "engine/step_cost_cache.h"

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <mutex>

#include <nlohmann/json.hpp>

#include "llama/backend.h"
#include "util/sha256.h"
#include "util/small_file.h"

namespace rc::engine {

namespace {

using json = nlohmann::json;

std::mutex g_write;  // one writer at a time within the process (several models share the file)

// The file, or an empty document: a FIFO in its place, a file too large or bad JSON is no cache.
json read_file(const std::filesystem::path & file) {
    auto text = rc::read_small_file(file, size_t{1} << 20);
    if (!text) return json::object();
    auto j = json::parse(*text, nullptr, false);
    if (!j.is_object() || !j.contains("entries") || !j["entries"].is_object()) return json::object();
    return j;
}

double number_or(const json & j, const char * key, double fallback) {
    auto it = j.find(key);
    return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

}  // namespace

std::string step_cost_key::id() const {
    sha256 h;
    h.feed(model_fingerprint).feed(std::string_view("\n")).feed(devices).feed(std::string_view("\n"));
    h.feed_value(threads).feed_value(n_batch).feed_value(n_ubatch).feed(kv_type).feed_value(flash_attn);
    return to_hex(h.finish()).substr(0, 32);
}

std::optional<step_cost_entry> step_cost_cache::find(const step_cost_key & key) const {
    const json doc = read_file(file_);
    if (!doc.contains("entries")) return std::nullopt;
    auto it = doc["entries"].find(key.id());
    if (it == doc["entries"].end() || !it->is_object()) return std::nullopt;
    step_cost_entry e;
    e.fixed_ms = number_or(*it, "fixed_ms", -1);
    e.per_token_ms = number_or(*it, "per_token_ms", -1);
    e.cell_bytes = static_cast<size_t>(std::max(0.0, number_or(*it, "cell_bytes", 0)));
    // A hand-edited or damaged entry is no entry: the model is learned again.
    if (!(e.fixed_ms >= 0 && e.fixed_ms < 600000) || !(e.per_token_ms > 0 && e.per_token_ms < 600000)) return std::nullopt;
    return e;
}

status step_cost_cache::store(const step_cost_key & key, const step_cost_entry & entry) const {
    std::lock_guard lock(g_write);
    json doc = read_file(file_);
    if (!doc.contains("entries")) doc = {{"schema", 1}, {"entries", json::object()}};
    const auto now = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    doc["entries"][key.id()] = {{"fixed_ms", entry.fixed_ms},  {"per_token_ms", entry.per_token_ms}, {"cell_bytes", entry.cell_bytes},
                                {"updated", now},              {"devices", key.devices},             {"threads", key.threads},
                                {"n_batch", key.n_batch},      {"n_ubatch", key.n_ubatch},           {"kv_type", key.kv_type},
                                {"flash_attn", key.flash_attn}};
    auto & entries = doc["entries"];
    while (entries.size() > max_entries) {  // the least recently updated goes
        auto oldest = entries.begin();
        for (auto it = entries.begin(); it != entries.end(); ++it)
            if (number_or(*it, "updated", 0) < number_or(*oldest, "updated", 0)) oldest = it;
        entries.erase(oldest);
    }
    std::error_code ec;
    std::filesystem::create_directories(file_.parent_path(), ec);
    const auto tmp = file_.string() + ".tmp-" + std::to_string(::getpid());
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        out << doc.dump(1) << '\n';
        if (!out.flush()) {
            std::filesystem::remove(tmp, ec);
            return make_error(errc::io, "cannot write " + tmp);
        }
    }
    std::filesystem::rename(tmp, file_, ec);
    if (ec) {
        std::filesystem::remove(tmp, ec);
        return make_error(errc::io, "cannot replace " + file_.string() + ": " + ec.message());
    }
    return {};
}

std::string describe_devices() {
    std::string out;
    for (const auto & d : llama::backend_devices()) out += (out.empty() ? "" : "; ") + d.name + ": " + d.description;
    return out;
}

}  // namespace rc::engine
