// hub_client::download riding out a flaky Hub (the fake one, told to cut, stall and refuse): retries
// with backoff, Retry-After honoured and capped, the stall detector, attempts that run out, and the
// answers that are never retried.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <ctime>

#include "hub_fixture.h"

using namespace rc::hub;
using rc::errc;
using rc::test::fixture;
using rc::test::listed;
using rc::test::read_file;
namespace fs = std::filesystem;
using std::chrono::milliseconds;
using steady = std::chrono::steady_clock;

namespace {

bool contains(const std::string & s, const std::string & part) { return s.find(part) != std::string::npos; }

constexpr const char * tiny = "acme/Tiny-GGUF";

class hub_retry_test : public rc::test::hub_server_test {
  protected:
    const rc::test::fixture_file & q4 = fixture(tiny, "Tiny-Q4_K_M.gguf");  // 3 MiB
    fs::path partial() const { return scratch() / "download.partial"; }

    // Fast backoff (the waits under test come from Retry-After or the stall detector), 1 s stalls.
    hub_config fast_config(int max_attempts = 8) const {
        hub_config cfg = config();
        cfg.retry.max_attempts = max_attempts;
        cfg.retry.base_delay = milliseconds(20);
        cfg.stall_timeout = std::chrono::seconds(1);
        return cfg;
    }

    // Downloads q4 with `cfg`, recording every retry notice and the time it took.
    rc::result<download_report> fetch(const hub_config & cfg, const repo_file & file, const std::atomic<bool> * cancel = nullptr) {
        const auto start = steady::now();
        auto r = hub_client(cfg).download(tiny, "main", file, partial(), {}, cancel, [&](const retry_notice & n) { notices.push_back(n); });
        elapsed = steady::now() - start;
        return r;
    }
    rc::result<download_report> fetch(const hub_config & cfg) { return fetch(cfg, listed(q4)); }

    nlohmann::json requests() { return server().stats()["requests"]; }
    std::string range_of(size_t i) {
        auto r = requests().at(i)["range"];
        return r.is_string() ? r.get<std::string>() : "";
    }

    std::vector<retry_notice> notices;
    steady::duration elapsed{};
};

// An IMF-fixdate `ahead` from now: "Sun, 06 Nov 1994 08:49:37 GMT".
std::string http_date_in(std::chrono::seconds ahead) {
    const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now() + ahead);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[64];
    std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    return buf;
}

}  // namespace

TEST_F(hub_retry_test, three_drops_and_a_stall_complete_unattended_and_verified) {
    // Bodies 1-3 are cut after 256 KiB each; body 4 stops after 512 KiB for far longer than the
    // stall limit (the server holds the connection open); body 5 brings the rest.
    const uint64_t cut = 256 << 10, stall_at = 512 << 10;
    server().control({{"failAfterBytes", cut}, {"failTimes", 3}, {"stallAfterBytes", stall_at}, {"stallSeconds", 60}});
    auto r = fetch(fast_config());
    ASSERT_TRUE(r.ok()) << r.err().message;
    EXPECT_EQ(r->sha256, listed(q4).sha256);
    EXPECT_TRUE(read_file(partial()) == q4.content);
    EXPECT_EQ(r->attempts, 5);
    EXPECT_EQ(r->transferred, q4.content.size());
    EXPECT_EQ(server().stats()["bytesServed"].get<uint64_t>(), q4.content.size()) << "every byte crossed the wire once";

    ASSERT_EQ(notices.size(), 4u);
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(contains(notices[i].reason, "connection closed early")) << notices[i].reason;
    EXPECT_TRUE(notices[3].reason.starts_with("stalled: no data for 1 s")) << notices[3].reason;
    for (const auto & n : notices) {
        EXPECT_EQ(n.attempt, 2) << "each failed attempt brought new bytes, so the count starts again";
        EXPECT_EQ(n.max_attempts, 8);
        EXPECT_LE(n.delay, milliseconds(20));
    }
    // Each retry asked for the rest of the file from where the partial stood.
    ASSERT_EQ(requests().size(), 5u);
    EXPECT_EQ(range_of(0), "");
    EXPECT_EQ(range_of(1), "bytes=" + std::to_string(cut) + "-");
    EXPECT_EQ(range_of(2), "bytes=" + std::to_string(2 * cut) + "-");
    EXPECT_EQ(range_of(3), "bytes=" + std::to_string(3 * cut) + "-");
    EXPECT_EQ(range_of(4), "bytes=" + std::to_string(3 * cut + stall_at) + "-");
    EXPECT_GE(elapsed, std::chrono::seconds(1)) << "the stall was detected after the limit";
    EXPECT_LT(elapsed, std::chrono::seconds(20)) << "and not by waiting for the server's 60 s pause";
}

