// /metrics and the server conveniences against the real `rustycage serve`: counters and histograms
// move by exactly what the requests did, the exposition passes `promtool check metrics`, llama-server's
// /tokenize, /detokenize, /apply-template, /props, NIM's /v1/metadata, and a full queue answers 503
// with Retry-After.
#include <cpp-httplib/httplib.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "support/shared_server.h"
#include "support/run_command.h"
#include "support/temp_dir.h"

using json = nlohmann::json;
using rc::test::model_path;

namespace {

using labels = std::map<std::string, std::string>;

struct sample {
    std::string name;
    labels l;
    double value = 0;
};

// A minimal reader of the text format: enough for our own exposition (quoted values, escapes).
std::vector<sample> parse_exposition(const std::string & text) {
    std::vector<sample> out;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        sample s;
        size_t i = line.find_first_of("{ ");
        s.name = line.substr(0, i);
        if (i != std::string::npos && line[i] == '{') {
            ++i;
            while (i < line.size() && line[i] != '}') {
                size_t eq = line.find('=', i);
                std::string key = line.substr(i, eq - i);
                std::string val;
                size_t j = eq + 2;  // past ="
                for (; j < line.size() && line[j] != '"'; ++j) {
                    if (line[j] == '\\' && j + 1 < line.size()) {
                        ++j;
                        val += line[j] == 'n' ? '\n' : line[j];
                    } else {
                        val += line[j];
                    }
                }
                s.l[key] = val;
                i = j + 1;
                if (i < line.size() && line[i] == ',') ++i;
            }
            ++i;  // past }
        }
        s.value = std::strtod(line.c_str() + line.find(' ', i == std::string::npos ? 0 : i), nullptr);
        out.push_back(std::move(s));
    }
    return out;
}

// Sum of the series of `name` whose labels include `want` (0 when there are none).
double value_of(const std::vector<sample> & samples, const std::string & name, const labels & want = {}) {
    double sum = 0;
    for (const auto & s : samples) {
        if (s.name != name) continue;
        bool match = true;
        for (const auto & [k, v] : want) {
            auto it = s.l.find(k);
            if (it == s.l.end() || it->second != v) match = false;
        }
        if (match) sum += s.value;
    }
    return sum;
}

bool has_series(const std::vector<sample> & samples, const std::string & name, const labels & want) {
    for (const auto & s : samples) {
        if (s.name == name && s.l == want) return true;
    }
    return false;
}

using rc::test::poll_until;

std::string find_promtool() {
    const char * path = std::getenv("PATH");
    std::istringstream dirs(path ? path : "");
    std::string dir;
    while (std::getline(dirs, dir, ':')) {
        auto p = std::filesystem::path(dir) / "promtool";
        if (!dir.empty() && access(p.c_str(), X_OK) == 0) return p.string();
    }
    return access("/usr/bin/promtool", X_OK) == 0 ? "/usr/bin/promtool" : "";
}

json chat(const std::string & model, const std::string & text, int max_tokens) {
    return {{"model", model}, {"messages", {{{"role", "user"}, {"content", text}}}}, {"max_tokens", max_tokens}, {"temperature", 0}};
}

class metrics_endpoint : public rc::test::shared_server {
  protected:
    static httplib::Result post(const std::string & path, const json & body) { return client().Post(path, body.dump(), "application/json"); }
    static json post_ok(const std::string & path, const json & body) {
        auto res = post(path, body);
        EXPECT_TRUE(res) << "no response from " << path;
        if (!res) return {};
        EXPECT_EQ(res->status, 200) << path << ": " << res->body;
        return json::parse(res->body, nullptr, false);
    }
    static std::string scrape_text(const std::string & path = "/metrics") {
        auto res = client().Get(path);
        EXPECT_TRUE(res);
        if (!res) return {};
        EXPECT_EQ(res->status, 200);
        EXPECT_EQ(res->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
        return res->body;
    }
    static std::vector<sample> scrape() { return parse_exposition(scrape_text()); }
};

}  // namespace

