#pragma once
// Quantization names: from GGUF's `general.file_type` (llama_ftype numbers) and from file names
// ("Llama-3.2-1B-Instruct-Q4_K_M.gguf", "model.IQ3_XS-00001-of-00002.gguf"). Names are the
// canonical upper-case spellings Hugging Face repos and Ollama use: Q4_K_M, IQ3_XS, Q8_0, F16, BF16.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rc::quant {

// The name for a `general.file_type` value; nullopt for unknown numbers.
std::optional<std::string> name_from_file_type(int64_t file_type);

// The quantization named in a file name (case-insensitive, as a whole token delimited by '-', '.',
// '_' boundaries where the name itself has none); nullopt when none is recognised.
std::optional<std::string> name_from_filename(std::string_view filename);

// Canonical spelling of a user-typed quantization ("q4_k_m" → "Q4_K_M"); nullopt if unknown.
std::optional<std::string> canonical(std::string_view name);

// Every known name, best-first in the order a pull prefers when none is requested: Q4_K_M first,
// then the nearby K-quants, then larger, then smaller ones.
const std::vector<std::string> & preference_order();

// Approximate bits per weight (for memory estimates and search listings); 16 when unknown.
double bits_per_weight(std::string_view name);

}  // namespace rc::quant
