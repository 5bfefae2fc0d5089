#include "llama/model.h"

#include "llama/template_budget.h"
#include <common.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "llama/backend.h"
#include "llama/piece_tokenizer.h"
#include "util/log.h"

namespace rc::llama {

result<std::shared_ptr<model>> model::load(const std::string & path, const model_load_options & opts) {
    return load(std::vector<std::string>{path}, opts);
}

result<std::shared_ptr<model>> model::load(const std::vector<std::string> & paths, const model_load_options & opts) {
    ensure_backend();
    if (paths.empty()) return make_error(errc::invalid_argument, "no model file given");
    const std::string & path = paths.front();
    std::error_code ec;
    for (const auto & p : paths) {
        if (!std::filesystem::is_regular_file(p, ec)) return make_error(errc::not_found, "model file not found: " + p);
    }
    auto params = llama_model_default_params();
    params.n_gpu_layers = opts.n_gpu_layers < 0 ? 999 : opts.n_gpu_layers;
    params.load_mode = opts.use_mmap && !opts.no_alloc ? LLAMA_LOAD_MODE_MMAP : LLAMA_LOAD_MODE_NONE;
    params.no_alloc = opts.no_alloc;
    params.vocab_only = opts.vocab_only;
    params.check_tensors = opts.check_tensors;

    std::shared_ptr<model> m(new model());
    m->path_ = path;
    if (paths.size() == 1) {
        m->model_ = llama_model_load_from_file(path.c_str(), params);
    } else {
        std::vector<const char *> c_paths;
        for (const auto & p : paths) c_paths.push_back(p.c_str());
        m->model_ = llama_model_load_from_splits(c_paths.data(), c_paths.size(), params);
    }
    if (!m->model_) {
        return make_error(errc::invalid_argument, "llama.cpp could not load " + path + " (see log for the reason)");
    }
    m->vocab_ = llama_model_get_vocab(m->model_);

    auto & i = m->info_;
    i.architecture = m->meta("general.architecture");
    i.name = m->meta("general.name");
    char desc[256] = {0};
    llama_model_desc(m->model_, desc, sizeof desc);
    i.description = desc;
    i.size_bytes = llama_model_size(m->model_);
    i.n_params = llama_model_n_params(m->model_);
    i.n_vocab = llama_vocab_n_tokens(m->vocab_);
    if (opts.vocab_only) {
        // llama.cpp reads no hyper-parameters then (asking for a layer's would abort): the training
        // context comes from the metadata, the rest stays 0.
        const std::string ctx_train = m->meta(i.architecture + ".context_length");
        i.n_ctx_train = ctx_train.empty() ? 0 : std::atoi(ctx_train.c_str());
    } else {
        i.n_ctx_train = llama_model_n_ctx_train(m->model_);
        i.n_embd = llama_model_n_embd(m->model_);
        i.n_embd_out = llama_model_n_embd_out(m->model_);
        i.n_layer = llama_model_n_layer(m->model_);
        i.n_head = llama_model_n_head(m->model_);
        i.n_head_kv = llama_model_n_head_kv(m->model_);
        i.is_recurrent = llama_model_is_recurrent(m->model_);
        i.is_hybrid = llama_model_is_hybrid(m->model_);
        i.n_swa = llama_model_n_swa(m->model_);
        // llama.cpp's CPU RWKV kernels step through a head 64 floats at a time on AVX-512 (the
        // "left-overs" path never runs): a smaller head reads past its row into the next head's and
        // the next sequence's state, so outputs mix across users and vary from run to run. Every
        // RWKV release uses 64; refuse anything else rather than serve corrupted text.
        const std::string wkv_head = m->meta(i.architecture + ".wkv.head_size");
        if (!wkv_head.empty() && std::atoi(wkv_head.c_str()) % 64 != 0) {
            return make_error(errc::invalid_argument, path + ": RWKV head size " + wkv_head +
                                                          " is not a multiple of 64; llama.cpp's CPU kernels would mix heads and sequences");
        }
    }
    std::string pooling = m->meta(i.architecture + ".pooling_type");
    i.is_embedding = (!pooling.empty() && pooling != "0") || !llama_model_has_decoder(m->model_);
    i.has_chat_template = llama_model_chat_template(m->model_, nullptr) != nullptr;
    for (llama_token t = 0; t < i.n_vocab; ++t) m->longest_token_bytes_ = std::max(m->longest_token_bytes_, m->token_to_piece(t, true).size());

    if (opts.tokenize_cache_bytes > 0) m->pieces_ = std::make_unique<piece_tokenizer>(m->vocab_, m->meta("tokenizer.ggml.model"), opts.tokenize_cache_bytes);

    if (!i.is_embedding) {
        // The templates are parsed and trial-rendered here (llama.cpp detects what each can do), so
        // a hostile one fails its budget at load: the model does not load, and the quarantine says why.
        for (const char * name : {static_cast<const char *>(nullptr), "tool_use"}) {
            const char * own = llama_model_chat_template(m->model_, name);
            if (auto st = check_template_size(own ? own : ""); !st) return make_error(errc::invalid_argument, "chat template of " + path + " " + st.err().message);
        }
        if (auto st = check_template_size(opts.chat_template); !st) return make_error(errc::invalid_argument, "chat template of " + path + " " + st.err().message);
        auto st = run_template("chat template of " + path, [&] {
            m->templates_ = common_chat_templates_init(m->model_, opts.chat_template);
        });
        if (!st) return st.err();
        i.has_chat_template = i.has_chat_template || !opts.chat_template.empty();
    }
    rc::log::info("llama", "model_loaded", {{"path", path}, {"arch", i.architecture}, {"desc", i.description},
                                            {"n_ctx_train", i.n_ctx_train}, {"n_vocab", i.n_vocab}});
    return m;
}

model::~model() {
    templates_.reset();
    if (model_) llama_model_free(model_);
}

std::string model::meta(const std::string & key) const {
    char buf[512];
    int32_t n = llama_model_meta_val_str(model_, key.c_str(), buf, sizeof buf);
    if (n < 0) return {};
    if (static_cast<size_t>(n) < sizeof buf) return std::string(buf, n);
    std::string big(n + 1, '\0');
    llama_model_meta_val_str(model_, key.c_str(), big.data(), big.size());
    big.resize(n);
    return big;
}

std::vector<llama_token> model::tokenize(const std::string & text, bool add_special, bool parse_special) const {
    if (pieces_) return pieces_->tokenize(text, add_special, parse_special);
    return common_tokenize(vocab_, text, add_special, parse_special);
}

std::string model::token_to_piece(llama_token token, bool special) const {
    return common_token_to_piece(vocab_, token, special);
}

std::string model::detokenize(const std::vector<llama_token> & tokens, bool special) const {
    return common_detokenize(vocab_, tokens, special);
}

}  // namespace rc::llama
