#pragma once
// Which GGUF file(s) of a repository a pull wants: by quantization, by file name, or the best default.
// Pure functions, no I/O.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hub/hub_types.h"
#include "util/result.h"

namespace rc::hub {

struct gguf_choice {
    std::string quant;             // canonical quantization ("Q4_K_M"); empty when the name has none
    std::vector<repo_file> parts;  // one file, or every part of a split model in part order
    uint64_t total_size = 0;
};

// `wanted` is one of:
//  * "" or "latest": the first quantization of rc::quant::preference_order() the repo has; when no
//    file names a known quantization, the smallest model;
//  * a quantization, case-insensitive ("q4_k_m");
//  * an exact file name or path ("Tiny-Q8_0.gguf"; naming one part of a split model picks them all).
// Only `*.gguf` files count, and projector files (`mmproj*`) only when named exactly. Split models
// (`NAME-00001-of-0000N.gguf`) are one choice and must have every part.
// Errors: not_found (no GGUF model, quantization absent — the message lists those present — or a
// missing split part), invalid_argument (`wanted` is neither a quantization nor a file of the repo).
result<gguf_choice> choose_gguf(const std::vector<repo_file> & files, std::string_view wanted);

// llama.cpp's split naming: "<stem>-<part>-of-<count>.gguf", five digits each, parts from 1.
struct split_name {
    std::string stem;
    int part = 0;
    int count = 0;
};
std::optional<split_name> parse_split_name(std::string_view path);

bool is_gguf_file(std::string_view path);       // ends with ".gguf", any case
bool is_projector_file(std::string_view path);  // a multimodal projector: the base name contains "mmproj"

}  // namespace rc::hub
