// POST /v1/embeddings — input as a string, strings, token ids or lists of them; encoding_format
// float or base64 (little-endian float32, what the official clients ask for by default); dimensions.
#include <cstring>

#include <base64.hpp>

#include "http/api_error.h"
#include "api/embedding_batch.h"
#include "api/openai/openai_common.h"
#include "api/openai/openai_routes.h"

namespace rc::api::openai {
using namespace rc::http;  // written against the HTTP shell (src/http)

namespace {

std::vector<prompt_input> read_inputs(const json & body) {
    auto it = body.find("input");
    if (it == body.end() || it->is_null()) bad_request("'input' is required", "input");
    const json & in = *it;
    std::vector<prompt_input> out;
    if (in.is_string()) {
        out.push_back(prompt_input::of_text(in.get<std::string>()));
    } else if (in.is_array() && !in.empty() && in[0].is_number()) {
        out.push_back(prompt_input::of_tokens(read_token_ids(in, "input")));
    } else if (in.is_array() && !in.empty()) {
        if (in.size() > max_embedding_inputs) bad_request("'input' has more than " + std::to_string(max_embedding_inputs) + " entries", "input");
        for (const auto & e : in) {
            if (e.is_string()) out.push_back(prompt_input::of_text(e.get<std::string>()));
            else if (e.is_array()) out.push_back(prompt_input::of_tokens(read_token_ids(e, "input")));
            else bad_request("'input' must be a string, a list of strings or token ids", "input");
        }
    } else {
        bad_request("'input' must be a non-empty string, list of strings or token ids", "input");
    }
    return out;
}

std::string to_base64(const std::vector<float> & v) {
    std::string bytes(v.size() * sizeof(float), '\0');
    std::memcpy(bytes.data(), v.data(), bytes.size());  // x86/ARM are little-endian, as the format wants
    return base64::encode(bytes);
}

http_response handle(api_context & ctx, const http_request & req) {
    json body = parse_body(req);
    const std::string name = require_string(body, "model");
    std::string format = opt_string(body, "encoding_format").value_or("float");
    if (format != "float" && format != "base64") bad_request("'encoding_format' must be float or base64", "encoding_format");
    embedding_input in;
    in.inputs = read_inputs(body);

    auto lease = lease_model(ctx, find_model_entry(ctx, name));
    const auto & m = lease.engine().model();
    if (!lease.engine().is_embedding()) bad_request("\"" + name + "\" does not support embeddings (it is a text generation model)", "model");
    const int n_embd = m.info().n_embd_out > 0 ? m.info().n_embd_out : m.info().n_embd;
    auto dims = opt_int(body, "dimensions", 1, n_embd);

    auto results = run_embeddings(ctx, lease, std::move(in), req.client_gone ? [&] { return !req.client_gone(); } : std::function<bool()>());
    json data = json::array();
    for (size_t i = 0; i < results.vectors.size(); ++i) {
        auto & v = results.vectors[i];
        if (dims) truncate_dimensions(v, static_cast<size_t>(*dims));
        data.push_back({{"object", "embedding"}, {"index", i}, {"embedding", format == "base64" ? json(to_base64(v)) : json(v)}});
    }
    http_response r;
    r.body = dump(json{{"object", "list"}, {"data", std::move(data)}, {"model", name},
                       {"usage", {{"prompt_tokens", results.prompt_tokens}, {"total_tokens", results.prompt_tokens}}}});
    return r;
}

}  // namespace

route embeddings_route(api_context & ctx) {
    return {"POST", "/v1/embeddings", [&ctx](const http_request & req) { return handle(ctx, req); }};
}

}  // namespace rc::api::openai
