#pragma once
// One engine per loaded model (ARCHITECTURE.md §4). Its thread owns the llama_context, the sequences and
// their KV cells; other threads only submit requests and read the returned channel.
//
// Continuous batching: each step decodes one token for every running sequence plus prefill chunks of
// admitted ones in a single llama_decode; requests join between steps; a cancelled request's
// sequence is freed at the next step.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "engine/request.h"
#include "engine/request_channel.h"
#include "kv/kv_manager.h"
#include "kv/kv_stats.h"
#include "llama/model.h"
#include "util/result.h"

namespace rc::engine {

struct engine_options {
    int n_ctx = 4096;           // KV cells shared by all sequences (llama-server's -c); 0: model's training context
    int n_ctx_fitted_from = 0;  // the context the device fit shrank to n_ctx (0: not shrunk); errors name both
    int n_parallel = 4;         // sequences decoding at once
    int n_batch = 2048;         // tokens per decode step
    int n_ubatch = 512;         // physical batch
    int prefill_chunk = 512;    // most prefill tokens per step while others decode
    // ... and fewer when the step's cost model says a step would take longer (bounds the token gaps of
    // running streams; 0: off). Every chunk pays the step's fixed cost (on a CPU: reading the weights,
    // one decode step): 750 ms made a 500-token prompt 1.27x slower than one unchunked prefill on
    // bench-1b with 2 cores; 1500 ms, 0.9-1.0x with the streams' gaps still 0.13x llama-server's.
    double max_step_ms = 1500;
    int n_threads = 0;          // 0: all cores
    int compute_nice = 5;       // the engine's compute threads run this much nicer (llama/compute_thread.h); 0: as the process
    int max_queue = 256;        // waiting requests before submit() answers `unavailable`
    bool flash_attn = false;
    // --flash-attn not given: the model manager turns it on when the layers run on a GPU device
    // (models/model_fit.h: flash_attn_for), off on the CPU.
    bool flash_attn_auto = false;
    ggml_type kv_type = GGML_TYPE_F16;  // KV cache cell type: F16, F32, or Q8_0 (needs flash_attn)
    kv::kv_options kv;          // prefix reuse in the context and the host / disk tiers below it
    // Where the step cost model is remembered across loads (engine/step_cost_cache.h); empty: learned
    // afresh at every load from the first steps.
    std::filesystem::path step_cost_file;
};

// Whether a model's memory of a sequence exists only whole (recurrent, hybrid and sliding-window
// memories: no per-token KV that a prefix can be cut from): it goes through the tiers as states kept
// at checkpoints (kv::snapshot_planner) instead of blocks. False for embedding models (no memory).
bool kept_whole(const llama::model_info & info);

// "f16", "f32", "q8_0" → the KV cell type; nullopt for anything else.
std::optional<ggml_type> parse_kv_type(const std::string & name);

// The llama.cpp context an engine creates for a model with these options (the device fit measures
// it before the model is loaded). Errors: invalid_argument.
result<llama_context_params> context_params(const llama::model_info & info, const engine_options & opts);

// What a prompt would reuse if it were submitted now (engine::lookup). `prompt_tokens` is the
// prompt's length; the tiers count the leading tokens whose KV would come from there.
struct kv_lookup {
    int prompt_tokens = 0;
    int context = 0, host = 0, disk = 0;
    int cached() const { return context + host + disk; }
};

// A snapshot for metrics and /api/ps. Counters only grow.
struct engine_stats {
    int queued = 0;
    int running = 0;
    int n_ctx = 0;
    int kv_cells_used = 0;          // cells held by running sequences
    int kv_cells_cached = 0;        // cells held by idle conversations kept for reuse (upper bound: shared cells count per sequence)
    int idle_sequences = 0;
    uint64_t prompt_tokens = 0;     // computed prompt tokens
    uint64_t generated_tokens = 0;
    uint64_t requests_finished = 0;
    uint64_t requests_cancelled = 0;
    uint64_t requests_failed = 0;
    // Scheduling (ARCHITECTURE.md §4): each llama_decode of a generation model.
    kv::histogram_snapshot step_seconds;
    kv::histogram_snapshot step_tokens;
    uint64_t prefill_chunks = 0;     // prefill chunks decoded (a prompt takes one or more)
    int prefill_budget = 0;          // the current per-step prefill budget while streams decode
    double step_fixed_ms = 0;        // the step cost model: fixed + per_token × tokens
    double step_per_token_ms = 0;
};

class engine {
  public:
    // Creates the context and starts the engine thread. Errors: invalid_argument (bad options),
    // internal (llama.cpp could not create the context, e.g. out of memory).
    static result<std::unique_ptr<engine>> start(std::shared_ptr<llama::model> m, const engine_options & opts);
    ~engine();  // stops the thread; pending and running requests end with an error event

    // Validates and queues a request. Errors: invalid_argument, context_overflow (prompt longer than
    // the context and no truncation asked), unavailable (queue full or stopping).
    // Thread-safe.
    result<std::shared_ptr<request_channel>> submit(generation_request req);

    // A hint that a conversation will resume soon: the blocks of `tokens` held on disk are read into
    // host RAM in the background, so its next request does not wait for the disk. Returns false when
    // there is no disk tier (nothing to do). Thread-safe; never blocks on I/O.
    bool prefetch(std::vector<llama_token> tokens, std::string cache_salt);

    // How many of `tokens` (a whole prompt) a request would reuse now, and from which tier
    // (engine_lookup.cpp). Answered on the engine thread between steps, like prefetch; changes
    // nothing: no LRU touch, no promotion, no read. nullopt when the engine is stopping, too many
    // lookups wait, a token is outside the vocabulary, or no answer came within `timeout`.
    // Thread-safe; blocks the caller up to `timeout`.
    std::optional<kv_lookup> lookup(std::vector<llama_token> tokens, std::string cache_salt, std::chrono::milliseconds timeout);

    engine_stats stats() const;
    // The KV planner's counters and the tiers' occupancy; empty for embedding models. Thread-safe.
    kv::kv_stats_snapshot kv_stats() const;
    const llama::model & model() const { return *model_; }
    std::shared_ptr<llama::model> model_ptr() const { return model_; }
    int n_ctx() const { return n_ctx_; }
    bool is_embedding() const { return model_->info().is_embedding; }
    // A memory kept as whole states (recurrent, hybrid, sliding-window: kept_whole): a prefix resumes
    // only where a state was stored, so a request names its message boundaries to keep one there.
    bool keeps_whole_states() const { return kept_whole(model_->info()); }
    // The tiers below the context, or null when prefix caching is off / for embedding models.
    kv::kv_manager * kv() const;

  private:
    struct impl;
    engine() = default;
    void run(std::promise<void> & started);

    std::shared_ptr<llama::model> model_;
    engine_options opts_;
    std::string ctx_origin() const;  // where n_ctx came from, for errors
    int n_ctx_ = 0;
    std::unique_ptr<impl> impl_;

    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::pair<generation_request, std::shared_ptr<request_channel>>> incoming_;
    std::deque<std::pair<std::vector<llama_token>, std::string>> prefetches_;
    struct lookup_job;
    std::deque<std::shared_ptr<lookup_job>> lookups_;
    bool stopping_ = false;
    bool io_event_ = false;  // an I/O completion arrived (guarded by mutex_)
    std::thread thread_;
};

}  // namespace rc::engine
