#pragma once
// A model's vocabulary as a GGUF of its own: every key/value of the model file (architecture,
// hyper-parameters, tokenizer, chat templates) and no tensors — a few MB where the model is GBs.
// llama.cpp loads it with `vocab_only` (model_load_options::vocab_only) and then tokenizes and
// renders templates exactly as the full model does. The fleet gateway computes prompts' KV block
// keys from it (GET /v1/kv/vocab, docs/GATEWAY.md).
#include <string>
#include <utility>
#include <vector>

#include "util/result.h"

namespace rc::llama {

// The vocabulary GGUF of the model whose (first) file is `path`, as bytes. `strings` are set on top
// (a store model's template override goes in as tokenizer.chat_template; the server adds what else a
// reader needs). A split model's split.* keys are left out: the result stands alone. Errors:
// not_found, invalid_argument (not a GGUF).
result<std::string> vocab_gguf(const std::string & path, const std::vector<std::pair<std::string, std::string>> & strings = {});

}  // namespace rc::llama
