// Writes one generated model file: metadata from mkmodel_metadata, tensor data streamed from
// mkmodel_tensor_data. The file appears atomically: data goes to "<out>.tmp-<pid>" in the same
// directory, which is renamed over <out> only when complete and removed on any failure, so a
// failed run leaves no partial model behind.
#pragma once

#include "mkmodel_presets.h"
#include "mkmodel_result.h"

#include <cstdint>
#include <filesystem>
#include <string>

namespace rc::mkmodel {

struct model_request {
    const preset * model = nullptr;  // from the preset table; never null
    uint64_t seed = 0;
    std::string name;                 // general.name
    std::filesystem::path llama_src;  // tree holding models/ggml-vocab-*.gguf and models/templates/
    std::filesystem::path out;
    unsigned n_threads = 1;
};

struct model_report {
    size_t n_tensors = 0;
    int64_t n_params = 0;
    uint64_t file_bytes = 0;
};

// Fails with a readable message on a missing vocab/template, an unusable --out, or an I/O error.
// Single-threaded caller; uses up to n_threads worker threads internally.
result<model_report> write_model(const model_request & req);

}  // namespace rc::mkmodel
