#pragma once
// Model names in the store: Ollama's `[host/][namespace/]model[:tag]` and Hugging Face's
// `hf.co/{owner}/{repo}[:{quant or file}]`. A parsed name is safe to turn into a path: every
// component matches [A-Za-z0-9][A-Za-z0-9._-]* and none contains "..", so nothing a client types can
// reach outside <root>/manifests.
#include <filesystem>
#include <string>
#include <string_view>

#include "util/result.h"

namespace rc::store {

struct model_name {
    static constexpr std::string_view default_host = "local";
    static constexpr std::string_view default_namespace = "library";
    static constexpr std::string_view default_tag = "latest";
    static constexpr std::string_view hf_host = "hf.co";
    static constexpr size_t max_component = 128;
    static constexpr size_t max_length = 350;

    std::string host{default_host};
    std::string ns{default_namespace};
    std::string model;
    std::string tag{default_tag};

    // Defaults fill missing parts; "huggingface.co/", "https://huggingface.co/" and "https://hf.co/"
    // become host "hf.co", which needs both owner and repo. For hf names a tag that is a known
    // quantization is spelled canonically ("q4_k_m" → "Q4_K_M"). Errors: invalid_argument naming
    // the problem.
    static result<model_name> parse(std::string_view text);

    std::string full() const;     // host/ns/model:tag — the manifest's identity
    std::string display() const;  // what clients see: model:tag, ns/model:tag, or host/ns/model:tag
    std::filesystem::path manifest_path(const std::filesystem::path & root) const;  // root/manifests/host/ns/model/tag
    bool is_hf() const { return host == hf_host; }

    bool operator==(const model_name &) const = default;
};

// The one rule of served-name equivalence, used by the server, the fleet and the gateway: "demo",
// "demo:latest" and "demo.gguf" (a loose file) name the same model. short_model_name drops those
// suffixes (not from a name that is only the suffix); same_model_name compares the short forms.
std::string short_model_name(std::string name);
bool same_model_name(const std::string & a, const std::string & b);

}  // namespace rc::store
