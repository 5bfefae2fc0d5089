#pragma once
// What Ollama's listings say about a model file — details, digest, capabilities, model_info, chat
// template — read from the GGUF header without loading weights, so /api/tags and /api/show work for
// models that are not loaded. Cached per (path, size, mtime); thread-safe.
#include <memory>
#include <string>
#include <vector>

#include "api/json_fields.h"
#include "llama/gguf_metadata.h"
#include "llama/model.h"
#include "models/local_catalog.h"

namespace rc::api::ollama {

struct model_facts {
    llama::gguf_metadata metadata;
    std::string digest;        // 64 hex digits (see model_facts.cpp for what it covers)
    std::string architecture;  // general.architecture: Ollama's family
    std::string chat_template; // tokenizer.chat_template (Jinja), empty for embedding models
    bool embedding = false;    // pooled encoder: serves /api/embed, not generate/chat
    std::vector<std::string> capabilities;  // "completion", "tools", "thinking", "embedding"
    json details;              // {parent_model, format, family, families, parameter_size, quantization_level}
};

// Facts of a catalog entry; nullptr (logged) when its header cannot be read.
std::shared_ptr<const model_facts> facts_for(const models::model_entry & entry);

// Every GGUF key except the chat template (it is /api/show's `template`); arrays too long to be
// useful (token lists) are null. Adds general.parameter_count when the file lacks it. Sorted by key.
json model_info_json(const model_facts & f);

// Ollama's format.HumanNumber: 39.72M, 1.5B, 7B, 137M, 22K.
std::string human_number(uint64_t n);

// Whether a chat template renders a thinking section: it takes enable_thinking, or it knows
// <think> / reasoning_content (templates that always reason).
bool template_supports_thinking(const std::string & chat_template);
// The same for a loaded model's templates.
bool model_supports_thinking(const llama::model & m);

}  // namespace rc::api::ollama
