// hub_client::download against the fake Hub: verification, resume, restarts, faults, cancellation.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "hub/gguf_choice.h"
#include "hub/hub_errors.h"
#include "hub_fixture.h"

using namespace rc::hub;
using rc::errc;
using rc::test::fixture;
using rc::test::listed;
using rc::test::read_file;
using rc::test::write_file;
namespace fs = std::filesystem;

namespace {

bool contains(const std::string & s, const std::string & part) { return s.find(part) != std::string::npos; }

constexpr const char * tiny = "acme/Tiny-GGUF";

class hub_download_test : public rc::test::hub_server_test {
  protected:
    const rc::test::fixture_file & q4 = fixture(tiny, "Tiny-Q4_K_M.gguf");
    fs::path partial() const { return scratch() / "download.partial"; }

    // A client that does not retry by itself: the resume tests below are about the next call.
    hub_client one_shot_client() const {
        hub_config cfg = config();
        cfg.retry.max_attempts = 1;
        return hub_client(cfg);
    }

    nlohmann::json requests() { return server().stats()["requests"]; }
    uint64_t bytes_served() { return server().stats()["bytesServed"].get<uint64_t>(); }
};

}  // namespace

TEST_F(hub_download_test, full_download_verifies_sha256) {
    std::vector<std::pair<uint64_t, uint64_t>> calls;
    auto start = std::chrono::steady_clock::now();
    auto r = client().download(tiny, "main", listed(q4), partial(), [&](uint64_t done, uint64_t total) { calls.emplace_back(done, total); });
    auto elapsed_ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
    ASSERT_TRUE(r.ok()) << r.err().message;
    EXPECT_EQ(r->sha256, listed(q4).sha256);
    EXPECT_EQ(r->size, q4.content.size());
    EXPECT_EQ(r->resumed_from, 0u);
    EXPECT_EQ(r->transferred, q4.content.size());
    EXPECT_TRUE(read_file(partial()) == q4.content);

    // Progress: monotonic, throttled to ~10/s, and a final call with the whole size.
    ASSERT_FALSE(calls.empty());
    EXPECT_EQ(calls.back(), std::make_pair(uint64_t(q4.content.size()), uint64_t(q4.content.size())));
    for (size_t i = 1; i < calls.size(); ++i) EXPECT_LE(calls[i - 1].first, calls[i].first);
    EXPECT_LE(calls.size(), size_t(elapsed_ms / 100 + 2));

    auto reqs = requests();
    ASSERT_EQ(reqs.size(), 1u);
    EXPECT_EQ(reqs[0]["path"], "/acme/Tiny-GGUF/resolve/main/Tiny-Q4_K_M.gguf");
    EXPECT_TRUE(reqs[0]["range"].is_null());
    EXPECT_EQ(bytes_served(), q4.content.size());
}

TEST_F(hub_download_test, resumes_after_a_cut_without_downloading_twice) {
    const uint64_t cut = 1u << 20;
    server().control({{"failAfterBytes", cut}});
    auto first = one_shot_client().download(tiny, "main", listed(q4), partial());
    ASSERT_FALSE(first.ok());
    EXPECT_EQ(first.err().code, errc::unavailable);
    EXPECT_TRUE(contains(first.err().message, "resume")) << first.err().message;
    ASSERT_TRUE(fs::exists(partial()));  // kept for the next attempt
    EXPECT_EQ(fs::file_size(partial()), cut);

    auto second = client().download(tiny, "main", listed(q4), partial());
    ASSERT_TRUE(second.ok()) << second.err().message;
    EXPECT_EQ(second->sha256, listed(q4).sha256);
    EXPECT_EQ(second->resumed_from, cut);
    EXPECT_EQ(second->transferred, q4.content.size() - cut);
    EXPECT_TRUE(read_file(partial()) == q4.content);

    auto reqs = requests();
    ASSERT_EQ(reqs.size(), 2u);
    EXPECT_TRUE(reqs[0]["range"].is_null());
    EXPECT_EQ(reqs[1]["range"], "bytes=" + std::to_string(cut) + "-");
    EXPECT_EQ(bytes_served(), q4.content.size());  // every byte crossed the wire once
}

TEST_F(hub_download_test, server_ignoring_the_range_restarts_from_zero) {
    server().control({{"failAfterBytes", 700000}});
    ASSERT_FALSE(one_shot_client().download(tiny, "main", listed(q4), partial()).ok());
    server().control({{"ignoreRange", true}});
    server().reset_stats();

    auto r = client().download(tiny, "main", listed(q4), partial());
    ASSERT_TRUE(r.ok()) << r.err().message;
    EXPECT_EQ(r->sha256, listed(q4).sha256);
    EXPECT_EQ(r->resumed_from, 0u);
    EXPECT_TRUE(read_file(partial()) == q4.content);
    auto reqs = requests();
    ASSERT_EQ(reqs.size(), 1u);
    EXPECT_EQ(reqs[0]["range"], "bytes=700000-");  // asked, answered with 200 and the whole file
    EXPECT_EQ(bytes_served(), q4.content.size());
}