TEST_F(metrics_endpoint, requests_and_generation_metrics_move_by_what_was_done) {
    const std::string chat_route = "/v1/chat/completions";
    // Load the model first so the measured requests are plain generations.
    post_ok(chat_route, chat("demo", "warm up", 1));
    auto before = scrape();

    long long prompt = 0, generated = 0, itl_floor = 0;
    const char * texts[] = {"Hello there", "How are you?", "Tell me a story"};
    for (const char * t : texts) {
        json r = post_ok(chat_route, chat("demo", t, 4));
        prompt += r["usage"]["prompt_tokens"].get<long long>();
        long long ct = r["usage"]["completion_tokens"].get<long long>();
        generated += ct;
        // Without an end-of-generation token every token reached the HTTP thread as its own event.
        if (r["choices"][0]["finish_reason"] == "length") itl_floor += ct - 1;
    }
    // One streamed request, with the usage chunk (counted when its stream ends, before the last chunk).
    json streamed = chat("demo:latest", "Stream it", 5);  // an alias of demo: same label
    streamed["stream"] = true;
    streamed["stream_options"] = {{"include_usage", true}};
    auto sres = post(chat_route, streamed);
    ASSERT_TRUE(sres);
    ASSERT_EQ(sres->status, 200);
    size_t usage_at = sres->body.rfind("\"usage\"");
    ASSERT_NE(usage_at, std::string::npos) << sres->body;
    size_t line_start = sres->body.rfind("data: ", usage_at) + 6;
    json usage_chunk = json::parse(sres->body.substr(line_start, sres->body.find('\n', line_start) - line_start));
    prompt += usage_chunk["usage"]["prompt_tokens"].get<long long>();
    generated += usage_chunk["usage"]["completion_tokens"].get<long long>();

    auto unknown = post(chat_route, chat("no-such-model", "x", 2));
    ASSERT_TRUE(unknown);
    EXPECT_EQ(unknown->status, 404);
    EXPECT_EQ(client().Get("/no/such/route")->status, 404);
    EXPECT_EQ(client().Get("/v1/models/nope")->status, 404);
    EXPECT_EQ(client().Get("/v1/models/demo")->status, 200);

    auto after = scrape();
    auto delta = [&](const std::string & name, const labels & l) { return value_of(after, name, l) - value_of(before, name, l); };
    const std::string req = "rustycage_requests_total";
    EXPECT_EQ(delta(req, {{"route", chat_route}, {"method", "POST"}, {"status", "200"}}), 4);
    EXPECT_EQ(delta(req, {{"route", chat_route}, {"method", "POST"}, {"status", "404"}}), 1);
    EXPECT_EQ(delta(req, {{"route", "unmatched"}, {"method", "GET"}, {"status", "404"}}), 1);
    EXPECT_EQ(delta(req, {{"route", "/v1/models/:id"}, {"status", "404"}}), 1);
    EXPECT_EQ(delta(req, {{"route", "/v1/models/:id"}, {"status", "200"}}), 1);
    for (const auto & s : after) {
        if (s.name != req) continue;
        EXPECT_EQ(s.l.at("route").find("nope"), std::string::npos) << "raw paths must never become labels";
        EXPECT_EQ(s.l.at("route").find("/no/such"), std::string::npos) << "raw paths must never become labels";
    }
    EXPECT_EQ(delta("rustycage_request_duration_seconds_count", {{"route", chat_route}}), 5);

    const labels demo = {{"model", "demo"}};
    EXPECT_EQ(delta("rustycage_time_to_first_token_seconds_count", demo), 4);
    double itl = delta("rustycage_inter_token_latency_seconds_count", demo);
    EXPECT_GE(itl, static_cast<double>(itl_floor));
    EXPECT_LE(itl, static_cast<double>(generated));
    EXPECT_GT(delta("rustycage_time_to_first_token_seconds_sum", demo), 0);
    EXPECT_EQ(delta("rustycage_generated_tokens_total", demo), generated);
    EXPECT_EQ(delta("rustycage_prompt_tokens_total", demo), prompt);
    EXPECT_EQ(delta("rustycage_requests_finished_total", demo), 4);
    EXPECT_EQ(delta("rustycage_requests_finished_total", {{"model", "demo"}, {"reason", "error"}}), 0);
    EXPECT_FALSE(has_series(after, "rustycage_generated_tokens_total", {{"model", "demo:latest"}}));
    EXPECT_FALSE(has_series(after, "rustycage_generated_tokens_total", {{"model", "no-such-model"}}));
}

