// commit_checked_model: a create or pull is a transaction. The candidate is checked beside the
// model that holds the name; only one that passes replaces it. (A fake checker stands in for the
// quarantine, which loads the model with llama.cpp.)
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "models/model_puller.h"
#include "store/incident_log.h"
#include "support/temp_dir.h"

using namespace rc;
namespace fs = std::filesystem;

namespace {

class commit_test : public ::testing::Test {
  protected:
    void SetUp() override { st = std::make_unique<store::model_store>(root); }

    // A one-layer manifest over a new blob holding `bytes`.
    store::manifest candidate(const std::string & bytes) {
        const fs::path in = root / ("in-" + std::to_string(counter++));
        std::ofstream(in, std::ios::binary) << bytes;
        auto d = st->blobs().import_file(in);
        EXPECT_TRUE(d.ok());
        store::manifest m;
        m.layers = {{store::layer_kind::model, d.value(), bytes.size(), "model.gguf"}};
        m.source.kind = store::source_kind::create;
        return m;
    }
    static store::model_name name(const std::string & s) { return store::model_name::parse(s).value(); }

    models::checker_fn passes = [this](const models::quarantine_input & in) -> result<models::quarantine_report> {
        ++checks;
        EXPECT_EQ(in.paths.size(), 1u);
        return models::quarantine_report{};
    };
    models::checker_fn refuses = [this](const models::quarantine_input &) -> result<models::quarantine_report> {
        ++checks;
        return make_error(errc::invalid_argument, "unknown model architecture: 'nonsense'");
    };

    rc::test::temp_dir tmp_{"commit"};  // fresh for each test; declared before st, so removed after it
    const fs::path root = tmp_.path();
    std::unique_ptr<store::model_store> st;
    int counter = 0;
    int checks = 0;
};

TEST_F(commit_test, a_new_model_that_passes_is_stored_ready) {
    auto m = candidate("good weights");
    ASSERT_TRUE(models::commit_checked_model(*st, name("good1"), m, passes).ok());
    auto r = st->find("good1");
    ASSERT_TRUE(r.ok()) << r.err().message;
    EXPECT_EQ(r->m.status, store::model_status::ready);
    EXPECT_TRUE(r->m.checked_at);
}

TEST_F(commit_test, a_new_model_that_fails_is_listed_failed_with_an_incident) {
    auto v = models::commit_checked_model(*st, name("bad"), candidate("bad weights"), refuses);
    ASSERT_FALSE(v.ok());
    EXPECT_NE(v.err().message.find("listed as failed"), std::string::npos) << v.err().message;
    auto r = st->find("bad");
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->m.status, store::model_status::failed);
    EXPECT_NE(r->m.status_reason.find("unknown model architecture"), std::string::npos);
    EXPECT_EQ(store::incident_log::in_store(root).list(10, std::string("bad:latest")).size(), 1u);
}

TEST_F(commit_test, a_failed_re_create_leaves_the_old_model_and_its_blobs) {
    auto old = candidate("good weights");
    ASSERT_TRUE(models::commit_checked_model(*st, name("good1"), old, passes).ok());
    const auto before = st->find("good1").value();

    auto bad = candidate("weights of an unknown architecture");
    auto v = models::commit_checked_model(*st, name("good1"), bad, refuses);
    ASSERT_FALSE(v.ok());
    EXPECT_NE(v.err().message.find("is unchanged"), std::string::npos) << v.err().message;

    auto after = st->find("good1");
    ASSERT_TRUE(after.ok()) << after.err().message;
    EXPECT_EQ(after->m.status, store::model_status::ready) << "still serving";
    ASSERT_EQ(after->m.layers.size(), 1u);
    EXPECT_EQ(after->m.layers[0].digest, old.layers[0].digest);
    EXPECT_EQ(store::serialize(after->m), store::serialize(before.m)) << "the manifest is untouched";
    EXPECT_TRUE(st->blobs().has(old.layers[0].digest));
    EXPECT_TRUE(st->blobs().has(bad.layers[0].digest)) << "the client's upload stays for a retry";
    auto incidents = store::incident_log::in_store(root).list(10, std::string("good1:latest"));
    ASSERT_EQ(incidents.size(), 1u);
    EXPECT_EQ(incidents[0].details["kept_existing"], true);
}

TEST_F(commit_test, a_re_create_that_passes_replaces_the_model_and_collects_its_blobs) {
    auto old = candidate("version one");
    ASSERT_TRUE(models::commit_checked_model(*st, name("m"), old, passes).ok());
    auto next = candidate("version two");
    ASSERT_TRUE(models::commit_checked_model(*st, name("m"), next, passes).ok());
    EXPECT_EQ(st->find("m")->m.layers[0].digest, next.layers[0].digest);
    EXPECT_FALSE(st->blobs().has(old.layers[0].digest));
}

TEST_F(commit_test, an_unwritable_candidate_is_refused_before_the_check) {
    auto m = candidate("w");
    m.system = std::string(5 << 20, 's');
    auto v = models::commit_checked_model(*st, name("big"), m, passes);
    ASSERT_FALSE(v.ok());
    EXPECT_EQ(v.err().code, errc::invalid_argument);
    EXPECT_EQ(checks, 0) << "no load is spent on what cannot be written";
    EXPECT_EQ(st->find("big").err().code, errc::not_found);
}

TEST_F(commit_test, a_failing_candidate_leaves_an_unreadable_manifest_for_the_user_to_delete) {
    const fs::path file = root / "manifests/local/library/junk/latest";
    fs::create_directories(file.parent_path());
    std::ofstream(file) << "{ not json";
    ASSERT_FALSE(models::commit_checked_model(*st, name("junk"), candidate("w"), refuses).ok());
    std::ifstream in(file);
    std::string text((std::istreambuf_iterator<char>(in)), {});
    EXPECT_EQ(text, "{ not json");
}

}  // namespace
