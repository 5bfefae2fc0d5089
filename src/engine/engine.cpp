#include "engine/engine.h"

#include <algorithm>
#include <cmath>
#include <thread>

#include "engine/engine_impl.h"
#include "engine/request_checks.h"
#include "engine/kv_identity.h"
#include "engine/sampler.h"
#include "util/log.h"

namespace rc::engine {

const char * finish_reason_name(finish_reason r) {
    switch (r) {
        case finish_reason::none: return "none";
        case finish_reason::stop: return "stop";
        case finish_reason::length: return "length";
        case finish_reason::cancelled: return "cancelled";
        case finish_reason::error: return "error";
    }
    return "none";
}

std::optional<ggml_type> parse_kv_type(const std::string & name) {
    if (name == "f16") return GGML_TYPE_F16;
    if (name == "f32") return GGML_TYPE_F32;
    if (name == "q8_0") return GGML_TYPE_Q8_0;
    return std::nullopt;
}

kv::kv_manager * engine::kv() const { return impl_->tiers(); }

kv::kv_stats_snapshot engine::kv_stats() const { return impl_->plans() ? impl_->kv_exec->snapshot() : kv::kv_stats_snapshot{}; }

bool kept_whole(const llama::model_info & info) {
    return !info.is_embedding && (info.is_recurrent || info.is_hybrid || info.n_swa > 0);
}

result<llama_context_params> context_params(const llama::model_info & info, const engine_options & opts) {
    int n_ctx = opts.n_ctx > 0 ? opts.n_ctx : info.n_ctx_train;
    // Encoders with learned absolute positions (BERT) cannot see past their training length.
    if (info.is_embedding && info.n_ctx_train > 0) n_ctx = std::min(n_ctx, info.n_ctx_train);

    auto cp = llama_context_default_params();
    cp.n_ctx = static_cast<uint32_t>(n_ctx);
    // Sequence ids: running + idle conversations kept for reuse + one scratch for block moves.
    // Prefix reuse moves per-token attention KV. Memories kept whole do not split into position ranges
    // that way: they go through the tiers as states kept at checkpoints (engine_kv.cpp), and keep no
    // idle conversations in the context.
    const bool per_token_kv = !info.is_embedding && !kept_whole(info);
    const int max_idle = per_token_kv ? std::max(0, opts.kv.cached_sequences) : 0;
    cp.n_seq_max = static_cast<uint32_t>(opts.n_parallel + max_idle + 1);
    if (cp.n_seq_max > 256) return make_error(errc::invalid_argument, "parallel + cached sequences must stay below 256");
    cp.kv_unified = true;  // one cell pool: sequences share prefix cells via seq_cp (ARCHITECTURE.md §4)
    int threads = opts.n_threads > 0 ? opts.n_threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    cp.n_threads = threads;
    cp.n_threads_batch = threads;
    cp.no_perf = true;
    cp.type_k = opts.kv_type;
    cp.type_v = opts.kv_type;
    cp.flash_attn_type = opts.flash_attn ? LLAMA_FLASH_ATTN_TYPE_ENABLED : LLAMA_FLASH_ATTN_TYPE_DISABLED;
    if (info.is_embedding) {
        // Non-causal encoders see a whole input at once: one input must fit one physical batch.
        // llama.cpp reserves its graph with n_ubatch rounded up to a multiple of n_seq_max; for mean
        // pooling that mismatch aborts, so make the batch a multiple of the sequence count.
        cp.embeddings = true;
        cp.kv_unified = false;  // encoders keep no KV cache
        cp.n_seq_max = static_cast<uint32_t>(opts.n_parallel);
        uint32_t ub = static_cast<uint32_t>(n_ctx);
        ub = (ub + cp.n_seq_max - 1) / cp.n_seq_max * cp.n_seq_max;
        cp.n_batch = cp.n_ubatch = ub;
    } else {
        cp.n_batch = static_cast<uint32_t>(opts.n_batch);
        cp.n_ubatch = static_cast<uint32_t>(std::min(opts.n_ubatch, opts.n_batch));
    }
    return cp;
}

result<std::unique_ptr<engine>> engine::start(std::shared_ptr<llama::model> m, const engine_options & opts) {
    if (!m) return make_error(errc::invalid_argument, "no model");
    if (opts.n_parallel < 1 || opts.n_parallel > 128) return make_error(errc::invalid_argument, "parallel must be 1..128");
    if (opts.n_ctx < 0) return make_error(errc::invalid_argument, "ctx-size must be >= 0");
    if (opts.n_batch < 1 || opts.n_ubatch < 1) return make_error(errc::invalid_argument, "batch sizes must be >= 1");
    if (opts.kv_type == GGML_TYPE_Q8_0 && !opts.flash_attn)
        return make_error(errc::invalid_argument, "a q8_0 KV cache needs flash attention (--flash-attn)");

    std::unique_ptr<engine> e(new engine());
    e->model_ = m;
    e->opts_ = opts;
    e->impl_ = std::make_unique<impl>();
    e->impl_->model = m.get();
    e->impl_->opts = opts;
    const auto & info = m->info();
    auto params = context_params(info, opts);
    if (!params) return params.err();
    const auto & cp = params.value();
    const int n_ctx = static_cast<int>(cp.n_ctx);
    const bool snapshots = kept_whole(info);
    const bool per_token_kv = !info.is_embedding && !snapshots;
    const int max_idle = per_token_kv ? std::max(0, opts.kv.cached_sequences) : 0;
    const int threads = static_cast<int>(cp.n_threads);
    e->impl_->ctx = llama_init_from_model(m->get(), cp);
    if (!e->impl_->ctx) return make_error(errc::internal, "llama.cpp could not create a context of " + std::to_string(n_ctx) + " cells");
    e->n_ctx_ = e->impl_->n_ctx = info.is_embedding ? n_ctx : static_cast<int>(llama_n_ctx(e->impl_->ctx));
    // llama.cpp caps a causal model's batch at the context size it was asked for: ask it.
    e->impl_->batch = std::make_unique<llama::batch>(static_cast<int32_t>(info.is_embedding ? cp.n_batch : llama_n_batch(e->impl_->ctx)));
    const int n_ids = info.is_embedding ? opts.n_parallel : opts.n_parallel + max_idle;
    for (int i = n_ids - 1; i >= 0; --i) e->impl_->free_ids.push_back(i);
    e->impl_->max_idle = max_idle;
    if (info.is_embedding) e->impl_->kv_exec = std::make_unique<kv_executor>(e->impl_->ctx);
    if (!info.is_embedding) {
        // A recurrent memory keeps one state per sequence, not a cell per token: no cell budget.
        const bool per_token_cells = !info.is_recurrent || info.is_hybrid;
        kv::planner_options po{opts.kv.block_size, per_token_cells ? e->n_ctx_ : -1, opts.kv.checkpoint_blocks};
        // A purely recurrent memory is one state; a sliding-window or hybrid one keeps its full-attention
        // layers in blocks and the window or recurrent state beside them (kv_planner.h).
        const auto layout = !snapshots                          ? kv::memory_layout::blocks
                            : info.is_recurrent && !info.is_hybrid ? kv::memory_layout::whole_snapshots
                                                                   : kv::memory_layout::blocks_and_states;
        auto identity = kv_identity_of(*m, cp);
        if (layout == kv::memory_layout::blocks_and_states) identity.layout += " memory=blocks+states";
        auto exec = kv_executor::open(e->impl_->ctx, static_cast<llama_seq_id>(cp.n_seq_max - 1), layout, po, opts.kv, identity);
        if (!exec) return exec.err();
        e->impl_->kv_exec = std::move(exec.value());
        if (!opts.step_cost_file.empty()) {
            e->impl_->cost_cache = std::make_unique<step_cost_cache>(opts.step_cost_file);
            e->impl_->cost_key = {identity.model_fingerprint, describe_devices(), threads, static_cast<int>(cp.n_batch),
                                  static_cast<int>(cp.n_ubatch), ggml_type_name(opts.kv_type), opts.flash_attn};
        }
        // Chunks the backends handle well: GPU kernels tile in 64s, the CPU's in 16s.
        e->impl_->chunk_align = llama_supports_gpu_offload() ? 64 : 16;
        e->impl_->wake = [raw = e.get()] {
            {
                std::lock_guard lock(raw->mutex_);
                raw->io_event_ = true;
            }
            raw->wake_.notify_one();
        };
    }

    rc::log::info("engine", "started", {{"model", m->path()}, {"n_ctx", e->n_ctx_}, {"parallel", opts.n_parallel},
                                        {"threads", threads}, {"embedding", info.is_embedding}});
    // start() returns once the thread runs with its step cost model (remembered or learning).
    std::promise<void> started;
    auto ready = started.get_future();
    e->thread_ = std::thread([raw = e.get(), &started] { raw->run(started); });
    ready.wait();
    return e;
}

engine::~engine() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
    // I/O jobs still queued call `wake`, which needs this object's mutex: finish them first.
    if (impl_ && impl_->tiers()) impl_->tiers()->drain_io();
    if (impl_) impl_->wake = nullptr;
}

