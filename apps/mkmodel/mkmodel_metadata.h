// The key/value half of a generated GGUF: general.*, the architecture's hyperparameters, and the
// tokenizer and chat template taken from the pinned llama.cpp tree.
#pragma once

#include "mkmodel_arch_tensors.h"
#include "mkmodel_gguf_ptr.h"
#include "mkmodel_presets.h"
#include "mkmodel_result.h"

#include <filesystem>
#include <string>

namespace rc::mkmodel {

// Tokenizer keys and chat template read from <llama_src>/models.
struct tokenizer_source {
    gguf_ptr vocab;             // metadata of the ggml-vocab-*.gguf (no tensors)
    vocab_info info;            // token count and BERT token-type count
    std::string chat_template;  // empty when the preset has none
};

// Fails with a message naming the missing or unreadable file (and --llama-src as the fix).
result<tokenizer_source> load_tokenizer(const preset & p, const std::filesystem::path & llama_src);

// Writes every key of the model into out, in this order: general.*, <arch>.*, then the copied
// tokenizer.* keys and tokenizer.chat_template. The vocab file's own chat template, if any, is
// dropped so that the template always comes from template_file; tokenizer.ggml.pre is added from
// the preset when the vocab file lacks it.
// extra_keys hook of recurrent presets: <arch>.ssm.conv_kernel, inner_size, state_size,
// time_step_rank and dt_b_c_rms from preset::ssm, as convert_hf_to_gguf.py writes them for Mamba.
void ssm_keys(gguf_context * out, const preset & p);

void set_model_keys(gguf_context * out, const preset & p, const std::string & model_name, const tokenizer_source & tok);

}  // namespace rc::mkmodel
