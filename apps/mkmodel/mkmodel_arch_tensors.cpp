#include "mkmodel_arch_tensors.h"

#include "mkmodel_presets.h"

#include <cmath>
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

std::vector<tensor_spec> tensors_mamba(const preset & p, const vocab_info & vocab) {
    const int64_t n_embd = p.n_embd;
    const int64_t d_conv = p.ssm.conv_kernel;
    const int64_t d_inner = p.ssm.inner_size;
    const int64_t d_state = p.ssm.state_size;
    const int64_t dt_rank = p.ssm.time_step_rank;
    const float w = p.scales.matrix;

    // Mamba's reference init (mamba_simple.py): dt = exp(U(log 0.001, log 0.1)), bias = softplus^-1(dt).
    // A normal in log space centred on softplus^-1(0.01) with std 1 covers about the same range.
    // A literal rather than std::log(std::expm1(0.01f)): libm results may differ in the last bit
    // between platforms, and the bytes must not.
    constexpr float dt_bias_mean = -4.600166f;  // softplus^-1(0.01) = log(expm1(0.01))
    constexpr float dt_bias_std = 1.0f;
    // PyTorch's Conv1d init for a depthwise kernel of d_conv taps: unit gain.
    const float conv_std = 1.0f / std::sqrt(static_cast<float>(d_conv));

    // ssm_dt.weight has rows of dt_rank values, shorter than a Q8_0 block; llama-quantize keeps such
    // tensors in F16.
    tensor_spec dt_proj_proto = matrix("", dt_rank, d_inner, p, w);
    if (dt_rank % ggml_blck_size(dt_proj_proto.type) != 0) {
        dt_proj_proto.type = GGML_TYPE_F16;
    }

    std::vector<tensor_spec> out;
    out.push_back(matrix("token_embd.weight", n_embd, vocab.n_tokens, p, p.scales.embd));
    for (uint32_t i = 0; i < p.n_layer; ++i) {
        out.push_back(norm_weight(blk(i, "attn_norm.weight"), n_embd));
        out.push_back(matrix(blk(i, "ssm_in.weight"), n_embd, 2 * d_inner, p, w));
        out.push_back(f32_matrix(blk(i, "ssm_conv1d.weight"), d_conv, d_inner, conv_std));
        out.push_back(bias(blk(i, "ssm_conv1d.bias"), d_inner));
        out.push_back(matrix(blk(i, "ssm_x.weight"), d_inner, dt_rank + 2 * d_state, p, w));
        tensor_spec dt_proj = dt_proj_proto;
        dt_proj.name = blk(i, "ssm_dt.weight");
        out.push_back(std::move(dt_proj));
        out.push_back({blk(i, "ssm_dt.bias"), {d_inner}, GGML_TYPE_F32, fill_kind::normal, dt_bias_std, dt_bias_mean});
        // No ".weight" suffix on A and D, as llama.cpp names them.
        out.push_back({blk(i, "ssm_a"), {d_state, d_inner}, GGML_TYPE_F32, fill_kind::negative_ramp, 0.0f});
        out.push_back({blk(i, "ssm_d"), {d_inner}, GGML_TYPE_F32, fill_kind::ones, 0.0f});
        out.push_back(matrix(blk(i, "ssm_out.weight"), d_inner, n_embd, p, w));
    }
    out.push_back(norm_weight("output_norm.weight", n_embd));
    if (!p.tied_embeddings) {
        out.push_back(matrix("output.weight", n_embd, vocab.n_tokens, p, p.scales.output));
    }
    return out;
}

}  // namespace rc::mkmodel
