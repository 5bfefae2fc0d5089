#include "store/incident_log.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>

#include "store_test_util.h"

using namespace rc::store;

namespace {

class incident_log_test : public rc::store::test::temp_root_test {};

TEST_F(incident_log_test, record_returns_what_it_wrote) {
    auto log = incident_log::in_store(root);
    auto inc = log.record("quarantine_failed", "hf.co/o/r:Q4_K_M", "NaN logits", {{"step", 3}, {"prompt", "hi"}});
    ASSERT_TRUE(inc.ok()) << inc.err().message;
    EXPECT_TRUE(std::regex_match(inc->id, std::regex("inc-[0-9]{8}T[0-9]{6}Z-[0-9a-f]{8}"))) << inc->id;
    EXPECT_EQ(inc->kind, "quarantine_failed");
    EXPECT_EQ(log.path(), root / "incidents.jsonl");

    auto all = log.list();
    ASSERT_EQ(all.size(), 1u);
    EXPECT_EQ(all[0].id, inc->id);
    EXPECT_EQ(all[0].model, "hf.co/o/r:Q4_K_M");
    EXPECT_EQ(all[0].reason, "NaN logits");
    EXPECT_EQ(all[0].details["step"], 3);
    EXPECT_EQ(format_rfc3339(all[0].time), format_rfc3339(inc->time));
}

TEST_F(incident_log_test, list_is_newest_first_with_limit_and_model_filter) {
    incident_log log(root / "incidents.jsonl");
    for (int i = 0; i < 6; ++i) ASSERT_TRUE(log.record("k", i % 2 ? "odd" : "even", "r" + std::to_string(i)).ok());
    auto all = log.list();
    ASSERT_EQ(all.size(), 6u);
    for (int i = 0; i < 6; ++i) EXPECT_EQ(all[static_cast<size_t>(i)].reason, "r" + std::to_string(5 - i));
    auto two = log.list(2);
    ASSERT_EQ(two.size(), 2u);
    EXPECT_EQ(two[0].reason, "r5");
    auto even = log.list(100, std::string("even"));
    ASSERT_EQ(even.size(), 3u);
    EXPECT_EQ(even[0].reason, "r4");
    EXPECT_EQ(even[2].reason, "r0");
}

TEST_F(incident_log_test, torn_last_line_is_skipped_and_fenced_off) {
    incident_log log(root / "incidents.jsonl");
    ASSERT_TRUE(log.record("k", "m", "first").ok());
    { std::ofstream(log.path(), std::ios::app) << "{\"id\":\"inc-torn\",\"time\":\"2026-"; }  // a crash mid-append
    auto before = log.list();
    ASSERT_EQ(before.size(), 1u);
    EXPECT_EQ(before[0].reason, "first");

    ASSERT_TRUE(log.record("k", "m", "after crash").ok());
    auto after = log.list();
    ASSERT_EQ(after.size(), 2u);
    EXPECT_EQ(after[0].reason, "after crash");
    EXPECT_EQ(after[1].reason, "first");
}

TEST_F(incident_log_test, missing_file_and_garbage_lines) {
    incident_log log(root / "sub" / "incidents.jsonl");
    EXPECT_TRUE(log.list().empty());
    write_file("sub/incidents.jsonl", "garbage\n[]\n{\"id\":1}\n\n");
    EXPECT_TRUE(log.list().empty());
    ASSERT_TRUE(log.record("k", "m", "ok").ok());
    EXPECT_EQ(log.list().size(), 1u);
}

TEST_F(incident_log_test, ids_are_unique_and_bad_utf8_is_recorded) {
    incident_log log(root / "incidents.jsonl");
    std::set<std::string> ids;
    for (int i = 0; i < 200; ++i) ids.insert(log.record("k", "m", "r").value().id);
    EXPECT_EQ(ids.size(), 200u);
    ASSERT_TRUE(log.record("k", "m", "bad \xff utf8").ok());
    EXPECT_EQ(log.list(1).size(), 1u);
}

}  // namespace
