#pragma once
// What the listings say about a model file — details, digest, capabilities, model_info, chat
// template — read from the GGUF header without loading weights, so /api/tags, /api/show and /api/ps
// work for models that are not loaded. The cache lives in the api_context (one per server) and
// keeps an entry per file path, re-read when the file's size or mtime changes; thread-safe.
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "http/json_fields.h"
#include "llama/gguf_metadata.h"
#include "llama/model.h"
#include "models/local_catalog.h"

namespace rc::api {
using namespace rc::http;  // written against the HTTP shell (src/http)

struct model_facts {
    llama::gguf_metadata metadata;
    std::string digest;        // 64 hex digits (see model_facts.cpp for what it covers)
    std::string architecture;  // general.architecture: Ollama's family
    std::string chat_template; // tokenizer.chat_template (Jinja), empty for embedding models
    bool embedding = false;    // pooled encoder: serves /api/embed, not generate/chat
    std::vector<std::string> capabilities;  // "completion", "tools", "thinking", "embedding"
    json details;              // {parent_model, format, family, families, parameter_size, quantization_level}
};

class model_facts_cache {
  public:
    // Facts of a catalog entry; nullptr (logged) when its header cannot be read.
    std::shared_ptr<const model_facts> get(const models::model_entry & entry);

  private:
    struct cached {
        uint64_t size;
        std::chrono::system_clock::time_point modified;
        std::shared_ptr<const model_facts> facts;
    };
    std::mutex mutex_;
    std::map<std::string, cached> by_path_;
};

// Every GGUF key except the chat template (it is /api/show's `template`); arrays too long to be
// useful (token lists) are null. Adds general.parameter_count when the file lacks it. Sorted by key.
json model_info_json(const model_facts & f);

// Ollama's format.HumanNumber: 39.72M, 1.5B, 7B, 137M, 22K.
std::string human_number(uint64_t n);

}  // namespace rc::api