std::string engine::ctx_origin() const {
    if (opts_.n_ctx_fitted_from <= 0) return "--ctx-size";
    return "--ctx-size " + std::to_string(opts_.n_ctx_fitted_from) + " fitted to device memory; the tiers keep longer conversations, not longer prompts";
}

result<std::shared_ptr<request_channel>> engine::submit(generation_request req) {
    const bool embed_model = is_embedding();
    if (auto problem = check_request(*model_, embed_model, req)) return make_error(errc::invalid_argument, problem.message());
    const int n_prompt = static_cast<int>(req.prompt.size());
    if (n_prompt >= n_ctx_ || (embed_model && n_prompt > n_ctx_)) {
        if (!req.truncate_prompt) {
            return make_error(errc::context_overflow, "the prompt is " + std::to_string(n_prompt) + " tokens but the context holds " +
                                                          std::to_string(n_ctx_) + " tokens (" + ctx_origin() + "); shorten it or ask for truncation");
        }
        int keep = embed_model ? n_ctx_ : n_ctx_ - 1 - std::min(req.max_tokens > 0 ? req.max_tokens : n_ctx_ / 4, n_ctx_ / 2);
        req.prompt.erase(req.prompt.begin(), req.prompt.end() - keep);
    }
    auto refusal = [&]() -> std::optional<error> {
        if (stopping_) return make_error(errc::unavailable, "the model is being unloaded");
        if (static_cast<int>(incoming_.size()) + impl_->queued_count.load() >= opts_.max_queue)
            return make_error(errc::unavailable, "the request queue is full (" + std::to_string(opts_.max_queue) + " waiting)");
        return std::nullopt;
    };
    {
        std::lock_guard lock(mutex_);
        if (auto e = refusal()) return *e;  // before spending a grammar build on a request that cannot queue
    }
    if (req.kind == request_kind::generate) {
        // The sampler (and its grammar, which can take long to compile) is built here, on the
        // caller's thread: the engine thread never waits on it, and neither does the engine's
        // shutdown.
        auto smp = make_sampler(*model_, req.sampling, req.grammar);
        if (!smp) return smp.err();
        req.grammar.prepared = std::make_shared<prepared_sampler>(prepared_sampler{std::move(smp.value())});
    }
    auto ch = std::make_shared<request_channel>();
    {
        std::lock_guard lock(mutex_);
        if (auto e = refusal()) return *e;
        incoming_.emplace_back(std::move(req), ch);
    }
    wake_.notify_one();
    return ch;
}

