// The Ollama API of a real `rustycage serve`, driven over HTTP on its Ollama port: NDJSON framing and
// timing fields, generate (templated, raw, context, JSON schema), chat (streamed, tools), embed,
// tags/show/ps, load and unload through empty prompts and keep_alive, and errors in Ollama's shape.
#include <cpp-httplib/httplib.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <regex>
#include <sstream>
#include <thread>

#include "support/shared_server.h"

using json = nlohmann::json;
using rc::test::model_path;

namespace {

class ollama : public rc::test::shared_server {
  protected:
    // This suite speaks to the Ollama port unless told otherwise.
    static httplib::Client client(bool ollama_port = true) { return shared_server::client(ollama_port); }
    static httplib::Result raw_post(const std::string & path, const json & body) {
        return client().Post(path, body.dump(), "application/json");
    }
    static json post(const std::string & path, const json & body, int expect_status = 200) {
        auto res = raw_post(path, body);
        EXPECT_TRUE(res) << "no response from " << path;
        if (!res) return {};
        EXPECT_EQ(res->status, expect_status) << res->body;
        return json::parse(res->body, nullptr, false);
    }
    static json get(const std::string & path) {
        auto res = client().Get(path);
        EXPECT_TRUE(res && res->status == 200) << path;
        return res ? json::parse(res->body, nullptr, false) : json();
    }
    // Every line of an NDJSON body, each of which must parse.
    static std::vector<json> lines(const std::string & body) {
        std::vector<json> out;
        std::istringstream in(body);
        std::string line;
        while (std::getline(in, line)) {
            if (line.empty()) continue;
            json j = json::parse(line, nullptr, false);
            EXPECT_FALSE(j.is_discarded()) << "not JSON: " << line;
            out.push_back(j);
        }
        return out;
    }
    // POSTs a streaming request; checks the framing and returns the lines.
    static std::vector<json> stream(const std::string & path, const json & body) {
        auto res = raw_post(path, body);
        EXPECT_TRUE(res);
        if (!res) return {};
        EXPECT_EQ(res->status, 200) << res->body;
        EXPECT_EQ(res->get_header_value("Content-Type"), "application/x-ndjson");
        auto out = lines(res->body);
        EXPECT_FALSE(out.empty());
        for (size_t i = 0; i < out.size(); ++i) {
            EXPECT_EQ(out[i]["done"], i + 1 == out.size()) << "only the last line is done: " << out[i].dump();
            EXPECT_EQ(out[i]["model"], body["model"]);
            EXPECT_TRUE(is_rfc3339(out[i]["created_at"])) << out[i].dump();
        }
        return out;
    }
    static std::vector<std::string> loaded_names() {
        std::vector<std::string> names;
        json ps = get("/api/ps");  // named: a range-for over a temporary's member would dangle
        for (const auto & m : ps["models"]) names.push_back(m["name"]);
        return names;
    }
    static bool is_loaded(const std::string & name) {
        auto names = loaded_names();
        return std::find(names.begin(), names.end(), name) != names.end();
    }
    // Polls /api/ps until `name` is (or is not) listed; unloads after a streamed reply finish just
    // after its last line.
    static bool wait_loaded(const std::string & name, bool want) {
        return rc::test::poll_until([&] { return is_loaded(name) == want; }, std::chrono::seconds(20));
    }

