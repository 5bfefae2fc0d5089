#pragma once
// Private to the engine: the state its thread owns, and the steps of its loop (engine_loop.cpp).
// Only the atomics are read by other threads (engine::stats).
#include <llama.h>

#include <atomic>
#include <deque>
#include <memory>
#include <vector>

#include "engine/engine.h"
#include "engine/sequence.h"
#include "llama/batch.h"

namespace rc::engine {

using pending_request = std::pair<generation_request, std::shared_ptr<request_channel>>;

struct engine::impl {
    const llama::model * model = nullptr;
    engine_options opts;
    int n_ctx = 0;
    llama_context * ctx = nullptr;
    llama_memory_t mem = nullptr;
    std::unique_ptr<llama::batch> batch;
    std::vector<std::unique_ptr<sequence>> active;  // admission order
    std::deque<pending_request> waiting;
    std::vector<llama_seq_id> free_ids;

    std::atomic<int> queued{0};
    std::atomic<int> running{0};
    std::atomic<int> cells_used{0};
    std::atomic<uint64_t> prompt_tokens{0}, generated_tokens{0}, finished{0}, cancelled{0}, failed{0};

    ~impl() {
        if (ctx) llama_free(ctx);
    }

    // One engine step; false when there was nothing to do.
    bool step();
    void drop_cancelled();
    void admit();
    bool decode_generate();
    bool decode_embed();
    void sample_outputs();
    void finish(sequence & s, finish_reason reason, const std::string & stop_word = {});
    void fail(sequence & s, errc code, const std::string & message);
    void release(sequence & s);
    void remove_finished();
    void fail_all(const std::string & message);
    void publish_gauges();
};

}  // namespace rc::engine