TEST_F(metrics_endpoint, histograms_are_cumulative_and_consistent) {
    post_ok("/v1/chat/completions", chat("demo", "Hi", 3));
    auto s = scrape();
    // For every histogram series: buckets never decrease and the +Inf bucket equals _count.
    std::map<std::string, std::vector<std::pair<double, double>>> buckets;  // series → (le, count)
    for (const auto & x : s) {
        if (x.name.size() < 7 || x.name.compare(x.name.size() - 7, 7, "_bucket") != 0) continue;
        labels rest = x.l;
        std::string le = rest.at("le");
        rest.erase("le");
        std::string key = x.name.substr(0, x.name.size() - 7) + json(rest).dump();
        buckets[key].push_back({le == "+Inf" ? INFINITY : std::stod(le), x.value});
    }
    ASSERT_FALSE(buckets.empty());
    for (auto & [key, b] : buckets) {
        ASSERT_FALSE(b.empty());
        EXPECT_TRUE(std::isinf(b.back().first)) << key << ": the last bucket must be +Inf";
        for (size_t i = 1; i < b.size(); ++i) {
            EXPECT_LT(b[i - 1].first, b[i].first) << key;
            EXPECT_LE(b[i - 1].second, b[i].second) << key << ": buckets are cumulative";
        }
        std::string name = key.substr(0, key.find('{'));
        labels l = json::parse(key.substr(key.find('{'))).get<labels>();
        EXPECT_EQ(b.back().second, value_of(s, name + "_count", l)) << key;
    }
}

TEST_F(metrics_endpoint, gauges_describe_loaded_models) {
    post_ok("/v1/chat/completions", chat("demo", "Hi", 2));
    post_ok("/v1/embeddings", {{"model", "embed"}, {"input", "hello"}});
    std::vector<sample> s;
    // The engine publishes its gauges at the end of the step that finished the request: poll.
    ASSERT_TRUE(poll_until([&] {
        s = scrape();
        return value_of(s, "rustycage_running_sequences", {{"model", "demo"}}) == 0 &&
               value_of(s, "rustycage_kv_cells_used", {{"model", "demo"}}) == 0;
    }));
    EXPECT_EQ(value_of(s, "rustycage_models_loaded"), 2);
    EXPECT_TRUE(has_series(s, "rustycage_queue_depth", {{"model", "demo"}}));
    EXPECT_EQ(value_of(s, "rustycage_queue_depth", {{"model", "demo"}}), 0);
    EXPECT_EQ(value_of(s, "rustycage_kv_cells_capacity", {{"model", "demo"}}), 4096);  // --ctx-size 4096
    EXPECT_FALSE(has_series(s, "rustycage_kv_cells_capacity", {{"model", "embed"}})) << "encoders keep no KV cache";
    EXPECT_GE(value_of(s, "rustycage_prompt_tokens_total", {{"model", "embed"}}), 1);
    EXPECT_GE(value_of(s, "rustycage_requests_finished_total", {{"model", "embed"}, {"reason", "stop"}}), 1);
    bool build_info = false;
    for (const auto & x : s) {
        if (x.name != "rustycage_build_info") continue;
        build_info = true;
        EXPECT_EQ(x.value, 1);
        EXPECT_FALSE(x.l.at("version").empty());
        EXPECT_EQ(x.l.at("llama_commit").rfind("80fb11ac73e6", 0), 0u) << x.l.at("llama_commit");
    }
    EXPECT_TRUE(build_info);
}

TEST_F(metrics_endpoint, exposition_passes_promtool) {
    post_ok("/v1/chat/completions", chat("demo", "Hello", 3));
    post_ok("/v1/embeddings", {{"model", "embed"}, {"input", "hello"}});
    client().Get("/no/such/route");
    std::string text = scrape_text();
    std::string v1 = scrape_text("/v1/metrics");
    EXPECT_NE(v1.find("# TYPE rustycage_requests_total counter"), std::string::npos);
    std::string promtool = find_promtool();
    if (promtool.empty()) GTEST_SKIP() << "promtool is not installed (Debian package prometheus; scripts/setup.sh installs it)";
    for (const std::string * body : {&text, &v1}) {
        const rc::test::temp_dir dir("metrics");
        const auto file = dir.path() / "exposition.prom";
        std::ofstream(file) << *body;
        const auto r = rc::test::run_command({promtool, "check", "metrics"}, {}, file.string());
        EXPECT_EQ(r.code, 0) << r.out << r.err << "\n--- exposition ---\n" << *body;
        EXPECT_EQ(r.out + r.err, "") << *body;
    }
}