    static bool is_rfc3339(const json & v) {
        static const std::regex re(R"(^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{9}Z$)");
        return v.is_string() && std::regex_match(v.get<std::string>(), re);
    }
    static void expect_timings(const json & last, bool generated) {
        for (const char * k : {"total_duration", "load_duration", "prompt_eval_count", "prompt_eval_duration", "eval_count", "eval_duration"}) {
            ASSERT_TRUE(last.contains(k) && last[k].is_number_integer()) << k << " in " << last.dump();
        }
        EXPECT_GT(last["total_duration"].get<long long>(), 0);
        EXPECT_GT(last["load_duration"].get<long long>(), 0);
        EXPECT_GT(last["prompt_eval_count"].get<long long>(), 0);
        EXPECT_GT(last["prompt_eval_duration"].get<long long>(), 0);
        if (generated) {
            EXPECT_GT(last["eval_count"].get<long long>(), 0);
            EXPECT_GT(last["eval_duration"].get<long long>(), 0);
        }
        EXPECT_GE(last["total_duration"].get<long long>(),
                  last["prompt_eval_duration"].get<long long>() + last["eval_duration"].get<long long>());
    }
};

json gen(const std::string & prompt, int num_predict) {
    return {{"model", "demo"}, {"prompt", prompt}, {"options", {{"num_predict", num_predict}, {"temperature", 0}}}};
}

json weather_tool() {
    return {{"type", "function"},
            {"function",
             {{"name", "get_weather"},
              {"description", "Weather for a city"},
              {"parameters", {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}, {"required", {"city"}}}}}}};
}

double norm(const std::vector<float> & v) {
    double n = 0;
    for (float x : v) n += static_cast<double>(x) * x;
    return std::sqrt(n);
}

}  // namespace

TEST_F(ollama, generate_streams_ndjson_ending_in_done_with_timings) {
    auto out = stream("/api/generate", gen("Once upon a time", 8));  // stream defaults to true
    ASSERT_GE(out.size(), 2u);
    std::string text;
    for (size_t i = 0; i + 1 < out.size(); ++i) {
        ASSERT_TRUE(out[i]["response"].is_string());
        text += out[i]["response"].get<std::string>();
    }
    EXPECT_FALSE(text.empty());
    const json & last = out.back();
    EXPECT_EQ(last["done_reason"], "length");
    EXPECT_EQ(last["response"], "");
    expect_timings(last, true);
    EXPECT_EQ(last["eval_count"], 8);
    // context = the prompt's tokens, then the generated ones.
    ASSERT_TRUE(last["context"].is_array());
    EXPECT_EQ(last["context"].size(), last["prompt_eval_count"].get<size_t>() + 8);
    for (const auto & t : last["context"]) EXPECT_TRUE(t.is_number_integer());

    // The same request unstreamed: one object, the same greedy text.
    json body = gen("Once upon a time", 8);
    body["stream"] = false;
    json whole = post("/api/generate", body);
    EXPECT_EQ(whole["done"], true);
    EXPECT_EQ(whole["response"], text);
    EXPECT_EQ(whole["context"], last["context"]);
    expect_timings(whole, true);
}

TEST_F(ollama, generate_templated_matches_the_raw_rendering_and_context_continues) {
    json templated = gen("Hi", 4);
    templated["system"] = "Be brief.";
    templated["stream"] = false;
    json t = post("/api/generate", templated);
    // raw:true tokenizes the prompt as is, special tokens included: the template's rendering by hand.
    json raw = gen("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n", 4);
    raw["raw"] = true;
    raw["stream"] = false;
    json r = post("/api/generate", raw);
    ASSERT_EQ(t["prompt_eval_count"], r["prompt_eval_count"]) << t.dump() << "\n" << r.dump();
    size_t n = t["prompt_eval_count"];
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(t["context"][i], r["context"][i]) << "prompt token " << i;

    // context continues a conversation: its tokens come first, then the new prompt's.
    json next = gen(" and then", 2);
    next["raw"] = true;
    next["stream"] = false;
    next["context"] = r["context"];
    json c = post("/api/generate", next);
    EXPECT_GT(c["prompt_eval_count"].get<size_t>(), r["context"].size());
    for (size_t i = 0; i < r["context"].size(); ++i) ASSERT_EQ(c["context"][i], r["context"][i]);

    json bad_raw = raw;
    bad_raw["system"] = "x";
    EXPECT_EQ(post("/api/generate", bad_raw, 400)["error"].get<std::string>().find("raw"), 0u);
    json bad_ctx = next;
    bad_ctx["context"] = {1, "two"};
    EXPECT_NE(post("/api/generate", bad_ctx, 400)["error"].get<std::string>().find("context"), std::string::npos);
}

