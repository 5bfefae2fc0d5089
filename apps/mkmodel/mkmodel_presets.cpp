#include "mkmodel_presets.h"

#include "mkmodel_metadata.h"

namespace rc::mkmodel {
namespace {

// Weight scales. The usual 0.02 for every matrix is fine at 2048 wide but makes a 128-wide random
// model degenerate under greedy decoding: with tied embeddings the logit of the current token is
// ||e||^2, and with weak layers the next token barely depends on the last one, so generation repeats
// one token forever. A matrix std near 1/sqrt(n_embd) (unit gain: each layer's output is as large as
// its normalized input) lets the residual stream, not the token's own embedding, pick the next token.
// Measured (tied embeddings) with greedy decoding from a chat prompt, 200 tokens, seeds 1/7/42/100/12345:
// tiny-chat at 0.02 -> 1-2 distinct tokens; 0.05 -> 6-9; 0.1 -> 146-199, no end-of-generation token.
// bench-1b at 0.02 (~0.9/sqrt(2048)) already gives 29-46 distinct tokens out of 32-48.
//
// tiny-chat's lm head is untied at std 0.5. Tied to 0.02 embeddings the logits were nearly flat
// (chosen token's log-probability about -11 over 151936 tokens, uniform is -11.9), so every greedy
// choice was a near-tie that tiny numeric differences (batch shape, threads, weight type) flip. With
// output.weight at 0.5 the chosen token's log-probability is about -1 on average (-2.8 to 0 per step)
// as in a real model; same seeds and prompt: 195-200 distinct tokens of 200, no end-of-generation
// token, in F16, F32 and Q8_0.
constexpr preset k_presets[] = {
    {
        .name = "tiny-chat",
        .summary = "qwen2, 4 layers x 128, F16, Qwen2.5 tokenizer and tool-capable chat template",
        .arch = "qwen2",
        .vocab_file = "ggml-vocab-qwen2.gguf",
        .template_file = "Qwen-Qwen2.5-7B-Instruct.jinja",
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
        .scales = {.embd = 0.02f, .matrix = 0.1f, .output = 0.5f},
        .tensors = tensors_qwen2,
    },
    {
        .name = "bench-1b",
        .summary = "llama, 16 layers x 2048 (Llama-3.2-1B shape), Q8_0, SentencePiece 32k, Mistral [INST] template",
        .arch = "llama",
        .vocab_file = "ggml-vocab-llama-spm.gguf",
        // A Mistral/llama-2 style [INST] template that knows bos/eos and folds a system message into
        // the last user turn, so system+user conversations render.
        .template_file = "mistralai-Mistral-Nemo-Instruct-2407.jinja",
        .n_layer = 16,
        .n_embd = 2048,
        .n_head = 32,
        .n_head_kv = 8,
        .n_ff = 8192,
        .n_ctx = 16384,
        .norm = norm_kind::rms,
        .norm_eps = 1e-5f,
        .rope_freq_base = 10000.0f,
        .write_rope_dimension_count = true,
        .write_vocab_size = true,
        .tied_embeddings = true,
        .matrix_type = GGML_TYPE_Q8_0,
        .file_type = LLAMA_FTYPE_MOSTLY_Q8_0,
        .scales = {.embd = 0.02f, .matrix = 0.02f, .output = 0.02f},
        .tensors = tensors_llama,
    },
    {
        // bench-1b's tokenizer and template in the shape of SmolLM2-135M (30 layers x 576, 9 heads of
        // 64, 3 KV heads): a small real model for benchmarks that run many servers on two cores (the
        // fleet gateway's, bench/gateway.sh), where a 1B model's 2k-token prefill takes most of a minute.
        .name = "bench-135m",
        .summary = "llama, 30 layers x 576 (SmolLM2-135M shape), Q8_0, SentencePiece 32k, Mistral [INST] template",
        .arch = "llama",
        .vocab_file = "ggml-vocab-llama-spm.gguf",
        .template_file = "mistralai-Mistral-Nemo-Instruct-2407.jinja",
        .n_layer = 30,
        .n_embd = 576,
        .n_head = 9,
        .n_head_kv = 3,
        .n_ff = 1536,
        .n_ctx = 8192,
        .norm = norm_kind::rms,
        .norm_eps = 1e-5f,
        .rope_freq_base = 100000.0f,
        .write_rope_dimension_count = true,
        .write_vocab_size = true,
        .tied_embeddings = true,
        .matrix_type = GGML_TYPE_Q8_0,
        .file_type = LLAMA_FTYPE_MOSTLY_Q8_0,
        .scales = {.embd = 0.02f, .matrix = 0.04f, .output = 0.02f},
        .tensors = tensors_llama,
    },
    {
        // bench-1b's tokenizer and template on a tiny body: the HTTP-overhead benchmark, where the
        // server's own per-request and per-token costs must not drown in model compute.
        .name = "bench-tiny",
        .summary = "llama, 2 layers x 256, Q8_0, SentencePiece 32k, Mistral [INST] template (HTTP benchmarks)",
        .arch = "llama",
        .vocab_file = "ggml-vocab-llama-spm.gguf",
        .template_file = "mistralai-Mistral-Nemo-Instruct-2407.jinja",
        .n_layer = 2,
        .n_embd = 256,
        .n_head = 4,
        .n_head_kv = 2,
        .n_ff = 768,
        .n_ctx = 4096,
        .norm = norm_kind::rms,
        .norm_eps = 1e-5f,
        .rope_freq_base = 10000.0f,
        .write_rope_dimension_count = true,
        .write_vocab_size = true,
        .tied_embeddings = false,
        .matrix_type = GGML_TYPE_Q8_0,
        .file_type = LLAMA_FTYPE_MOSTLY_Q8_0,
        .scales = {.embd = 0.02f, .matrix = 0.1f, .output = 0.5f},
        .tensors = tensors_llama,
    },
    {
        // A recurrent model: per-sequence state instead of a per-token KV cache. Mamba-130m's
        // tokenizer (GPT-NeoX, which convert_hf_to_gguf.py also uses for Mamba checkpoints without
        // tokenizer files) and tiny-chat's ChatML template, whose markers the NeoX vocab tokenizes
        // as plain text. Mamba-1 shape rules: d_inner = 2 * n_embd (the only expansion llama.cpp
        // accepts), dt_rank = ceil(n_embd / 16), d_state 16 and d_conv 4 as in every Mamba release.
        // llama.cpp reads no head count or FFN size for mamba; both are written as 0, as by
        // convert_hf_to_gguf.py. The context length is arbitrary for a recurrent model (convert writes
        // 2^20); 32768 as for tiny-chat, since the engine's default context is the trained one.
        .name = "tiny-mamba",
        .summary = "mamba (recurrent), 4 layers x 128, d_inner 256, d_state 16, F16, GPT-NeoX tokenizer, ChatML template",
        .arch = "mamba",
        .vocab_file = "ggml-vocab-gpt-neox.gguf",
        .template_file = "Qwen-Qwen2.5-7B-Instruct.jinja",
        // The NeoX vocab file predates tokenizer.ggml.pre; convert_hf_to_gguf.py writes "mpt" (the
        // GPT-NeoX pre-tokenizer regex) when it builds a Mamba model from it.
        .fallback_tokenizer_pre = "mpt",
        .n_layer = 4,
        .n_embd = 128,
        .n_head = 0,
        .n_ff = 0,
        .n_ctx = 32768,
        .norm = norm_kind::rms,
        .norm_eps = 1e-5f,
        .ssm = {.conv_kernel = 4, .inner_size = 256, .state_size = 16, .time_step_rank = 8, .dt_b_c_rms = false},
        .tied_embeddings = false,
        .matrix_type = GGML_TYPE_F16,
        .file_type = LLAMA_FTYPE_MOSTLY_F16,
        .scales = {.embd = 0.02f, .matrix = 0.1f, .output = 0.5f},
        .tensors = tensors_mamba,
        .extra_keys = ssm_keys,
    },
    {
        .name = "tiny-embed",
        .summary = "bert, 2 layers x 128, F16, BGE WordPiece tokenizer, mean pooling (embeddings only)",
        .arch = "bert",
        .vocab_file = "ggml-vocab-bert-bge.gguf",
        .template_file = "",
        .n_layer = 2,
        .n_embd = 128,
        .n_head = 4,
        .n_ff = 512,
        .n_ctx = 512,
        .norm = norm_kind::layer,
        .norm_eps = 1e-12f,
        .pooling_type = 1,  // LLAMA_POOLING_TYPE_MEAN
        .causal_attention = false,
        .matrix_type = GGML_TYPE_F16,
        .file_type = LLAMA_FTYPE_MOSTLY_F16,
        .scales = {.embd = 0.02f, .matrix = 0.02f, .output = 0.02f},
        .tensors = tensors_bert,
    },
};

// general.file_type must match the matrices: llama.cpp reports it as the model's type, and for
// "mostly" types it is the type of the bulk of the weights, not of the F32 norms and biases.
constexpr matrix_type_choice k_matrix_types[] = {
    {.name = "f32", .type = GGML_TYPE_F32, .file_type = LLAMA_FTYPE_ALL_F32},
    {.name = "f16", .type = GGML_TYPE_F16, .file_type = LLAMA_FTYPE_MOSTLY_F16},
    {.name = "q8_0", .type = GGML_TYPE_Q8_0, .file_type = LLAMA_FTYPE_MOSTLY_Q8_0},
};

}  // namespace

std::span<const preset> all_presets() {
    static const std::vector<preset> all = [] {
        std::vector<preset> v(std::begin(k_presets), std::end(k_presets));
        const auto families = family_presets();
        v.insert(v.end(), families.begin(), families.end());
        return v;
    }();
    return all;
}

const preset * find_preset(std::string_view name) {
    for (const preset & p : all_presets()) {
        if (p.name == name) {
            return &p;
        }
    }
    return nullptr;
}

std::span<const matrix_type_choice> all_matrix_types() {
    return k_matrix_types;
}

const matrix_type_choice * find_matrix_type(std::string_view name) {
    for (const matrix_type_choice & c : k_matrix_types) {
        if (c.name == name) {
            return &c;
        }
    }
    return nullptr;
}

preset with_matrix_type(preset p, const matrix_type_choice & choice) {
    p.matrix_type = choice.type;
    p.file_type = choice.file_type;
    return p;
}

}  // namespace rc::mkmodel
