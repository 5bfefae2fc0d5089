#include <cmath>

#include "engine_fixture.h"
#include "support/exact_kernels.h"

using namespace rc;
using namespace rc::test;

namespace {
std::vector<float> embed(engine::engine & e, const std::string & text, bool normalize) {
    engine::generation_request r;
    r.kind = engine::request_kind::embed;
    r.prompt = e.model().tokenize(text, true, false);
    r.normalize_embedding = normalize;
    auto out = collect(*submit_ok(e, r));
    EXPECT_EQ(out.done.kind, engine::generation_event::type::embedding) << out.done.error.message;
    return out.done.embedding;
}

double norm(const std::vector<float> & v) {
    double s = 0;
    for (float x : v) s += static_cast<double>(x) * x;
    return std::sqrt(s);
}
}  // namespace

TEST(embedding, has_the_models_dimension_and_unit_norm_when_asked) {
    auto e = start_engine("tiny-embed");
    ASSERT_TRUE(e);
    ASSERT_TRUE(e->is_embedding());
    auto v = embed(*e, "The quick brown fox", true);
    ASSERT_EQ(static_cast<int>(v.size()), e->model().info().n_embd);
    for (float x : v) ASSERT_TRUE(std::isfinite(x));
    EXPECT_NEAR(norm(v), 1.0, 1e-4);
    auto raw = embed(*e, "The quick brown fox", false);
    EXPECT_GT(std::fabs(norm(raw) - 1.0), 1e-3) << "unnormalised pooled output is not unit length by chance";
    for (size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(v[i], raw[i] / norm(raw), 1e-4);
}

TEST(embedding, deterministic_and_input_dependent_also_when_batched) {
    engine::engine_options opts;
    opts.n_parallel = 4;
    auto e = start_engine("tiny-embed", opts);
    ASSERT_TRUE(e);
    auto a = embed(*e, "hello world", true);
    auto b = embed(*e, "a completely different sentence", true);
    EXPECT_EQ(a, embed(*e, "hello world", true));
    EXPECT_NE(a, b);
    // Several inputs in one decode give the same vectors as one at a time.
    std::vector<std::shared_ptr<engine::request_channel>> chans;
    for (const auto & t : {"hello world", "a completely different sentence"}) {
        engine::generation_request r;
        r.kind = engine::request_kind::embed;
        r.prompt = e->model().tokenize(t, true, false);
        chans.push_back(submit_ok(*e, r));
    }
    auto ra = collect(*chans[0]).done.embedding, rb = collect(*chans[1]).done.embedding;
    ASSERT_EQ(ra.size(), a.size());
    // Vulkan's shaders round a batch differently from one input (support/exact_kernels.h): up to
    // 4e-5 on lavapipe.
    const double tolerance = rc::test::exact_kernels() ? 1e-5 : 1e-3;
    for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_NEAR(ra[i], a[i], tolerance);
        EXPECT_NEAR(rb[i], b[i], tolerance);
    }
}

TEST(embedding, generation_on_an_embedding_model_is_refused) {
    auto e = start_engine("tiny-embed");
    ASSERT_TRUE(e);
    engine::generation_request r;
    r.prompt = e->model().tokenize("x", true, false);
    auto ch = e->submit(r);
    ASSERT_FALSE(ch.ok());
    EXPECT_EQ(ch.err().code, errc::invalid_argument);
}
