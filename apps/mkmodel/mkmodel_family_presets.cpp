// The architecture matrix's presets: one small model per family the lab runs (sliding-window, MoE,
// MLA, hybrid, recurrent), each with the pinned tree's vocabulary and chat template closest to the
// real release. Their tensors come from llama.cpp's loader (mkmodel_loader_tensors.h); the keys
// below are what convert_hf_to_gguf.py writes for the family, at a size the test suite can run.
//
// Every tiny family model is 4 layers of 128 (4 heads of 32, 2 KV heads) with an untied lm head at
// std 0.5 and matrices at 0.1, tiny-chat's scales (see mkmodel_presets.cpp): random weights at
// these scales give varied greedy text rather than one repeated token.
#include "mkmodel_presets.h"

namespace rc::mkmodel {
namespace {

constexpr weight_scales k_tiny_scales = {.embd = 0.02f, .matrix = 0.1f, .output = 0.5f};

// These families carry no attention or FFN projection biases; llama.cpp would accept them, real
// checkpoints lack them. (The state-space biases of the hybrids are required and stay.)
constexpr std::string_view k_no_biases[] = {"attn_q.bias", "attn_k.bias", "attn_v.bias", "attn_qkv.bias",
                                            "attn_output.bias", "ffn_gate.bias", "ffn_up.bias", "ffn_down.bias",
                                            "output.bias"};

// Alternating sliding-window and full-attention layers, windows of 128 tokens: small enough that
// a test's prompt outgrows the window.
constexpr key_value k_gemma3_keys[] = {
    {"attention.sliding_window", uint32_t{128}},
    {"attention.sliding_window_pattern", uint32_t{2}},
    {"attention.key_length", uint32_t{32}},
    {"attention.value_length", uint32_t{32}},
    {"rope.freq_base_swa", 10000.0f},
};

constexpr key_value k_cohere2_keys[] = {
    {"attention.sliding_window", uint32_t{128}},
    {"attention.sliding_window_pattern", uint32_t{2}},
    {"logit_scale", 0.25f},
};

// 8 experts of 96, 2 used per token: Qwen3-30B-A3B's 128/8 at a test's size.
constexpr key_value k_qwen3moe_keys[] = {
    {"expert_count", uint32_t{8}},
    {"expert_used_count", uint32_t{2}},
    {"expert_feed_forward_length", uint32_t{96}},
};

// gpt-oss: MoE on every layer, alternating 128-token windows, learned attention sinks.
constexpr key_value k_gpt_oss_keys[] = {
    {"expert_count", uint32_t{8}},
    {"expert_used_count", uint32_t{2}},
    {"expert_feed_forward_length", uint32_t{96}},
    {"attention.sliding_window", uint32_t{128}},
    {"attention.key_length", uint32_t{32}},
    {"attention.value_length", uint32_t{32}},
};

// MLA: K and V come from a 64-wide compressed latent plus a 32-wide shared RoPE key; the cache holds
// the 96 values per token (kv_lora_rank + rope dims), not 2 x heads x head size. Layer 0 dense, the
// rest MoE with one shared expert, as in DeepSeek-V2/V3.
constexpr key_value k_deepseek2_keys[] = {
    {"attention.q_lora_rank", uint32_t{64}},
    {"attention.kv_lora_rank", uint32_t{64}},
    {"attention.key_length", uint32_t{96}},
    {"attention.value_length", uint32_t{64}},
    {"attention.key_length_mla", uint32_t{64}},
    {"attention.value_length_mla", uint32_t{32}},
    {"rope.dimension_count", uint32_t{32}},
    {"leading_dense_block_count", uint32_t{1}},
    {"expert_count", uint32_t{4}},
    {"expert_used_count", uint32_t{2}},
    {"expert_shared_count", uint32_t{1}},
    {"expert_feed_forward_length", uint32_t{96}},
    {"expert_weights_scale", 1.0f},
    {"expert_gating_func", uint32_t{1}},  // softmax, as DeepSeek-V2
};

// Harmony's markers, absent from the Llama 3 vocabulary (the tree has no o200k_harmony).
constexpr std::string_view k_harmony_tokens[] = {"<|start|>", "<|end|>", "<|message|>", "<|channel|>",
                                                 "<|constrain|>", "<|return|>", "<|call|>"};

// DeepSeek-V2 routes by softmax and has no expert-score bias (V3's sigmoid routing does).
constexpr std::string_view k_deepseek2_drop[] = {"attn_q.bias", "attn_k.bias", "attn_v.bias", "attn_output.bias",
                                                 "ffn_gate.bias", "ffn_up.bias", "ffn_down.bias", "output.bias",
                                                 "exp_probs_b"};

// Qwen3.5: gated-delta-net layers with a full-attention layer every second layer; 4 value heads and
// 2 key heads of 32 in the linear attention, multimodal RoPE sections as the release writes them.
constexpr uint32_t k_qwen35_rope_sections[] = {4, 6, 6, 0};
constexpr key_value k_qwen35_keys[] = {
    {"full_attention_interval", uint32_t{2}},
    {"attention.key_length", uint32_t{32}},
    {"attention.value_length", uint32_t{32}},
    {"rope.dimension_count", uint32_t{32}},
    {"rope.dimension_sections", std::span<const uint32_t>(k_qwen35_rope_sections)},
    {"ssm.conv_kernel", uint32_t{4}},
    {"ssm.inner_size", uint32_t{128}},
    {"ssm.state_size", uint32_t{32}},
    {"ssm.time_step_rank", uint32_t{4}},
    {"ssm.group_count", uint32_t{2}},
};

// Granite 4 (H): Mamba-2 layers and attention layers; a layer is recurrent where its KV head count
// is 0. Mamba-2: 4 heads of 64 over d_inner 256, one group, d_state 64.
constexpr uint32_t k_hybrid_heads[] = {4, 0, 4, 0};
constexpr uint32_t k_hybrid_kv_heads[] = {2, 0, 2, 0};
constexpr key_value k_granite_hybrid_keys[] = {
    {"attention.head_count", std::span<const uint32_t>(k_hybrid_heads)},
    {"attention.head_count_kv", std::span<const uint32_t>(k_hybrid_kv_heads)},
    {"ssm.conv_kernel", uint32_t{4}},
    {"ssm.inner_size", uint32_t{256}},
    {"ssm.state_size", uint32_t{64}},
    {"ssm.time_step_rank", uint32_t{4}},
    {"ssm.group_count", uint32_t{1}},
    {"rope.dimension_count", uint32_t{32}},
};

// LFM2: short-convolution layers (3-tap cache) between attention layers.
constexpr key_value k_lfm2_keys[] = {
    {"attention.head_count", std::span<const uint32_t>(k_hybrid_heads)},
    {"attention.head_count_kv", std::span<const uint32_t>(k_hybrid_kv_heads)},
    {"shortconv.l_cache", uint32_t{3}},
};

constexpr key_value k_mamba2_keys[] = {
    {"ssm.conv_kernel", uint32_t{4}},
    {"ssm.inner_size", uint32_t{256}},
    {"ssm.state_size", uint32_t{64}},
    {"ssm.time_step_rank", uint32_t{4}},
    {"ssm.group_count", uint32_t{1}},
};

// RWKV-7: 2 heads of 64 (every release's head size; llama.cpp's CPU kernel steps through a head 64
// floats at a time on AVX-512, so a 32-float head read past its row and mixed heads and sequences)
// and the low-rank adapters of the 0.1B release, scaled down.
constexpr key_value k_rwkv7_keys[] = {
    {"wkv.head_size", uint32_t{64}},
    {"attention.decay_lora_rank", uint32_t{32}},
    {"attention.iclr_lora_rank", uint32_t{32}},
    {"attention.value_residual_mix_lora_rank", uint32_t{32}},
    {"attention.gate_lora_rank", uint32_t{32}},
    {"token_shift_count", uint32_t{2}},
};

// Bench sizes (0.9-1.2 GB in Q8_0) for the three layouts whose tiering differs from a dense model's:
// the resume benchmark per family (bench/families.sh). Shapes of the smallest real releases.

// Gemma 3 1B: 26 layers of 1152, 4 heads of 256, one KV head, 512-token windows, every 6th layer global.
constexpr key_value k_bench_gemma3_keys[] = {
    {"attention.sliding_window", uint32_t{512}},
    {"attention.sliding_window_pattern", uint32_t{6}},
    {"attention.key_length", uint32_t{256}},
    {"attention.value_length", uint32_t{256}},
    {"rope.freq_base_swa", 10000.0f},
};

// Qwen3-30B-A3B's layout at 1/4 width and half depth: 32 experts of 384, 4 used.
constexpr key_value k_bench_qwen3moe_keys[] = {
    {"expert_count", uint32_t{32}},
    {"expert_used_count", uint32_t{4}},
    {"expert_feed_forward_length", uint32_t{384}},
};

// Qwen3.5-0.8B: 24 layers of 1024, attention every 4th layer (8 heads of 256, 2 KV heads, a quarter
// of each head rotated), gated delta net with 16 heads of 128.
constexpr uint32_t k_bench_qwen35_rope_sections[] = {11, 11, 10, 0};
constexpr key_value k_bench_qwen35_keys[] = {
    {"full_attention_interval", uint32_t{4}},
    {"attention.key_length", uint32_t{256}},
    {"attention.value_length", uint32_t{256}},
    {"rope.dimension_count", uint32_t{64}},
    {"rope.dimension_sections", std::span<const uint32_t>(k_bench_qwen35_rope_sections)},
    {"ssm.conv_kernel", uint32_t{4}},
    {"ssm.inner_size", uint32_t{2048}},
    {"ssm.state_size", uint32_t{128}},
    {"ssm.time_step_rank", uint32_t{16}},
    {"ssm.group_count", uint32_t{16}},
};

// The common tiny shape; each entry overrides what its family needs.
constexpr preset tiny(std::string_view name, std::string_view summary, std::string_view arch, std::string_view vocab,
                      std::string_view chat_template) {
    return {
        .name = name,
        .summary = summary,
        .arch = arch,
        .vocab_file = vocab,
        .template_file = chat_template,
        .n_layer = 4,
        .n_embd = 128,
        .n_head = 4,
        .n_head_kv = 2,
        .n_ff = 384,
        .n_ctx = 32768,
        .norm = norm_kind::rms,
        .norm_eps = 1e-6f,
        .rope_freq_base = 1000000.0f,
        .tied_embeddings = false,
        .matrix_type = GGML_TYPE_F16,
        .file_type = LLAMA_FTYPE_MOSTLY_F16,
        .scales = k_tiny_scales,
        .tensors = nullptr,
    };
}

// A bench-size body: Q8_0, tied embeddings and 0.02 weights as bench-1b (its text is never read).
constexpr preset bench(preset p, uint32_t n_layer, uint32_t n_embd, uint32_t n_head, uint32_t n_head_kv, uint32_t n_ff,
                       uint32_t n_ctx) {
    p.n_layer = n_layer;
    p.n_embd = n_embd;
    p.n_head = n_head;
    p.n_head_kv = n_head_kv;
    p.n_ff = n_ff;
    p.n_ctx = n_ctx;
    p.tied_embeddings = true;
    p.matrix_type = GGML_TYPE_Q8_0;
    p.file_type = LLAMA_FTYPE_MOSTLY_Q8_0;
    p.scales = {.embd = 0.02f, .matrix = 0.02f, .output = 0.02f};
    return p;
}

constexpr preset with(preset p, std::span<const key_value> keys, std::span<const std::string_view> drop = {}) {
    p.keys = keys;
    p.drop_tensors = drop;
    return p;
}

// No attention heads or RoPE; keeps the channel-mixing FFN size (RWKV has one, Mamba writes 0).
constexpr preset recurrent(preset p, uint32_t n_ff = 0) {
    p.n_head = 0;
    p.n_head_kv = std::nullopt;
    p.n_ff = n_ff;
    p.rope_freq_base = std::nullopt;
    return p;
}

// MLA's absorbed attention is multi-query: one latent K/V row per token, written as head_count_kv 1.
constexpr preset mla(preset p) {
    p.n_head_kv = 1;
    return p;
}

constexpr preset with_special_tokens(preset p, std::span<const std::string_view> tokens) {
    p.special_tokens = tokens;
    return p;
}

// Command R ties its lm head to the embeddings and multiplies the logits by logit_scale (0.25): at the
// usual 0.02 the tiny model's logits were flat and greedy choices near-ties. Its embeddings are drawn
// at this std instead.
constexpr preset embedding_scale(preset p, float std) {
    p.scales.embd = std;
    return p;
}

// RWKV-7's projections at 0.1 decayed its state so fast that greedy text settled on 5 tokens of 24;
// at 0.2 it varies like the others.
constexpr preset matrix_scale(preset p, float std) {
    p.scales.matrix = std;
    return p;
}

constexpr preset layer_norm(preset p, float eps) {
    p.norm = norm_kind::layer;
    p.norm_eps = eps;
    return p;
}

const preset k_family_presets[] = {
    with(tiny("tiny-llama3", "llama (Llama 3 GQA), 4 x 128, F16, Llama 3 BPE tokenizer and tool template", "llama",
              "ggml-vocab-llama-bpe.gguf", "meta-llama-Llama-3.1-8B-Instruct.jinja"),
         {}, k_no_biases),
    with(tiny("tiny-qwen3", "qwen3 (QK-norm GQA), 4 x 128, F16, Qwen tokenizer, Qwen3 thinking + tool template", "qwen3",
              "ggml-vocab-qwen2.gguf", "Qwen-Qwen3-0.6B.jinja"),
         {}, k_no_biases),
    with(tiny("tiny-gemma3", "gemma3 (iSWA: 128-token windows on every other layer), 4 x 128, F16, Gemma 4 tokenizer and template",
              "gemma3", "ggml-vocab-gemma-4.gguf", "google-gemma-4-31B-it.jinja"),
         k_gemma3_keys, k_no_biases),
    with(embedding_scale(layer_norm(tiny("tiny-cohere2", "cohere2 (iSWA, Command R7B), 4 x 128, F16, Command-R tokenizer and tool template",
                                      "cohere2", "ggml-vocab-command-r.gguf", "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja"),
                                 1e-5f),
                         0.5f),
         k_cohere2_keys, k_no_biases),
    with(tiny("tiny-qwen3moe", "qwen3moe (8 experts, 2 used), 4 x 128, F16, Qwen tokenizer, Qwen3 template", "qwen3moe",
              "ggml-vocab-qwen2.gguf", "Qwen-Qwen3-0.6B.jinja"),
         k_qwen3moe_keys, k_no_biases),
    with(with_special_tokens(tiny("tiny-gpt-oss", "gpt-oss (MoE + iSWA + attention sinks), 4 x 128, F16, Llama 3 BPE tokenizer with harmony's markers, gpt-oss template",
                                  "gpt-oss", "ggml-vocab-llama-bpe.gguf", "openai-gpt-oss-120b.jinja"),
                             k_harmony_tokens),
         k_gpt_oss_keys),
    with(mla(tiny("tiny-deepseek2", "deepseek2 (MLA, MoE with a shared expert), 4 x 128, F16, DeepSeek tokenizer, DeepSeek-V3.1 template",
                  "deepseek2", "ggml-vocab-deepseek-llm.gguf", "deepseek-ai-DeepSeek-V3.1.jinja")),
         k_deepseek2_keys, k_deepseek2_drop),
    with(tiny("tiny-qwen35", "qwen35 (hybrid: gated delta net + attention every 2nd layer), 4 x 128, F16, Qwen3.5 tokenizer and template",
              "qwen35", "ggml-vocab-qwen35.gguf", "Qwen3.5-4B.jinja"),
         k_qwen35_keys, k_no_biases),
    with(tiny("tiny-granite4", "granitehybrid (Granite 4: Mamba-2 + attention), 4 x 128, F16, Llama 3 BPE tokenizer, Granite 4 template",
              "granitehybrid", "ggml-vocab-llama-bpe.gguf", "ibm-granite-granite-4.0.jinja"),
         k_granite_hybrid_keys, k_no_biases),
    with(tiny("tiny-lfm2", "lfm2 (short-conv hybrid), 4 x 128, F16, Llama 3 BPE tokenizer, LFM2.5 template", "lfm2",
              "ggml-vocab-llama-bpe.gguf", "LFM2.5-Instruct.jinja"),
         k_lfm2_keys, k_no_biases),
    with(recurrent(tiny("tiny-mamba2", "mamba2 (recurrent, 4 heads of 64), 4 x 128, F16, GPT-NeoX tokenizer, ChatML template",
                        "mamba2", "ggml-vocab-gpt-neox.gguf", "Qwen-Qwen2.5-7B-Instruct.jinja")),
         k_mamba2_keys, k_no_biases),
    with(matrix_scale(layer_norm(recurrent(tiny("tiny-rwkv7", "rwkv7 (recurrent, 2 heads of 64), 4 x 128, F16, GPT-NeoX tokenizer, RWKV World template", "rwkv7",
                                   "ggml-vocab-gpt-neox.gguf", "llama-cpp-rwkv-world.jinja"),
                              384),
                    1e-5f),
                      0.2f),
         k_rwkv7_keys),
    with(bench(tiny("bench-gemma3", "gemma3 iSWA, Gemma 3 1B shape (26 x 1152, 512-token windows), Q8_0, Gemma 4 tokenizer and template",
                    "gemma3", "ggml-vocab-gemma-4.gguf", "google-gemma-4-31B-it.jinja"),
               26, 1152, 4, 1, 6912, 32768),
         k_bench_gemma3_keys, k_no_biases),
    with(bench(tiny("bench-qwen3moe", "qwen3moe, 24 x 1024, 32 experts of 384 (4 used), Q8_0, Qwen tokenizer, Qwen3 template",
                    "qwen3moe", "ggml-vocab-qwen2.gguf", "Qwen-Qwen3-0.6B.jinja"),
               24, 1024, 16, 4, 3072, 32768),
         k_bench_qwen3moe_keys, k_no_biases),
    with(bench(tiny("bench-qwen35", "qwen35 hybrid, Qwen3.5-0.8B shape (24 x 1024, attention every 4th layer), Q8_0, Qwen3.5 tokenizer and template",
                    "qwen35", "ggml-vocab-qwen35.gguf", "Qwen3.5-4B.jinja"),
               24, 1024, 8, 2, 3584, 32768),
         k_bench_qwen35_keys, k_no_biases),
};

}  // namespace

std::span<const preset> family_presets() {
    return k_family_presets;
}

}  // namespace rc::mkmodel
