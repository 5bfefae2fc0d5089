#include "mkmodel_tensor_data.h"

#include "mkmodel_random.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

namespace rc::mkmodel {
namespace {

// Values per seeded chunk (rounded to whole rows). Part of the file format's determinism contract:
// changing it changes every generated file.
constexpr int64_t k_chunk_values = int64_t{1} << 18;
// Converted bytes produced before each fwrite: bounds memory, large enough to keep threads busy.
constexpr size_t k_slab_bytes = size_t{64} << 20;

struct chunk_layout {
    int64_t n_per_row = 0;
    int64_t n_rows = 0;
    size_t row_bytes = 0;
    int64_t rows_per_chunk = 0;
    int64_t n_chunks = 0;
};

chunk_layout layout_of(const tensor_spec & spec) {
    chunk_layout l;
    l.n_per_row = spec.ne.at(0);
    l.n_rows = 1;
    for (size_t i = 1; i < spec.ne.size(); ++i) {
        l.n_rows *= spec.ne[i];
    }
    l.row_bytes = ggml_row_size(spec.type, l.n_per_row);
    l.rows_per_chunk = std::max<int64_t>(1, k_chunk_values / l.n_per_row);
    l.n_chunks = (l.n_rows + l.rows_per_chunk - 1) / l.rows_per_chunk;
    return l;
}

// Fills and converts chunk `chunk` of the tensor into dst (rows_in_chunk * row_bytes bytes).
void produce_chunk(const tensor_spec & spec, const chunk_layout & l, uint64_t model_seed, int64_t chunk,
                   std::vector<float> & scratch, uint8_t * dst) {
    const int64_t first_row = chunk * l.rows_per_chunk;
    const int64_t rows = std::min(l.rows_per_chunk, l.n_rows - first_row);
    const size_t n = static_cast<size_t>(rows * l.n_per_row);
    scratch.resize(n);

    switch (spec.fill) {
        case fill_kind::normal: {
            rng_xoshiro256 rng(chunk_seed(model_seed, spec.name, static_cast<uint64_t>(chunk)));
            for (float & v : scratch) {
                v = spec.mean + spec.std * rng.normal();
            }
            break;
        }
        case fill_kind::negative_ramp:
            // Chunks hold whole rows, so the position in the row is the index modulo the row length.
            for (size_t i = 0; i < n; ++i) {
                scratch[i] = -static_cast<float>(static_cast<int64_t>(i) % l.n_per_row + 1);
            }
            break;
        case fill_kind::ones:
            std::fill(scratch.begin(), scratch.end(), 1.0f);
            break;
        case fill_kind::zeros:
            std::fill(scratch.begin(), scratch.end(), 0.0f);
            break;
    }

    if (spec.type == GGML_TYPE_F32) {
        std::memcpy(dst, scratch.data(), n * sizeof(float));
    } else {
        // Handles F16 as well as the block types (Q8_0, ...); none we use needs an importance matrix.
        ggml_quantize_chunk(spec.type, scratch.data(), dst, 0, rows, l.n_per_row, nullptr);
    }
}

}  // namespace

status write_tensor_data(std::FILE * file, const tensor_spec & spec, uint64_t model_seed, unsigned n_threads) {
    const chunk_layout l = layout_of(spec);
    const size_t chunk_bytes = static_cast<size_t>(l.rows_per_chunk) * l.row_bytes;
    const int64_t chunks_per_slab = std::max<int64_t>(1, static_cast<int64_t>(k_slab_bytes / chunk_bytes));
    std::vector<uint8_t> slab(static_cast<size_t>(std::min(l.n_chunks, chunks_per_slab)) * chunk_bytes);

    for (int64_t first = 0; first < l.n_chunks; first += chunks_per_slab) {
        const int64_t last = std::min(l.n_chunks, first + chunks_per_slab);
        std::atomic<int64_t> next{first};
        auto work = [&] {
            std::vector<float> scratch;
            for (int64_t c = next++; c < last; c = next++) {
                produce_chunk(spec, l, model_seed, c, scratch, slab.data() + static_cast<size_t>(c - first) * chunk_bytes);
            }
        };
        const auto n_workers = static_cast<unsigned>(std::min<int64_t>(std::max(1u, n_threads), last - first));
        std::vector<std::jthread> helpers;
        for (unsigned t = 1; t < n_workers; ++t) {
            helpers.emplace_back(work);
        }
        work();
        helpers.clear();  // joins

        const int64_t rows = std::min(last * l.rows_per_chunk, l.n_rows) - first * l.rows_per_chunk;
        const size_t bytes = static_cast<size_t>(rows) * l.row_bytes;
        if (std::fwrite(slab.data(), 1, bytes, file) != bytes) {
            return make_error(errc::io, std::string("write failed: ") + std::strerror(errno));
        }
    }
    return {};
}

}  // namespace rc::mkmodel
