#include "mkmodel_arch_tensors.h"

#include "mkmodel_presets.h"

#include <utility>

namespace rc::mkmodel {
namespace {

std::string blk(uint32_t layer, const char * suffix) {
    return "blk." + std::to_string(layer) + "." + suffix;
}

// A projection or embedding matrix in the preset's matrix type.
tensor_spec matrix(std::string name, int64_t n_in, int64_t n_out, const preset & p, float std) {
    return {std::move(name), {n_in, n_out}, p.matrix_type, fill_kind::normal, std};
}

// Position and token-type embeddings stay F32, as convert_hf_to_gguf.py keeps them.
tensor_spec f32_matrix(std::string name, int64_t n_in, int64_t n_out, float std) {
    return {std::move(name), {n_in, n_out}, GGML_TYPE_F32, fill_kind::normal, std};
}

tensor_spec norm_weight(std::string name, int64_t n) {
    return {std::move(name), {n}, GGML_TYPE_F32, fill_kind::ones, 0.0f};
}

tensor_spec bias(std::string name, int64_t n) {
    return {std::move(name), {n}, GGML_TYPE_F32, fill_kind::zeros, 0.0f};
}

std::vector<tensor_spec> decoder_tensors(const preset & p, const vocab_info & vocab, bool qkv_bias) {
    const int64_t n_embd = p.n_embd;
    const int64_t n_head_kv = p.n_head_kv.value_or(p.n_head);
    const int64_t n_embd_kv = n_embd / p.n_head * n_head_kv;
    const float w = p.scales.matrix;

    std::vector<tensor_spec> out;
    out.push_back(matrix("token_embd.weight", n_embd, vocab.n_tokens, p, p.scales.embd));
    for (uint32_t i = 0; i < p.n_layer; ++i) {
        out.push_back(norm_weight(blk(i, "attn_norm.weight"), n_embd));
        out.push_back(matrix(blk(i, "attn_q.weight"), n_embd, n_embd, p, w));
        out.push_back(matrix(blk(i, "attn_k.weight"), n_embd, n_embd_kv, p, w));
        out.push_back(matrix(blk(i, "attn_v.weight"), n_embd, n_embd_kv, p, w));
        if (qkv_bias) {
            out.push_back(bias(blk(i, "attn_q.bias"), n_embd));
            out.push_back(bias(blk(i, "attn_k.bias"), n_embd_kv));
            out.push_back(bias(blk(i, "attn_v.bias"), n_embd_kv));
        }
        out.push_back(matrix(blk(i, "attn_output.weight"), n_embd, n_embd, p, w));
        out.push_back(norm_weight(blk(i, "ffn_norm.weight"), n_embd));
        out.push_back(matrix(blk(i, "ffn_gate.weight"), n_embd, p.n_ff, p, w));
        out.push_back(matrix(blk(i, "ffn_down.weight"), p.n_ff, n_embd, p, w));
        out.push_back(matrix(blk(i, "ffn_up.weight"), n_embd, p.n_ff, p, w));
    }
    out.push_back(norm_weight("output_norm.weight", n_embd));
    if (!p.tied_embeddings) {
        out.push_back(matrix("output.weight", n_embd, vocab.n_tokens, p, p.scales.output));
    }
    return out;
}

}  // namespace

std::vector<tensor_spec> tensors_llama(const preset & p, const vocab_info & vocab) {
    return decoder_tensors(p, vocab, /*qkv_bias=*/false);
}

std::vector<tensor_spec> tensors_qwen2(const preset & p, const vocab_info & vocab) {
    return decoder_tensors(p, vocab, /*qkv_bias=*/true);
}

std::vector<tensor_spec> tensors_bert(const preset & p, const vocab_info & vocab) {
    const int64_t n_embd = p.n_embd;
    const float w = p.scales.matrix;

    std::vector<tensor_spec> out;
    out.push_back(matrix("token_embd.weight", n_embd, vocab.n_tokens, p, p.scales.embd));
    // llama.cpp refuses a BERT without a token-type count; the table must match the tokenizer's.
    out.push_back(f32_matrix("token_types.weight", n_embd, vocab.n_token_types, p.scales.embd));
    out.push_back(f32_matrix("position_embd.weight", n_embd, p.n_ctx, p.scales.embd));
    out.push_back(norm_weight("token_embd_norm.weight", n_embd));
    out.push_back(bias("token_embd_norm.bias", n_embd));
    for (uint32_t i = 0; i < p.n_layer; ++i) {
        for (const char * proj : {"attn_q", "attn_k", "attn_v", "attn_output"}) {
            out.push_back(matrix(blk(i, (std::string(proj) + ".weight").c_str()), n_embd, n_embd, p, w));
            out.push_back(bias(blk(i, (std::string(proj) + ".bias").c_str()), n_embd));
        }
        out.push_back(norm_weight(blk(i, "attn_output_norm.weight"), n_embd));
        out.push_back(bias(blk(i, "attn_output_norm.bias"), n_embd));
        out.push_back(matrix(blk(i, "ffn_up.weight"), n_embd, p.n_ff, p, w));
        out.push_back(bias(blk(i, "ffn_up.bias"), p.n_ff));
        out.push_back(matrix(blk(i, "ffn_down.weight"), p.n_ff, n_embd, p, w));
        out.push_back(bias(blk(i, "ffn_down.bias"), n_embd));
        out.push_back(norm_weight(blk(i, "layer_output_norm.weight"), n_embd));
        out.push_back(bias(blk(i, "layer_output_norm.bias"), n_embd));
    }
    return out;
}

}  // namespace rc::mkmodel
