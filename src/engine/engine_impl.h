#pragma once
// Private to the engine: the state its thread owns, and the steps of its loop (engine_loop.cpp,
// engine_admit.cpp, engine_kv.cpp). Only the atomics are read by other threads (engine::stats).
#include <llama.h>

#include <atomic>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "engine/engine.h"
#include "engine/kv_executor.h"
#include "engine/scheduler.h"
#include "engine/step_cost_cache.h"
#include "engine/sequence.h"
#include "llama/batch.h"

namespace rc::engine {

using pending_request = std::pair<generation_request, std::shared_ptr<request_channel>>;

// Ends a request with an error event (engine_loop.cpp).
void send_error(request_channel & ch, errc code, const std::string & message);

inline double ms_between(steady::time_point a, steady::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

// A request whose prefix is being restored from disk: the I/O pool hands over blocks one by one
// (inbox), the engine restores each as it arrives, while the next is read.
struct promotion {
    std::unique_ptr<sequence> seq;
    kv::reuse_plan plan;
    size_t next = 0;      // next block of plan.blocks to restore
    int reserved = 0;     // ledger cells still reserved for the blocks not yet restored
    struct inbox {
        std::mutex mutex;
        std::vector<std::pair<size_t, kv::blob_ptr>> blocks;
        bool ended = false;
        bool abandoned = false;  // the engine dropped the promotion: refuse what still arrives
        size_t delivered = 0;
        // Drops the blocks not yet restored (which lets the reading go on, to its end) and refuses
        // the rest. Any thread.
        void abandon() {
            std::vector<std::pair<size_t, kv::blob_ptr>> dropped;
            std::lock_guard lock(mutex);
            abandoned = true;
            dropped.swap(blocks);
        }
    };
    std::shared_ptr<inbox> in = std::make_shared<inbox>();
    steady::time_point started = steady::now();
};

// Step metrics (engine_stats): written by the engine thread, read by stats().
struct step_counters {
    kv::fixed_histogram<13> seconds{{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2.5, 5, 10}};
    kv::fixed_histogram<12> tokens{{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048}};
    std::atomic<uint64_t> prefill_chunks{0};
    std::atomic<int> prefill_budget{0};
    std::atomic<double> cost_fixed_ms{0}, cost_per_token_ms{0};
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
    std::unique_ptr<llama::batch> batch;
    std::vector<std::unique_ptr<sequence>> active;   // admission order; live and idle
    std::deque<pending_request> waiting;             // not yet a sequence
    std::deque<std::unique_ptr<sequence>> queued;    // made into a sequence, waiting for room: swapped-out
                                                     // (preempted) ones first, oldest first, then the next new one
    std::vector<promotion> promoting;
    std::vector<llama_seq_id> free_ids;
    std::unique_ptr<kv_executor> kv_exec;             // the context's memory, the planner, the tiers (kv_executor.h)
    int max_idle = 0;                                 // idle conversations kept in the context
    step_cost_model step_cost;                        // sizes the prefill chunk while streams decode
    int chunk_align = 16;
    size_t cell_bytes = 0;  // serialised KV per cell: remembered, else measured by the warm-up (0: unknown)
    // The step cost remembered across loads (engine_step_cost.cpp): null without a file.
    std::unique_ptr<step_cost_cache> cost_cache;
    step_cost_key cost_key;
    std::optional<step_cost_entry> cost_stored;       // what the file holds for this key, as last read or written
    steady::time_point cost_stored_at{};              // when this engine last wrote it
    uint64_t next_order = 1;                          // admission and use counters (LRU, youngest)
    std::function<void()> wake;                       // wakes the engine thread (I/O completions)

    std::atomic<int> queued_count{0};
    std::atomic<int> running{0};
    std::atomic<int> cells_used{0};
    std::atomic<int> cells_cached{0};
    std::atomic<int> idle_count{0};
    std::atomic<uint64_t> prompt_tokens{0}, generated_tokens{0}, finished{0}, cancelled{0}, failed{0};
    step_counters steps;

    ~impl() {
        if (ctx) llama_free(ctx);
    }

    kv::kv_manager * tiers() const { return kv_exec ? kv_exec->tiers() : nullptr; }
    bool plans() const { return kv_exec && kv_exec->plans(); }  // false for embedding models

    // One engine step; false when nothing could be done (the thread then waits for an event).
    bool step();
    void drop_cancelled();
    bool admit();
    bool decode_generate();
    bool decode_embed();
    void sample_outputs();
    void finish(sequence & s, finish_reason reason, const std::string & stop_word = {});
    void fail(sequence & s, errc code, const std::string & message);
    void release(sequence & s);
    void remove_finished();
    void fail_all(const std::string & message);
    void publish_gauges();

    // The step cost model (engine_step_cost.cpp): from the cache at start, learned from the steps,
    // stored once it stands on enough of them and differs from what the file holds; and the
    // untimed warm-up decode at load.
    void warm_up();
    void start_step_cost();
    void observe_step(int n_tokens, double ms);

    // Admission (engine_admit.cpp).
    std::unique_ptr<sequence> make_sequence(pending_request && p);
    bool try_admit(std::unique_ptr<sequence> & s);  // false: no room yet (s stays with the caller)
    void ready_to_prefill(std::unique_ptr<sequence> s);  // its reused prefix is in place: into `active`
    void next_checkpoint(sequence & s);                    // where its prefill next stops to keep its state
    int running_now() const;

    // Prefix reuse, eviction, preemption and tiering: the planner decides, these apply through the
    // executor (engine_kv.cpp).
    std::vector<kv::seq_view> context_views(bool include_running) const;
    // The context's full blocks to the KV event log (kv_manager::context_holds), when a sequence
    // came, went or crossed a block boundary since the last call. End of each step.
    void announce_context();
    std::vector<std::pair<uint64_t, int>> context_announced;  // (sequence order, full blocks) as last announced
    kv::reuse_plan plan_reuse(sequence & s) const;  // extends s.keys
    void share_prefix(sequence & s, const kv::reuse_plan & plan);
    bool restore_block(sequence & s, const kv::reuse_block & b, const kv::blob_ptr & blob);  // false: not as planned
    void settle_restore(sequence & s, const kv::reuse_plan & plan, bool complete);           // an incomplete all-or-nothing plan: undone
    void restore_from_host(sequence & s, const kv::reuse_plan & plan, const std::vector<kv::blob_ptr> & blobs);
    void start_promotion(std::unique_ptr<sequence> s, kv::reuse_plan plan);
    bool poll_promotions();
    bool make_room(int cells, bool may_preempt);   // applies the planner's plan; true when the cells are free
    void trim_idle(sequence & v, int keep);        // keep: as planned (always 0 where memory cannot be cut)
    void preempt(sequence & s);
    void retire(sequence & s, const std::shared_ptr<kv::write_group> & group);  // finished: keep it idle
    bool evict_lru_idle();                          // releases the least recently used idle conversation
    void demote_idle();                             // idle conversations to the tiers, when another needs the context
    bool tiers_can_keep(const sequence & s) const;  // its blocks fit what the tiers below hold
    // What of its context from position `from` on no tier holds yet goes below (as the planner plans it).
    void store(sequence & s, int from, const std::shared_ptr<kv::write_group> & group = nullptr);
    void store_filled(sequence & s, int n_past_before);  // what this step made storable
    void prefetch(const std::vector<llama_token> & tokens, const std::string & salt);
    sequence * find_live(llama_seq_id id);
    kv_lookup answer_lookup(const std::vector<llama_token> & tokens, const std::string & salt) const;  // engine_lookup.cpp
    int count_idle() const;
};

}  // namespace rc::engine
