// The registry: registration rules, exposition of each family kind, collectors, and updates from
// many threads at once. When promtool is installed, every exposition here is also checked by it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <thread>

#include "metrics/registry.h"
#include "support/run_command.h"
#include "support/temp_dir.h"

using namespace rc::metrics;

namespace {

// promtool's verdict on an exposition ("" when it passes, or when promtool is not installed).
std::string promtool_problems(const std::string & text) {
    if (!std::filesystem::exists("/usr/bin/promtool")) return {};
    const rc::test::temp_dir dir("metrics");
    const auto path = dir.path() / "exposition.prom";
    std::ofstream(path) << text;
    const auto r = rc::test::run_command({"/usr/bin/promtool", "check", "metrics"}, {}, path.string());
    const std::string out = r.out + r.err;
    const int rc = r.code;
    return rc == 0 && out.empty() ? std::string() : "promtool rc=" + std::to_string(rc) + ": " + out;
}

bool contains(const std::string & text, const std::string & line) { return text.find(line) != std::string::npos; }

}  // namespace

TEST(metrics_registry, counter_exposition) {
    registry reg;
    auto c = reg.add_counter("app_requests_total", "Requests served.", {"route", "status"});
    ASSERT_TRUE(c.ok()) << c.err().message;
    c.value()->with({"/v1/models/:id", "200"}).inc();
    c.value()->with({"/v1/models/:id", "200"}).inc(2);
    c.value()->with({"/v1/chat/completions", "404"}).inc();
    EXPECT_EQ(reg.expose(),
              "# HELP app_requests_total Requests served.\n"
              "# TYPE app_requests_total counter\n"
              "app_requests_total{route=\"/v1/chat/completions\",status=\"404\"} 1\n"
              "app_requests_total{route=\"/v1/models/:id\",status=\"200\"} 3\n");
    EXPECT_EQ(promtool_problems(reg.expose()), "");
}

TEST(metrics_registry, unlabelled_family_exposes_zero_and_labelled_empty_family_nothing) {
    registry reg;
    ASSERT_TRUE(reg.add_gauge("app_up", "One when serving.").ok());
    ASSERT_TRUE(reg.add_counter("app_events_total", "Events.", {"kind"}).ok());
    EXPECT_EQ(reg.expose(), "# HELP app_up One when serving.\n# TYPE app_up gauge\napp_up 0\n");
}

TEST(metrics_registry, escapes_label_values_and_help) {
    registry reg;
    auto g = reg.add_gauge("app_info", "Build \"info\" with a back\\slash\nand a newline.", {"version"}).value();
    g->with({"1.0 \"beta\"\\\n"}).set(1);
    std::string text = reg.expose();
    EXPECT_TRUE(contains(text, "# HELP app_info Build \"info\" with a back\\\\slash\\nand a newline.\n")) << text;
    EXPECT_TRUE(contains(text, "app_info{version=\"1.0 \\\"beta\\\"\\\\\\n\"} 1\n")) << text;
    EXPECT_EQ(promtool_problems(text), "");
}

TEST(metrics_registry, histogram_buckets_are_cumulative) {
    registry reg;
    auto h = reg.add_histogram("app_latency_seconds", "Latency.", {"route"}, {0.1, 0.5, 1}).value();
    auto & child = h->with({"/x"});
    for (double v : {0.05, 0.1, 0.3, 0.5, 0.7, 2.0, std::numeric_limits<double>::infinity()}) child.observe(v);
    child.observe(std::nan(""));  // ignored
    auto snap = child.collect();
    EXPECT_EQ(snap.cumulative, (std::vector<uint64_t>{2, 4, 5, 7}));
    EXPECT_EQ(snap.count, 7u);
    std::string text = reg.expose();
    // `le` is inclusive: 0.1 counts in the 0.1 bucket, 0.5 in the 0.5 bucket.
    EXPECT_TRUE(contains(text, "# TYPE app_latency_seconds histogram\n")) << text;
    EXPECT_TRUE(contains(text,
                         "app_latency_seconds_bucket{route=\"/x\",le=\"0.1\"} 2\n"
                         "app_latency_seconds_bucket{route=\"/x\",le=\"0.5\"} 4\n"
                         "app_latency_seconds_bucket{route=\"/x\",le=\"1\"} 5\n"
                         "app_latency_seconds_bucket{route=\"/x\",le=\"+Inf\"} 7\n"
                         "app_latency_seconds_sum{route=\"/x\"} +Inf\n"
                         "app_latency_seconds_count{route=\"/x\"} 7\n"))
        << text;
}

