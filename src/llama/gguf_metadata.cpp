#include "llama/gguf_metadata.h"

#include "util/quantization.h"
#include "util/shortest_decimal.h"

#include <ggml.h>
#include <gguf.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>

namespace rc::llama {

namespace {

struct gguf_deleter {
    void operator()(gguf_context * c) const { gguf_free(c); }
};

// A float32 as the double with the same shortest decimal form (1e-12f reads back as 1e-12, not
// 9.999999960041972e-13), so listings show the values the file's author wrote.
double widen(float f) { return std::strtod(shortest_decimal(f).c_str(), nullptr); }

// One element of a scalar or array value, widened to the variant's types.
gguf_scalar element(gguf_type type, const void * data, size_t i) {
    switch (type) {
        case GGUF_TYPE_UINT8: return static_cast<uint64_t>(static_cast<const uint8_t *>(data)[i]);
        case GGUF_TYPE_INT8: return static_cast<int64_t>(static_cast<const int8_t *>(data)[i]);
        case GGUF_TYPE_UINT16: return static_cast<uint64_t>(static_cast<const uint16_t *>(data)[i]);
        case GGUF_TYPE_INT16: return static_cast<int64_t>(static_cast<const int16_t *>(data)[i]);
        case GGUF_TYPE_UINT32: return static_cast<uint64_t>(static_cast<const uint32_t *>(data)[i]);
        case GGUF_TYPE_INT32: return static_cast<int64_t>(static_cast<const int32_t *>(data)[i]);
        case GGUF_TYPE_UINT64: return static_cast<const uint64_t *>(data)[i];
        case GGUF_TYPE_INT64: return static_cast<const int64_t *>(data)[i];
        case GGUF_TYPE_FLOAT32: return widen(static_cast<const float *>(data)[i]);
        case GGUF_TYPE_FLOAT64: return static_cast<const double *>(data)[i];
        case GGUF_TYPE_BOOL: return static_cast<const int8_t *>(data)[i] != 0;
        default: return std::string();
    }
}

gguf_entry read_entry(const gguf_context * ctx, int64_t id, size_t max_array_items) {
    gguf_entry e;
    e.key = gguf_get_key(ctx, id);
    const gguf_type type = gguf_get_kv_type(ctx, id);
    if (type == GGUF_TYPE_STRING) {
        e.values.emplace_back(std::string(gguf_get_val_str(ctx, id)));
    } else if (type == GGUF_TYPE_ARRAY) {
        e.is_array = true;
        e.array_size = gguf_get_arr_n(ctx, id);
        if (e.array_size > max_array_items) return e;
        const gguf_type at = gguf_get_arr_type(ctx, id);
        if (at == GGUF_TYPE_STRING) {
            for (size_t i = 0; i < e.array_size; ++i) e.values.emplace_back(std::string(gguf_get_arr_str(ctx, id, i)));
        } else if (at != GGUF_TYPE_ARRAY) {
            const void * data = gguf_get_arr_data(ctx, id);
            for (size_t i = 0; i < e.array_size; ++i) e.values.push_back(element(at, data, i));
        }
    } else {
        e.values.push_back(element(type, gguf_get_val_data(ctx, id), 0));
    }
    return e;
}

}  // namespace

const gguf_entry * gguf_metadata::find(const std::string & key) const {
    for (const auto & e : entries) {
        if (e.key == key) return &e;
    }
    return nullptr;
}

std::string gguf_metadata::get_string(const std::string & key) const {
    const gguf_entry * e = find(key);
    if (!e || e->is_array || e->values.empty()) return {};
    const auto * s = std::get_if<std::string>(&e->values[0]);
    return s ? *s : std::string();
}

std::optional<uint64_t> gguf_metadata::get_uint(const std::string & key) const {
    const gguf_entry * e = find(key);
    if (!e || e->is_array || e->values.empty()) return std::nullopt;
    if (const auto * u = std::get_if<uint64_t>(&e->values[0])) return *u;
    if (const auto * i = std::get_if<int64_t>(&e->values[0]); i && *i >= 0) return static_cast<uint64_t>(*i);
    return std::nullopt;
}

result<gguf_metadata> read_gguf_metadata(const std::string & path, size_t max_array_items) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) return make_error(errc::not_found, "model file not found: " + path);
    // no_alloc with no ggml context: only the header (key/values and tensor descriptions) is read.
    gguf_init_params params{/*.no_alloc =*/true, /*.ctx =*/nullptr};
    std::unique_ptr<gguf_context, gguf_deleter> ctx(gguf_init_from_file(path.c_str(), params));
    if (!ctx) return make_error(errc::invalid_argument, "not a readable GGUF file: " + path);

    gguf_metadata md;
    const int64_t n_kv = gguf_get_n_kv(ctx.get());
    md.entries.reserve(static_cast<size_t>(n_kv));
    for (int64_t i = 0; i < n_kv; ++i) md.entries.push_back(read_entry(ctx.get(), i, max_array_items));

    std::map<int, uint64_t> elements_by_type;  // matrices only: norms and biases stay F32 in any file type
    const int64_t n_tensors = gguf_get_n_tensors(ctx.get());
    for (int64_t t = 0; t < n_tensors; ++t) {
        const int64_t * ne = gguf_get_tensor_ne(ctx.get(), t);
        uint64_t n = 1;
        for (int d = 0; d < GGML_MAX_DIMS; ++d) n *= static_cast<uint64_t>(ne[d]);
        md.n_params += n;
        if (ne[1] > 1) elements_by_type[gguf_get_tensor_type(ctx.get(), t)] += n;
    }
    auto top = std::max_element(elements_by_type.begin(), elements_by_type.end(),
                                [](const auto & a, const auto & b) { return a.second < b.second; });
    if (top != elements_by_type.end()) md.dominant_tensor_type = ggml_type_name(static_cast<ggml_type>(top->first));
    return md;
}

std::string ftype_name(uint32_t ftype) {
    return rc::quant::name_from_file_type(ftype & ~1024u).value_or("");  // 1024: LLAMA_FTYPE_GUESSED
}

std::string quantization_level(const gguf_metadata & md) {
    if (auto ft = md.get_uint("general.file_type")) {
        if (std::string name = ftype_name(static_cast<uint32_t>(*ft)); !name.empty()) return name;
    }
    if (md.dominant_tensor_type.empty()) return "unknown";
    std::string up = md.dominant_tensor_type;
    std::transform(up.begin(), up.end(), up.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    return up;
}

}  // namespace rc::llama
