#pragma once
// Each model's vocabulary, as the gateway keeps it to compute prompts' KV block keys itself
// (prompt_keys.h): fetched once from a host that serves the model (GET /v1/kv/vocab — the model
// file's key/values without tensors, a few MB) and loaded with llama.cpp's vocab_only, together
// with the host catalog's Modelfile defaults (system prompt, template, parameters) the hosts'
// readers apply.
//
// Contract:
// * get() never waits: it answers with what is loaded, else queues one fetch for the model on the
//   cache's own threads (4, so one slow host delays no other model's) and answers nullptr (the router
//   asks the hosts meanwhile). A failed fetch is logged and not retried for `retry_after`; a host that
//   stops sending for 5 s fails it (a stopping gateway waits at most that long for a fetch).
// * A model's vocabulary is kept while the gateway runs (at most `max_models`, least recently used
//   out first); forget() drops one (a host announced a different file for it).
// Thread-safe.
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/render_memo.h"
#include "llama/model.h"
#include "models/local_catalog.h"
#include "util/result.h"

namespace rc::gateway {

struct model_vocab {
    std::shared_ptr<llama::model> model;  // vocab-only: tokenizer, templates, hyper-parameters
    models::model_entry entry;            // the host's name for it and its Modelfile defaults
    // Chat renders kept by conversation shape (engine/render_memo.h); made with the model.
    std::shared_ptr<engine::render_memo> memo;
};

// GET `host_url`/v1/kv/vocab?model=… (with `api_key` as a bearer key when set): the body, or the
// host's error. At most 64 MiB (the HTTP client's bound).
result<std::string> fetch_vocab(const std::string & host_url, const std::string & model, const std::string & api_key);

// What each loaded vocabulary keeps of the prompts it tokenized (llama/piece_tokenizer.h): a resumed
// conversation re-tokenizes only its new turn. 32 MiB holds the pieces of ~1,000 conversations of
// 2k tokens; at most max_models × this in all.
inline constexpr size_t vocab_tokenize_cache_bytes = size_t{32} << 20;

// Loads a vocabulary GGUF (bytes as GET /v1/kv/vocab sends them). Errors: invalid_argument.
result<model_vocab> load_model_vocab(const std::string & gguf_bytes);

class model_vocabs {
  public:
    // `fetch(host_url, model)`: the body of the host's GET /v1/kv/vocab?model=…
    using fetch_fn = std::function<result<std::string>(const std::string & host_url, const std::string & model)>;
    explicit model_vocabs(fetch_fn fetch, std::chrono::milliseconds retry_after = std::chrono::seconds(30), size_t max_models = 16);
    ~model_vocabs();
    model_vocabs(const model_vocabs &) = delete;
    model_vocabs & operator=(const model_vocabs &) = delete;

    std::shared_ptr<const model_vocab> get(const std::string & model, const std::string & host_url);
    void forget(const std::string & model);
    // Per model: "ready" | "fetching" | "failed" (with the error), and the vocabulary's size.
    nlohmann::ordered_json to_json() const;

  private:
    struct slot {
        std::shared_ptr<const model_vocab> vocab;
        bool fetching = false;
        std::string error;
        std::chrono::steady_clock::time_point failed_at{}, used{};
        size_t bytes = 0;
    };
    void run();

    fetch_fn fetch_;
    std::chrono::milliseconds retry_after_;
    size_t max_models_;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::map<std::string, slot> models_;
    std::deque<std::pair<std::string, std::string>> queue_;  // (model, host url)
    bool stop_ = false;
    // Fetches run side by side: a host slow to answer one model's vocabulary delays no other's.
    static constexpr size_t fetch_workers = 4;
    std::vector<std::thread> workers_;
};

}  // namespace rc::gateway
