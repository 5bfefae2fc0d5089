#include "api/model_facts.h"

#include <chrono>
#include <cstdio>

#include "api/chat_output.h"
#include "util/log.h"
#include "util/sha256.h"

namespace rc::api {

namespace {

// Encoder architectures llama.cpp serves as embedding models even without a pooling_type key.
bool encoder_architecture(const std::string & arch) {
    return arch == "bert" || arch == "nomic-bert" || arch == "nomic-bert-moe" || arch == "jina-bert-v2" ||
           arch == "jina-bert-v3" || arch == "neo-bert" || arch == "modern-bert" || arch == "t5encoder";
}

// Ollama's digest is the SHA-256 of the model's manifest. Loose files have none, and hashing a
// multi-GB file on every listing is too slow, so this hashes what identifies the file's version
// (path, size, mtime): stable while the file is unchanged, different once it is replaced.
std::string cheap_digest(const models::model_entry & e) {
    if (!e.digest.empty()) return e.digest.substr(e.digest.find('-') + 1);  // a store blob: its real sha256
    rc::sha256 h;
    h.feed(e.path.string());
    h.feed_value(e.size_bytes);
    h.feed_value(static_cast<int64_t>(e.modified.time_since_epoch().count()));
    return to_hex(h.finish());
}

json scalar_json(const llama::gguf_scalar & v) {
    return std::visit([](const auto & x) { return json(x); }, v);
}

std::shared_ptr<const model_facts> read_facts(const models::model_entry & e) {
    auto md = llama::read_gguf_metadata(e.path.string());
    if (!md) {
        rc::log::warn("api", "gguf_unreadable", {{"path", e.path.string()}, {"error", md.err().message}});
        return nullptr;
    }
    auto f = std::make_shared<model_facts>();
    f->metadata = std::move(md.value());
    const auto & m = f->metadata;
    f->digest = cheap_digest(e);
    f->architecture = m.get_string("general.architecture");
    f->chat_template = m.get_string("tokenizer.chat_template");
    auto pooling = m.get_uint(f->architecture + ".pooling_type");
    f->embedding = (pooling && *pooling > 0) || encoder_architecture(f->architecture);
    if (f->embedding) {
        f->capabilities = {"embedding"};
    } else {
        f->capabilities = {"completion"};
        if (template_calls_tools(f->chat_template)) f->capabilities.push_back("tools");
        if (template_supports_thinking(f->chat_template)) f->capabilities.push_back("thinking");
    }
    uint64_t n_params = m.get_uint("general.parameter_count").value_or(m.n_params);
    f->details = {{"parent_model", ""},
                  {"format", "gguf"},
                  {"family", f->architecture},
                  {"families", json::array({f->architecture})},
                  {"parameter_size", human_number(n_params)},
                  {"quantization_level", llama::quantization_level(m)}};
    return f;
}

}  // namespace

std::shared_ptr<const model_facts> model_facts_cache::get(const models::model_entry & entry) {
    const std::string key = entry.path.string();
    {
        std::lock_guard lock(mutex_);
        auto it = by_path_.find(key);
        if (it != by_path_.end() && it->second.size == entry.size_bytes && it->second.modified == entry.modified) return it->second.facts;
    }
    auto facts = read_facts(entry);  // outside the lock: reading a header can take a while
    if (facts) {
        std::lock_guard lock(mutex_);
        by_path_[key] = cached{entry.size_bytes, entry.modified, facts};
    }
    return facts;
}

json model_info_json(const model_facts & f) {
    std::map<std::string, json> sorted;  // Ollama's model_info is a Go map: keys come out sorted
    for (const auto & e : f.metadata.entries) {
        if (e.key == "tokenizer.chat_template") continue;
        if (!e.is_array) {
            sorted[e.key] = e.values.empty() ? json(nullptr) : scalar_json(e.values[0]);
        } else if (e.values.size() == e.array_size) {
            json arr = json::array();
            for (const auto & v : e.values) arr.push_back(scalar_json(v));
            sorted[e.key] = std::move(arr);
        } else {
            sorted[e.key] = nullptr;  // e.g. tokenizer.ggml.tokens: listed, not sent
        }
    }
    if (!sorted.count("general.parameter_count")) sorted["general.parameter_count"] = f.metadata.n_params;
    json out = json::object();
    for (auto & [k, v] : sorted) out[k] = std::move(v);
    return out;
}

std::string human_number(uint64_t n) {
    char buf[32];
    const double v = static_cast<double>(n);
    // Whole numbers without decimals; otherwise one decimal for billions, two for millions.
    if (n >= 1000000000ULL) {
        if (n % 1000000000ULL == 0) std::snprintf(buf, sizeof buf, "%.0fB", v / 1e9);
        else std::snprintf(buf, sizeof buf, "%.1fB", v / 1e9);
    } else if (n >= 1000000ULL) {
        if (n % 1000000ULL == 0) std::snprintf(buf, sizeof buf, "%.0fM", v / 1e6);
        else std::snprintf(buf, sizeof buf, "%.2fM", v / 1e6);
    } else if (n >= 1000ULL) {
        std::snprintf(buf, sizeof buf, "%.0fK", v / 1e3);
    } else {
        std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(n));
    }
    return buf;
}

}  // namespace rc::api
