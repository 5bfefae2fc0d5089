#include "hub/hub_config.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <utility>
#include <vector>

using namespace rc::hub;

namespace {
getenv_fn env(std::map<std::string, std::string> vars) {
    return [vars = std::move(vars)](const char * name) -> const char * {
        auto it = vars.find(name);
        return it == vars.end() ? nullptr : it->second.c_str();
    };
}
}  // namespace

TEST(hub_config, defaults_to_the_public_hub_without_a_token) {
    auto cfg = config_from_env(env({}));
    ASSERT_TRUE(cfg.ok());
    EXPECT_EQ(cfg->endpoint, "https://huggingface.co");
    EXPECT_FALSE(cfg->has_token());
    EXPECT_EQ(cfg->connect_timeout_s, 15);
    EXPECT_TRUE(cfg->user_agent.starts_with("rustycage/")) << cfg->user_agent;
    EXPECT_GT(cfg->user_agent.size(), std::string("rustycage/").size());
}

TEST(hub_config, reads_endpoint_and_token_trimmed) {
    auto cfg = config_from_env(env({{"HF_ENDPOINT", "http://127.0.0.1:9999/mirror//"}, {"HF_TOKEN", "  hf_abc123\n"}}));
    ASSERT_TRUE(cfg.ok());
    EXPECT_EQ(cfg->endpoint, "http://127.0.0.1:9999/mirror");
    EXPECT_EQ(cfg->token, "hf_abc123");
    EXPECT_TRUE(cfg->has_token());
}

TEST(hub_config, empty_variables_mean_unset) {
    auto cfg = config_from_env(env({{"HF_ENDPOINT", ""}, {"HF_TOKEN", " "}}));
    ASSERT_TRUE(cfg.ok());
    EXPECT_EQ(cfg->endpoint, default_endpoint);
    EXPECT_FALSE(cfg->has_token());
}

TEST(hub_config, rejects_a_non_http_endpoint) {
    for (const char * bad : {"ftp://hub", "huggingface.co", "file:///etc", "https://hub?x=1"}) {
        auto cfg = config_from_env(env({{"HF_ENDPOINT", bad}}));
        ASSERT_FALSE(cfg.ok()) << bad;
        EXPECT_EQ(cfg.err().code, rc::errc::invalid_argument);
        EXPECT_NE(cfg.err().message.find("HF_ENDPOINT"), std::string::npos);
    }
}

TEST(hub_config, rejects_a_token_with_control_characters_without_echoing_it) {
    auto cfg = config_from_env(env({{"HF_TOKEN", "hf_se\ncret"}}));
    ASSERT_FALSE(cfg.ok());
    EXPECT_EQ(cfg.err().code, rc::errc::invalid_argument);
    EXPECT_EQ(cfg.err().message.find("hf_se"), std::string::npos);
    EXPECT_EQ(cfg.err().message.find("cret"), std::string::npos);
}

TEST(hub_config, download_retries_default_to_eight_attempts_and_a_30s_stall_limit) {
    auto cfg = config_from_env(env({}));
    ASSERT_TRUE(cfg.ok());
    EXPECT_EQ(cfg->retry.max_attempts, 8);
    EXPECT_EQ(cfg->retry.base_delay, std::chrono::seconds(1));
    EXPECT_EQ(cfg->retry.retry_after_cap, std::chrono::seconds(60));
    EXPECT_EQ(cfg->stall_timeout, std::chrono::seconds(30));
}

TEST(hub_config, reads_the_pull_settings_from_the_environment) {
    auto cfg = config_from_env(env({{"RUSTYCAGE_PULL_RETRIES", "3"}, {"RUSTYCAGE_PULL_RETRY_DELAY", "250ms"},
                                    {"RUSTYCAGE_PULL_STALL_TIMEOUT", "1.5s"}}));
    ASSERT_TRUE(cfg.ok()) << cfg.err().message;
    EXPECT_EQ(cfg->retry.max_attempts, 4);
    EXPECT_EQ(cfg->retry.base_delay, std::chrono::milliseconds(250));
    EXPECT_EQ(cfg->stall_timeout, std::chrono::milliseconds(1500));

    auto off = config_from_env(env({{"RUSTYCAGE_PULL_RETRIES", "0"}, {"RUSTYCAGE_PULL_RETRY_DELAY", "2"}, {"RUSTYCAGE_PULL_STALL_TIMEOUT", "0"}}));
    ASSERT_TRUE(off.ok()) << off.err().message;
    EXPECT_EQ(off->retry.max_attempts, 1);
    EXPECT_EQ(off->retry.base_delay, std::chrono::seconds(2));  // a bare number is seconds
    EXPECT_EQ(off->stall_timeout.count(), 0);

    hub_config c;
    ASSERT_TRUE(set_stall_timeout(c, "2m", "--stall-timeout").ok());
    EXPECT_EQ(c.stall_timeout, std::chrono::minutes(2));
}

TEST(hub_config, refuses_bad_pull_settings_naming_them) {
    for (auto [name, value] : std::vector<std::pair<std::string, std::string>>{{"RUSTYCAGE_PULL_RETRIES", "-1"},
                                                                                {"RUSTYCAGE_PULL_RETRIES", "many"},
                                                                                {"RUSTYCAGE_PULL_RETRIES", "1001"},
                                                                                {"RUSTYCAGE_PULL_RETRIES", "2.5"},
                                                                                {"RUSTYCAGE_PULL_RETRY_DELAY", "soon"},
                                                                                {"RUSTYCAGE_PULL_RETRY_DELAY", "11m"},
                                                                                {"RUSTYCAGE_PULL_RETRY_DELAY", "1.2.3s"},
                                                                                {"RUSTYCAGE_PULL_STALL_TIMEOUT", "500ms"},
                                                                                {"RUSTYCAGE_PULL_STALL_TIMEOUT", "2h"},
                                                                                {"RUSTYCAGE_PULL_STALL_TIMEOUT", "5x"}}) {
        auto cfg = config_from_env(env({{name, value}}));
        ASSERT_FALSE(cfg.ok()) << name << "=" << value;
        EXPECT_EQ(cfg.err().code, rc::errc::invalid_argument);
        EXPECT_NE(cfg.err().message.find(name), std::string::npos) << cfg.err().message;
        EXPECT_NE(cfg.err().message.find("'" + value + "'"), std::string::npos) << cfg.err().message;
    }
    hub_config c;
    auto st = set_retries(c, "x", "--retries");
    ASSERT_FALSE(st.ok());
    EXPECT_TRUE(st.err().message.starts_with("--retries must be")) << st.err().message;
}