TEST_F(ollama, generate_format_schema_and_json_yield_valid_json) {
    json schema = {{"type", "object"},
                   {"properties", {{"name", {{"type", "string"}, {"maxLength", 10}}}, {"age", {{"type", "integer"}}}}},
                   {"required", {"name", "age"}},
                   {"additionalProperties", false}};
    for (bool raw : {false, true}) {
        json body = {{"model", "demo"}, {"prompt", "A person:"}, {"format", schema}, {"stream", false}, {"raw", raw},
                     {"options", {{"temperature", 1.0}, {"seed", 5}, {"num_predict", 200}}}};
        json r = post("/api/generate", body);
        ASSERT_EQ(r["done_reason"], "stop") << r.dump();
        json v = json::parse(r["response"].get<std::string>(), nullptr, false);
        ASSERT_TRUE(v.is_object()) << r["response"];
        EXPECT_EQ(v.size(), 2u);
        EXPECT_TRUE(v["name"].is_string());
        EXPECT_LE(v["name"].get<std::string>().size(), 40u);
        EXPECT_TRUE(v["age"].is_number_integer());
    }
    json body = {{"model", "demo"}, {"prompt", "JSON please"}, {"format", "json"}, {"stream", false},
                 {"options", {{"temperature", 1.0}, {"seed", 3}, {"num_predict", 12}}}};
    json r = post("/api/generate", body);
    if (r["done_reason"] == "stop") EXPECT_TRUE(json::parse(r["response"].get<std::string>(), nullptr, false).is_object()) << r["response"];
    else EXPECT_EQ(r["response"].get<std::string>().rfind("{", 0), 0u) << "a cut-off reply still starts an object";
}

TEST_F(ollama, generate_logprobs) {
    json body = gen("Hello", 3);
    body["stream"] = false;
    body["logprobs"] = true;
    body["top_logprobs"] = 2;
    json r = post("/api/generate", body);
    ASSERT_EQ(r["logprobs"].size(), 3u) << r.dump();
    for (const auto & lp : r["logprobs"]) {
        EXPECT_TRUE(lp["token"].is_string());
        EXPECT_LE(lp["logprob"].get<double>(), 0.0);
        EXPECT_TRUE(lp["bytes"].is_array());
        EXPECT_EQ(lp["top_logprobs"].size(), 2u);
    }
}

TEST_F(ollama, chat_streams_messages_and_answers_whole) {
    json body = {{"model", "demo"}, {"messages", {{{"role", "user"}, {"content", "Hello there"}}}}, {"options", {{"num_predict", 6}}}};
    auto out = stream("/api/chat", body);
    ASSERT_GE(out.size(), 2u);
    std::string text;
    for (const auto & l : out) {
        ASSERT_EQ(l["message"]["role"], "assistant");
        ASSERT_TRUE(l["message"]["content"].is_string());
        text += l["message"]["content"].get<std::string>();
    }
    EXPECT_FALSE(text.empty());
    EXPECT_EQ(out.back()["done_reason"], "length");
    EXPECT_FALSE(out.back().contains("context")) << "chat replies carry no context";
    expect_timings(out.back(), true);

    body["stream"] = false;
    json whole = post("/api/chat", body);
    EXPECT_EQ(whole["done"], true);
    EXPECT_TRUE(whole["message"]["content"].is_string());
    EXPECT_FALSE(whole["message"].contains("tool_calls"));
    expect_timings(whole, true);
}