TEST_F(hub_download_test, partial_larger_than_the_file_restarts_from_zero) {
    write_file(partial(), q4.content + "trailing garbage");
    auto r = client().download(tiny, "main", listed(q4), partial());
    ASSERT_TRUE(r.ok()) << r.err().message;
    EXPECT_TRUE(read_file(partial()) == q4.content);
    auto reqs = requests();
    ASSERT_EQ(reqs.size(), 1u);
    EXPECT_TRUE(reqs[0]["range"].is_null());
}

TEST_F(hub_download_test, complete_partial_is_verified_without_a_request) {
    ASSERT_TRUE(client().download(tiny, "main", listed(q4), partial()).ok());
    server().reset_stats();
    auto again = client().download(tiny, "main", listed(q4), partial());
    ASSERT_TRUE(again.ok()) << again.err().message;
    EXPECT_EQ(again->resumed_from, q4.content.size());
    EXPECT_EQ(again->transferred, 0u);
    EXPECT_EQ(requests().size(), 0u);

    // A complete-looking partial with wrong bytes (say, from a crash) is fetched afresh, once.
    write_file(partial(), std::string(q4.content.size(), 'x'));
    auto fresh = client().download(tiny, "main", listed(q4), partial());
    ASSERT_TRUE(fresh.ok()) << fresh.err().message;
    EXPECT_EQ(fresh->resumed_from, 0u);
    EXPECT_TRUE(read_file(partial()) == q4.content);
    EXPECT_EQ(requests().size(), 1u);
}

TEST_F(hub_download_test, range_past_a_shrunken_file_restarts_then_fails_on_size) {
    // The listing (say, cached) claims more bytes than the server has: the resume gets 416, the
    // restart gets the whole (shorter) file, and the size check refuses it.
    repo_file stale = listed(q4);
    stale.size += 10;
    write_file(partial(), q4.content);
    auto r = client().download(tiny, "main", stale, partial());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.err().code, errc::data_loss);
    EXPECT_TRUE(contains(r.err().message, "size")) << r.err().message;
    EXPECT_FALSE(fs::exists(partial()));
    auto reqs = requests();
    ASSERT_EQ(reqs.size(), 2u);
    EXPECT_EQ(reqs[0]["range"], "bytes=" + std::to_string(q4.content.size()) + "-");
    EXPECT_TRUE(reqs[1]["range"].is_null());
}

TEST_F(hub_download_test, corrupt_content_is_refused_and_deleted) {
    const auto & q8 = fixture(tiny, "Tiny-Q8_0.gguf");
    server().control({{"corrupt", "acme/Tiny-GGUF/Tiny-Q8_0.gguf"}});
    auto r = client().download(tiny, "main", listed(q8), partial());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.err().code, errc::data_loss);
    EXPECT_TRUE(contains(r.err().message, listed(q8).sha256)) << r.err().message;
    EXPECT_TRUE(contains(r.err().message, "got ")) << r.err().message;
    EXPECT_FALSE(fs::exists(partial()));

    server().control({{"corrupt", nullptr}});
    auto ok = client().download(tiny, "main", listed(q8), partial());  // the symlinked file, served true
    ASSERT_TRUE(ok.ok()) << ok.err().message;
    EXPECT_EQ(ok->sha256, listed(q8).sha256);
}

TEST_F(hub_download_test, cancel_stops_promptly_and_keeps_the_partial) {
    server().control({{"throttle", 256 * 1024}});  // the whole file would take ~12 s
    std::atomic<bool> cancel{false};
    std::chrono::steady_clock::time_point cancelled_at;
    auto r = client().download(tiny, "main", listed(q4), partial(),
                               [&](uint64_t done, uint64_t) {
                                   if (done > 0 && !cancel) {
                                       cancelled_at = std::chrono::steady_clock::now();
                                       cancel = true;
                                   }
                               },
                               &cancel);
    auto took = std::chrono::steady_clock::now() - cancelled_at;
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.err().code, errc::unavailable);
    EXPECT_TRUE(contains(r.err().message, "cancelled")) << r.err().message;
    EXPECT_LT(took, std::chrono::seconds(2));
    ASSERT_TRUE(fs::exists(partial()));
    uint64_t kept = fs::file_size(partial());
    EXPECT_GT(kept, 0u);
    EXPECT_LT(kept, q4.content.size());

    // And the kept bytes are a good start for the next attempt.
    server().control({{"throttle", 0}});
    auto resumed = client().download(tiny, "main", listed(q4), partial());
    ASSERT_TRUE(resumed.ok()) << resumed.err().message;
    EXPECT_EQ(resumed->resumed_from, kept);
    EXPECT_TRUE(read_file(partial()) == q4.content);
}

