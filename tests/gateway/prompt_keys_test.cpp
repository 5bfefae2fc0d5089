// The gateway computes the KV block keys a host computes (gateway/prompt_keys.h): for every route
// shape the gateway routes from its index (OpenAI chat with and without tools, completions from
// text, token ids and a list, Responses input as text and as message items with content parts and
// tools, Ollama chat and generate, raw mode) and for every template family
// here (tiny-chat's own, and store models created with real families' templates and a Modelfile
// system prompt), the chain computed from the host's GET /v1/kv/vocab — a vocab-only load, the
// hosts' own reader, the identity and block size the host announces — is the chain of blocks the
// host stored for that request, and another cache_salt gives keys the host never stored. The
// gateway's render memo gives the same tokens, rendering the shape and splicing it.
#include <cpp-httplib/httplib.h>
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "api/request_prompt.h"
#include "gateway/model_vocabs.h"
#include "gateway/prompt_keys.h"
#include "support/server_process.h"
#include "test_models.h"

using json = nlohmann::json;
using namespace rc::gateway;

namespace {

std::string read_template(const std::string & file) {
    std::ifstream in(std::string(RC_LLAMA_TEMPLATES_DIR) + "/" + file);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

std::string text(int seed, int words) {
    std::string s = "Note " + std::to_string(seed) + ":";
    for (int w = 0; w < words; ++w) s += " item" + std::to_string(seed * 1000 + w);
    return s;
}

// A request shape: where a client sends it, its body without the model, and the lookup dialect.
struct shape {
    std::string name, path;
    json body;
    std::string api = "openai";
};

const json weather = json::parse(R"({"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}})");

