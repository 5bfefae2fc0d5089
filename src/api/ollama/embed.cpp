// POST /api/embed — {model, input (string or list), truncate, dimensions, keep_alive} →
// {model, embeddings, total_duration, load_duration, prompt_eval_count}, L2-normalised as Ollama's.
// POST /api/embeddings — legacy {model, prompt} → {embedding}; not normalised, as in Ollama.
#include <climits>
#include <cmath>

#include "api/api_error.h"
#include "api/generation_pump.h"
#include "api/ollama/keep_alive.h"
#include "api/ollama/ollama_common.h"
#include "api/ollama/ollama_routes.h"

namespace rc::api::ollama {

namespace {

std::vector<std::string> read_inputs(const json & body) {
    auto it = body.find("input");
    std::vector<std::string> out;
    if (it == body.end() || it->is_null()) return out;
    const char * msg = "'input' must be a string or a list of strings";
    if (it->is_string()) {
        if (!it->get<std::string>().empty()) out.push_back(it->get<std::string>());  // "" only loads the model
    } else if (it->is_array()) {
        for (const auto & v : *it) {
            if (!v.is_string()) bad_request(msg, "input");
            out.push_back(v.get<std::string>());
        }
    } else {
        bad_request(msg, "input");
    }
    if (out.size() > 2048) bad_request("'input' has more than 2048 entries", "input");
    return out;
}

void check_options(const json & body) {
    // Embedding requests take no sampling options; load-time ones (num_ctx, …) are fixed at serve.
    if (auto it = body.find("options"); it != body.end() && !it->is_null() && !it->is_object())
        bad_request("'options' must be an object", "options");
}

// Tokens of one input. Too long: with truncation the head is kept, as Ollama does, ending in the
// tokenizer's closing token (BERT's [SEP]) when it adds one; without it, a 400.
std::vector<llama_token> input_tokens(const engine::engine & eng, const std::string & text, bool truncate) {
    const auto & m = eng.model();
    auto tokens = m.tokenize(text, true, false);
    if (tokens.empty()) bad_request("'input' must not contain empty strings", "input");
    // The engine takes prompts shorter than its context (it refuses n_prompt >= n_ctx).
    const size_t limit = static_cast<size_t>(eng.n_ctx()) - 1;
    if (tokens.size() > limit) {
        if (!truncate) bad_request("the input length exceeds the context length (" + std::to_string(limit) + " tokens)", "input");
        llama_token last = tokens.back();
        tokens.resize(limit);
        if (llama_vocab_get_add_eos(m.vocab()) || llama_vocab_get_add_sep(m.vocab())) tokens.back() = last;
    }
    return tokens;
}

void renormalize(std::vector<float> & v) {
    double norm = 0;
    for (float x : v) norm += static_cast<double>(x) * x;
    norm = std::sqrt(norm);
    if (norm > 0) {
        for (float & x : v) x = static_cast<float>(x / norm);
    }
}

struct embed_results {
    std::vector<std::vector<float>> vectors;
    int prompt_tokens = 0;
};

embed_results run(engine::engine & eng, std::vector<std::vector<llama_token>> inputs, bool normalize, const http_request & req,
                  generation_meter & meter) {
    std::vector<std::shared_ptr<engine::request_channel>> channels;
    struct cancel_rest {
        std::vector<std::shared_ptr<engine::request_channel>> & c;
        ~cancel_rest() {
            for (auto & ch : c) {
                if (!ch->finished()) ch->cancel();
            }
        }
    } guard{channels};
    for (auto & tokens : inputs) {
        engine::generation_request r;
        r.kind = engine::request_kind::embed;
        r.prompt = std::move(tokens);
        r.normalize_embedding = normalize;
        auto ch = eng.submit(std::move(r));
        if (!ch) raise(ch.err());
        channels.push_back(ch.value());
    }
    embed_results out;
    for (auto & ch : channels) {
        auto done = pump(*ch, req.client_gone ? [&] { return !req.client_gone(); } : std::function<bool()>(),
                         [](const engine::generation_event &) { return true; }, meter);
        if (done.kind == engine::generation_event::type::error) raise_event_error(done.error_code, done.error_message);
        out.prompt_tokens += done.usage.prompt_tokens;
        out.vectors.push_back(std::move(done.embedding));
    }
    return out;
}

// The engine for an embedding request; 400 in Ollama's words for a text generation model.
acquired_model acquire_embedder(api_context & ctx, const std::string & name, std::optional<std::chrono::nanoseconds> keep_alive) {
    auto a = acquire(ctx, name, keep_alive);
    if (!a.eng->is_embedding()) bad_request("\"" + name + "\" does not support embeddings (it is a text generation model)", "model");
    return a;
}

http_response embed(api_context & ctx, const http_request & req) {
    auto started = steady::now();
    json body = parse_body(req);
    std::string name = model_field(body);
    auto inputs = read_inputs(body);
    bool truncate = opt_bool(body, "truncate").value_or(true);
    auto dims = opt_int(body, "dimensions", 0, INT_MAX);
    auto keep_alive = read_keep_alive(body);
    check_options(body);

    unload_guard unload{ctx, name, keep_alive};  // keep_alive 0 applies even when a check below fails
    auto a = acquire_embedder(ctx, name, keep_alive);
    json embeddings = json::array();
    json out = {{"model", name}};
    if (inputs.empty()) {  // Ollama: no input loads the model and answers an empty list
        out["embeddings"] = embeddings;
        return json_response(out);
    }
    std::vector<std::vector<llama_token>> tokens;
    for (const auto & text : inputs) tokens.push_back(input_tokens(*a.eng, text, truncate));
    generation_meter meter(ctx, name);
    auto results = run(*a.eng, std::move(tokens), true, req, meter);
    for (auto & v : results.vectors) {
        if (dims && *dims > 0 && *dims < static_cast<long long>(v.size())) {
            v.resize(static_cast<size_t>(*dims));  // Matryoshka truncation, back to unit length
            renormalize(v);
        }
        embeddings.push_back(std::move(v));
    }
    out["embeddings"] = std::move(embeddings);
    out["total_duration"] = ns_since(started);
    out["load_duration"] = static_cast<long long>(a.load_time.count());
    out["prompt_eval_count"] = results.prompt_tokens;
    return json_response(out);
}

http_response embeddings_legacy(api_context & ctx, const http_request & req) {
    json body = parse_body(req);
    std::string name = model_field(body);
    std::string prompt = opt_string(body, "prompt").value_or("");
    auto keep_alive = read_keep_alive(body);
    check_options(body);

    unload_guard unload{ctx, name, keep_alive};
    auto a = acquire_embedder(ctx, name, keep_alive);
    if (prompt.empty()) return json_response(json{{"embedding", json::array()}});  // loads only
    std::vector<std::vector<llama_token>> tokens;
    tokens.push_back(input_tokens(*a.eng, prompt, true));
    // The legacy route returns the pooled vector as the model produced it (Ollama never normalised it).
    generation_meter meter(ctx, name);
    auto results = run(*a.eng, std::move(tokens), false, req, meter);
    return json_response(json{{"embedding", std::move(results.vectors[0])}});
}

}  // namespace

std::vector<route> embed_routes(api_context & ctx) {
    return {
        {"POST", "/api/embed", [&ctx](const http_request & req) { return embed(ctx, req); }},
        {"POST", "/api/embeddings", [&ctx](const http_request & req) { return embeddings_legacy(ctx, req); }},
    };
}

}  // namespace rc::api::ollama