TEST_F(hub_download_test, cancel_from_another_thread_while_data_trickles) {
    server().control({{"throttle", 2048}});  // a piece per half second: mostly a stalled connection
    std::atomic<bool> cancel{false};
    std::chrono::steady_clock::time_point cancelled_at;
    std::thread canceller([&] {
        // Poll (no fixed sleep) until the first bytes are on disk, then cancel.
        std::error_code ec;
        auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (!(fs::exists(partial(), ec) && fs::file_size(partial(), ec) > 0) && std::chrono::steady_clock::now() < give_up)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        cancelled_at = std::chrono::steady_clock::now();
        cancel = true;
    });
    auto r = client().download(tiny, "main", listed(q4), partial(), {}, &cancel);
    auto done_at = std::chrono::steady_clock::now();
    canceller.join();
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(contains(r.err().message, "cancelled")) << r.err().message;
    EXPECT_LT(done_at - cancelled_at, std::chrono::milliseconds(1500));  // libcurl polls at least once a second
    ASSERT_TRUE(fs::exists(partial()));
    EXPECT_GT(fs::file_size(partial()), 0u);
}

TEST_F(hub_download_test, token_is_not_forwarded_to_the_cdn) {
    const std::string token = "hf_cdnTest_abcdef";
    server().control({{"requireToken", token}, {"redirectLfs", true}});
    auto denied = client().download(tiny, "main", listed(q4), partial());
    ASSERT_FALSE(denied.ok());
    EXPECT_EQ(denied.err().code, errc::unauthenticated) << "the fake Hub answers 401, as the Hub does without credentials";
    EXPECT_TRUE(contains(denied.err().message, "HF_TOKEN")) << denied.err().message;
    EXPECT_FALSE(fs::exists(partial()));  // nothing arrived, nothing kept
    server().reset_stats();

    auto r = client(token).download(tiny, "main", listed(q4), partial());
    ASSERT_TRUE(r.ok()) << r.err().message;
    EXPECT_EQ(r->sha256, listed(q4).sha256);
    auto reqs = requests();
    ASSERT_EQ(reqs.size(), 2u);
    EXPECT_EQ(reqs[0]["path"], "/acme/Tiny-GGUF/resolve/main/Tiny-Q4_K_M.gguf");
    EXPECT_TRUE(reqs[0]["auth"].get<bool>());
    EXPECT_TRUE(reqs[1]["path"].get<std::string>().starts_with("/__cdn/")) << reqs[1]["path"];
    EXPECT_FALSE(reqs[1]["auth"].get<bool>());  // another host: curl dropped the Authorization header
}

TEST_F(hub_download_test, resume_through_the_cdn_redirect_keeps_the_range) {
    const uint64_t cut = 1000000;
    server().control({{"redirectLfs", true}, {"failAfterBytes", cut}});
    ASSERT_FALSE(one_shot_client().download(tiny, "main", listed(q4), partial()).ok());
    auto r = client().download(tiny, "main", listed(q4), partial());
    ASSERT_TRUE(r.ok()) << r.err().message;
    EXPECT_EQ(r->resumed_from, cut);
    auto reqs = requests();
    ASSERT_EQ(reqs.size(), 4u);  // resolve → cdn (cut), resolve → cdn (rest)
    EXPECT_TRUE(reqs[3]["path"].get<std::string>().starts_with("/__cdn/")) << reqs[3]["path"];
    EXPECT_EQ(reqs[3]["range"], "bytes=" + std::to_string(cut) + "-");
    EXPECT_EQ(bytes_served(), q4.content.size());
}

TEST_F(hub_download_test, missing_file_is_not_found) {
    auto r = client().download(tiny, "main", repo_file{"Tiny-Q3_K_S.gguf", 10, ""}, partial());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.err().code, errc::not_found);
    EXPECT_FALSE(fs::exists(partial()));
}

TEST_F(hub_download_test, non_lfs_files_are_checked_by_size) {
    const auto & readme = fixture(tiny, "README.md");
    auto r = client().download(tiny, "main", listed(readme), partial());
    ASSERT_TRUE(r.ok()) << r.err().message;
    EXPECT_EQ(read_file(partial()), readme.content);
    EXPECT_EQ(r->sha256, rc::test::sha256_hex(readme.content));
}

TEST_F(hub_download_test, a_split_model_end_to_end) {
    auto c = client();
    auto files = c.list_files("acme/Big-GGUF");
    ASSERT_TRUE(files.ok()) << files.err().message;
    auto choice = choose_gguf(files.value(), "");
    ASSERT_TRUE(choice.ok()) << choice.err().message;
    EXPECT_EQ(choice->quant, "Q4_K_M");
    ASSERT_EQ(choice->parts.size(), 2u);
    for (size_t i = 0; i < choice->parts.size(); ++i) {
        const auto & part = choice->parts[i];
        fs::path dest = scratch() / ("part" + std::to_string(i));
        auto r = c.download("acme/Big-GGUF", "main", part, dest);
        ASSERT_TRUE(r.ok()) << r.err().message;
        EXPECT_TRUE(read_file(dest) == fixture("acme/Big-GGUF", part.path).content);
    }
}
