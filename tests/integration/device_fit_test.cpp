// Issue 30's fit to device memory against the real server, on a CPU build through --device-memory
// (the host stands in for a device, so the policy runs in CI): a --ctx-size the device cannot hold
// serves from a smaller pool with the tiers holding the rest (conversations totalling 4× the pool
// come back whole), weights that do not fit serve with fewer layers, a second model unloads an idle
// first one, and a set context that fits nowhere is refused with its numbers while the server serves on.
#include <cpp-httplib/httplib.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <regex>

#include "support/server_process.h"
#include "test_models.h"

using json = nlohmann::json;

namespace {

const auto k_model = std::vector<std::pair<std::string, std::string>>{{"demo", rc::test::model_path("tiny-chat")}};

// One completion; returns its body (status 200) or an object with "status" and "error".
json complete(int port, const std::string & model, const std::string & prompt) {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(120);
    json body = {{"model", model}, {"prompt", prompt}, {"max_tokens", 4}, {"temperature", 0}};
    auto res = c.Post("/v1/completions", body.dump(), "application/json");
    if (!res) return {{"status", 0}, {"error", "no answer"}};
    auto j = json::parse(res->body, nullptr, false);
    if (res->status != 200) return {{"status", res->status}, {"error", res->body}};
    return j;
}

// GET /api/ps's entry for `name` (null when it is not loaded).
json ps_entry(int ollama_port, const std::string & name) {
    httplib::Client c("127.0.0.1", ollama_port);
    auto res = c.Get("/api/ps");
    if (!res || res->status != 200) return nullptr;
    const json body = json::parse(res->body);
    for (const auto & m : body["models"])
        if (m["name"] == name || m["name"] == name + ":latest") return m;
    return nullptr;
}

double metric(int port, const std::string & series) {
    httplib::Client c("127.0.0.1", port);
    auto res = c.Get("/metrics");
    if (!res) return -1;
    std::smatch m;
    std::regex re(series + R"( ([0-9.e+]+))");
    return std::regex_search(res->body, m, re) ? std::stod(m[1]) : -1;
}

// tiny-chat's whole footprint at --ctx-size 4096, measured by a server whose cap holds everything.
json whole_fit() {
    static const json fit = [] {
        rc::test::server_process s(k_model, {"--device-memory", "1TiB", "--fit-margin", "0"});
        if (!s.started()) return json();
        auto first = complete(s.openai_port(), "demo", "hello");
        if (first.contains("error")) { ADD_FAILURE() << first.dump(); return json(); }
        auto e = ps_entry(s.ollama_port(), "demo");
        return e.is_object() && e.contains("fit") ? e["fit"] : json();
    }();
    return fit;
}

std::string words(int conversation, int n) {
    std::string s = "Conversation " + std::to_string(conversation) + ":";
    for (int w = 0; w < n; ++w) s += " word" + std::to_string(conversation * 1000 + w);
    return s;
}

}  // namespace

