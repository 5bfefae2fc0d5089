// fill_from_gguf (declared in manifest.h), kept apart so manifest.cpp stays plain JSON.
#include "llama/gguf_metadata.h"
#include "store/manifest.h"

namespace rc::store {

status fill_from_gguf(manifest & m, const std::filesystem::path & path) {
    auto md = llama::read_gguf_metadata(path.string());
    if (!md) return md.err();
    m.architecture = md->get_string("general.architecture");
    m.context_length = m.architecture.empty() ? std::nullopt : md->get_uint(m.architecture + ".context_length");
    m.parameter_count = md->n_params;
    if (auto ft = md->get_uint("general.file_type")) m.file_type = static_cast<int64_t>(*ft);
    if (std::string q = llama::quantization_level(md.value()); q != "unknown") m.quantization = q;
    return {};
}

}  // namespace rc::store
