#include "hub/hub_errors.h"

#include <gtest/gtest.h>

using namespace rc::hub;
using rc::errc;

namespace {
http_response answer(long status, std::string body = {}, std::vector<std::pair<std::string, std::string>> headers = {}) {
    http_response r;
    r.status = status;
    r.body = std::move(body);
    r.headers = std::move(headers);
    return r;
}
bool contains(const std::string & s, const std::string & part) { return s.find(part) != std::string::npos; }
}  // namespace

TEST(hub_errors, maps_statuses_to_codes) {
    hub_config anon;
    EXPECT_EQ(error_for_status(answer(404), "repository a/b", anon).code, errc::not_found);
    EXPECT_EQ(error_for_status(answer(500), "repository a/b", anon).code, errc::unavailable);
    EXPECT_EQ(error_for_status(answer(503), "repository a/b", anon).code, errc::unavailable);
    EXPECT_EQ(error_for_status(answer(429, "", {{"Retry-After", "30"}}), "x", anon).code, errc::unavailable);
    EXPECT_EQ(error_for_status(answer(400), "x", anon).code, errc::invalid_argument);
    EXPECT_EQ(error_for_status(answer(401), "x", anon).code, errc::unauthenticated);
    EXPECT_EQ(error_for_status(answer(403), "x", anon).code, errc::permission_denied);
    EXPECT_EQ(error_for_status(answer(400, "", {{"X-Error-Code", "GatedRepo"}}), "x", anon).code, errc::permission_denied);
}

TEST(hub_errors, access_denied_suggests_hf_token) {
    hub_config anon;
    auto e = error_for_status(answer(401, R"({"error":"Access to model a/b is restricted."})", {{"X-Error-Code", "GatedRepo"}}),
                              "repository a/b", anon);
    EXPECT_EQ(e.code, errc::unauthenticated);
    EXPECT_TRUE(contains(e.message, "HF_TOKEN")) << e.message;
    EXPECT_TRUE(contains(e.message, "a/b")) << e.message;
    EXPECT_TRUE(contains(e.message, "restricted")) << e.message;
}

TEST(hub_errors, anonymous_401_for_a_missing_repo_is_not_found) {
    // The Hub hides whether private repos exist: anonymous callers get 401 RepoNotFound.
    hub_config anon;
    auto e = error_for_status(answer(401, "", {{"X-Error-Code", "RepoNotFound"}, {"X-Error-Message", "Repository not found"}}),
                              "repository a/b", anon);
    EXPECT_EQ(e.code, errc::not_found);
    EXPECT_TRUE(contains(e.message, "HF_TOKEN")) << e.message;
}

TEST(hub_errors, never_repeats_the_token) {
    hub_config cfg;
    cfg.token = "hf_TopSecret42";
    auto e = error_for_status(answer(401, R"({"error":"Invalid credentials: hf_TopSecret42"})"), "repository a/b", cfg);
    EXPECT_FALSE(contains(e.message, "hf_TopSecret42")) << e.message;
    EXPECT_TRUE(contains(e.message, "<redacted>")) << e.message;
    EXPECT_EQ(redact("a tok b tok", "tok"), "a <redacted> b <redacted>");
    EXPECT_EQ(redact("same", ""), "same");
}