TEST_F(metrics_endpoint, tokenize_detokenize_round_trip) {
    json t = post_ok("/tokenize", {{"model", "demo"}, {"content", "Hello world, metrics!"}});
    ASSERT_TRUE(t["tokens"].is_array());
    ASSERT_FALSE(t["tokens"].empty());
    EXPECT_TRUE(t["tokens"][0].is_number_integer());
    json d = post_ok("/detokenize", {{"model", "demo"}, {"tokens", t["tokens"]}});
    EXPECT_EQ(d["content"], "Hello world, metrics!");

    json pieces = post_ok("/tokenize", {{"model", "demo"}, {"content", "Hi<|im_end|>"}, {"with_pieces", true}});
    std::string joined;
    for (const auto & p : pieces["tokens"]) {
        EXPECT_TRUE(p["id"].is_number_integer());
        joined += p["piece"].get<std::string>();
    }
    EXPECT_EQ(joined, "Hi<|im_end|>");
    EXPECT_EQ(pieces["tokens"].back()["piece"], "<|im_end|>") << "special-token text becomes the special token, as in llama-server";

    auto bad = post("/tokenize", {{"model", "demo"}, {"content", 42}});
    ASSERT_TRUE(bad);
    EXPECT_EQ(bad->status, 400);
    EXPECT_EQ(json::parse(bad->body)["error"]["param"], "content");
    auto bad_tokens = post("/detokenize", {{"model", "demo"}, {"tokens", {1, "two"}}});
    EXPECT_EQ(bad_tokens->status, 400);
    EXPECT_EQ(json::parse(bad_tokens->body)["error"]["param"], "tokens");
    EXPECT_EQ(post("/detokenize", {{"model", "demo"}, {"tokens", {-5}}})->status, 400);
    EXPECT_EQ(post("/tokenize", {{"model", "nope"}, {"content", "x"}})->status, 404);
    EXPECT_EQ(post("/tokenize", {{"model", 7}, {"content", "x"}})->status, 400);
}

TEST_F(metrics_endpoint, apply_template_renders_the_chat_prompt) {
    json r = post_ok("/apply-template", {{"model", "demo"}, {"messages", {{{"role", "user"}, {"content", "Zebra crossing 42"}}}}});
    std::string prompt = r["prompt"];
    EXPECT_NE(prompt.find("Zebra crossing 42"), std::string::npos) << prompt;
    EXPECT_NE(prompt.find("<|im_start|>user"), std::string::npos) << prompt;
    EXPECT_EQ(prompt.substr(prompt.size() - std::string("<|im_start|>assistant\n").size()), "<|im_start|>assistant\n") << prompt;
    auto missing = post("/apply-template", {{"model", "demo"}});
    EXPECT_EQ(missing->status, 400);
    EXPECT_EQ(json::parse(missing->body)["error"]["param"], "messages");
    auto bad_tools = post("/apply-template", {{"model", "demo"}, {"messages", {{{"role", "user"}, {"content", "x"}}}}, {"tools", "x"}});
    EXPECT_EQ(json::parse(bad_tools->body)["error"]["param"], "tools");
    EXPECT_EQ(post("/apply-template", {{"model", "nope"}, {"messages", {{{"role", "user"}, {"content", "x"}}}}})->status, 404);
}

TEST_F(metrics_endpoint, props_and_metadata) {
    auto res = client().Get("/props?model=demo");
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
    json p = json::parse(res->body);
    EXPECT_EQ(p["model"], "demo");
    EXPECT_EQ(p["n_ctx"], 4096);
    EXPECT_EQ(p["total_slots"], 4);  // serve's default --parallel
    EXPECT_EQ(p["default_generation_settings"]["n_ctx"], 4096);
    EXPECT_NE(p["chat_template"].get<std::string>().find("im_start"), std::string::npos);
    EXPECT_NE(p["build_info"].get<std::string>().find("80fb11ac73e6"), std::string::npos);
    EXPECT_EQ(client().Get("/props?model=nope")->status, 404);
    // Without ?model= it describes a loaded model (demo is loaded by now).
    auto any = client().Get("/props");
    ASSERT_EQ(any->status, 200) << any->body;
    EXPECT_TRUE(json::parse(any->body)["model"].is_string());

    auto meta = client().Get("/v1/metadata");
    ASSERT_EQ(meta->status, 200);
    json m = json::parse(meta->body);
    EXPECT_FALSE(m["version"].get<std::string>().empty());
    EXPECT_EQ(m["served_models"], json({"demo", "embed"}));
    EXPECT_TRUE(m["loaded_models"].is_array());
    EXPECT_EQ(m["modelInfo"][0]["shortName"], "demo");
    EXPECT_EQ(m["build"]["llama_commit"].get<std::string>().rfind("80fb11ac73e6", 0), 0u);
}

TEST_F(metrics_endpoint, cors_preflight_is_answered_and_counted_under_one_label) {
    auto res = client().Options("/v1/chat/completions", httplib::Headers{{"Origin", "http://app.example"},
                                                                          {"Access-Control-Request-Method", "POST"}});
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 204);
    EXPECT_EQ(res->get_header_value("Access-Control-Allow-Origin"), "http://app.example");
    EXPECT_NE(res->get_header_value("Access-Control-Allow-Headers").find("X-Stainless-Lang"), std::string::npos);
    EXPECT_GE(value_of(scrape(), "rustycage_requests_total", {{"route", "/*"}, {"method", "OPTIONS"}, {"status", "204"}}), 1);
}

