#include "engine/kv_identity.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace rc::engine {

namespace {
// A store blob's name is its content's SHA-256 (store/blob_store.h: written once, by rename): that
// name is the fingerprint, so every host that pulled the same model computes the same block keys
// (the fleet gateway then computes one key chain for all of them). Any other file: its size,
// modification time and first 4 MiB (header, metadata and the first tensors) — a replaced or
// re-quantized file changes at least one of them, and hashing all of a multi-GB file at every load
// would cost seconds.
bool is_blob_name(const std::string & name) {
    if (name.size() != 7 + 64 || !name.starts_with("sha256-")) return false;
    return name.find_first_not_of("0123456789abcdef", 7) == std::string::npos;
}

std::string model_fingerprint(const llama::model & m) {
    namespace fs = std::filesystem;
    std::error_code ec;
    sha256 h;
    if (const std::string name = fs::path(m.path()).filename().string(); is_blob_name(name)) {
        h.feed("blob").feed(name).feed(m.info().description);
        return to_hex(h.finish());
    }
    auto size = fs::file_size(m.path(), ec);
    auto mtime = fs::last_write_time(m.path(), ec).time_since_epoch().count();
    h.feed_value(size).feed_value(mtime).feed(m.info().description);
    std::ifstream in(m.path(), std::ios::binary);
    std::vector<char> buf(1 << 20);
    for (int i = 0; i < 4 && in; ++i) {
        in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
        h.feed(buf.data(), static_cast<size_t>(in.gcount()));
    }
    return to_hex(h.finish());
}
}  // namespace

kv::kv_identity kv_identity_of(const llama::model & m, const llama_context_params & cp) {
    const auto & i = m.info();
    std::ostringstream layout;
    layout << "k=" << ggml_type_name(cp.type_k) << " v=" << ggml_type_name(cp.type_v) << " layers=" << i.n_layer
           << " heads_kv=" << i.n_head_kv << " embd=" << i.n_embd << " heads=" << i.n_head
           << " rope_base=" << m.meta(i.architecture + ".rope.freq_base") << " rope_scale=" << cp.rope_freq_scale
           << " fa=" << static_cast<int>(cp.flash_attn_type) << " swa=" << i.n_swa;
    return {model_fingerprint(m), layout.str()};
}

}  // namespace rc::engine