TEST_F(hub_retry_test, status_503_and_429_are_retried_after_their_retry_after) {
    for (int status : {503, 429}) {
        SCOPED_TRACE(status);
        notices.clear();
        fs::remove(partial());
        server().reset_stats();
        server().control({{"failStatus", status}, {"failStatusTimes", 1}, {"retryAfter", "1"}});
        auto r = fetch(fast_config());
        ASSERT_TRUE(r.ok()) << r.err().message;
        EXPECT_EQ(r->sha256, listed(q4).sha256);
        EXPECT_EQ(r->attempts, 2);
        ASSERT_EQ(notices.size(), 1u);
        EXPECT_EQ(notices[0].delay, milliseconds(1000));
        EXPECT_EQ(notices[0].reason, "HTTP " + std::to_string(status) + ", Retry-After 1");
        EXPECT_GE(elapsed, milliseconds(1000)) << "the backoff alone is 20 ms: the wait is the server's";
        EXPECT_EQ(requests().size(), 2u);
    }
}

TEST_F(hub_retry_test, retry_after_as_an_http_date_is_honoured) {
    server().control({{"failStatus", 503}, {"retryAfter", http_date_in(std::chrono::seconds(2))}});
    auto r = fetch(fast_config());
    ASSERT_TRUE(r.ok()) << r.err().message;
    ASSERT_EQ(notices.size(), 1u);
    // Whole seconds on the wire: "2 s from now" is more than 1 s and at most 2 s away.
    EXPECT_GT(notices[0].delay, milliseconds(900));
    EXPECT_LE(notices[0].delay, milliseconds(2000));
    EXPECT_GE(elapsed, notices[0].delay);
}

TEST_F(hub_retry_test, a_retry_after_longer_than_the_cap_is_cut_to_it) {
    hub_config cfg = fast_config();
    cfg.retry.retry_after_cap = milliseconds(1000);
    server().control({{"failStatus", 429}, {"retryAfter", 3600}});
    auto r = fetch(cfg);
    ASSERT_TRUE(r.ok()) << r.err().message;
    ASSERT_EQ(notices.size(), 1u);
    EXPECT_EQ(notices[0].delay, milliseconds(1000));
    EXPECT_TRUE(contains(notices[0].reason, "Retry-After 3600, capped to 1.0s")) << notices[0].reason;
    EXPECT_GE(elapsed, milliseconds(1000));
    EXPECT_LT(elapsed, std::chrono::seconds(30));
}

TEST_F(hub_retry_test, client_errors_are_final) {
    for (auto [status, code] : {std::pair{404, errc::not_found}, {403, errc::permission_denied}, {401, errc::unauthenticated},
                                {400, errc::invalid_argument}}) {
        SCOPED_TRACE(status);
        notices.clear();
        server().reset_stats();
        server().control({{"failStatus", status}, {"failStatusTimes", 5}});
        auto r = fetch(fast_config());
        ASSERT_FALSE(r.ok());
        EXPECT_EQ(r.err().code, code) << r.err().message;
        EXPECT_TRUE(notices.empty());
        EXPECT_EQ(requests().size(), 1u);
        EXPECT_FALSE(fs::exists(partial()));
        server().control({{"reset", true}});
    }
    // A file the Hub really does not have.
    auto missing = fetch(fast_config(), repo_file{"Tiny-Q3_K_S.gguf", 10, ""});
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.err().code, errc::not_found);
    EXPECT_TRUE(notices.empty());
}

