#pragma once
// A loaded GGUF model: weights, vocabulary and chat templates. Immutable after load, so any thread
// may tokenize, detokenize or render templates concurrently; contexts are created by the engine.
#include <chat.h>
#include <llama.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "util/result.h"

namespace rc::llama {

struct model_load_options {
    int n_gpu_layers = -1;  // -1: as many as the backend takes (0 on CPU-only builds)
    bool use_mmap = true;
    bool check_tensors = false;  // validate tensor data on load (the quarantine load test)
    bool no_alloc = false;       // shapes, vocabulary and templates only, no weights (the device fit's look before a load)
    bool vocab_only = false;     // vocabulary, templates and hyper-parameters only, no tensors (a vocab_file.h GGUF)
    std::string chat_template;   // overrides the GGUF's template when set (a store manifest's template)
    // > 0: tokenize() keeps pieces of the prompts it tokenized, up to this many bytes, and re-tokenizes
    // only new pieces (piece_tokenizer.h; the fleet gateway's vocabularies). 0: every text whole.
    size_t tokenize_cache_bytes = 0;
};

// What the server reports about a model; all read from the GGUF at load time.
struct model_info {
    std::string architecture;   // general.architecture
    std::string name;           // general.name (may be empty)
    std::string description;    // llama_model_desc, e.g. "qwen2 ?B F16"
    uint64_t size_bytes = 0;
    uint64_t n_params = 0;
    int n_ctx_train = 0;
    int n_embd = 0;
    int n_embd_out = 0;
    int n_layer = 0;
    int n_head = 0;
    int n_head_kv = 0;
    int n_vocab = 0;
    bool is_embedding = false;  // has a pooling type / encoder only: serves embeddings, not text
    bool is_recurrent = false;
    bool is_hybrid = false;
    int n_swa = 0;
    bool has_chat_template = false;
};

class piece_tokenizer;

class model {
  public:
    static result<std::shared_ptr<model>> load(const std::string & path, const model_load_options & opts = {});
    // A split GGUF: every part in order (named by content digest in the store, so llama.cpp cannot
    // find the parts by their file names). One path is the same as load(path).
    static result<std::shared_ptr<model>> load(const std::vector<std::string> & paths, const model_load_options & opts = {});
    ~model();
    model(const model &) = delete;
    model & operator=(const model &) = delete;

    llama_model * get() const { return model_; }
    const llama_vocab * vocab() const { return vocab_; }
    const common_chat_templates * templates() const { return templates_.get(); }
    const model_info & info() const { return info_; }
    const std::string & path() const { return path_; }

    // Metadata value by GGUF key, empty when absent.
    std::string meta(const std::string & key) const;

    // `parse_special`: whether text like "<|im_start|>" becomes the special token (true for rendered
    // templates; false for untrusted user text in raw completions is the caller's choice).
    std::vector<llama_token> tokenize(const std::string & text, bool add_special, bool parse_special) const;
    std::string token_to_piece(llama_token token, bool special = false) const;
    std::string detokenize(const std::vector<llama_token> & tokens, bool special = false) const;
    bool is_eog(llama_token token) const { return llama_vocab_is_eog(vocab_, token); }
    bool valid_token(llama_token token) const { return token >= 0 && token < info_.n_vocab; }
    // Bytes of the vocabulary's longest token text (special tokens included): no token covers more
    // of a prompt, so text longer than n_ctx × this cannot fit n_ctx tokens.
    size_t longest_token_bytes() const { return longest_token_bytes_; }

  private:
    model() = default;
    std::string path_;
    llama_model * model_ = nullptr;
    const llama_vocab * vocab_ = nullptr;
    common_chat_templates_ptr templates_;
    std::unique_ptr<piece_tokenizer> pieces_;  // set by tokenize_cache_bytes
    model_info info_;
    size_t longest_token_bytes_ = 1;
};

}  // namespace rc::llama
