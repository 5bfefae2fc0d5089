#include "api/ollama/ollama_options.h"

#include <climits>

#include "api/sampling_fields.h"
#include "http/api_error.h"

namespace rc::api::ollama {
using namespace rc::http;  // written against the HTTP shell (src/http)

namespace {

// json_fields names the bare key ("'temperature' must be a number"); inside `options` the client
// needs the full path, so errors are renamed to 'options.temperature'.
template <typename F>
auto in_options(F && read) {
    try {
        return read();
    } catch (const api_error & e) {
        std::string msg = e.what();
        std::string quoted = "'" + e.param + "'";
        if (!e.param.empty() && msg.rfind(quoted, 0) == 0) msg = "'options." + e.param + "'" + msg.substr(quoted.size());
        throw api_error(e.status, msg, "options." + e.param);
    }
}

}  // namespace

void read_options(const json & body, const api_context & ctx, engine::generation_request & req) {
    auto it = body.find("options");
    const int cap = ctx.opts.max_tokens_cap;
    int max_tokens = ctx.opts.default_max_tokens;
    if (it != body.end() && !it->is_null()) {
        if (!it->is_object()) bad_request("'options' must be an object", "options");
        const json & o = *it;
        in_options([&] {
            // num_predict: -1 until a stop (Ollama's default), -2 until the context is full; both end
            // at the context's end here. 0 behaves as in llama-server: one token.
            if (auto v = opt_int(o, "num_predict", -2, INT_MAX)) max_tokens = *v < 0 ? -1 : static_cast<int>(*v);
            read_sampling_fields(o, sampling_dialect::ollama, req.sampling);
            for (auto & st : opt_string_list(o, "stop", 64)) {
                if (!st.empty()) req.stop.push_back(std::move(st));  // an empty stop would end every reply at once
            }
            // Fixed when the model loads (serve's --ctx-size, --batch-size, --threads, GPU layers, mmap);
            // one loaded model serves every client, so per-request values are checked and ignored.
            for (const char * k : {"num_ctx", "num_batch", "num_keep", "num_thread", "num_gpu", "main_gpu"}) opt_int(o, k, LLONG_MIN, LLONG_MAX);
            opt_bool(o, "use_mmap");
            // Legacy options (mirostat*, tfs_z, penalize_newline, numa, low_vram, use_mlock, f16_kv, …)
            // and unknown keys are accepted silently, as Ollama does.
            return 0;
        });
    }
    if (max_tokens < 0 && cap > 0) max_tokens = cap;
    if (cap > 0 && max_tokens > cap) max_tokens = cap;  // Ollama bounds num_predict rather than failing
    req.max_tokens = max_tokens;
}

std::string read_format(const json & body) {
    auto it = body.find("format");
    if (it == body.end() || it->is_null()) return {};
    if (it->is_string()) {
        std::string f = it->get<std::string>();
        if (f.empty()) return {};
        if (f == "json") return R"({"type":"object"})";
        bad_request("'format' must be \"json\" or a JSON schema object; got \"" + f + "\"", "format");
    }
    if (!it->is_object()) bad_request("'format' must be \"json\" or a JSON schema object", "format");
    return dump(*it);
}

std::optional<bool> read_think(const json & body) {
    auto it = body.find("think");
    if (it == body.end() || it->is_null()) return std::nullopt;
    if (it->is_boolean()) return it->get<bool>();
    if (it->is_string()) {
        std::string v = it->get<std::string>();
        // Effort levels are for models with graded reasoning; templates here take on/off.
        if (v == "high" || v == "medium" || v == "low" || v == "max") return true;
    }
    bad_request("'think' must be true, false, \"high\", \"medium\" or \"low\"", "think");
}

int read_logprobs(const json & body) {
    bool on = opt_bool(body, "logprobs").value_or(false);
    auto top = opt_int(body, "top_logprobs", 0, 20);
    return on ? static_cast<int>(top.value_or(0)) : -1;
}

bool read_bool(const json & body, const char * key, bool fallback) { return opt_bool(body, key).value_or(fallback); }

}  // namespace rc::api::ollama