TEST_F(hub_retry_test, corrupt_content_is_not_retried) {
    server().control({{"corrupt", "acme/Tiny-GGUF/Tiny-Q4_K_M.gguf"}});
    auto r = fetch(fast_config());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.err().code, errc::data_loss);
    EXPECT_TRUE(notices.empty());
    EXPECT_EQ(requests().size(), 1u);
    EXPECT_FALSE(fs::exists(partial()));
}

TEST_F(hub_retry_test, attempts_that_run_out_say_how_many_and_keep_the_partial) {
    // Some bytes first (a client that does not retry, cut after 300000), then a Hub that is down.
    const uint64_t cut = 300000;
    server().control({{"failAfterBytes", cut}});
    ASSERT_FALSE(fetch(fast_config(1)).ok());
    ASSERT_EQ(fs::file_size(partial()), cut);
    server().reset_stats();
    server().control({{"failStatus", 503}, {"failStatusTimes", 100}});

    auto r = fetch(fast_config(3));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.err().code, errc::unavailable);
    const std::string & m = r.err().message;
    EXPECT_TRUE(contains(m, "failed after 3 attempts")) << m;
    EXPECT_TRUE(contains(m, "HTTP 503")) << m;
    EXPECT_TRUE(contains(m, "the partial download (300000 of " + std::to_string(q4.content.size()) + " bytes) is kept")) << m;
    EXPECT_TRUE(contains(m, "run the same pull again to resume")) << m;
    ASSERT_TRUE(fs::exists(partial()));
    EXPECT_EQ(fs::file_size(partial()), cut);
    EXPECT_EQ(requests().size(), 3u);
    ASSERT_EQ(notices.size(), 2u);
    EXPECT_EQ(notices[0].attempt, 2);
    EXPECT_EQ(notices[1].attempt, 3);
    EXPECT_EQ(notices[1].max_attempts, 3);

    // And the kept bytes still make a good start once the Hub is back.
    server().control({{"reset", true}});
    auto resumed = fetch(fast_config());
    ASSERT_TRUE(resumed.ok()) << resumed.err().message;
    EXPECT_EQ(resumed->resumed_from, cut);
    EXPECT_EQ(resumed->sha256, listed(q4).sha256);
}

TEST_F(hub_retry_test, a_refused_connection_is_retried_then_reported) {
    hub_config cfg = fast_config(2);
    cfg.endpoint = "http://127.0.0.1:9";  // the discard port: nothing listens there
    auto r = fetch(cfg);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.err().code, errc::unavailable);
    EXPECT_TRUE(contains(r.err().message, "failed after 2 attempts")) << r.err().message;
    EXPECT_TRUE(contains(r.err().message, "nothing was downloaded")) << r.err().message;
    ASSERT_EQ(notices.size(), 1u);
    EXPECT_TRUE(notices[0].reason.starts_with("cannot connect")) << notices[0].reason;
    EXPECT_FALSE(fs::exists(partial()));
}

TEST_F(hub_retry_test, cancel_ends_the_wait_for_the_next_attempt) {
    server().control({{"failStatus", 503}, {"retryAfter", "30"}});
    std::atomic<bool> cancel{false};
    const auto start = steady::now();
    auto r = hub_client(fast_config()).download(tiny, "main", listed(q4), partial(), {}, &cancel, [&](const retry_notice &) { cancel = true; });
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(contains(r.err().message, "cancelled")) << r.err().message;
    EXPECT_LT(steady::now() - start, std::chrono::seconds(5));
    EXPECT_EQ(requests().size(), 1u);
}
