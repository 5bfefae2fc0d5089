#include "api/openai/openai_common.h"

#include <chrono>
#include <cmath>
#include <random>

#include "api/api_error.h"

namespace rc::api::openai {

void read_generation_params(const json & body, const api_context & ctx, const llama::model & m,
                            engine::generation_request & req) {
    auto & s = req.sampling;
    if (auto v = opt_number(body, "temperature", 0, 2)) s.temperature = static_cast<float>(*v);
    if (auto v = opt_number(body, "top_p", 0, 1)) s.top_p = static_cast<float>(*v);
    if (auto v = opt_int(body, "top_k", 0, 1000000)) s.top_k = static_cast<int>(*v);
    if (auto v = opt_number(body, "min_p", 0, 1)) s.min_p = static_cast<float>(*v);
    if (auto v = opt_number(body, "typical_p", 0.000001, 1)) s.typical_p = static_cast<float>(*v);
    if (auto v = opt_number(body, "repeat_penalty", 0.000001, 100)) s.repeat_penalty = static_cast<float>(*v);
    if (auto v = opt_number(body, "presence_penalty", -2, 2)) s.presence_penalty = static_cast<float>(*v);
    if (auto v = opt_number(body, "frequency_penalty", -2, 2)) s.frequency_penalty = static_cast<float>(*v);
    if (auto v = opt_int(body, "seed", -9223372036854775807LL, 9223372036854775807LL)) s.seed = static_cast<uint32_t>(*v);
    if (auto it = body.find("logit_bias"); it != body.end() && !it->is_null()) {
        if (!it->is_object()) bad_request("'logit_bias' must be an object of token id → bias", "logit_bias");
        for (const auto & [key, val] : it->items()) {
            char * end = nullptr;
            long tok = std::strtol(key.c_str(), &end, 10);
            if (key.empty() || *end != '\0' || !m.valid_token(static_cast<llama_token>(tok)))
                bad_request("'logit_bias' key '" + key + "' is not a token id of this model", "logit_bias");
            if (!val.is_number() || !std::isfinite(val.get<double>()) || std::fabs(val.get<double>()) > 100)
                bad_request("'logit_bias' values must be numbers between -100 and 100", "logit_bias");
            double b = val.get<double>();
            s.logit_bias.emplace_back(static_cast<llama_token>(tok), b <= -100 ? -INFINITY : static_cast<float>(b));
        }
    }
    req.stop = opt_string_list(body, "stop", 16);
    for (const auto & st : req.stop) {
        if (st.empty()) bad_request("'stop' strings must not be empty", "stop");
    }
    auto max_tokens = opt_int(body, "max_completion_tokens", 0, ctx.opts.max_tokens_cap);
    if (!max_tokens) max_tokens = opt_int(body, "max_tokens", 0, ctx.opts.max_tokens_cap);
    if (max_tokens && *max_tokens == 0) bad_request("'max_tokens' must be at least 1", "max_tokens");
    req.max_tokens = max_tokens ? static_cast<int>(*max_tokens) : ctx.opts.default_max_tokens;
    if (req.max_tokens < 0 && ctx.opts.max_tokens_cap > 0) req.max_tokens = ctx.opts.max_tokens_cap;
    if (auto v = opt_string(body, "cache_salt")) req.cache_salt = *v;
}

int read_n(const json & body) { return static_cast<int>(opt_int(body, "n", 1, 16).value_or(1)); }

json usage_json(const engine::usage_stats & u) {
    return json{{"prompt_tokens", u.prompt_tokens},
                {"completion_tokens", u.completion_tokens},
                {"total_tokens", u.prompt_tokens + u.completion_tokens},
                {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

namespace {
json bytes_of(const std::string & s) {
    json arr = json::array();
    for (unsigned char c : s) arr.push_back(static_cast<int>(c));
    return arr;
}
}  // namespace

json chat_logprob_json(const engine::token_choice & c) {
    json top = json::array();
    for (const auto & t : c.top) top.push_back({{"token", t.text}, {"logprob", t.logprob}, {"bytes", bytes_of(t.text)}});
    return json{{"token", c.chosen.text}, {"logprob", c.chosen.logprob}, {"bytes", bytes_of(c.chosen.text)}, {"top_logprobs", top}};
}

std::string make_id(const char * prefix) {
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    static const char * hex = "0123456789abcdef";
    std::string id = prefix;
    id += '-';
    for (int i = 0; i < 24; ++i) id += hex[rng() & 15];
    return id;
}

long long unix_now() {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string sse(const json & j) { return "data: " + dump(j) + "\n\n"; }

std::shared_ptr<engine::engine> acquire_model(api_context & ctx, const json & body) {
    std::string name = require_string(body, "model");
    auto e = ctx.models.acquire(name);
    if (!e) raise(e.err());
    return e.value();
}

}  // namespace rc::api::openai
