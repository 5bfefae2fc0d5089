// POST /v1/embeddings — input as a string, strings, token ids or lists of them; encoding_format
// float or base64 (little-endian float32, what the official clients ask for by default); dimensions.
#include <cmath>
#include <cstring>

#include <base64.hpp>

#include "api/api_error.h"
#include "api/generation_pump.h"
#include "api/openai/openai_common.h"
#include "api/openai/openai_routes.h"

namespace rc::api::openai {

namespace {

std::vector<std::vector<llama_token>> read_inputs(const json & body, const llama::model & m) {
    auto it = body.find("input");
    if (it == body.end() || it->is_null()) bad_request("'input' is required", "input");
    const json & in = *it;
    auto tokens_of = [&](const json & arr) {
        std::vector<llama_token> t;
        for (const auto & v : arr) {
            if (!v.is_number_integer() || !m.valid_token(v.get<llama_token>())) bad_request("'input' token ids must be integers within the vocabulary", "input");
            t.push_back(v.get<llama_token>());
        }
        return t;
    };
    std::vector<std::vector<llama_token>> out;
    if (in.is_string()) {
        out.push_back(m.tokenize(in.get<std::string>(), true, false));
    } else if (in.is_array() && !in.empty() && in[0].is_number_integer()) {
        out.push_back(tokens_of(in));
    } else if (in.is_array() && !in.empty()) {
        for (const auto & e : in) {
            if (e.is_string()) out.push_back(m.tokenize(e.get<std::string>(), true, false));
            else if (e.is_array()) out.push_back(tokens_of(e));
            else bad_request("'input' must be a string, a list of strings or token ids", "input");
        }
    } else {
        bad_request("'input' must be a non-empty string, list of strings or token ids", "input");
    }
    if (out.size() > 2048) bad_request("'input' has more than 2048 entries", "input");
    for (const auto & t : out) {
        if (t.empty()) bad_request("'input' must not contain empty strings", "input");
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
    auto eng = acquire_model(ctx, body);
    const auto & m = eng->model();
    std::string format = opt_string(body, "encoding_format").value_or("float");
    if (format != "float" && format != "base64") bad_request("'encoding_format' must be float or base64", "encoding_format");
    const int n_embd = m.info().n_embd_out > 0 ? m.info().n_embd_out : m.info().n_embd;
    auto dims = opt_int(body, "dimensions", 1, n_embd);

    std::vector<std::shared_ptr<engine::request_channel>> channels;
    struct cancel_rest {
        std::vector<std::shared_ptr<engine::request_channel>> & c;
        ~cancel_rest() {
            for (auto & ch : c) {
                if (!ch->finished()) ch->cancel();
            }
        }
    } guard{channels};
    auto inputs = read_inputs(body, m);
    generation_meter meter(ctx, require_string(body, "model"));
    for (auto & tokens : inputs) {
        engine::generation_request r;
        r.kind = engine::request_kind::embed;
        r.prompt = std::move(tokens);
        r.normalize_embedding = true;
        auto ch = eng->submit(std::move(r));
        if (!ch) raise(ch.err());
        channels.push_back(ch.value());
    }
    json data = json::array();
    int prompt_tokens = 0;
    for (size_t i = 0; i < channels.size(); ++i) {
        auto done = pump(*channels[i], req.client_gone ? [&] { return !req.client_gone(); } : std::function<bool()>(),
                         [](const engine::generation_event &) { return true; }, meter);
        if (done.kind == engine::generation_event::type::error) raise_event_error(done.error_code, done.error_message);
        auto & v = done.embedding;
        if (dims && *dims < static_cast<long long>(v.size())) {
            // Matryoshka-style truncation, renormalised so the vector stays unit length.
            v.resize(static_cast<size_t>(*dims));
            double norm = 0;
            for (float x : v) norm += static_cast<double>(x) * x;
            norm = std::sqrt(norm);
            if (norm > 0) {
                for (float & x : v) x = static_cast<float>(x / norm);
            }
        }
        json emb = format == "base64" ? json(to_base64(v)) : json(v);
        data.push_back({{"object", "embedding"}, {"index", i}, {"embedding", emb}});
        prompt_tokens += done.usage.prompt_tokens;
    }
    http_response r;
    r.body = dump(json{{"object", "list"}, {"data", data}, {"model", require_string(body, "model")},
                       {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}}});
    return r;
}

}  // namespace

route embeddings_route(api_context & ctx) {
    return {"POST", "/v1/embeddings", [&ctx](const http_request & req) { return handle(ctx, req); }};
}

}  // namespace rc::api::openai
