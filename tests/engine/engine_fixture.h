#pragma once
// Helpers for engine tests: start an engine on a generated model, build requests, drain channels.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "engine/engine.h"
#include "llama/backend.h"
#include "support/poll.h"
#include "test_models.h"

namespace rc::test {

struct run_result {
    std::string text;
    std::vector<llama_token> tokens;
    std::vector<engine::token_choice> choices;
    engine::generation_event done;
};

inline run_result collect(engine::request_channel & ch) {
    run_result r;
    for (;;) {
        auto ev = ch.pop(std::chrono::seconds(120));
        if (!ev) {
            ADD_FAILURE() << "no event within 120 s";
            return r;
        }
        if (ev->kind == engine::generation_event::type::text) {
            r.text += ev->text;
            for (const auto & t : ev->tokens) {
                r.tokens.push_back(t.chosen.token);
                r.choices.push_back(t);
            }
            continue;
        }
        r.done = std::move(*ev);
        return r;
    }
}

// The engine plans every decode and restore against the free cells (kv/kv_planner.h), so llama.cpp
// never reports that it could not find cells; when it does, the test that made it fails.
inline void fail_on_llama_cell_shortage() {
    static std::once_flag once;
    std::call_once(once, [] {
        llama::set_log_observer([](std::string_view line) {
            if (line.find("failed to find") != std::string_view::npos)
                ADD_FAILURE() << "llama.cpp could not find KV cells: " << line;
        });
    });
}

inline std::unique_ptr<engine::engine> start_engine(const std::string & preset, engine::engine_options opts = {}) {
    fail_on_llama_cell_shortage();
    auto m = shared_model(preset);
    if (!m) return nullptr;
    // One thread: ctest runs two test binaries at once on small machines, and ggml's spinning workers
    // slow down badly when oversubscribed.
    if (opts.n_threads == 0) opts.n_threads = 1;
    auto e = engine::engine::start(m, opts);
    EXPECT_TRUE(e.ok()) << (e.ok() ? "" : e.err().message);
    return e.ok() ? std::move(e.value()) : nullptr;
}

inline engine::generation_request greedy(const llama::model & m, const std::string & text, int max_tokens) {
    engine::generation_request r;
    r.prompt = m.tokenize(text, true, false);
    r.sampling.temperature = 0;
    r.max_tokens = max_tokens;
    return r;
}

inline std::shared_ptr<engine::request_channel> submit_ok(engine::engine & e, engine::generation_request r) {
    auto ch = e.submit(std::move(r));
    EXPECT_TRUE(ch.ok()) << (ch.ok() ? "" : ch.err().message);
    return ch.ok() ? ch.value() : nullptr;
}

}  // namespace rc::test
