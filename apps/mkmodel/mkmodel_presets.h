// The preset table: every model the generator can write, one plain struct each.
//
// A preset names its architecture, where its tokenizer and chat template come from in the pinned
// llama.cpp tree, its shape, the hyperparameter keys that shape turns into, the weight types and
// scales, and the function listing its tensors. Adding a model is one table entry plus (for a new
// architecture) one tensor-list function in mkmodel_arch_tensors.cpp and, if the architecture
// reads keys beyond the common ones, an extra_keys hook.
#pragma once

#include "mkmodel_arch_tensors.h"

#include <ggml.h>
#include <llama.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <variant>
#include <vector>

struct gguf_context;

namespace rc::mkmodel {

enum class norm_kind { rms, layer };

// Standard deviations of the random weights. Norm weights are always 1 and biases 0.
struct weight_scales {
    float embd = 0.02f;    // token (and position / token-type) embeddings; also the lm head when tied
    float matrix = 0.02f;  // attention and feed-forward projections
    float output = 0.02f;  // an untied lm head (output.weight)
};

// The state-space shape of a recurrent (Mamba) model: the <arch>.ssm.* keys. Zero for other models.
struct ssm_shape {
    uint32_t conv_kernel = 0;     // d_conv: taps of the causal depthwise convolution
    uint32_t inner_size = 0;      // d_inner: llama.cpp's mamba accepts only 2 * n_embd
    uint32_t state_size = 0;      // d_state: SSM state per inner channel
    uint32_t time_step_rank = 0;  // dt_rank: width of the low-rank dt projection
    bool dt_b_c_rms = false;      // RMS-norm dt, B and C (FalconMamba); false for Mamba
};

// One more hyperparameter key, <arch>.<suffix>: a number, a flag, or a per-layer array.
struct key_value {
    std::string_view suffix = {};
    std::variant<uint32_t, float, bool, std::span<const uint32_t>> value = uint32_t{0};
};

struct preset {
    std::string_view name = {};
    std::string_view summary = {};

    std::string_view arch = {};           // general.architecture and the prefix of the hyperparameter keys
    std::string_view vocab_file = {};     // <llama-src>/models/<vocab_file>: every tokenizer.* key is copied
    std::string_view template_file = {};  // <llama-src>/models/templates/<template_file>; empty: none
    // tokenizer.ggml.pre to write when the vocab file has none (old vocab files, e.g. GPT-NeoX);
    // empty: leave it absent (llama.cpp then warns and uses its default pre-tokenizer).
    std::string_view fallback_tokenizer_pre = {};

    uint32_t n_layer = 0;
    uint32_t n_embd = 0;
    uint32_t n_head = 0;
    std::optional<uint32_t> n_head_kv = std::nullopt;  // written only when set (llama.cpp defaults it to n_head)
    uint32_t n_ff = 0;
    uint32_t n_ctx = 0;  // <arch>.context_length (n_ctx_train)

    norm_kind norm = norm_kind::rms;
    float norm_eps = 1e-5f;
    std::optional<float> rope_freq_base = std::nullopt;     // unset for architectures without RoPE
    bool write_rope_dimension_count = false;                // <arch>.rope.dimension_count = n_embd / n_head
    bool write_vocab_size = false;                          // <arch>.vocab_size
    std::optional<uint32_t> pooling_type = std::nullopt;    // <arch>.pooling_type (a llama_pooling_type)
    std::optional<bool> causal_attention = std::nullopt;    // <arch>.attention.causal

    ssm_shape ssm{};  // recurrent models only; written by the ssm_keys hook

    bool tied_embeddings = true;  // decoders: no output.weight, llama.cpp reuses token_embd as the lm head

    ggml_type matrix_type = GGML_TYPE_F16;  // 2-D projection and embedding weights; norms and biases stay F32
    llama_ftype file_type = LLAMA_FTYPE_MOSTLY_F16;
    weight_scales scales{};

    // The tensors of the model, in file order; vocab describes the copied tokenizer. Null: the list
    // llama.cpp's loader asks for (mkmodel_loader_tensors.h), less drop_tensors.
    std::vector<tensor_spec> (*tensors)(const preset & p, const vocab_info & vocab) = nullptr;
    std::span<const std::string_view> drop_tensors = {};  // name parts of optional tensors the family lacks
    std::span<const key_value> keys = {};                  // hyperparameters beyond the common ones
    // Control tokens the template needs and the vocab lacks (gpt-oss's harmony markers on the Llama 3
    // vocab): written in order over the vocab's <|reserved_special_token_N|> entries, so the vocab
    // keeps its size and merges and the markers tokenize as one control token each, as in the release.
    std::span<const std::string_view> special_tokens = {};
    // Keys beyond the common hyperparameters (e.g. ssm.* for a recurrent model); may be null.
    void (*extra_keys)(gguf_context * ctx, const preset & p) = nullptr;
};

std::span<const preset> all_presets();

// The architecture matrix's families (mkmodel_family_presets.cpp); part of all_presets().
std::span<const preset> family_presets();

// nullptr when no preset has that name.
const preset * find_preset(std::string_view name);

// A weight type --type can select for a preset's matrices, with the general.file_type it implies.
struct matrix_type_choice {
    std::string_view name = {};  // as written on the command line: f32, f16, q8_0
    ggml_type type = GGML_TYPE_F32;
    llama_ftype file_type = LLAMA_FTYPE_ALL_F32;
};

std::span<const matrix_type_choice> all_matrix_types();

// nullptr when no choice has that name.
const matrix_type_choice * find_matrix_type(std::string_view name);

// The preset with its matrices (and general.file_type) switched to `choice`; norms, biases and the
// F32 embeddings of a tensor list stay as they are.
preset with_matrix_type(preset p, const matrix_type_choice & choice);

}  // namespace rc::mkmodel
