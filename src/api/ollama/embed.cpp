// POST /api/embed — {model, input (string or list), truncate, dimensions, keep_alive} →
// {model, embeddings, total_duration, load_duration, prompt_eval_count}, L2-normalised as Ollama's.
// POST /api/embeddings — legacy {model, prompt} → {embedding}; not normalised, as in Ollama.
#include <climits>

#include "http/api_error.h"
#include "api/embedding_batch.h"
#include "api/ollama/keep_alive.h"
#include "api/ollama/ollama_common.h"
#include "api/ollama/ollama_routes.h"

namespace rc::api::ollama {
using namespace rc::http;  // written against the HTTP shell (src/http)

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
    if (out.size() > max_embedding_inputs) bad_request("'input' has more than " + std::to_string(max_embedding_inputs) + " entries", "input");
    return out;
}

void check_options(const json & body) {
    // Embedding requests take no sampling options; load-time ones (num_ctx, …) are fixed at serve.
    if (auto it = body.find("options"); it != body.end() && !it->is_null() && !it->is_object())
        bad_request("'options' must be an object", "options");
}

// The lease for an embedding request; 400 in Ollama's words for a text generation model.
models::model_lease lease_embedder(api_context & ctx, const std::string & name, std::optional<std::chrono::nanoseconds> keep_alive,
                                   std::chrono::nanoseconds & load_time) {
    auto lease = lease_model(ctx, find_model(ctx, name), keep_alive_or_default(ctx, keep_alive), &load_time);
    if (!lease.engine().is_embedding()) bad_request("\"" + name + "\" does not support embeddings (it is a text generation model)", "model");
    return lease;
}

std::function<bool()> client_of(const http_request & req) {
    return req.client_gone ? std::function<bool()>([&req] { return !req.client_gone(); }) : std::function<bool()>();
}

http_response embed(api_context & ctx, const http_request & req) {
    const auto started = steady::now();
    json body = parse_body(req);
    std::string name = model_field(body);
    embedding_input in;
    for (auto & text : read_inputs(body)) in.inputs.push_back(prompt_input::of_text(std::move(text)));
    in.truncate = opt_bool(body, "truncate").value_or(true);
    auto dims = opt_int(body, "dimensions", 0, INT_MAX);
    auto keep_alive = read_keep_alive(body);
    check_options(body);

    std::chrono::nanoseconds load_time{0};
    auto lease = lease_embedder(ctx, name, keep_alive, load_time);  // keep_alive 0 applies however this ends
    json out = {{"model", name}};
    if (in.inputs.empty()) {  // Ollama: no input loads the model and answers an empty list
        out["embeddings"] = json::array();
        return json_response(out);
    }
    auto results = run_embeddings(ctx, lease, std::move(in), client_of(req));
    json embeddings = json::array();
    for (auto & v : results.vectors) {
        if (dims) truncate_dimensions(v, static_cast<size_t>(*dims));  // Matryoshka truncation, back to unit length
        embeddings.push_back(std::move(v));
    }
    out["embeddings"] = std::move(embeddings);
    out["total_duration"] = ns_since(started);
    out["load_duration"] = static_cast<long long>(load_time.count());
    out["prompt_eval_count"] = results.prompt_tokens;
    return json_response(out);
}

http_response embeddings_legacy(api_context & ctx, const http_request & req) {
    json body = parse_body(req);
    std::string name = model_field(body);
    std::string prompt = opt_string(body, "prompt").value_or("");
    auto keep_alive = read_keep_alive(body);
    check_options(body);

    std::chrono::nanoseconds load_time{0};
    auto lease = lease_embedder(ctx, name, keep_alive, load_time);
    if (prompt.empty()) return json_response(json{{"embedding", json::array()}});  // loads only
    embedding_input in;
    in.inputs.push_back(prompt_input::of_text(std::move(prompt)));
    in.truncate = true;
    // The legacy route returns the pooled vector as the model produced it (Ollama never normalised it).
    in.normalize = false;
    auto results = run_embeddings(ctx, lease, std::move(in), client_of(req));
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
