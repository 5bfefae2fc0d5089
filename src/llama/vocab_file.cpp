#include "llama/vocab_file.h"

#include <gguf.h>

#include <filesystem>
#include <memory>

namespace rc::llama {

namespace {
struct gguf_free_on_exit {
    void operator()(gguf_context * c) const { gguf_free(c); }
};
using gguf_ptr = std::unique_ptr<gguf_context, gguf_free_on_exit>;
}  // namespace

result<std::string> vocab_gguf(const std::string & path, const std::vector<std::pair<std::string, std::string>> & strings) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) return make_error(errc::not_found, "model file not found: " + path);
    // no_alloc without a ggml context: the header, key/values and tensor infos only, no weights read.
    gguf_ptr src(gguf_init_from_file(path.c_str(), gguf_init_params{true, nullptr}));
    if (!src) return make_error(errc::invalid_argument, "not a GGUF file: " + path);
    gguf_ptr out(gguf_init_empty());
    gguf_set_kv(out.get(), src.get());
    for (const char * key : {"split.no", "split.count", "split.tensors.count"}) gguf_remove_key(out.get(), key);
    for (const auto & [key, value] : strings) gguf_set_val_str(out.get(), key.c_str(), value.c_str());
    std::string bytes(gguf_get_meta_size(out.get()), '\0');
    gguf_get_meta_data(out.get(), bytes.data());
    return bytes;
}

}  // namespace rc::llama