std::vector<shape> shapes(const std::vector<int> & ids) {
    const int k = ids.front();  // each model's prompts differ from the others'
    return {
        {"chat", "/v1/chat/completions", {{"messages", json::array({{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", text(k, 40)}}})}}},
        {"chat_tools", "/v1/chat/completions",
         {{"messages", json::array({{{"role", "user"}, {"content", text(k + 1, 40)}}})}, {"tools", json::array({weather})}, {"tool_choice", "auto"}}},
        {"chat_salted", "/v1/chat/completions", {{"messages", json::array({{{"role", "user"}, {"content", text(k + 2, 40)}}})}, {"cache_salt", "tenant-a"}}},
        {"completion", "/v1/completions", {{"prompt", text(k + 3, 40)}}},
        {"completion_ids", "/v1/completions", {{"prompt", json::array()}}},  // filled with /tokenize's ids
        {"completion_list", "/v1/completions", {{"prompt", json::array({text(k + 5, 40), "a second prompt"})}}},
        {"completion_salted", "/v1/completions", {{"prompt", text(k + 6, 40)}, {"cache_salt", "tenant-b"}}},
        {"ollama_chat", "/api/chat", {{"messages", json::array({{{"role", "user"}, {"content", text(k + 7, 40)}}})}}, "ollama"},
        {"ollama_generate", "/api/generate", {{"prompt", text(k + 8, 40)}, {"system", "Answer in one word."}}, "ollama"},
        {"ollama_raw", "/api/generate", {{"prompt", text(k + 9, 40)}, {"raw", true}}, "ollama"},
        {"responses", "/v1/responses", {{"instructions", "Be brief."}, {"input", text(k + 10, 40)}}, "responses"},
        {"responses_items", "/v1/responses",
         {{"input", json::array({{{"role", "user"}, {"content", json::array({{{"type", "input_text"}, {"text", text(k + 11, 40)}}})}},
                                 {{"type", "message"}, {"role", "assistant"}, {"content", json::array({{{"type", "output_text"}, {"text", "Rain."}}})}},
                                 {{"role", "user"}, {"content", "And tomorrow?"}}})},
          {"tools", json::array({{{"type", "function"}, {"name", "get_weather"}, {"description", "Weather in a city"}, {"parameters", weather["function"]["parameters"]}}})},
          {"cache_salt", "tenant-c"}},
         "responses"},
    };
}

class prompt_keys : public ::testing::TestWithParam<std::string> {
  protected:
    static void SetUpTestSuite() {
        server_ = std::make_unique<rc::test::server_process>(
            std::vector<std::pair<std::string, std::string>>{{"demo", rc::test::model_path("tiny-chat")}},
            std::vector<std::string>{"--kv-host-budget", "64MiB", "--kv-cached-sequences", "0", "--kv-block-size", "16"});
    }
    static void TearDownTestSuite() { server_.reset(); }

    static httplib::Client client(int port) {
        httplib::Client c("127.0.0.1", port);
        c.set_read_timeout(120);
        return c;
    }
    static std::string url() { return "http://127.0.0.1:" + std::to_string(server_->openai_port()); }

    // The host's blocks of `model` in host RAM, and the identity and block size it announces: the
    // snapshot at the head of GET /v1/kv/events.
    struct host_view_of_model {
        std::set<short_key> keys;
        std::string identity;
        int block_size = 0;
    };
    static host_view_of_model snapshot(const std::string & model) {
        host_view_of_model out;
        httplib::Client c("127.0.0.1", server_->openai_port());
        c.set_read_timeout(30);
        std::string pending;
        c.Get("/v1/kv/events", [&](const char * data, size_t n) {
            pending.append(data, n);
            const size_t end = pending.find("\n\n");
            if (end == std::string::npos) return true;
            const std::string block = pending.substr(0, end);
            const auto data_at = block.find("data: ");
            const json snap = json::parse(block.substr(data_at + 6), nullptr, false);
            for (const auto & src : snap.value("sources", json::array())) {
                if (src.value("model", "") != model) continue;
                out.identity = src.value("identity", "");
                out.block_size = src.value("block_size", 0);
                for (const auto & k : src["blocks"].value("host", json::array())) {
                    short_key key = 0;
                    if (parse_short_key(k.get<std::string>(), key)) out.keys.insert(key);
                }
            }
            return false;  // the snapshot is all this needs
        });
        return out;
    }

    static std::unique_ptr<rc::test::server_process> server_;
};
std::unique_ptr<rc::test::server_process> prompt_keys::server_;

TEST_P(prompt_keys, the_gateway_computes_the_chain_the_host_stored_for_every_route_shape) {
    ASSERT_TRUE(server_ && server_->started());
    auto openai = client(server_->openai_port());
    auto ollama = client(server_->ollama_port());
    const std::string family = GetParam();
    std::string model = "demo";
    int seed = 1;
    if (!family.empty()) {
        // A store model: a real family's template and a Modelfile system prompt the hosts' Ollama
        // readers add to every chat — the gateway must add it too.
        model = "keys-" + std::to_string(std::hash<std::string>{}(family) % 100000);
        seed = static_cast<int>(std::hash<std::string>{}(family) % 1000) * 20 + 100;
        auto r = ollama.Post("/api/create", json{{"model", model}, {"from", "demo"}, {"template", read_template(family)}, {"system", "You are a keys test."}, {"stream", false}}.dump(),
                             "application/json");
        ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no answer");
    }
    // The gateway's side: the vocabulary from the host, loaded vocab-only.
    auto bytes = fetch_vocab(url(), model, "");
    ASSERT_TRUE(bytes.ok()) << bytes.err().message;
    auto vocab = load_model_vocab(*bytes);
    ASSERT_TRUE(vocab.ok()) << vocab.err().message;
    EXPECT_EQ(vocab->entry.name.rfind(model, 0), 0u) << vocab->entry.name;
    EXPECT_EQ(vocab->entry.system.has_value(), !family.empty());
    EXPECT_LT(bytes->size(), std::filesystem::file_size(rc::test::model_path("tiny-chat"))) << "the vocabulary carries no tensors";

    for (auto sh : shapes({seed})) {
        SCOPED_TRACE(family + " " + sh.name);
        if (sh.name == "completion_ids") {
            auto t = openai.Post("/tokenize", json{{"model", model}, {"content", text(seed + 4, 40)}}.dump(), "application/json");
            ASSERT_TRUE(t && t->status == 200);
            sh.body["prompt"] = json::parse(t->body)["tokens"];
        }
        // The real request: the host stores its prompt's blocks.
        json request = sh.body;
        request["model"] = model;
        if (sh.api == "ollama") request.update({{"stream", false}, {"options", {{"num_predict", 1}}}});
        else if (sh.api == "responses") request["max_output_tokens"] = 1;
        else request["max_tokens"] = 1;
        auto done = (sh.api == "ollama" ? ollama : openai).Post(sh.path, request.dump(), "application/json");
        ASSERT_TRUE(done && done->status == 200) << (done ? done->body : "no answer");

        // The gateway's computation, from the lookup body as the gateway builds it.
        json lookup = request;
        lookup["api"] = sh.api;
        nlohmann::ordered_json copy = lookup;
        const auto prompt = rc::api::read_request_prompt(vocab->entry, *vocab->model, 4096, copy, sh.api);
        // Through the gateway's render memo (engine/render_memo.h), first and again (a kept shape):
        // the same tokens.
        for (int pass = 0; pass < 2; ++pass) {
            nlohmann::ordered_json again = lookup;
            EXPECT_EQ(rc::api::read_request_prompt(vocab->entry, *vocab->model, 4096, again, sh.api, vocab->memo.get()).tokens, prompt.tokens)
                << "render memo, pass " << pass;
        }
        const auto host_side = snapshot(vocab->entry.name);
        ASSERT_EQ(host_side.block_size, 16);
        const auto chain = prompt_chain(host_side.identity, host_side.block_size, prompt.cache_salt, prompt.tokens);
        ASSERT_GE(chain.size(), 3u) << "the prompt spans several blocks";
        ASSERT_TRUE(rc::test::poll_until([&] {
            const auto held = snapshot(vocab->entry.name).keys;
            for (auto k : chain)
                if (!held.contains(k)) return false;
            return true;
        })) << "a block key the gateway computed is not one the host stored";

        // The host's own lookup counts the same prompt.
        auto answer = openai.Post("/v1/kv/lookup", lookup.dump(), "application/json");
        ASSERT_TRUE(answer && answer->status == 200) << (answer ? answer->body : "no answer");
        const json a = json::parse(answer->body);
        EXPECT_EQ(a["prompt_tokens"].get<size_t>(), prompt.tokens.size());
        EXPECT_GE(a["cached_tokens"].get<size_t>(), (chain.size() - 1) * 16);

        // Another salt: keys the host never stored (different tenants never share blocks).
        const auto other = prompt_chain(host_side.identity, host_side.block_size, prompt.cache_salt + "-other", prompt.tokens);
        const auto held = snapshot(vocab->entry.name).keys;
        EXPECT_FALSE(held.contains(other.front()));
    }
    if (!family.empty()) ollama.Delete("/api/delete", json{{"model", model}}.dump(), "application/json");
}

// tiny-chat's own template ("") and real families' (from the pinned llama.cpp tree), with tool-call
// formats and system handling that differ.
INSTANTIATE_TEST_SUITE_P(families, prompt_keys,
                         ::testing::Values("", "meta-llama-Llama-3.1-8B-Instruct.jinja", "Qwen-Qwen3-0.6B.jinja", "mistralai-Mistral-Nemo-Instruct-2407.jinja",
                                           "openai-gpt-oss-120b.jinja", "google-gemma-2-2b-it.jinja"),
                         [](const auto & p) {
                             std::string n = p.param.empty() ? "tiny_chat" : p.param.substr(0, p.param.size() - 6);
                             for (auto & c : n)
                                 if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                             return n;
                         });

}  // namespace