TEST(metrics_registry, histogram_sum_and_unlabelled_buckets) {
    registry reg;
    auto h = reg.add_histogram("app_size_bytes", "Sizes.", {}, {10, 100, std::numeric_limits<double>::infinity()}).value();
    auto & child = h->with({});
    child.observe(5);
    child.observe(50);
    child.observe(500);
    std::string text = reg.expose();
    EXPECT_TRUE(contains(text,
                         "app_size_bytes_bucket{le=\"10\"} 1\n"
                         "app_size_bytes_bucket{le=\"100\"} 2\n"
                         "app_size_bytes_bucket{le=\"+Inf\"} 3\n"
                         "app_size_bytes_sum 555\n"
                         "app_size_bytes_count 3\n"))
        << text;
    EXPECT_EQ(promtool_problems(text), "");
}

TEST(metrics_registry, counters_never_go_backwards) {
    registry reg;
    auto & c = reg.add_counter("app_tokens_total", "Tokens.").value()->with({});
    c.inc(5);
    c.inc(-3);
    c.inc(std::nan(""));
    c.inc(std::numeric_limits<double>::infinity());
    c.inc(0);
    EXPECT_EQ(c.value(), 5);
    c.inc();
    EXPECT_EQ(c.value(), 6);
}

TEST(metrics_registry, gauges_go_both_ways) {
    registry reg;
    auto & g = reg.add_gauge("app_depth", "Depth.").value()->with({});
    g.set(3);
    g.inc();
    g.dec(2);
    EXPECT_EQ(g.value(), 2);
}

TEST(metrics_registry, rejects_bad_registrations) {
    registry reg;
    EXPECT_FALSE(reg.add_counter("app_requests", "no _total suffix").ok());
    EXPECT_FALSE(reg.add_counter("bad-name_total", "x").ok());
    EXPECT_FALSE(reg.add_gauge("app_g", "x", {"__reserved"}).ok());
    EXPECT_FALSE(reg.add_gauge("app_g", "x", {"a", "a"}).ok());
    EXPECT_FALSE(reg.add_histogram("app_h", "x", {"le"}, {1}).ok());
    EXPECT_FALSE(reg.add_histogram("app_h", "x", {}, {1, 1}).ok());
    EXPECT_FALSE(reg.add_histogram("app_h", "x", {}, {2, 1}).ok());
    EXPECT_FALSE(reg.add_histogram("app_h", "x", {}, {1, std::nan("")}).ok());
    EXPECT_FALSE(reg.add_collected("app_c", "x", metric_type::counter).ok());  // collected counters need _total too
    ASSERT_TRUE(reg.add_gauge("app_g", "x").ok());
    auto dup = reg.add_counter("app_g", "x");
    EXPECT_FALSE(dup.ok());
    EXPECT_EQ(dup.err().code, rc::errc::invalid_argument);
    EXPECT_FALSE(reg.add_gauge("app_g", "again").ok());
}

TEST(metrics_registry, collectors_emit_fresh_samples_each_scrape) {
    registry reg;
    auto * depth = reg.add_collected("app_queue_depth", "Queued requests.", metric_type::gauge, {"model"}).value();
    auto * loaded = reg.add_collected("app_models_loaded", "Loaded models.", metric_type::gauge).value();
    std::vector<std::pair<std::string, int>> models = {{"b", 2}, {"a", 1}};
    reg.add_collector([&](scrape_sink & s) {
        for (const auto & [name, q] : models) s.add(*depth, {name}, q);
        s.add(*loaded, {}, static_cast<double>(models.size()));
    });
    std::string text = reg.expose();
    EXPECT_TRUE(contains(text, "# TYPE app_queue_depth gauge\napp_queue_depth{model=\"a\"} 1\napp_queue_depth{model=\"b\"} 2\n")) << text;
    EXPECT_TRUE(contains(text, "app_models_loaded 2\n")) << text;
    EXPECT_EQ(promtool_problems(text), "");
    models.erase(models.begin());  // "b" unloaded: its series disappears
    text = reg.expose();
    EXPECT_FALSE(contains(text, "model=\"b\"")) << text;
    EXPECT_TRUE(contains(text, "app_models_loaded 1\n")) << text;
    models.clear();
    text = reg.expose();
    EXPECT_FALSE(contains(text, "app_queue_depth")) << "a family without samples is omitted entirely:\n" << text;
}

