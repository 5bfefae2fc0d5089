#pragma once
// Private to the engine: the state its thread owns, and the steps of its loop (engine_loop.cpp).
// Only the atomics are read by other threads (engine::stats).
#include <llama.h>

#include <atomic>
#include <deque>
#include <future>
#include <unordered_map>
#include <memory>
#include <vector>

#include "engine/engine.h"
#include "engine/kv_bridge.h"
#include "engine/scheduler.h"
#include "engine/sequence.h"
#include "llama/batch.h"

namespace rc::engine {

using pending_request = std::pair<generation_request, std::shared_ptr<request_channel>>;

// Where an admitted prompt's prefix comes from (engine_kv.cpp): the first `from_context` tokens are
// shared with a sequence already in the context, then whole blocks restored from T1/T2.
struct reuse_plan {
    sequence * donor = nullptr;
    int from_context = 0;
    std::vector<kv::block_key> tier_keys;  // consecutive blocks starting at token `from_context`
    std::vector<int> tier_tokens;          // tokens each of those blocks covers (the last may keep fewer
                                           // than its stored block holds: a prompt-end alias, trimmed)
    std::vector<kv::tier_name> tier_of;
    bool needs_disk() const;
};

// A request waiting in `promoting` while the I/O pool reads its blocks from disk.
struct promotion {
    std::unique_ptr<sequence> seq;
    reuse_plan plan;
    std::shared_ptr<std::atomic<bool>> ready = std::make_shared<std::atomic<bool>>(false);
    std::shared_ptr<std::vector<kv::blob_ptr>> blobs = std::make_shared<std::vector<kv::blob_ptr>>();
    steady::time_point started = steady::now();
};

// A lookup waiting for the engine thread (engine_lookup.cpp).
struct engine::lookup_job {
    std::vector<llama_token> tokens;
    std::string cache_salt;
    std::promise<kv_lookup> answer;
};

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
    std::unique_ptr<kv::kv_manager> kv;  // null: no tiers below the context
    std::unique_ptr<kv_bridge> bridge;
    int max_idle = 0;                     // idle conversations kept in the context
    // Recurrent, hybrid and sliding-window models: the tiers hold whole-sequence snapshots (state
    // after exactly N tokens, keyed like a block ending at N) instead of per-token blocks.
    bool whole_snapshots = false;
    std::vector<promotion> promoting;
    prefill_rate prefill_speed;           // sizes the prefill budget while streams decode
    // Where a demoted conversation's prompt ended inside a stored block: the partial key of the
    // prompt's end → that block's key. A resume that diverges there (the client resent our reply
    // edited, or regenerates it) restores the block and trims it, without storing a second copy.
    struct prompt_end_alias {
        kv::block_key target;
        int from = 0;  // the block's first token
    };
    std::unordered_map<kv::block_key, prompt_end_alias, kv::block_key_hash> prompt_end_aliases;
    std::deque<kv::block_key> prompt_end_order;  // oldest first, bounded

    std::atomic<int> queued{0};
    std::atomic<int> running{0};
    std::atomic<int> cells_used{0};
    std::atomic<int> cells_cached{0};
    std::atomic<int> idle_count{0};
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

    // Prefix reuse and tiering (engine_kv.cpp).
    reuse_plan plan_reuse(const sequence & s);
    void apply_reuse(sequence & s, const reuse_plan & plan, const std::vector<kv::blob_ptr> & disk_blobs);
    bool admit_with_reuse(std::unique_ptr<sequence> s);  // false: parked in `promoting`
    void poll_promotions();
    void retire(sequence & s);                          // finished: keep its cells as an idle conversation
    bool evict_lru_idle();                              // demote the least recently used idle conversation
    void save_blocks(sequence & s);
    void save_snapshot(sequence & s, int n_tokens);
    void prefetch(const std::vector<llama_token> & tokens, const std::string & salt);
    reuse_plan plan_snapshot(const sequence & s) const;
    kv_lookup answer_lookup(const std::vector<llama_token> & tokens, const std::string & salt);  // engine_lookup.cpp
    int count_idle() const;
};

}  // namespace rc::engine