TEST(device_fit, a_context_the_device_cannot_hold_serves_from_a_smaller_pool_and_the_tiers) {
    const json whole = whole_fit();
    ASSERT_TRUE(whole.is_object()) << "the probe server fitted tiny-chat";
    ASSERT_EQ(whole["context_cells"], 4096);
    ASSERT_EQ(whole["layers"], whole["layers_total"]);
    // Room for about a quarter of the pool beside the weights: --ctx-size 4096 was set, and the
    // default host tier holds what the pool does not.
    const uint64_t cap = whole["device_bytes"].get<uint64_t>() - whole["context_bytes"].get<uint64_t>() * 3 / 4;
    rc::test::server_process s(k_model, {"--device-memory", std::to_string(cap), "--fit-margin", "0", "--max-tokens", "256", "--kv-block-size", "16"});
    ASSERT_TRUE(s.started());
    // Ten conversations of ~500 tokens: over 4× the pool. Each comes back for a second turn after
    // all the others have pushed it out of the context.
    std::vector<int> first_prompt(10);
    for (int c = 0; c < 10; ++c) {
        auto r = complete(s.openai_port(), "demo", words(c, 100));
        ASSERT_FALSE(r.contains("error")) << r.dump();
        first_prompt[c] = r["usage"]["prompt_tokens"];
    }
    auto fit = ps_entry(s.ollama_port(), "demo")["fit"];
    ASSERT_TRUE(fit.is_object());
    const int pool = fit["context_cells"];
    EXPECT_LT(pool, 4096) << fit.dump();
    EXPECT_GE(pool, 256) << "never below one request of --max-tokens";
    EXPECT_EQ(fit["cells_wanted"], 4096);
    EXPECT_EQ(fit["layers"], fit["layers_total"]) << "the weights stay whole on the device";
    EXPECT_LE(fit["device_bytes"].get<uint64_t>(), cap);
    int total = 0;
    for (int t : first_prompt) total += t;
    EXPECT_GE(total, 4 * pool) << "the conversations total four pools";
    for (int c = 0; c < 10; ++c) {
        auto r = complete(s.openai_port(), "demo", words(c, 100) + " and then");
        ASSERT_FALSE(r.contains("error")) << r.dump();
        const int cached = r["usage"]["prompt_tokens_details"]["cached_tokens"];
        EXPECT_GE(cached, first_prompt[c] / 16 * 16) << "conversation " << c << " resumed whole from the tiers";
    }
    EXPECT_GT(metric(s.openai_port(), R"(rustycage_kv_prompt_tokens_total\{model="demo",source="host"\})"), 0);
    // A prompt longer than the pool is refused with where the pool's size came from.
    auto too_long = complete(s.openai_port(), "demo", words(11, 400));
    ASSERT_TRUE(too_long.contains("error"));
    EXPECT_NE(too_long["error"].get<std::string>().find("fitted to device memory"), std::string::npos) << too_long.dump();
    EXPECT_EQ(metric(s.openai_port(), R"re(rustycage_device_memory_used_bytes\{model="demo",device="CPU \(--device-memory\)"\})re"),
              fit["device_bytes"].get<double>());
    EXPECT_EQ(metric(s.openai_port(), R"re(rustycage_device_memory_free_bytes\{device="CPU \(--device-memory\)"\})re"),
              static_cast<double>(cap - fit["device_bytes"].get<uint64_t>()));
}

// Round three: the fit reserved compute for the whole --ctx-size, not for the pool it chose, and
// took the difference out of the layers (bench-1b at a 1.41 GB cap, flash attention off: 13/16
// layers at --ctx-size 4096, 9 at 8192, 1 at 16384). bench-tiny's compute buffers grow with the
// context (67 MB at 4096, 174 MB at 16384): capped at its whole footprint at 4096, every --ctx-size
// keeps both layers, with flash attention on and off, and the compute reserved is the pool's
// (before, without flash attention: no layer on the device at 8192, and 16384 did not load).
TEST(device_fit, the_compute_reserved_is_the_chosen_pools_so_every_ctx_size_keeps_all_layers) {
    const auto model = std::vector<std::pair<std::string, std::string>>{{"bt", rc::test::model_path("bench-tiny")}};
    auto fit_of = [&](std::vector<std::string> args) {
        args.insert(args.end(), {"--fit-margin", "0", "--max-tokens", "256"});
        rc::test::server_process s(model, args);
        if (!s.started()) return json();
        auto r = complete(s.openai_port(), "bt", "hello");
        if (r.contains("error")) return json{{"error", r}};
        auto e = ps_entry(s.ollama_port(), "bt");
        return e.is_object() && e.contains("fit") ? e["fit"] : json();
    };
    const json whole = fit_of({"--device-memory", "1TiB", "--ctx-size", "4096"});
    ASSERT_TRUE(whole.is_object() && whole.contains("device_bytes")) << whole.dump();
    const json wide = fit_of({"--device-memory", "1TiB", "--ctx-size", "16384"});
    ASSERT_GT(wide["compute_bytes"].get<uint64_t>(), whole["compute_bytes"].get<uint64_t>() * 3 / 2) << "the buffers grow with the context here";
    const std::string cap = std::to_string(whole["device_bytes"].get<uint64_t>());
    for (const char * ctx : {"4096", "8192", "16384"}) {
        for (bool flash : {false, true}) {
            std::vector<std::string> args = {"--device-memory", cap, "--ctx-size", ctx};
            if (flash) args.push_back("--flash-attn");
            const json fit = fit_of(args);
            ASSERT_TRUE(fit.is_object() && fit.contains("layers")) << ctx << " " << fit.dump();
            EXPECT_EQ(fit["layers"], fit["layers_total"]) << "--ctx-size " << ctx << (flash ? " --flash-attn: " : ": ") << fit.dump();
            EXPECT_GE(fit["context_cells"].get<int>(), 256) << fit.dump();
            EXPECT_LE(fit["device_bytes"].get<uint64_t>(), whole["device_bytes"].get<uint64_t>()) << fit.dump();
            // The pool's buffers (interpolated between two measures: never below what the pool needs).
            EXPECT_LT(fit["compute_bytes"].get<uint64_t>(), wide["compute_bytes"].get<uint64_t>() * 3 / 4) << "the pool's compute, not --ctx-size's: " << fit.dump();
        }
    }
}

