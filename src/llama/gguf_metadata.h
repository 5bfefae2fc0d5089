#pragma once
// A GGUF file's key/values and tensor summary, read with ggml's gguf API without loading weights
// (only the header is read: fast even for large files), for listings of models that are not loaded
// (Ollama's /api/tags and /api/show). Thread-safe: plain functions over immutable results.
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "util/result.h"

namespace rc::llama {

using gguf_scalar = std::variant<bool, int64_t, uint64_t, double, std::string>;

struct gguf_entry {
    std::string key;
    bool is_array = false;
    size_t array_size = 0;            // arrays: element count in the file
    std::vector<gguf_scalar> values;  // scalars: one; arrays: all elements, or none when the array is
                                      // longer than the reader's limit (tokenizer vocabularies)
};

struct gguf_metadata {
    std::vector<gguf_entry> entries;  // file order
    uint64_t n_params = 0;            // sum of all tensors' element counts
    std::string dominant_tensor_type; // ggml type holding most elements of 2-D+ tensors, e.g. "q8_0"

    const gguf_entry * find(const std::string & key) const;
    std::string get_string(const std::string & key) const;          // empty when absent or not a string
    std::optional<uint64_t> get_uint(const std::string & key) const; // integers of any width, >= 0
};

// Errors: not_found (no file), invalid_argument (not a GGUF file). Arrays with more than
// `max_array_items` elements are summarised by their size only.
result<gguf_metadata> read_gguf_metadata(const std::string & path, size_t max_array_items = 64);

// general.file_type (llama_ftype) → the name llama.cpp and Ollama show: "F16", "Q4_K_M", …;
// empty for an unknown value.
std::string ftype_name(uint32_t ftype);

// Ollama's quantization_level for a file: general.file_type's name, else the dominant tensor type
// upper-cased, else "unknown".
std::string quantization_level(const gguf_metadata & md);

}  // namespace rc::llama
