#include "api/embedding_batch.h"

#include <algorithm>
#include <cmath>
#include <deque>

#include "engine/request_checks.h"
#include "http/api_error.h"
#include "util/utf8.h"

namespace rc::api {
using namespace rc::http;  // written against the HTTP shell (src/http)

namespace {

using namespace std::chrono_literals;

// Inputs in the engine at once: enough to keep every sequence busy, few enough to leave the queue
// to other clients.
size_t window_for(const engine::engine_options & o) {
    return static_cast<size_t>(std::clamp(2 * o.n_parallel, 1, std::max(1, std::min(64, o.max_queue))));
}

std::vector<llama_token> input_tokens(const engine::engine & eng, const prompt_input & in, const embedding_input & req) {
    const auto & m = eng.model();
    std::vector<llama_token> tokens;
    if (in.is_tokens) {
        if (auto p = engine::check_token_ids(m, in.tokens))
            bad_request("'" + req.field + "' holds token " + std::to_string(p.token) + ", outside this model's vocabulary", req.field);
        tokens.assign(in.tokens.begin(), in.tokens.end());
    } else if (!in.text.empty()) {
        // Truncating, only the head is kept: a text far longer than the context could hold is cut
        // before it is tokenized (a 30 MB input cost +526 MiB of tokens to keep ~500). The cut keeps
        // 16 tokens more than the context at the longest token each, so the kept head is the head of
        // the whole text's tokens.
        const size_t head = (static_cast<size_t>(eng.n_ctx()) + 16) * std::max<size_t>(1, m.longest_token_bytes());
        if (req.truncate && in.text.size() > head) {
            const std::string_view cut(in.text.data(), head);
            tokens = m.tokenize(std::string(cut.substr(0, utf8::complete_prefix_length(cut))), true, false);
        } else {
            tokens = m.tokenize(in.text, true, false);
        }
    }
    // An empty string would embed nothing but the tokenizer's BOS/CLS: refused, as OpenAI does.
    if (tokens.empty() || (!in.is_tokens && in.text.empty())) bad_request("'" + req.field + "' must not contain empty strings", req.field);
    // The engine takes prompts shorter than its context (it refuses n_prompt >= n_ctx).
    const size_t limit = static_cast<size_t>(eng.n_ctx()) - 1;
    if (tokens.size() > limit) {
        if (!req.truncate) bad_request("the input length exceeds the context length (" + std::to_string(limit) + " tokens)", req.field);
        // Too long: the head is kept, as Ollama does, ending in the tokenizer's closing token (BERT's [SEP]).
        llama_token last = tokens.back();
        tokens.resize(limit);
        if (llama_vocab_get_add_eos(m.vocab()) || llama_vocab_get_add_sep(m.vocab())) tokens.back() = last;
    }
    return tokens;
}

}  // namespace

embedding_output run_embeddings(api_context & ctx, models::model_lease & lease, embedding_input in, const std::function<bool()> & client_alive) {
    engine::engine & eng = lease.engine();
    if (in.inputs.size() > max_embedding_inputs)
        bad_request("'" + in.field + "' has more than " + std::to_string(max_embedding_inputs) + " entries", in.field);
    std::vector<std::vector<llama_token>> tokens;
    tokens.reserve(in.inputs.size());
    for (const auto & i : in.inputs) tokens.push_back(input_tokens(eng, i, in));

    embedding_output out;
    out.vectors.resize(tokens.size());
    generation_meter meter(ctx.metrics.get(), lease.name());
    struct pending {
        size_t index;
        std::shared_ptr<engine::request_channel> channel;
    };
    std::deque<pending> in_flight;
    auto cancel_all = [&] {
        for (auto & p : in_flight) p.channel->cancel();
        for (auto & p : in_flight) {  // their terminal events count them as cancelled
            auto deadline = std::chrono::steady_clock::now() + 10s;
            while (std::chrono::steady_clock::now() < deadline) {
                auto ev = p.channel->pop(100ms);
                if (ev && ev->kind != engine::generation_event::type::text) {
                    meter.on_event(*ev);
                    break;
                }
            }
        }
        in_flight.clear();
    };
    struct on_exit {
        std::function<void()> f;
        ~on_exit() { f(); }
    } guard{[&] { for (auto & p : in_flight) p.channel->cancel(); }};

    const size_t window = window_for(ctx.models.engine_options());
    size_t next = 0, finished = 0;
    auto next_check = std::chrono::steady_clock::now() + generation_session::client_check;
    while (finished < tokens.size()) {
        while (next < tokens.size() && in_flight.size() < window) {
            engine::generation_request r;
            r.kind = engine::request_kind::embed;
            r.prompt = tokens[next];
            r.normalize_embedding = in.normalize;
            auto ch = eng.submit(std::move(r));
            if (!ch) {
                // The queue is full: when some of ours are in it, wait for them and go on; else 503.
                if (ch.err().code == errc::unavailable && !in_flight.empty()) break;
                raise(ch.err(), ch.err().code == errc::unavailable ? std::string() : in.field);
            }
            std::vector<llama_token>().swap(tokens[next]);
            in_flight.push_back({next++, ch.value()});
        }
        auto now = std::chrono::steady_clock::now();
        if (now >= next_check) {
            if (client_alive && !client_alive()) {
                cancel_all();
                client_went_away();
            }
            next_check = now + generation_session::client_check;
        }
        auto ev = in_flight.front().channel->pop(std::chrono::ceil<std::chrono::milliseconds>(next_check - now));
        if (!ev) continue;
        meter.on_event(*ev);
        if (ev->kind == engine::generation_event::type::text) continue;
        if (ev->kind == engine::generation_event::type::error) {
            in_flight.pop_front();
            cancel_all();
            raise(ev->error, in.field);
        }
        out.vectors[in_flight.front().index] = std::move(ev->embedding);
        out.prompt_tokens += ev->usage.prompt_tokens;
        in_flight.pop_front();
        ++finished;
    }
    return out;
}

void truncate_dimensions(std::vector<float> & v, size_t dims) {
    if (dims == 0 || dims >= v.size()) return;
    v.resize(dims);
    double norm = 0;
    for (float x : v) norm += static_cast<double>(x) * x;
    norm = std::sqrt(norm);
    if (norm > 0) {
        for (float & x : v) x = static_cast<float>(x / norm);
    }
}

}  // namespace rc::api
