#include "hub/hub_config.h"

#include <gtest/gtest.h>

#include <map>

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