TEST_F(ollama, chat_renders_tools_and_tool_history) {
    json base = {{"model", "demo"}, {"stream", false}, {"options", {{"num_predict", 1}}},
                 {"messages", {{{"role", "user"}, {"content", "Weather in Paris?"}}}}};
    json with_tools = base;
    with_tools["tools"] = json::array({weather_tool()});
    int plain = post("/api/chat", base)["prompt_eval_count"];
    int tooled = post("/api/chat", with_tools)["prompt_eval_count"];
    EXPECT_GT(tooled, plain + 20) << "the tool definition is part of the prompt";

    // A finished tool round: arguments as an object, the result naming its tool.
    json history = with_tools;
    history["messages"].push_back({{"role", "assistant"}, {"content", ""},
                                   {"tool_calls", {{{"function", {{"name", "get_weather"}, {"arguments", {{"city", "Paris"}}}}}}}}});
    history["messages"].push_back({{"role", "tool"}, {"content", "{\"temp\":21}"}, {"tool_name", "get_weather"}});
    json h = post("/api/chat", history);
    EXPECT_GT(h["prompt_eval_count"].get<int>(), tooled);
    EXPECT_EQ(h["done"], true);

    json bad = history;
    bad["messages"][1]["tool_calls"][0]["function"]["arguments"] = 42;
    EXPECT_NE(post("/api/chat", bad, 400)["error"].get<std::string>().find("arguments"), std::string::npos);
    json think = base;
    think["think"] = true;
    EXPECT_NE(post("/api/chat", think, 400)["error"].get<std::string>().find("does not support thinking"), std::string::npos);
    json images = base;
    images["messages"][0]["images"] = {"aGVsbG8="};
    EXPECT_EQ(post("/api/chat", images, 400).contains("error"), true);
}

TEST_F(ollama, embed_and_legacy_embeddings) {
    json r = post("/api/embed", {{"model", "embed"}, {"input", {"hello world", "second"}}});
    EXPECT_EQ(r["model"], "embed");
    ASSERT_EQ(r["embeddings"].size(), 2u);
    auto v = r["embeddings"][0].get<std::vector<float>>();
    ASSERT_EQ(v.size(), 128u);
    EXPECT_NEAR(norm(v), 1.0, 1e-3);
    EXPECT_NEAR(norm(r["embeddings"][1].get<std::vector<float>>()), 1.0, 1e-3);
    EXPECT_GT(r["prompt_eval_count"].get<int>(), 2);
    EXPECT_GT(r["total_duration"].get<long long>(), 0);
    EXPECT_GT(r["load_duration"].get<long long>(), 0);

    json d = post("/api/embed", {{"model", "embed"}, {"input", "hello world"}, {"dimensions", 32}});
    auto v32 = d["embeddings"][0].get<std::vector<float>>();
    ASSERT_EQ(v32.size(), 32u);
    EXPECT_NEAR(norm(v32), 1.0, 1e-3);
    EXPECT_EQ(post("/api/embed", {{"model", "embed"}, {"input", ""}})["embeddings"], json::array());

    // Legacy: the model's own vector, unnormalised as in Ollama, pointing the same way.
    json legacy = post("/api/embeddings", {{"model", "embed"}, {"prompt", "hello world"}});
    auto raw = legacy["embedding"].get<std::vector<float>>();
    ASSERT_EQ(raw.size(), 128u);
    double dot = 0;
    for (size_t i = 0; i < 128; ++i) dot += static_cast<double>(raw[i]) * v[i];
    EXPECT_NEAR(dot / norm(raw), 1.0, 1e-3);

    std::string long_text;
    for (int i = 0; i < 700; ++i) long_text += "word ";
    EXPECT_EQ(post("/api/embed", {{"model", "embed"}, {"input", long_text}})["embeddings"][0].size(), 128u);
    EXPECT_NE(post("/api/embed", {{"model", "embed"}, {"input", long_text}, {"truncate", false}}, 400)["error"].get<std::string>().find("context length"),
              std::string::npos);
    EXPECT_NE(post("/api/embed", {{"model", "demo"}, {"input", "x"}}, 400)["error"].get<std::string>().find("does not support embeddings"),
              std::string::npos);
    EXPECT_EQ(post("/api/embed", {{"model", "embed"}, {"input", 5}}, 400).contains("error"), true);
}

