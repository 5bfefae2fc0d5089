#include "mkmodel_metadata.h"

#include <fstream>
#include <span>
#include <vector>
#include <sstream>
#include <system_error>

namespace rc::mkmodel {
namespace {

constexpr std::string_view k_tokenizer_prefix = "tokenizer.";
constexpr const char * k_chat_template_key = "tokenizer.chat_template";
constexpr const char * k_tokenizer_pre_key = "tokenizer.ggml.pre";

std::string source_hint(const std::filesystem::path & llama_src) {
    return " (llama.cpp source tree: " + llama_src.string() + "; override with --llama-src or RUSTYCAGE_LLAMA_SRC)";
}

result<std::string> read_text_file(const std::filesystem::path & path, const std::filesystem::path & llama_src) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        return make_error(errc::io, "cannot read chat template " + path.string() + source_hint(llama_src));
    }
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) {
        return make_error(errc::io, "error while reading chat template " + path.string());
    }
    return text.str();
}

std::string key(const preset & p, const char * suffix) {
    return std::string(p.arch) + "." + suffix;
}

// Writes `names` over the vocab's reserved special tokens, in order, as control tokens.
void rename_reserved_tokens(gguf_context * out, std::span<const std::string_view> names) {
    if (names.empty()) {
        return;
    }
    const int64_t tokens_id = gguf_find_key(out, "tokenizer.ggml.tokens");
    const int64_t types_id = gguf_find_key(out, "tokenizer.ggml.token_type");
    if (tokens_id < 0 || types_id < 0) {
        return;
    }
    const size_t n = gguf_get_arr_n(out, tokens_id);
    std::vector<std::string> tokens(n);
    for (size_t i = 0; i < n; ++i) {
        tokens[i] = gguf_get_arr_str(out, tokens_id, i);
    }
    const auto * types_data = static_cast<const int32_t *>(gguf_get_arr_data(out, types_id));
    std::vector<int32_t> types(types_data, types_data + gguf_get_arr_n(out, types_id));
    size_t next = 0;
    for (size_t i = 0; i < n && next < names.size(); ++i) {
        if (tokens[i].starts_with("<|reserved_special_token_")) {
            tokens[i] = std::string(names[next++]);
            types.at(i) = LLAMA_TOKEN_TYPE_CONTROL;
        }
    }
    std::vector<const char *> ptrs;
    ptrs.reserve(n);
    for (const std::string & t : tokens) {
        ptrs.push_back(t.c_str());
    }
    gguf_set_arr_str(out, "tokenizer.ggml.tokens", ptrs.data(), ptrs.size());
    gguf_set_arr_data(out, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, types.data(), types.size());
}

}  // namespace

result<tokenizer_source> load_tokenizer(const preset & p, const std::filesystem::path & llama_src) {
    const std::filesystem::path vocab_path = llama_src / "models" / p.vocab_file;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(vocab_path, ec)) {
        return make_error(errc::io, "vocab file " + vocab_path.string() + " not found" + source_hint(llama_src));
    }

    tokenizer_source tok;
    const gguf_init_params params{/*.no_alloc =*/true, /*.ctx =*/nullptr};
    tok.vocab.reset(gguf_init_from_file(vocab_path.c_str(), params));
    if (!tok.vocab) {
        return make_error(errc::io, "cannot parse vocab file " + vocab_path.string() + " as GGUF");
    }

    const int64_t tokens_id = gguf_find_key(tok.vocab.get(), "tokenizer.ggml.tokens");
    if (tokens_id < 0 || gguf_get_kv_type(tok.vocab.get(), tokens_id) != GGUF_TYPE_ARRAY) {
        return make_error(errc::io, "vocab file " + vocab_path.string() + " has no tokenizer.ggml.tokens array");
    }
    tok.info.n_tokens = static_cast<int64_t>(gguf_get_arr_n(tok.vocab.get(), tokens_id));

    const int64_t types_id = gguf_find_key(tok.vocab.get(), "tokenizer.ggml.token_type_count");
    if (types_id >= 0 && gguf_get_kv_type(tok.vocab.get(), types_id) == GGUF_TYPE_UINT32) {
        tok.info.n_token_types = gguf_get_val_u32(tok.vocab.get(), types_id);
    }

    if (!p.template_file.empty()) {
        auto text = read_text_file(llama_src / "models" / "templates" / p.template_file, llama_src);
        if (!text.ok()) {
            return text.err();
        }
        tok.chat_template = std::move(text.value());
    }
    return tok;
}