TEST(metrics_registry, collected_histograms_are_written_as_histograms) {
    registry reg;
    auto * h = reg.add_collected("app_restore_seconds", "Restore time.", metric_type::histogram, {"source"}).value();
    reg.add_collector([h](scrape_sink & s) { s.add_histogram(*h, {"disk"}, {{0.01, 0.1}, {1, 3, 4}, 0.35}); });
    std::string text = reg.expose();
    EXPECT_TRUE(contains(text, "# TYPE app_restore_seconds histogram\n"
                               "app_restore_seconds_bucket{source=\"disk\",le=\"0.01\"} 1\n"
                               "app_restore_seconds_bucket{source=\"disk\",le=\"0.1\"} 3\n"
                               "app_restore_seconds_bucket{source=\"disk\",le=\"+Inf\"} 4\n"
                               "app_restore_seconds_sum{source=\"disk\"} 0.35\n"
                               "app_restore_seconds_count{source=\"disk\"} 4\n"))
        << text;
    EXPECT_EQ(promtool_problems(text), "");
}

TEST(metrics_registry, a_throwing_collector_does_not_break_the_scrape) {
    registry reg;
    auto * g = reg.add_collected("app_x", "x", metric_type::gauge).value();
    reg.add_collector([](scrape_sink &) { throw std::runtime_error("boom"); });
    reg.add_collector([g](scrape_sink & s) { s.add(*g, {}, 7); });
    EXPECT_TRUE(contains(reg.expose(), "app_x 7\n"));
}

TEST(metrics_registry, families_keep_registration_order) {
    registry reg;
    reg.add_gauge("zz_first", "x").value();
    reg.add_gauge("aa_second", "x").value();
    std::string text = reg.expose();
    EXPECT_LT(text.find("zz_first"), text.find("aa_second"));
}

TEST(metrics_registry, concurrent_updates_are_exact) {
    registry reg;
    auto * c = reg.add_counter("app_hits_total", "Hits.", {"worker"}).value();
    auto * h = reg.add_histogram("app_wait_seconds", "Waits.", {"worker"}, {0.5, 1}).value();
    auto & shared = c->with({"all"});
    constexpr int threads = 8, per_thread = 20000;
    std::atomic<bool> stop{false};
    // A scraper runs meanwhile: every exposition must be consistent (+Inf bucket == _count).
    std::thread scraper([&] {
        while (!stop.load()) {
            auto snap = h->with({"all"}).collect();
            EXPECT_EQ(snap.cumulative.back(), snap.count);
            (void)reg.expose();
        }
    });
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            auto & mine = c->with({"w" + std::to_string(t)});  // children created concurrently
            for (int i = 0; i < per_thread; ++i) {
                shared.inc();
                mine.inc();
                c->with({"all"});  // lookups racing with creations
                h->with({"all"}).observe(i % 2 ? 0.25 : 0.75);
            }
        });
    }
    for (auto & th : pool) th.join();
    stop = true;
    scraper.join();
    EXPECT_EQ(shared.value(), threads * per_thread);
    for (int t = 0; t < threads; ++t) EXPECT_EQ(c->with({"w" + std::to_string(t)}).value(), per_thread);
    auto snap = h->with({"all"}).collect();
    EXPECT_EQ(snap.count, static_cast<uint64_t>(threads * per_thread));
    EXPECT_EQ(snap.cumulative[0], static_cast<uint64_t>(threads * per_thread / 2));
    EXPECT_DOUBLE_EQ(snap.sum, threads * per_thread / 2 * (0.25 + 0.75));
    EXPECT_EQ(promtool_problems(reg.expose()), "");
}
