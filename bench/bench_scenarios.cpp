#include "bench_scenarios.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>
#include <thread>

namespace rc::bench {

namespace {

constexpr double ms = 1000.0;

// Runs `n` completions at once (one thread each); `make(i)` builds request i.
std::vector<completion_result> run_concurrent(const target & t, int n, const std::function<completion_params(int)> & make) {
    std::vector<completion_result> out(static_cast<size_t>(n));
    std::vector<completion_params> ps;
    for (int i = 0; i < n; ++i) ps.push_back(make(i));
    std::vector<std::thread> threads;
    for (int i = 0; i < n; ++i) threads.emplace_back([&, i] { out[static_cast<size_t>(i)] = run_completion(t, ps[static_cast<size_t>(i)]); });
    for (auto & th : threads) th.join();
    return out;
}

// Runs `n` completions through `workers` client threads (a closed loop: each starts the next request
// when its previous one ends).
std::vector<completion_result> run_pool(const target & t, int n, int workers, const std::function<completion_params(int)> & make) {
    std::vector<completion_result> out(static_cast<size_t>(n));
    std::atomic<int> next{0};
    std::vector<std::thread> threads;
    for (int w = 0; w < std::max(1, workers); ++w) {
        threads.emplace_back([&] {
            for (int i; (i = next.fetch_add(1)) < n;) out[static_cast<size_t>(i)] = run_completion(t, make(i));
        });
    }
    for (auto & th : threads) th.join();
    return out;
}

std::string first_error(const std::vector<completion_result> & rs) {
    for (const auto & r : rs) {
        if (!r.ok) return r.error;
        if (r.token_times.empty() && !r.stopped) return "no token received";
    }
    return {};
}

// ---- prefill: one prompt of N tokens, one generated token; throughput = N / TTFT.
rep_result prefill(const rep_context & c) {
    rep_result rr;
    const int n = c.i("prompt-tokens");
    auto r = run_completion(c.server, c.params(c.prompt("p", n), 1));
    if (auto e = first_error({r}); !e.empty()) return {{}, {}, e};
    rr.metrics.push_back({"prefill_tps", n / r.ttft(), "tok/s", "higher"});
    rr.metrics.push_back({"ttft_ms", r.ttft() * ms, "ms", "lower"});
    rr.info["cached_tokens"] = r.cached_tokens;
    return rr;
}

// ---- decode: K streams started together; aggregate tokens/s and inter-token latency measured in the
// steady window where every stream is decoding (after the last first token, before the first last token).
rep_result decode(const rep_context & c) {
    rep_result rr;
    const int k = c.i("streams"), gen = c.i("gen-tokens"), plen = c.i("prompt-tokens");
    auto rs = run_concurrent(c.server, k, [&](int i) { return c.params(c.prompt("s" + std::to_string(i), plen), gen); });
    if (auto e = first_error(rs); !e.empty()) return {{}, {}, e};
    double w0 = 0, w1 = 1e300, t_start = 1e300, t_end = 0;
    std::vector<double> ttfts;
    for (const auto & r : rs) {
        w0 = std::max(w0, r.token_times.front());
        w1 = std::min(w1, r.token_times.back());
        t_start = std::min(t_start, r.token_times.front());
        t_end = std::max(t_end, r.token_times.back());
        ttfts.push_back(r.ttft() * ms);
    }
    std::vector<double> gaps;
    size_t in_window = 0, total_after_first = 0;
    for (const auto & r : rs) {
        total_after_first += r.token_times.size() - 1;
        for (size_t j = 1; j < r.token_times.size(); ++j) {
            if (r.token_times[j - 1] >= w0 && r.token_times[j] <= w1) {
                gaps.push_back((r.token_times[j] - r.token_times[j - 1]) * ms);
                ++in_window;
            }
        }
    }
    double tps;
    if (w1 - w0 > 0.2 && in_window >= 8) {
        tps = static_cast<double>(in_window) / (w1 - w0);
    } else {  // streams did not overlap long enough: whole span after the first token
        tps = static_cast<double>(total_after_first) / std::max(1e-9, t_end - t_start);
        gaps.clear();
        for (const auto & r : rs)
            for (size_t j = 1; j < r.token_times.size(); ++j) gaps.push_back((r.token_times[j] - r.token_times[j - 1]) * ms);
        rr.info["window"] = "whole";
    }
    rr.metrics.push_back({"decode_tps", tps, "tok/s", "higher"});
    rr.metrics.push_back({"itl_p50_ms", percentile(gaps, 50), "ms", "lower"});
    rr.metrics.push_back({"itl_p99_ms", percentile(gaps, 99), "ms", "lower"});
    rr.metrics.push_back({"ttft_ms", median(ttfts), "ms", "lower"});
    rr.info["gaps"] = gaps.size();
    rr.info["window_s"] = w1 - w0;
    return rr;
}

// ---- mixed: K background streams decode; once all are streaming, M long prompts arrive I ms apart.
// TTFT of the long prompts, and the background streams' inter-token latency while they are served.
rep_result mixed(const rep_context & c) {
    rep_result rr;
    const int k = c.i("streams"), plen = c.i("prompt-tokens"), bg_max = c.i("bg-max-tokens");
    const int m = c.i("long-count"), lt = c.i("long-tokens"), interval = c.i("interval-ms"), lgen = c.i("long-gen-tokens");
    std::atomic<bool> stop{false};
    std::vector<std::atomic<int>> seen(static_cast<size_t>(k));
    std::vector<completion_result> bg(static_cast<size_t>(k)), lg(static_cast<size_t>(m));
    std::vector<std::thread> bg_threads, lg_threads;
    for (int i = 0; i < k; ++i) {
        bg_threads.emplace_back([&, i] {
            auto p = c.params(c.prompt("bg" + std::to_string(i), plen), bg_max);
            p.stop = &stop;
            p.tokens_seen = &seen[static_cast<size_t>(i)];
            bg[static_cast<size_t>(i)] = run_completion(c.server, p);
        });
    }
    // Steady state first: every background stream has produced a few tokens.
    const double deadline = now_s() + 600;
    for (;;) {
        bool all = true;
        for (int i = 0; i < k; ++i) all = all && seen[static_cast<size_t>(i)].load() >= 3;
        bool dead = false;
        for (int i = 0; i < k; ++i) dead = dead || (bg[static_cast<size_t>(i)].t_end > 0 && seen[static_cast<size_t>(i)].load() < 3);
        if (all || dead || now_s() > deadline) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    const double w0 = now_s();
    for (int j = 0; j < m; ++j) {
        lg_threads.emplace_back([&, j] {
            std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<long>(j) * interval));
            lg[static_cast<size_t>(j)] = run_completion(c.server, c.params(c.prompt("long" + std::to_string(j), lt), lgen));
        });
    }
    for (auto & th : lg_threads) th.join();
    const double w1 = now_s();
    stop = true;
    for (auto & th : bg_threads) th.join();
    if (auto e = first_error(lg); !e.empty()) return {{}, {}, "long prompt: " + e};
    if (auto e = first_error(bg); !e.empty()) return {{}, {}, "background stream: " + e};
    std::vector<double> ttfts, gaps;
    for (const auto & r : lg) ttfts.push_back(r.ttft() * ms);
    size_t n_window = 0;
    bool finished_early = false;
    for (const auto & r : bg) {
        for (size_t j = 1; j < r.token_times.size(); ++j) {
            if (r.token_times[j] > w0 && r.token_times[j] <= w1) {
                gaps.push_back((r.token_times[j] - r.token_times[j - 1]) * ms);
                ++n_window;
            }
        }
        finished_early = finished_early || (!r.stopped && r.t_end < w1);
    }
    rr.metrics.push_back({"long_ttft_ms", median(ttfts), "ms", "lower"});
    rr.metrics.push_back({"long_ttft_max_ms", *std::max_element(ttfts.begin(), ttfts.end()), "ms", "lower"});
    rr.metrics.push_back({"bg_itl_p50_ms", percentile(gaps, 50), "ms", "lower"});
    rr.metrics.push_back({"bg_itl_p99_ms", percentile(gaps, 99), "ms", "lower"});
    rr.metrics.push_back({"bg_itl_max_ms", percentile(gaps, 100), "ms", "lower"});
    rr.metrics.push_back({"bg_decode_tps", static_cast<double>(n_window) / std::max(1e-9, w1 - w0), "tok/s", "higher"});
    rr.info["window_s"] = w1 - w0;
    rr.info["gaps"] = gaps.size();
    if (finished_early) rr.info["warning"] = "a background stream ended before the long prompts were served; raise bg-max-tokens";
    return rr;
}

// ---- conversations: N independent conversations (unique prompts, no reuse possible) through C
// client threads. End-to-end throughput; run.sh samples the server's RSS around it.
rep_result conversations(const rep_context & c) {
    rep_result rr;
    const int n = c.i("count"), conc = c.i("concurrency"), plen = c.i("prompt-tokens"), gen = c.i("gen-tokens");
    const double t0 = now_s();
    auto rs = run_pool(c.server, n, conc, [&](int i) { return c.params(c.prompt("c" + std::to_string(i), plen), gen); });
    const double wall = now_s() - t0;
    if (auto e = first_error(rs); !e.empty()) return {{}, {}, e};
    double out_tokens = 0;
    std::vector<double> e2e, ttft;
    for (const auto & r : rs) {
        out_tokens += r.completion_tokens > 0 ? r.completion_tokens : static_cast<double>(r.token_times.size());
        e2e.push_back((r.t_end - r.t_send) * ms);
        ttft.push_back(r.ttft() * ms);
    }
    rr.metrics.push_back({"output_tps", out_tokens / wall, "tok/s", "higher"});
    rr.metrics.push_back({"total_tps", (out_tokens + static_cast<double>(n) * plen) / wall, "tok/s", "higher"});
    rr.metrics.push_back({"conv_per_min", n / wall * 60, "1/min", "higher"});
    rr.metrics.push_back({"ttft_p50_ms", median(ttft), "ms", "lower"});
    rr.metrics.push_back({"e2e_p50_ms", median(e2e), "ms", "lower"});
    return rr;
}

// ---- rps: non-streamed 1-token completions of short unique prompts through C client threads: the
// per-request cost of the HTTP and API layers on top of one small decode.
rep_result rps(const rep_context & c) {
    rep_result rr;
    const int n = c.i("requests"), conc = c.i("concurrency"), plen = c.i("prompt-tokens");
    const double t0 = now_s();
    auto rs = run_pool(c.server, n, conc, [&](int i) {
        auto p = c.params(c.prompt("r" + std::to_string(i), plen), 1);
        p.stream = false;
        return p;
    });
    const double wall = now_s() - t0;
    if (auto e = first_error(rs); !e.empty()) return {{}, {}, e};
    std::vector<double> lat;
    for (const auto & r : rs) lat.push_back((r.t_end - r.t_send) * ms);
    rr.metrics.push_back({"rps", n / wall, "req/s", "higher"});
    rr.metrics.push_back({"latency_p50_ms", percentile(lat, 50), "ms", "lower"});
    rr.metrics.push_back({"latency_p99_ms", percentile(lat, 99), "ms", "lower"});
    return rr;
}

// ---- resume: conversation A (a tokens), then B (b tokens) on the same server, then A again with a new
// turn appended: TTFT of the resumed A against A's cold TTFT. `phase` 0 = all, 1 = only A and B (prime),
// 2 = only the resumed A (probe; run.sh restarts the server in between for the disk tier).
rep_result resume(const rep_context & c) {
    rep_result rr;
    const int a = c.i("a-tokens"), b = c.i("b-tokens"), turn = c.i("turn-tokens"), gen = c.i("gen-tokens"), phase = c.i("phase");
    auto pa = c.prompt("A", a);
    if (phase != 2) {
        auto ra = run_completion(c.server, c.params(pa, gen));
        if (auto e = first_error({ra}); !e.empty()) return {{}, {}, "A: " + e};
        rr.metrics.push_back({"cold_ttft_ms", ra.ttft() * ms, "ms", "lower"});
        if (b > 0) {
            auto rb = run_completion(c.server, c.params(c.prompt("B", b), gen));
            if (auto e = first_error({rb}); !e.empty()) return {{}, {}, "B: " + e};
        }
    }
    if (phase != 1) {
        auto pa2 = pa;
        auto t = c.prompt("A-turn", turn);  // turn-tokens 0: A resent as it was (a regenerate)
        pa2.insert(pa2.end(), t.begin(), t.end());
        const int again_gen = c.i("again-gen-tokens") > 0 ? c.i("again-gen-tokens") : gen;
        auto r2 = run_completion(c.server, c.params(pa2, again_gen));
        if (auto e = first_error({r2}); !e.empty()) return {{}, {}, "A again: " + e};
        rr.metrics.push_back({"resume_ttft_ms", r2.ttft() * ms, "ms", "lower"});
        if (r2.cached_tokens >= 0) rr.metrics.push_back({"resume_cached_tokens", static_cast<double>(r2.cached_tokens), "tokens", "none"});
    }
    return rr;
}

// ---- shared: C conversations share an S-token system prompt and have U unique tokens each; round 1
// starts them in turn, round 2 resumes each in turn with a T-token new turn.
rep_result shared(const rep_context & c) {
    rep_result rr;
    const int convs = c.i("convs"), s = c.i("shared-tokens"), u = c.i("unique-tokens"), turn = c.i("turn-tokens"), gen = c.i("gen-tokens");
    auto sys = c.prompt("S", s);
    std::vector<std::vector<int>> prompts;
    std::vector<double> round1, round2, cached2;
    for (int i = 0; i < convs; ++i) {
        auto p = sys;
        auto q = c.prompt("U" + std::to_string(i), u);
        p.insert(p.end(), q.begin(), q.end());
        auto r = run_completion(c.server, c.params(p, gen));
        if (auto e = first_error({r}); !e.empty()) return {{}, {}, "round 1: " + e};
        round1.push_back(r.ttft() * ms);
        prompts.push_back(std::move(p));
    }
    for (int i = 0; i < convs; ++i) {
        auto p = prompts[static_cast<size_t>(i)];
        auto q = c.prompt("T" + std::to_string(i), turn);
        p.insert(p.end(), q.begin(), q.end());
        auto r = run_completion(c.server, c.params(p, gen));
        if (auto e = first_error({r}); !e.empty()) return {{}, {}, "round 2: " + e};
        round2.push_back(r.ttft() * ms);
        if (r.cached_tokens >= 0) cached2.push_back(r.cached_tokens);
    }
    rr.metrics.push_back({"first_ttft_ms", round1.front(), "ms", "lower"});
    rr.metrics.push_back({"shared_ttft_ms", median(std::vector<double>(round1.begin() + 1, round1.end())), "ms", "lower"});
    rr.metrics.push_back({"resume_ttft_ms", median(round2), "ms", "lower"});
    if (!cached2.empty()) rr.metrics.push_back({"resume_cached_tokens", median(cached2), "tokens", "none"});
    return rr;
}

// 0..n-1 in a random order (seeded by the caller: the same for every server).
std::vector<int> shuffled(int n, std::mt19937 & rng) {
    std::vector<int> order(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
    std::shuffle(order.begin(), order.end(), rng);
    return order;
}

// ---- fleet_resume (issue 15): C multi-turn conversations through the fleet gateway. Conversations
// come in G groups; a group's members share an S-token prefix (a system prompt and documents), each
// adds U unique tokens. Round 0 starts every conversation; each of R later rounds resumes every
// conversation once, in a random order (seeded by the repetition), with a T-token new turn appended
// to all it sent so far. Resume TTFT (mean, p90) is what routing decides: a resumed conversation
// sent to the host holding its prefix prefills T tokens, elsewhere its whole history.
rep_result fleet_resume(const rep_context & c) {
    rep_result rr;
    const int convs = c.i("convs"), groups = std::max(1, c.i("groups")), s = c.i("shared-tokens"), u = c.i("unique-tokens");
    const int turn = c.i("turn-tokens"), gen = c.i("gen-tokens"), rounds = c.i("rounds");
    std::vector<std::vector<int>> history;
    std::vector<double> first, resumed, cached;
    for (int i = 0; i < convs; ++i) {
        auto p = c.prompt("S" + std::to_string(i % groups), s);
        auto q = c.prompt("U" + std::to_string(i), u);
        p.insert(p.end(), q.begin(), q.end());
        auto r = run_completion(c.server, c.params(p, gen));
        if (auto e = first_error({r}); !e.empty()) return {{}, {}, "round 0: " + e};
        first.push_back(r.ttft() * ms);
        history.push_back(std::move(p));
    }
    std::mt19937 rng(static_cast<uint32_t>(hash_str(c.key)));
    for (int round = 1; round <= rounds; ++round) {
        for (int i : shuffled(convs, rng)) {
            auto & p = history[static_cast<size_t>(i)];
            auto t = c.prompt("T" + std::to_string(round) + "/" + std::to_string(i), turn);
            p.insert(p.end(), t.begin(), t.end());
            auto r = run_completion(c.server, c.params(p, gen));
            if (auto e = first_error({r}); !e.empty()) return {{}, {}, "round " + std::to_string(round) + ": " + e};
            resumed.push_back(r.ttft() * ms);
            if (r.cached_tokens >= 0) cached.push_back(r.cached_tokens);
        }
    }
    double sum = 0;
    for (double v : resumed) sum += v;
    rr.metrics.push_back({"first_ttft_ms", median(first), "ms", "lower"});
    rr.metrics.push_back({"resume_ttft_mean_ms", resumed.empty() ? 0 : sum / static_cast<double>(resumed.size()), "ms", "lower"});
    rr.metrics.push_back({"resume_ttft_p90_ms", percentile(resumed, 90), "ms", "lower"});
    if (!cached.empty()) rr.metrics.push_back({"resume_cached_tokens", median(cached), "tokens", "none"});
    return rr;
}

// ---- rotation (issue 30): C conversations of A tokens, each resumed R times in a random order with
// a T-token turn appended to all it sent so far. On a device that holds a fraction of them, a server
// either keeps what falls out of its context somewhere (tiers, a RAM prompt cache) or recomputes it,
// and a conversation that no longer fits fails. Every request is sent, failures counted, not fatal.
rep_result rotation(const rep_context & c) {
    rep_result rr;
    const int convs = c.i("convs"), a = c.i("a-tokens"), turn = c.i("turn-tokens"), gen = c.i("gen-tokens"), rounds = c.i("rounds");
    std::vector<std::vector<int>> history;
    std::vector<bool> alive(static_cast<size_t>(convs), true);
    std::vector<double> first, resumed, cached;
    int failed = 0;
    auto send = [&](int i, std::vector<double> & ttfts) {
        auto r = run_completion(c.server, c.params(history[static_cast<size_t>(i)], gen));
        if (auto e = first_error({r}); !e.empty()) {
            if (!rr.info.contains("first_error")) rr.info["first_error"] = e;
            alive[static_cast<size_t>(i)] = false;
            ++failed;
            return;
        }
        ttfts.push_back(r.ttft() * ms);
        if (&ttfts == &resumed && r.cached_tokens >= 0) cached.push_back(r.cached_tokens);
    };
    for (int i = 0; i < convs; ++i) {
        history.push_back(c.prompt("C" + std::to_string(i), a));
        send(i, first);
    }
    std::mt19937 rng(static_cast<uint32_t>(hash_str(c.key)));
    for (int round = 1; round <= rounds; ++round) {
        for (int i : shuffled(convs, rng)) {
            if (!alive[static_cast<size_t>(i)]) continue;
            auto t = c.prompt("T" + std::to_string(round) + "/" + std::to_string(i), turn);
            history[static_cast<size_t>(i)].insert(history[static_cast<size_t>(i)].end(), t.begin(), t.end());
            send(i, resumed);
        }
    }
    int completed = 0;
    for (bool ok : alive) completed += ok ? 1 : 0;
    double sum = 0;
    for (double v : resumed) sum += v;
    rr.metrics.push_back({"conversations_completed", static_cast<double>(completed), "conversations", "higher"});
    rr.metrics.push_back({"failed_requests", static_cast<double>(failed), "requests", "lower"});
    if (!first.empty()) rr.metrics.push_back({"first_ttft_ms", median(first), "ms", "lower"});
    if (!resumed.empty()) {
        rr.metrics.push_back({"resume_ttft_mean_ms", sum / static_cast<double>(resumed.size()), "ms", "lower"});
        rr.metrics.push_back({"resume_ttft_p50_ms", median(resumed), "ms", "lower"});
        rr.metrics.push_back({"resume_ttft_p90_ms", percentile(resumed, 90), "ms", "lower"});
    }
    if (!cached.empty()) rr.metrics.push_back({"resume_cached_tokens", median(cached), "tokens", "none"});
    return rr;
}

// ---- burst: N completions at once, each a P-token prompt generating G tokens. On a pool too small
// for all of them at once a server must queue, swap out or fail some: how many succeed, and how long
// the whole burst takes.
rep_result burst(const rep_context & c) {
    rep_result rr;
    const int n = c.i("requests"), plen = c.i("prompt-tokens"), gen = c.i("gen-tokens");
    const double t0 = now_s();
    auto rs = run_concurrent(c.server, n, [&](int i) { return c.params(c.prompt("b" + std::to_string(i), plen), gen); });
    const double wall = now_s() - t0;
    int ok = 0;
    double out_tokens = 0;
    for (const auto & r : rs) {
        if (!r.ok || r.token_times.empty()) {
            if (!rr.info.contains("first_error")) rr.info["first_error"] = r.ok ? std::string("no token received") : r.error;
            continue;
        }
        ++ok;
        out_tokens += r.completion_tokens > 0 ? r.completion_tokens : static_cast<double>(r.token_times.size());
    }
    rr.metrics.push_back({"ok_requests", static_cast<double>(ok), "requests", "higher"});
    rr.metrics.push_back({"failed_requests", static_cast<double>(n - ok), "requests", "lower"});
    rr.metrics.push_back({"wall_s", wall, "s", "lower"});
    rr.metrics.push_back({"output_tps", out_tokens / std::max(1e-9, wall), "tok/s", "higher"});
    return rr;
}

// ---- one short request: warms a server up (page cache, first-call allocations) before measuring.
rep_result warmup(const rep_context & c) {
    auto r = run_completion(c.server, c.params(c.prompt("w", c.i("prompt-tokens")), c.i("gen-tokens")));
    if (auto e = first_error({r}); !e.empty()) return {{}, {}, e};
    return {};
}

}  // namespace

const std::vector<scenario_def> & scenario_table() {
    static const std::vector<scenario_def> table = {
        {"prefill", "prompt of N tokens, 1 generated token; prefill tokens/s = N / TTFT", {{"prompt-tokens", 512}}, prefill},
        {"decode", "K concurrent streams; aggregate tokens/s and inter-token latency in the steady window",
         {{"streams", 1}, {"gen-tokens", 64}, {"prompt-tokens", 32}}, decode},
        {"mixed", "K streams decode while M long prompts arrive; long-prompt TTFT and stream ITL under that load",
         {{"streams", 4}, {"prompt-tokens", 32}, {"bg-max-tokens", 2048}, {"long-count", 2}, {"long-tokens", 2048},
          {"interval-ms", 1000}, {"long-gen-tokens", 4}},
         mixed},
        {"conversations", "N unique conversations through C client threads; end-to-end throughput",
         {{"count", 8}, {"concurrency", 4}, {"prompt-tokens", 256}, {"gen-tokens", 32}}, conversations},
        {"rps", "non-streamed 1-token completions through C client threads; requests/s",
         {{"requests", 32}, {"concurrency", 4}, {"prompt-tokens", 8}}, rps},
        {"resume", "A, then B, then A + new turn (one slot): resume TTFT vs cold TTFT; phase 1/2 split it for restarts",
         {{"a-tokens", 2048}, {"b-tokens", 256}, {"turn-tokens", 64}, {"gen-tokens", 8}, {"again-gen-tokens", 0}, {"phase", 0}}, resume},
        {"burst", "N completions at once (P-token prompts, G tokens each): requests that succeed, wall time",
         {{"requests", 4}, {"prompt-tokens", 300}, {"gen-tokens", 300}}, burst},
        {"shared", "C conversations sharing an S-token prefix (U unique each), then each resumed in turn",
         {{"convs", 6}, {"shared-tokens", 1536}, {"unique-tokens", 256}, {"turn-tokens", 64}, {"gen-tokens", 8}}, shared},
        {"fleet_resume", "C conversations in G groups (S shared + U unique tokens) resumed R times in random order with T-token turns: resume TTFT",
         {{"convs", 12}, {"groups", 3}, {"shared-tokens", 1024}, {"unique-tokens", 1024}, {"turn-tokens", 64}, {"gen-tokens", 8}, {"rounds", 2}},
         fleet_resume},
        {"rotation", "C conversations of A tokens resumed R times in random order with T-token turns: conversations completed, resume TTFT",
         {{"convs", 4}, {"a-tokens", 600}, {"turn-tokens", 32}, {"gen-tokens", 4}, {"rounds", 2}}, rotation},
        {"warmup", "one short request, nothing recorded", {{"prompt-tokens", 64}, {"gen-tokens", 4}}, warmup},
    };
    return table;
}

}  // namespace rc::bench
