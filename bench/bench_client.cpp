#include "bench_client.h"

#include <cpp-httplib/httplib.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <regex>

namespace rc::bench {

using json = nlohmann::ordered_json;

double now_s() {
    static const auto origin = std::chrono::steady_clock::now();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - origin).count();
}

bool parse_target(const std::string & spec, target & out) {
    static const std::regex re(R"(^([A-Za-z0-9_.+-]+)=https?://([^:/]+):([0-9]+)/?$)");
    std::smatch m;
    if (!std::regex_match(spec, m, re)) return false;
    out.name = m[1];
    out.host = m[2];
    out.port = std::stoi(m[3]);
    return out.port > 0 && out.port < 65536;
}

namespace {

void read_usage(const json & j, completion_result & r) {
    auto it = j.find("usage");
    if (it == j.end() || !it->is_object()) return;
    const json & u = *it;
    if (u.contains("prompt_tokens") && u["prompt_tokens"].is_number()) r.prompt_tokens = u["prompt_tokens"].get<int>();
    if (u.contains("completion_tokens") && u["completion_tokens"].is_number()) r.completion_tokens = u["completion_tokens"].get<int>();
    if (auto d = u.find("prompt_tokens_details"); d != u.end() && d->is_object() && d->contains("cached_tokens") && (*d)["cached_tokens"].is_number())
        r.cached_tokens = (*d)["cached_tokens"].get<int>();
}

// Text of choices[0], or empty.
std::string choice_text(const json & j) {
    auto it = j.find("choices");
    if (it == j.end() || !it->is_array() || it->empty()) return {};
    const json & c = (*it)[0];
    if (auto t = c.find("text"); t != c.end() && t->is_string()) return t->get<std::string>();
    return {};
}

}  // namespace

completion_result run_completion(const target & t, const completion_params & p) {
    completion_result r;
    json body = {{"model", p.model}, {"prompt", p.prompt}, {"max_tokens", p.max_tokens}, {"temperature", 0},
                 {"stream", p.stream}};
    if (p.stream) body["stream_options"] = {{"include_usage", true}};
    if (!p.banned.empty()) {
        json bias = json::object();
        for (int id : p.banned) bias[std::to_string(id)] = -100;
        body["logit_bias"] = bias;
    }
    const std::string payload = body.dump();

    httplib::Client cli(t.host, t.port);
    const auto to = std::chrono::duration<double>(p.timeout_s);
    cli.set_connection_timeout(std::chrono::seconds(5));
    cli.set_read_timeout(std::chrono::duration_cast<std::chrono::microseconds>(to));
    cli.set_write_timeout(std::chrono::seconds(60));
    cli.set_keep_alive(false);

    std::string buf, whole, stream_error;
    r.t_send = now_s();
    httplib::Result res;
    if (p.stream) {
        res = cli.Post(
            "/v1/completions", httplib::Headers{}, payload, "application/json",
            [&](const char * data, size_t n) {
                const double ts = now_s();
                buf.append(data, n);
                size_t pos;
                while ((pos = buf.find('\n')) != std::string::npos) {
                    std::string line = buf.substr(0, pos);
                    buf.erase(0, pos + 1);
                    if (!line.empty() && line.back() == '\r') line.pop_back();
                    if (line.rfind("data:", 0) != 0) continue;
                    std::string data_s = line.substr(5);
                    if (!data_s.empty() && data_s[0] == ' ') data_s.erase(0, 1);
                    if (data_s == "[DONE]") continue;
                    json j = json::parse(data_s, nullptr, false);
                    if (j.is_discarded()) continue;
                    if (j.contains("error")) {
                        stream_error = j["error"].dump();
                        continue;
                    }
                    if (!choice_text(j).empty()) {
                        r.token_times.push_back(ts);
                        if (p.tokens_seen) p.tokens_seen->fetch_add(1);
                    }
                    read_usage(j, r);
                }
                r.t_end = ts;
                if (p.stop && p.stop->load()) {
                    r.stopped = true;
                    return false;
                }
                return true;
            });
    } else {
        res = cli.Post("/v1/completions", payload, "application/json");
    }
    if (r.t_end == 0) r.t_end = now_s();
    if (!res) {
        if (r.stopped) {
            r.ok = true;
            return r;
        }
        r.error = "http error: " + httplib::to_string(res.error());
        return r;
    }
    r.status = res->status;
    if (res->status != 200) {
        r.error = "status " + std::to_string(res->status) + ": " + res->body.substr(0, 300);
        return r;
    }
    if (!p.stream) {
        r.t_end = now_s();
        json j = json::parse(res->body, nullptr, false);
        if (j.is_discarded()) {
            r.error = "unparsable body";
            return r;
        }
        if (!choice_text(j).empty()) r.token_times.push_back(r.t_end);
        read_usage(j, r);
    }
    if (!stream_error.empty()) {
        r.error = "stream error: " + stream_error;
        return r;
    }
    r.ok = true;
    return r;
}

int http_get_status(const target & t, const std::string & path, double timeout_s) {
    httplib::Client cli(t.host, t.port);
    cli.set_connection_timeout(std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::duration<double>(timeout_s)));
    cli.set_read_timeout(std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::duration<double>(timeout_s)));
    auto res = cli.Get(path);
    return res ? res->status : 0;
}

int http_post_status(const target & t, const std::string & path, double timeout_s) {
    httplib::Client cli(t.host, t.port);
    cli.set_connection_timeout(std::chrono::seconds(5));
    cli.set_read_timeout(std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::duration<double>(timeout_s)));
    auto res = cli.Post(path, "{}", "application/json");
    return res ? res->status : 0;
}

}  // namespace rc::bench
