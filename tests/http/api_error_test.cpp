// How rc::error codes reach clients: HTTP statuses, the two dialects' error bodies, and the one
// shape of an error that ends a stream.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "http/api_error.h"
#include "http/json_fields.h"

using namespace rc::http;
using rc::errc;


TEST(api_error, codes_map_to_their_statuses) {
    EXPECT_EQ(http_status_for(errc::invalid_argument), 400);
    EXPECT_EQ(http_status_for(errc::context_overflow), 400);
    EXPECT_EQ(http_status_for(errc::unauthenticated), 401) << "a Hugging Face 401 reaches the client as 401";
    EXPECT_EQ(http_status_for(errc::permission_denied), 403) << "a gated repository is a 403, not a 400";
    EXPECT_EQ(http_status_for(errc::not_found), 404);
    EXPECT_EQ(http_status_for(errc::data_loss), 502);
    EXPECT_EQ(http_status_for(errc::unavailable), 503);
    EXPECT_EQ(http_status_for(errc::io), 500);
    EXPECT_EQ(http_status_for(errc::internal), 500);
    try {
        raise(rc::make_error(errc::permission_denied, "gated"), "model");
        FAIL();
    } catch (const api_error & e) {
        EXPECT_EQ(e.status, 403);
        EXPECT_STREQ(e.what(), "gated");
        EXPECT_EQ(e.param, "model");
    }
}

TEST(api_error, bodies_have_each_dialects_shape) {
    json o = json::parse(error_response(dialect::openai, 403, "no access", "model").body);
    EXPECT_EQ(o["error"]["type"], "permission_error");
    EXPECT_EQ(o["error"]["param"], "model");
    EXPECT_TRUE(o["error"]["code"].is_null());
    EXPECT_EQ(json::parse(error_response(dialect::openai, 404, "gone").body)["error"]["code"], "model_not_found");
    EXPECT_EQ(json::parse(error_response(dialect::ollama, 401, "who?").body), json({{"error", "who?"}}));
}

TEST(api_error, stream_errors_end_a_stream_in_its_framing) {
    std::string sse = stream_error(dialect::openai, rc::make_error(errc::context_overflow, "full"));
    ASSERT_EQ(sse.rfind("data: ", 0), 0u);
    ASSERT_EQ(sse.substr(sse.size() - 2), "\n\n");
    json e = json::parse(sse.substr(6));
    EXPECT_EQ(e["error"]["message"], "full");
    EXPECT_EQ(e["error"]["type"], "invalid_request_error");
    EXPECT_EQ(e["error"]["code"], "context_overflow") << "the typed code travels, not a guess";
    std::string line = stream_error(dialect::ollama, rc::make_error(errc::unavailable, "unloading"));
    EXPECT_EQ(line, "{\"error\":\"unloading\"}\n");
}