TEST(device_fit, weights_that_do_not_fit_serve_with_part_of_the_layers_on_the_device) {
    const json whole = whole_fit();
    ASSERT_TRUE(whole.is_object());
    const uint64_t cap = whole["compute_bytes"].get<uint64_t>() + whole["weights_bytes"].get<uint64_t>() / 2 + whole["context_bytes"].get<uint64_t>() / 4;
    rc::test::server_process s(k_model, {"--device-memory", std::to_string(cap), "--fit-margin", "0", "--max-tokens", "256", "--kv-host-budget", "0"});
    ASSERT_TRUE(s.started());
    auto r = complete(s.openai_port(), "demo", "hello there");
    ASSERT_FALSE(r.contains("error")) << r.dump();
    auto fit = ps_entry(s.ollama_port(), "demo")["fit"];
    ASSERT_TRUE(fit.is_object());
    EXPECT_GT(fit["layers"].get<int>(), 0);
    EXPECT_LT(fit["layers"].get<int>(), fit["layers_total"].get<int>()) << fit.dump();
    EXPECT_GT(fit["host_bytes"].get<uint64_t>(), 0u);
    EXPECT_LE(fit["device_bytes"].get<uint64_t>(), cap);
}

TEST(device_fit, a_second_model_that_does_not_fit_beside_an_idle_one_unloads_it) {
    const json whole = whole_fit();
    ASSERT_TRUE(whole.is_object());
    const uint64_t cap = whole["device_bytes"].get<uint64_t>() * 3 / 2;
    auto two = k_model;
    two.push_back({"other", rc::test::model_path("tiny-chat")});
    rc::test::server_process s(two, {"--device-memory", std::to_string(cap), "--fit-margin", "0", "--kv-host-budget", "0"});
    ASSERT_TRUE(s.started());
    ASSERT_FALSE(complete(s.openai_port(), "demo", "first").contains("error"));
    auto r = complete(s.openai_port(), "other", "second");
    ASSERT_FALSE(r.contains("error")) << r.dump();
    EXPECT_TRUE(ps_entry(s.ollama_port(), "demo").is_null()) << "the idle model made room";
    auto other = ps_entry(s.ollama_port(), "other");
    ASSERT_TRUE(other.is_object());
    EXPECT_EQ(other["fit"]["context_cells"], 4096) << "the new model loaded whole, not squeezed beside the idle one";
    ASSERT_FALSE(complete(s.openai_port(), "demo", "and back").contains("error")) << "and the first comes back the same way";
}

TEST(device_fit, a_set_context_that_fits_nowhere_is_refused_with_its_numbers_and_the_server_serves_on) {
    const json whole = whole_fit();
    ASSERT_TRUE(whole.is_object());
    // No KV tier to hold what a smaller pool would not, and system memory too small for the rest.
    rc::test::server_process s(k_model, {"--device-memory", std::to_string(whole["device_bytes"].get<uint64_t>() / 2), "--fit-margin", "0",
                                         "--kv-host-budget", "0", "--memory-budget", "1GiB", "--ctx-size", "2000000"});
    ASSERT_TRUE(s.started());
    auto r = complete(s.openai_port(), "demo", "hello");
    ASSERT_TRUE(r.contains("error"));
    EXPECT_GE(r["status"].get<int>(), 400);
    EXPECT_LT(r["status"].get<int>(), 500) << "a setting that cannot fit is the caller's configuration, not a server fault";
    const std::string msg = r["error"];
    EXPECT_NE(msg.find("--ctx-size 2000000"), std::string::npos) << msg;
    EXPECT_NE(msg.find("does not fit"), std::string::npos) << msg;
    EXPECT_TRUE(ps_entry(s.ollama_port(), "demo").is_null());
    httplib::Client c("127.0.0.1", s.openai_port());
    auto health = c.Get("/health");
    ASSERT_TRUE(health);
    EXPECT_EQ(health->status, 200) << "the server is alive";
}