void ssm_keys(gguf_context * out, const preset & p) {
    gguf_set_val_u32(out, key(p, "ssm.conv_kernel").c_str(), p.ssm.conv_kernel);
    gguf_set_val_u32(out, key(p, "ssm.inner_size").c_str(), p.ssm.inner_size);
    gguf_set_val_u32(out, key(p, "ssm.state_size").c_str(), p.ssm.state_size);
    gguf_set_val_u32(out, key(p, "ssm.time_step_rank").c_str(), p.ssm.time_step_rank);
    gguf_set_val_bool(out, key(p, "ssm.dt_b_c_rms").c_str(), p.ssm.dt_b_c_rms);
}

void set_model_keys(gguf_context * out, const preset & p, const std::string & model_name, const tokenizer_source & tok) {
    const std::string arch(p.arch);
    gguf_set_val_str(out, "general.architecture", arch.c_str());
    gguf_set_val_str(out, "general.name", model_name.c_str());
    gguf_set_val_u32(out, "general.file_type", static_cast<uint32_t>(p.file_type));
    if (ggml_is_quantized(p.matrix_type)) {
        gguf_set_val_u32(out, "general.quantization_version", GGML_QNT_VERSION);
    }

    gguf_set_val_u32(out, key(p, "context_length").c_str(), p.n_ctx);
    gguf_set_val_u32(out, key(p, "embedding_length").c_str(), p.n_embd);
    gguf_set_val_u32(out, key(p, "block_count").c_str(), p.n_layer);
    gguf_set_val_u32(out, key(p, "feed_forward_length").c_str(), p.n_ff);
    gguf_set_val_u32(out, key(p, "attention.head_count").c_str(), p.n_head);
    if (p.n_head_kv) {
        gguf_set_val_u32(out, key(p, "attention.head_count_kv").c_str(), *p.n_head_kv);
    }
    const char * eps_key = p.norm == norm_kind::rms ? "attention.layer_norm_rms_epsilon" : "attention.layer_norm_epsilon";
    gguf_set_val_f32(out, key(p, eps_key).c_str(), p.norm_eps);
    if (p.rope_freq_base) {
        gguf_set_val_f32(out, key(p, "rope.freq_base").c_str(), *p.rope_freq_base);
    }
    if (p.write_rope_dimension_count) {
        gguf_set_val_u32(out, key(p, "rope.dimension_count").c_str(), p.n_embd / p.n_head);
    }
    if (p.write_vocab_size) {
        gguf_set_val_u32(out, key(p, "vocab_size").c_str(), static_cast<uint32_t>(tok.info.n_tokens));
    }
    if (p.pooling_type) {
        gguf_set_val_u32(out, key(p, "pooling_type").c_str(), *p.pooling_type);
    }
    if (p.causal_attention) {
        gguf_set_val_bool(out, key(p, "attention.causal").c_str(), *p.causal_attention);
    }
    if (p.extra_keys != nullptr) {
        p.extra_keys(out, p);
    }
    for (const key_value & kv : p.keys) {
        const std::string k = key(p, std::string(kv.suffix).c_str());
        if (const auto * u = std::get_if<uint32_t>(&kv.value)) {
            gguf_set_val_u32(out, k.c_str(), *u);
        } else if (const auto * f = std::get_if<float>(&kv.value)) {
            gguf_set_val_f32(out, k.c_str(), *f);
        } else if (const auto * b = std::get_if<bool>(&kv.value)) {
            gguf_set_val_bool(out, k.c_str(), *b);
        } else {
            const auto arr = std::get<std::span<const uint32_t>>(kv.value);
            gguf_set_arr_data(out, k.c_str(), GGUF_TYPE_UINT32, arr.data(), arr.size());
        }
    }

    // gguf has no "copy one key" call, so copy everything into a scratch context, drop what is not
    // a tokenizer key, and merge the rest (arrays of strings included) in one gguf_set_kv.
    gguf_ptr scratch(gguf_init_empty());
    gguf_set_kv(scratch.get(), tok.vocab.get());
    for (int64_t i = gguf_get_n_kv(scratch.get()) - 1; i >= 0; --i) {
        const std::string_view k = gguf_get_key(scratch.get(), i);
        if (!k.starts_with(k_tokenizer_prefix) || k.starts_with(k_chat_template_key)) {
            gguf_remove_key(scratch.get(), std::string(k).c_str());
        }
    }
    gguf_set_kv(out, scratch.get());
    if (!p.fallback_tokenizer_pre.empty() && gguf_find_key(out, k_tokenizer_pre_key) < 0) {
        gguf_set_val_str(out, k_tokenizer_pre_key, std::string(p.fallback_tokenizer_pre).c_str());
    }
    if (!tok.chat_template.empty()) {
        gguf_set_val_str(out, k_chat_template_key, tok.chat_template.c_str());
    }
    rename_reserved_tokens(out, p.special_tokens);
}

}  // namespace rc::mkmodel
