#include "api/openai/openai_common.h"

#include <charconv>
#include <chrono>
#include <cmath>
#include <random>

#include "api/sampling_fields.h"
#include "http/api_error.h"
#include "util/safe_quote.h"

namespace rc::api::openai {
using namespace rc::http;  // written against the HTTP shell (src/http)

namespace {

// A logit_bias key as a token id: decimal digits only, below 2^31 (no wrap-around to a small id).
std::optional<llama_token> token_key(const std::string & key) {
    long long v = -1;
    auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), v);
    if (key.empty() || ec != std::errc() || end != key.data() + key.size() || v < 0 || v > 0x7fffffffLL) return std::nullopt;
    return static_cast<llama_token>(v);
}

}  // namespace

void read_sampling(const json & body, engine::generation_request & req) {
    auto & s = req.sampling;
    read_sampling_fields(body, sampling_dialect::openai, s);
    if (auto it = body.find("logit_bias"); it != body.end() && !it->is_null()) {
        if (!it->is_object()) bad_request("'logit_bias' must be an object of token id → bias", "logit_bias");
        for (const auto & [key, val] : it->items()) {
            auto tok = token_key(key);
            if (!tok) bad_request("'logit_bias' key " + safe_quote(key) + " is not a token id", "logit_bias");
            if (!val.is_number() || !std::isfinite(val.get<double>()) || std::fabs(val.get<double>()) > 100)
                bad_request("'logit_bias' values must be numbers between -100 and 100", "logit_bias");
            double b = val.get<double>();
            s.logit_bias.emplace_back(*tok, b <= -100 ? -INFINITY : static_cast<float>(b));
        }
    }
    req.stop = opt_string_list(body, "stop", 16);
    for (const auto & st : req.stop) {
        if (st.empty()) bad_request("'stop' strings must not be empty", "stop");
    }
    if (auto v = opt_string(body, "cache_salt")) req.cache_salt = *v;
}

int read_max_tokens(const json & body, const api_context & ctx, std::initializer_list<const char *> fields) {
    for (const char * f : fields) {
        auto v = opt_int(body, f, 0, ctx.opts.max_tokens_cap);
        if (!v) continue;
        if (*v == 0) bad_request(std::string("'") + f + "' must be at least 1", f);
        return static_cast<int>(*v);
    }
    int n = ctx.opts.default_max_tokens;
    if (n < 0 && ctx.opts.max_tokens_cap > 0) n = ctx.opts.max_tokens_cap;
    return n;
}

int read_n(const json & body) { return static_cast<int>(opt_int(body, "n", 1, 16).value_or(1)); }

bool read_include_usage(const json & body) {
    auto it = body.find("stream_options");
    if (it == body.end() || it->is_null()) return false;
    if (!it->is_object()) bad_request("'stream_options' must be an object", "stream_options");
    try {
        return opt_bool(*it, "include_usage").value_or(false);
    } catch (const api_error &) {
        bad_request("'stream_options.include_usage' must be a boolean", "stream_options");
    }
}

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

chunk_framing::chunk_framing(const std::string & id, const char * object, long long created, const std::string & model, bool fingerprint) {
    // The same keys, in the same order, as the whole JSON object would have.
    head_ = "data: {\"id\":" + dump(json(id)) + ",\"object\":\"" + object + "\",\"created\":" + std::to_string(created) +
            ",\"model\":" + dump(json(model)) + (fingerprint ? ",\"system_fingerprint\":\"rustycage\"" : "") + ",\"choices\":[";
}

std::string chunk_framing::choice(const json & c) const {
    std::string out = head_;
    out += dump(c);
    out += "]}\n\n";
    return out;
}

std::string chunk_framing::end(const json * usage) const {
    std::string out;
    if (usage) out = head_ + "],\"usage\":" + dump(*usage) + "}\n\n";
    return out + "data: [DONE]\n\n";
}

}  // namespace rc::api::openai