// One sequence, one queue slot: a long streamed completion holds the sequence, a second request
// waits, a third is turned away with 503 + Retry-After; metrics stay public behind an API key.
// No idle conversations are kept, so the engine has exactly one sequence id to hand out.
TEST(metrics_queue, a_full_queue_answers_503_with_retry_after) {
    rc::test::server_process s({{"demo", model_path("tiny-chat")}},
                               {"--parallel", "1", "--kv-cached-sequences", "0", "--max-queue", "1", "--api-key", "sekrit"});
    ASSERT_TRUE(s.started());
    auto client = [&] {
        httplib::Client c("127.0.0.1", s.openai_port());
        c.set_read_timeout(120);
        c.set_bearer_token_auth("sekrit");
        return c;
    };
    auto scrape = [&] {
        httplib::Client c("127.0.0.1", s.openai_port());  // no key: /metrics is public
        auto r = c.Get("/metrics");
        EXPECT_TRUE(r && r->status == 200);
        return parse_exposition(r ? r->body : std::string());
    };
    {
        httplib::Client anon("127.0.0.1", s.openai_port());
        EXPECT_EQ(anon.Post("/tokenize", R"({"content":"x"})", "application/json")->status, 401);
    }

    // Ban every end-of-generation token so the long request cannot end early.
    auto model = rc::test::shared_model("tiny-chat");
    ASSERT_TRUE(model);
    json bias = json::object();
    for (llama_token t = 0; t < model->info().n_vocab; ++t) {
        if (model->is_eog(t)) bias[std::to_string(t)] = -100;
    }
    json long_req = {{"model", "demo"}, {"prompt", "Once"}, {"max_tokens", 4000}, {"stream", true}, {"logit_bias", bias}};

    std::atomic<bool> streaming{false}, stop{false};
    std::thread holder([&] {
        client().Post("/v1/completions", httplib::Headers{}, long_req.dump(), "application/json", [&](const char *, size_t) {
            streaming = true;
            return !stop.load();  // false closes the connection: the server cancels the generation
        });
    });
    ASSERT_TRUE(poll_until([&] { return streaming.load(); })) << "the long request never started streaming";

    std::atomic<int> queued_status{0};
    std::thread waiter([&] {
        auto r = client().Post("/v1/completions", json{{"model", "demo"}, {"prompt", "Hi"}, {"max_tokens", 2}}.dump(), "application/json");
        queued_status = r ? r->status : -1;
    });
    ASSERT_TRUE(poll_until([&] { return value_of(scrape(), "rustycage_queue_depth", {{"model", "demo"}}) == 1; }))
        << "the second request never showed up in the queue";

    auto full = client().Post("/v1/completions", json{{"model", "demo"}, {"prompt", "Hi"}, {"max_tokens", 2}}.dump(), "application/json");
    ASSERT_TRUE(full);
    EXPECT_EQ(full->status, 503) << full->body;
    ASSERT_TRUE(full->has_header("Retry-After"));
    EXPECT_GE(std::stoi(full->get_header_value("Retry-After")), 1);
    json err = json::parse(full->body);
    EXPECT_EQ(err["error"]["type"], "service_unavailable");
    EXPECT_NE(err["error"]["message"].get<std::string>().find("queue"), std::string::npos);

    stop = true;
    holder.join();
    waiter.join();
    EXPECT_EQ(queued_status.load(), 200) << "the queued request runs once the sequence frees";

    std::vector<sample> m;
    ASSERT_TRUE(poll_until([&] {
        m = scrape();
        // The stream counts as a request once its stream function returns, after the cancel.
        return value_of(m, "rustycage_requests_finished_total", {{"model", "demo"}, {"reason", "cancelled"}}) == 1 &&
               value_of(m, "rustycage_running_sequences", {{"model", "demo"}}) == 0 &&
               value_of(m, "rustycage_requests_total", {{"route", "/v1/completions"}, {"status", "200"}}) == 2;
    })) << "the abandoned stream must be cancelled and counted";
    EXPECT_EQ(value_of(m, "rustycage_requests_total", {{"route", "/v1/completions"}, {"status", "503"}}), 1);
    EXPECT_EQ(value_of(m, "rustycage_requests_total", {{"route", "/tokenize"}, {"status", "401"}}), 1);
    EXPECT_EQ(value_of(m, "rustycage_requests_finished_total", {{"model", "demo"}, {"reason", "length"}}), 1);
}
