#include "store/digest.h"

#include <gtest/gtest.h>

using rc::store::blob_digest;

namespace {

const std::string k_hello_hex = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";  // sha256("hello")

TEST(blob_digest, both_spellings_parse_to_the_file_spelling) {
    auto a = blob_digest::parse("sha256-" + k_hello_hex);
    auto b = blob_digest::parse("sha256:" + k_hello_hex);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a.value(), b.value());
    EXPECT_EQ(a->str(), "sha256-" + k_hello_hex);
    EXPECT_EQ(a->api(), "sha256:" + k_hello_hex);
    EXPECT_EQ(a->hex(), k_hello_hex);
}

TEST(blob_digest, of_matches_known_hash) {
    EXPECT_EQ(blob_digest::of(rc::sha256_of("hello")).str(), "sha256-" + k_hello_hex);
}

TEST(blob_digest, malformed_digests_are_refused) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"", "expected sha256"},
        {k_hello_hex, "expected sha256"},
        {"md5-" + k_hello_hex, "expected sha256"},
        {"sha256-" + k_hello_hex.substr(1), "64 hex digits"},
        {"sha256-" + k_hello_hex + "0", "64 hex digits"},
        {"sha256-" + std::string(64, 'A'), "lower-case"},
        {"sha256-" + std::string(63, 'a') + "g", "not a hex digit"},
        {"sha256-../../../../etc/passwd" + std::string(42, 'a'), "not a hex digit"},
        {"sha256-" + std::string(63, 'a') + "/", "not a hex digit"},
    };
    for (const auto & [input, problem] : cases) {
        auto d = blob_digest::parse(input);
        ASSERT_FALSE(d.ok()) << input;
        EXPECT_EQ(d.err().code, rc::errc::invalid_argument);
        EXPECT_NE(d.err().message.find(problem), std::string::npos) << d.err().message;
    }
}

TEST(blob_digest, default_is_empty) {
    blob_digest d;
    EXPECT_TRUE(d.empty());
    EXPECT_EQ(d.hex(), "");
    EXPECT_EQ(d.api(), "");
}

}  // namespace