bool engine::prefetch(std::vector<llama_token> tokens, std::string cache_salt) {
    if (!impl_->kv_exec || !impl_->kv_exec->has_disk() || tokens.empty()) return false;
    for (llama_token t : tokens)
        if (!model_->valid_token(t)) return false;
    {
        std::lock_guard lock(mutex_);
        if (stopping_ || prefetches_.size() >= 64) return false;
        prefetches_.emplace_back(std::move(tokens), std::move(cache_salt));
    }
    wake_.notify_one();
    return true;
}

engine_stats engine::stats() const {
    engine_stats s;
    {
        std::lock_guard lock(mutex_);
        s.queued = static_cast<int>(incoming_.size());
    }
    s.queued += impl_->queued_count.load();
    s.running = impl_->running.load();
    s.n_ctx = n_ctx_;
    s.kv_cells_used = impl_->cells_used.load();
    s.kv_cells_cached = impl_->cells_cached.load();
    s.idle_sequences = impl_->idle_count.load();
    s.prompt_tokens = impl_->prompt_tokens.load();
    s.generated_tokens = impl_->generated_tokens.load();
    s.requests_finished = impl_->finished.load();
    s.requests_cancelled = impl_->cancelled.load();
    s.requests_failed = impl_->failed.load();
    const auto & st = impl_->steps;
    s.step_seconds = kv::histogram_snapshot::of(st.seconds);
    s.step_tokens = kv::histogram_snapshot::of(st.tokens);
    s.prefill_chunks = st.prefill_chunks.load();
    s.prefill_budget = st.prefill_budget.load();
    s.step_fixed_ms = st.cost_fixed_ms.load();
    s.step_per_token_ms = st.cost_per_token_ms.load();
    return s;
}

}  // namespace rc::engine
