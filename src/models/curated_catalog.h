#pragma once
// The curated model set (share/curated.json): a short list of real GGUF models on the Hugging Face
// Hub, each with the uses it is good for, and the choice of what fits a host's memory.
//
// The catalog states only what cannot go stale: repository, quantization, uses (and optionally the
// file it expects the quantization to resolve to). Sizes and digests come from the Hub's own listing
// when a pull is planned, and every pull verifies against the Hub's LFS SHA-256, as any pull does.
// Pure functions apart from load_curated_catalog (reads a file) and size_curated (lists on the Hub).
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "hub/hub_client.h"
#include "util/result.h"

namespace rc::models {

// The uses a curated model may serve.
inline constexpr std::string_view curated_uses[] = {"chat", "code", "embedding", "triage"};

struct curated_model {
    std::string name;          // catalog id, [a-z0-9._-]+: what `--fit NAME` names
    std::string repo;          // "owner/name" on the Hub
    std::string quantization;  // canonical ("Q4_K_M"): the pull is hf.co/<repo>:<quantization>
    std::string file;          // optional: the file the quantization is expected to resolve to
    std::vector<std::string> uses;
    std::string parameters;    // optional, as the model card says ("7.6B")
    std::string license;       // optional, SPDX-like ("apache-2.0")
    std::string description;

    std::string pull_name() const { return "hf.co/" + repo + ":" + quantization; }
    bool serves(std::string_view use) const;
};

struct curated_catalog {
    int schema = 1;
    std::vector<curated_model> models;  // within a use, best first: the first that fits is chosen
    const curated_model * find(std::string_view name) const;
};

// Errors (invalid_argument, naming the entry and field): not JSON, schema other than 1, a model
// without name/repo/quantization/uses, an unknown use, a bad or duplicate name, a bad repo id or
// quantization name.
result<curated_catalog> parse_curated_catalog(std::string_view json_text);
result<curated_catalog> load_curated_catalog(const std::filesystem::path & path);  // + not_found, io

// Memory a model needs once loaded, estimated from its GGUF size alone (before any download): the
// weights plus a quarter for the KV cache at the default context and the compute buffers — what
// estimate_memory() finds for 0.5B–14B models at 4096 cells, rounded up.
uint64_t curated_memory_need(uint64_t gguf_bytes);

// A catalog entry with its size on the Hub.
struct sized_model {
    const curated_model * model = nullptr;
    std::string file;        // first (or only) part, as the Hub resolved the quantization
    uint64_t size = 0;       // all parts
    uint64_t need = 0;       // curated_memory_need(size)
    std::string problem;     // non-empty: could not be sized (the Hub's error); never chosen
};

// Lists the entry's repository on the Hub and resolves its quantization. A resolution that differs
// from the entry's `file` is reported in `problem` (the catalog is out of date) but still sized.
sized_model size_curated(const hub::hub_client & hub, const curated_model & m);

struct fit_choice {
    std::vector<const sized_model *> picks;  // distinct models, in catalog order
    std::vector<std::string> unmet;          // requested uses nothing fits (or nothing offers)
};

// For every use in `uses` (all four when empty), the first sized model serving it whose need fits
// `memory`; a model serving several requested uses is picked once.
fit_choice choose_fit(const std::vector<sized_model> & sized, uint64_t memory, const std::vector<std::string> & uses);

}  // namespace rc::models
