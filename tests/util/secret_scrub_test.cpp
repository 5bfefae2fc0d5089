#include "util/secret_scrub.h"

#include <gtest/gtest.h>

namespace rc {
namespace {

TEST(secret_scrub, tokens_keys_and_passwords_are_redacted_and_the_rest_is_kept) {
    const char * secret = "s3cr3t-V4lue-xyz";
    const std::string lines[] = {
        std::string("Authorization: Bearer ") + secret,
        std::string("curl -H 'authorization: ") + secret + "'",
        std::string("token=") + secret + " model=tiny",
        std::string("{\"api_key\": \"") + secret + "\"}",
        std::string("rustycage serve --api-key ") + secret + " --threads 2",
        std::string("rustycage serve --api-keys=") + secret,
        std::string("password: ") + secret,
        std::string("GET /x?key=") + secret + "&a=1",
        "github ghp_abcdefghijklmnopqrstuvwxyz0123456789 here",
        "hf hf_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123 there",
    };
    for (const auto & l : lines) {
        const std::string out = scrub_secrets(l);
        EXPECT_EQ(out.find(secret), std::string::npos) << out;
        EXPECT_EQ(out.find("ghp_abcdefghijklmnopqrstuvwxyz0123456789"), std::string::npos) << out;
        EXPECT_EQ(out.find("hf_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123"), std::string::npos) << out;
        EXPECT_NE(out.find("[redacted]"), std::string::npos) << out;
    }
    EXPECT_EQ(scrub_secrets("token=abc model=tiny"), "token=[redacted] model=tiny");
    // Ordinary log lines are untouched.
    for (const char * kept : {"ts=2026-12-03T10:00:00Z level=info event=served model=tiny prompt_tokens=12 max_tokens=64",
                              "rustycage listening openai=http://127.0.0.1:8080 ollama=http://127.0.0.1:11434 models=/m"})
        EXPECT_EQ(scrub_secrets(kept), kept);
}

TEST(secret_scrub, a_private_key_block_is_redacted_line_by_line) {
    const std::vector<std::string> in = {"before", "-----BEGIN PRIVATE KEY-----", "MC4CAQAwBQYDK2VwBCIEIAbcdef", "-----END PRIVATE KEY-----", "after"};
    const auto out = scrub_lines(in);
    ASSERT_EQ(out.size(), in.size());
    EXPECT_EQ(out[0], "before");
    EXPECT_EQ(out[2], "[redacted]");
    EXPECT_EQ(out[4], "after");
}

}  // namespace
}  // namespace rc