// Round three: a 30 MB input with truncate was tokenized whole (+526 MiB) to keep the head. Only
// what the context can hold is tokenized now; the head is the same, so is the vector.
TEST_F(ollama, a_huge_input_truncated_is_cut_before_it_is_tokenized) {
    auto peak_kib = [] {
        std::ifstream in("/proc/" + std::to_string(server().pid()) + "/status");
        for (std::string line; std::getline(in, line);)
            if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6));
        return 0ull;
    };
    std::string head;
    for (int i = 0; i < 700; ++i) head += "word ";
    const auto short_one = post("/api/embed", {{"model", "embed"}, {"input", head}})["embeddings"][0];
    const auto before = peak_kib();
    std::string huge;
    huge.reserve(30u << 20);
    while (huge.size() + 5 <= (30u << 20)) huge += "word ";
    const auto long_one = post("/api/embed", {{"model", "embed"}, {"input", huge}})["embeddings"][0];
    const auto after = peak_kib();
    ASSERT_EQ(long_one.size(), short_one.size());
    for (size_t i = 0; i < long_one.size(); ++i) EXPECT_NEAR(long_one[i].get<double>(), short_one[i].get<double>(), 1e-5) << i;
    // The body itself (30 MB, parsed once into JSON) is the server's to hold; its tokens are not.
    EXPECT_LT(after, before + (192u << 10)) << "peak grew from " << before / 1024 << " to " << after / 1024 << " MiB";
}

TEST_F(ollama, tags_list_every_servable_model_with_details) {
    json tags = get("/api/tags");
    ASSERT_EQ(tags["models"].size(), 2u);
    const json & demo = tags["models"][0];
    EXPECT_EQ(demo["name"], "demo:latest");
    EXPECT_EQ(demo["model"], "demo:latest");
    EXPECT_TRUE(is_rfc3339(demo["modified_at"]));
    EXPECT_GT(demo["size"].get<long long>(), 0);
    EXPECT_TRUE(std::regex_match(demo["digest"].get<std::string>(), std::regex("^[0-9a-f]{64}$"))) << demo["digest"];
    EXPECT_EQ(demo["details"]["format"], "gguf");
    EXPECT_EQ(demo["details"]["family"], "qwen2");
    EXPECT_EQ(demo["details"]["families"], json::array({"qwen2"}));
    EXPECT_EQ(demo["details"]["quantization_level"], "F16");
    EXPECT_TRUE(std::regex_match(demo["details"]["parameter_size"].get<std::string>(), std::regex(R"(^[0-9.]+[KMB]$)")))
        << demo["details"]["parameter_size"];
    const json & embed = tags["models"][1];
    EXPECT_EQ(embed["name"], "embed:latest");
    EXPECT_EQ(embed["details"]["family"], "bert");
    EXPECT_NE(embed["digest"], demo["digest"]);
    // Both ports serve every route.
    auto other = client(false).Get("/api/tags");
    ASSERT_TRUE(other);
    EXPECT_EQ(json::parse(other->body), tags);
}

TEST_F(ollama, show_reports_template_model_info_and_capabilities) {
    json s = post("/api/show", {{"model", "demo"}});
    EXPECT_NE(s["template"].get<std::string>().find("<|im_start|>"), std::string::npos);
    EXPECT_EQ(s["capabilities"], json::array({"completion", "tools"}));
    EXPECT_EQ(s["details"]["quantization_level"], "F16");
    const json & info = s["model_info"];
    EXPECT_EQ(info["general.architecture"], "qwen2");
    EXPECT_TRUE(info["qwen2.context_length"].is_number_integer()) << info.dump();
    EXPECT_GT(info["general.parameter_count"].get<long long>(), 0);
    EXPECT_TRUE(info.contains("tokenizer.ggml.tokens") && info["tokenizer.ggml.tokens"].is_null()) << "token lists are not sent";
    EXPECT_FALSE(info.contains("tokenizer.chat_template"));
    EXPECT_TRUE(is_rfc3339(s["modified_at"]));
    EXPECT_NE(s["modelfile"].get<std::string>().find("FROM "), std::string::npos);
    EXPECT_EQ(post("/api/show", {{"model", "embed:latest"}})["capabilities"], json::array({"embedding"}));
    EXPECT_EQ(post("/api/show", {{"name", "demo.gguf"}})["details"]["family"], "qwen2") << "deprecated name field, file-name form";
    EXPECT_EQ(post("/api/show", {{"model", "nope"}}, 404), json({{"error", "model 'nope' not found"}}));
}

