// The curated catalog: parsing (what a bad catalog says), the shipped share/curated.json, and the
// choice of what fits a memory size.
#include <gtest/gtest.h>

#include <set>

#include "models/curated_catalog.h"

namespace {

using namespace rc::models;

const char * k_two = R"({"schema": 1, "models": [
  {"name": "big", "repo": "acme/Big-GGUF", "quantization": "q4_k_m", "uses": ["chat", "triage"]},
  {"name": "small", "repo": "acme/Small-GGUF", "quantization": "Q8_0", "file": "small-Q8_0.gguf", "uses": ["chat"]}]})";

TEST(curated_catalog, parses_entries_and_canonicalises_the_quantization) {
    auto cat = parse_curated_catalog(k_two);
    ASSERT_TRUE(cat) << cat.err().message;
    ASSERT_EQ(cat->models.size(), 2u);
    EXPECT_EQ(cat->models[0].quantization, "Q4_K_M");
    EXPECT_EQ(cat->models[0].pull_name(), "hf.co/acme/Big-GGUF:Q4_K_M");
    EXPECT_TRUE(cat->models[0].serves("triage"));
    EXPECT_FALSE(cat->models[1].serves("triage"));
    EXPECT_EQ(cat->models[1].file, "small-Q8_0.gguf");
    EXPECT_EQ(cat->find("small"), &cat->models[1]);
    EXPECT_EQ(cat->find("nope"), nullptr);
}

TEST(curated_catalog, refuses_bad_catalogs_naming_the_problem) {
    struct bad_case {
        const char * json;
        const char * says;
    };
    const bad_case cases[] = {
        {"not json", "not a JSON object"},
        {R"({"schema": 2, "models": []})", "\"schema\" must be 1"},
        {R"({"schema": 1, "models": []})", "non-empty list"},
        {R"({"schema": 1, "models": [{"repo": "a/b", "quantization": "Q4_K_M", "uses": ["chat"]}]})", "\"name\""},
        {R"({"schema": 1, "models": [{"name": "Bad Name", "repo": "a/b", "quantization": "Q4_K_M", "uses": ["chat"]}]})", "[a-z0-9._-]"},
        {R"({"schema": 1, "models": [{"name": "x", "repo": "no-slash", "quantization": "Q4_K_M", "uses": ["chat"]}]})", "model 'x'"},
        {R"({"schema": 1, "models": [{"name": "x", "repo": "a/b", "quantization": "Q9_X", "uses": ["chat"]}]})", "unknown quantization 'Q9_X'"},
        {R"({"schema": 1, "models": [{"name": "x", "repo": "a/b", "quantization": "Q4_K_M", "uses": ["dance"]}]})", "unknown use \"dance\""},
        {R"({"schema": 1, "models": [{"name": "x", "repo": "a/b", "quantization": "Q4_K_M", "uses": []}]})", "\"uses\" must be a non-empty list"},
        {R"({"schema": 1, "models": [{"name": "x", "repo": "a/b", "quantization": "Q4_K_M", "file": "x.bin", "uses": ["chat"]}]})", ".gguf"},
        {R"({"schema": 1, "models": [{"name": "x", "repo": "a/b", "quantization": "Q4_K_M", "size": 1, "uses": ["chat"], "license": 3}]})", "\"license\" must be a string"},
        {R"({"schema": 1, "models": [{"name": "x", "repo": "a/b", "quantization": "Q4_K_M", "uses": ["chat"]},
                                      {"name": "x", "repo": "a/c", "quantization": "Q4_K_M", "uses": ["chat"]}]})", "appears twice"},
    };
    for (const auto & c : cases) {
        auto r = parse_curated_catalog(c.json);
        ASSERT_FALSE(r) << c.json;
        EXPECT_EQ(r.err().code, rc::errc::invalid_argument);
        EXPECT_NE(r.err().message.find(c.says), std::string::npos) << r.err().message << " — expected: " << c.says;
    }
}

// The catalog that ships: valid, every use offered, and no sizes or digests (they come from the Hub).
TEST(curated_catalog, the_shipped_catalog_is_valid_and_covers_every_use) {
    auto cat = load_curated_catalog(RC_CURATED_JSON);
    ASSERT_TRUE(cat) << cat.err().message;
    for (auto use : curated_uses) {
        bool offered = false;
        for (const auto & m : cat->models) offered = offered || m.serves(use);
        EXPECT_TRUE(offered) << "no curated model for " << use;
    }
    std::set<std::string> repos;
    for (const auto & m : cat->models) EXPECT_TRUE(repos.insert(m.repo + ":" + m.quantization).second) << m.name << " duplicates an entry";
}

TEST(curated_catalog, missing_file_is_not_found) {
    auto r = load_curated_catalog("/nonexistent/curated.json");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.err().code, rc::errc::not_found);
}

std::vector<sized_model> sized(const curated_catalog & cat, std::vector<uint64_t> sizes) {
    std::vector<sized_model> out;
    for (size_t i = 0; i < cat.models.size(); ++i) {
        sized_model s;
        s.model = &cat.models[i];
        s.size = sizes[i];
        s.need = curated_memory_need(sizes[i]);
        if (sizes[i] == 0) s.problem = "not on the Hub";
        out.push_back(s);
    }
    return out;
}

TEST(curated_catalog, the_need_is_the_weights_plus_a_quarter) {
    EXPECT_EQ(curated_memory_need(4000), 5000u);
    EXPECT_EQ(curated_memory_need(0), 0u);
}

TEST(curated_catalog, picks_per_use_the_first_model_that_fits) {
    auto cat = parse_curated_catalog(k_two);
    ASSERT_TRUE(cat);
    auto s = sized(*cat, {8000, 1000});  // needs 10000 and 1250

    auto roomy = choose_fit(s, 10000, {});
    ASSERT_EQ(roomy.picks.size(), 1u);  // big serves chat and triage: picked once
    EXPECT_EQ(roomy.picks[0]->model->name, "big");
    EXPECT_EQ(roomy.unmet, (std::vector<std::string>{"code", "embedding"}));

    auto tight = choose_fit(s, 9999, {"chat", "triage"});
    ASSERT_EQ(tight.picks.size(), 1u);
    EXPECT_EQ(tight.picks[0]->model->name, "small");
    EXPECT_EQ(tight.unmet, (std::vector<std::string>{"triage"}));

    auto none = choose_fit(s, 1249, {"chat"});
    EXPECT_TRUE(none.picks.empty());
    EXPECT_EQ(none.unmet, (std::vector<std::string>{"chat"}));
}

TEST(curated_catalog, an_entry_the_hub_could_not_size_is_never_picked) {
    auto cat = parse_curated_catalog(k_two);
    ASSERT_TRUE(cat);
    auto s = sized(*cat, {0, 1000});
    auto c = choose_fit(s, 1ull << 40, {"chat"});
    ASSERT_EQ(c.picks.size(), 1u);
    EXPECT_EQ(c.picks[0]->model->name, "small");
}

}  // namespace
