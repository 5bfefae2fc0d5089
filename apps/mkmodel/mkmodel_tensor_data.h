// Produces the bytes of one tensor (random, ones, zeros or a ramp; converted to F16 or quantized) and
// streams them to a file in bounded slabs, so a 1 GB model never sits in memory.
#pragma once

#include "mkmodel_arch_tensors.h"
#include "mkmodel_result.h"

#include <cstdint>
#include <cstdio>

namespace rc::mkmodel {

// Appends the data of `spec` to `file` (exactly ggml_nbytes of it, no padding). The bytes depend only
// on (model_seed, spec): rows are generated in fixed chunks, each with its own seeded generator, and
// n_threads only decides who computes which chunk. Fails only when the write fails.
status write_tensor_data(std::FILE * file, const tensor_spec & spec, uint64_t model_seed, unsigned n_threads);

}  // namespace rc::mkmodel
