#pragma once
// A test suite that shares one `rustycage serve` (tests/support/server_process.h) among its tests:
// the models "demo" (tiny-chat) and "embed" (tiny-embed), started once per suite, plus HTTP helpers.
// Derive a fixture from it; SetUp fails the test when the server did not start.
#include <cpp-httplib/httplib.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "support/server_process.h"
#include "test_models.h"

namespace rc::test {

class shared_server : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        server_ = std::make_unique<server_process>(std::vector<std::pair<std::string, std::string>>{
            {"demo", model_path("tiny-chat")}, {"embed", model_path("tiny-embed")}});
    }
    static void TearDownTestSuite() { server_.reset(); }
    void SetUp() override { ASSERT_TRUE(server_ && server_->started()) << "server did not start"; }

    static server_process & server() { return *server_; }
    static httplib::Client client(bool ollama_port = false) {
        httplib::Client c("127.0.0.1", ollama_port ? server_->ollama_port() : server_->openai_port());
        c.set_read_timeout(120);
        return c;
    }

  private:
    static inline std::unique_ptr<server_process> server_;
};

}  // namespace rc::test
