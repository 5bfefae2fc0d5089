#include "engine/kv_identity.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace rc::engine {

namespace {
// File size, modification time and the first 4 MiB (header, metadata and the first tensors): a
// replaced or re-quantized file changes at least one of them, and hashing all of a multi-GB file
// at every load would cost seconds.
std::string model_fingerprint(const llama::model & m) {
    namespace fs = std::filesystem;
    std::error_code ec;
    sha256 h;
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