TEST_F(ollama, empty_prompts_load_and_unload_as_ps_shows) {
    json load = post("/api/generate", {{"model", "demo"}});
    EXPECT_EQ(load["done"], true);
    EXPECT_EQ(load["done_reason"], "load");
    ASSERT_TRUE(is_loaded("demo:latest"));
    json ps = get("/api/ps");
    json entry;
    for (const auto & m : ps["models"]) {
        if (m["name"] == "demo:latest") entry = m;
    }
    EXPECT_EQ(entry["model"], "demo:latest");
    EXPECT_EQ(entry["context_length"], 4096);
    EXPECT_EQ(entry["kv_tiers"]["context"]["cells_total"], 4096) << entry.dump();
    EXPECT_TRUE(entry["kv_tiers"]["host"]["budget"].is_number_integer()) << "serve enables the host tier by default";
    EXPECT_GT(entry["size"].get<long long>(), 0);
    EXPECT_TRUE(entry["size_vram"] == 0 || entry["size_vram"] == entry["size"]);
    EXPECT_EQ(entry["details"]["family"], "qwen2");
    EXPECT_TRUE(is_rfc3339(entry["expires_at"]));
    std::string five_min = entry["expires_at"];

    // keep_alive moves expires_at: an hour later than the default, forever far beyond.
    post("/api/generate", {{"model", "demo"}, {"keep_alive", "1h"}});
    std::string hour = get("/api/ps")["models"][0]["expires_at"];
    EXPECT_GT(hour, five_min);
    post("/api/chat", {{"model", "demo"}, {"messages", json::array()}, {"keep_alive", -1}});
    std::string forever = get("/api/ps")["models"][0]["expires_at"];
    EXPECT_GE(forever.substr(0, 4), "2200");

    json unload = post("/api/generate", {{"model", "demo"}, {"keep_alive", 0}});
    EXPECT_EQ(unload["done_reason"], "unload");
    EXPECT_FALSE(is_loaded("demo:latest"));
    EXPECT_EQ(post("/api/chat", {{"model", "demo"}, {"messages", json::array()}})["done_reason"], "load");
    EXPECT_TRUE(is_loaded("demo:latest"));
    EXPECT_EQ(post("/api/chat", {{"model", "demo"}, {"keep_alive", "0s"}})["done_reason"], "unload");
    EXPECT_FALSE(is_loaded("demo:latest"));

    // keep_alive 0 on a real request: loaded for the reply, unloaded after it.
    json once = gen("Hi", 2);
    once["keep_alive"] = 0;
    stream("/api/generate", once);
    EXPECT_TRUE(wait_loaded("demo:latest", false));
    once["stream"] = false;
    post("/api/generate", once);
    EXPECT_FALSE(is_loaded("demo:latest"));
    post("/api/embed", {{"model", "embed"}, {"input", "x"}, {"keep_alive", "0"}});
    EXPECT_FALSE(is_loaded("embed:latest"));
}

TEST_F(ollama, errors_have_ollamas_shape_and_name_the_field) {
    auto res = client().Post("/api/generate", "{not json", "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400);
    json e = json::parse(res->body);
    ASSERT_TRUE(e["error"].is_string()) << res->body;
    EXPECT_NE(e["error"].get<std::string>().find("JSON"), std::string::npos);

    json unknown = gen("x", 1);
    unknown["model"] = "nope";
    EXPECT_EQ(post("/api/generate", unknown, 404), json({{"error", "model 'nope' not found"}}));
    EXPECT_EQ(post("/api/chat", {{"model", "library/nope:7b"}, {"messages", {{{"role", "user"}, {"content", "x"}}}}}, 404)["error"],
              "model 'library/nope:7b' not found");
    EXPECT_NE(post("/api/generate", {{"prompt", "x"}}, 400)["error"].get<std::string>().find("model"), std::string::npos);

    json hot = gen("x", 1);
    hot["options"]["temperature"] = "hot";
    EXPECT_NE(post("/api/generate", hot, 400)["error"].get<std::string>().find("options.temperature"), std::string::npos);
    json many = gen("x", 1);
    many["options"]["num_predict"] = "lots";
    EXPECT_NE(post("/api/chat", {{"model", "demo"}, {"messages", {{{"role", "user"}, {"content", "x"}}}}, {"options", many["options"]}}, 400)["error"]
                  .get<std::string>()
                  .find("options.num_predict"),
              std::string::npos);
    json legacy = gen("x", 1);
    legacy["options"].update({{"mirostat", 2}, {"tfs_z", 1.0}, {"penalize_newline", true}, {"numa", false}, {"num_ctx", 8192}, {"use_mmap", true}});
    legacy["stream"] = false;
    EXPECT_EQ(post("/api/generate", legacy)["done"], true) << "legacy and load-time options are accepted";

    for (auto [field, value] : std::vector<std::pair<std::string, json>>{
             {"suffix", "tail"}, {"template", "{{ .Prompt }}"}, {"images", {"aGVsbG8="}}, {"format", "xml"}, {"keep_alive", "soon"}, {"think", "maybe"}}) {
        json b = gen("x", 1);
        b[field] = value;
        json err = post("/api/generate", b, 400);
        EXPECT_NE(err["error"].get<std::string>().find(field), std::string::npos) << field << ": " << err.dump();
    }
    EXPECT_NE(post("/api/generate", {{"model", "embed"}, {"prompt", "x"}}, 400)["error"].get<std::string>().find("does not support generate"),
              std::string::npos);

    // Store routes refuse bad input with the field named (the store itself is tested in the CLI and
    // client suites).
    EXPECT_NE(post("/api/pull", {{"model", "demo"}, {"stream", false}}, 400)["error"].get<std::string>().find("not a Hugging Face name"), std::string::npos);
    EXPECT_NE(post("/api/pull", {{"model", "hf.co/../x"}, {"stream", false}}, 400)["error"].get<std::string>().find("invalid model name"), std::string::npos);
    EXPECT_NE(post("/api/push", {{"model", "demo"}}, 501)["error"].get<std::string>().find("not supported"), std::string::npos);
    EXPECT_NE(post("/api/create", {{"model", "demo2"}}, 400)["error"].get<std::string>().find("'from'"), std::string::npos);
    EXPECT_NE(post("/api/create", {{"model", "x"}, {"files", {{"a.gguf", "sha256:" + std::string(64, 'a')}}}}, 400)["error"].get<std::string>().find("upload it first"),
              std::string::npos);
    EXPECT_NE(post("/api/copy", {{"source", "nope"}, {"destination", "x"}}, 404)["error"].get<std::string>().find("nope"), std::string::npos);
    EXPECT_NE(post("/api/copy", {{"source", "demo"}, {"destination", "../../x"}}, 400)["error"].get<std::string>().find("invalid model name"), std::string::npos);
    auto del = client().Delete("/api/delete", R"({"model":"demo"})", "application/json");
    ASSERT_TRUE(del);
    EXPECT_EQ(del->status, 400) << "a loose file is the user's to delete";
    EXPECT_NE(del->body.find("loose GGUF file"), std::string::npos) << del->body;
    EXPECT_EQ(client().Head("/api/blobs/sha256:00")->status, 400);
    EXPECT_EQ(client().Head("/api/blobs/sha256:" + std::string(64, 'b'))->status, 404);

    // Bodies beyond --max-body-mb (32 MiB by default) are refused while arriving, as JSON (413).
    std::string huge = R"({"model":"demo","prompt":")" + std::string(33u << 20, 'a') + R"("})";
    auto big = client().Post("/api/generate", huge, "application/json");
    ASSERT_TRUE(big);
    EXPECT_EQ(big->status, 413);

    json ok = gen("still there?", 2);
    ok["stream"] = false;
    EXPECT_EQ(post("/api/generate", ok)["eval_count"], 2);
}
