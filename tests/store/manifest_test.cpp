#include "store/manifest.h"

#include <ggml.h>
#include <gguf.h>
#include <gtest/gtest.h>

#include <functional>

#include "store_test_util.h"
#include "util/sha256.h"

using namespace rc::store;
using json = nlohmann::ordered_json;

namespace {

blob_digest digest_of(const std::string & s) { return blob_digest::of(rc::sha256_of(s)); }

manifest full_manifest() {
    manifest m;
    m.name = "hf.co/owner/repo:Q4_K_M";
    m.layers = {{layer_kind::model, digest_of("part1"), 100, "repo-Q4_K_M-00001-of-00002.gguf"},
                {layer_kind::model, digest_of("part2"), 50, "repo-Q4_K_M-00002-of-00002.gguf"},
                {layer_kind::projector, digest_of("mmproj"), 7, "mmproj-f16.gguf"}};
    m.template_text = "{{ .Prompt }}";
    m.system = "You are terse.";
    m.parameters = {{"temperature", 0.7}, {"stop", {"<|im_end|>"}}, {"num_ctx", 8192}};
    m.quantization = "Q4_K_M";
    m.file_type = 15;
    m.architecture = "llama";
    m.parameter_count = 1235814400;
    m.context_length = 131072;
    m.source = {source_kind::hf, "owner/repo", "0123abcd", {"repo-Q4_K_M-00001-of-00002.gguf", "repo-Q4_K_M-00002-of-00002.gguf"}};
    m.status = model_status::failed;
    m.status_reason = "tokenizer check failed";
    m.checked_at = parse_rfc3339("2026-11-29T12:00:01.250Z");
    m.created_at = *parse_rfc3339("2026-11-29T11:59:00.000Z");
    return m;
}

manifest minimal_manifest() {
    manifest m;
    m.name = "local/library/demo:latest";
    m.layers = {{layer_kind::model, digest_of("weights"), 5, "demo.gguf"}};
    m.created_at = *parse_rfc3339("2026-01-02T03:04:05.006Z");
    return m;
}

void expect_same(const manifest & a, const manifest & b) {
    EXPECT_EQ(a.name, b.name);
    ASSERT_EQ(a.layers.size(), b.layers.size());
    for (size_t i = 0; i < a.layers.size(); ++i) {
        EXPECT_EQ(a.layers[i].kind, b.layers[i].kind);
        EXPECT_EQ(a.layers[i].digest, b.layers[i].digest);
        EXPECT_EQ(a.layers[i].size, b.layers[i].size);
        EXPECT_EQ(a.layers[i].filename, b.layers[i].filename);
    }
    EXPECT_EQ(a.template_text, b.template_text);
    EXPECT_EQ(a.system, b.system);
    EXPECT_EQ(a.parameters, b.parameters);
    EXPECT_EQ(a.quantization, b.quantization);
    EXPECT_EQ(a.file_type, b.file_type);
    EXPECT_EQ(a.architecture, b.architecture);
    EXPECT_EQ(a.parameter_count, b.parameter_count);
    EXPECT_EQ(a.context_length, b.context_length);
    EXPECT_EQ(a.source.kind, b.source.kind);
    EXPECT_EQ(a.source.repo, b.source.repo);
    EXPECT_EQ(a.source.revision, b.source.revision);
    EXPECT_EQ(a.source.files, b.source.files);
    EXPECT_EQ(a.status, b.status);
    EXPECT_EQ(a.status_reason, b.status_reason);
    EXPECT_EQ(a.checked_at, b.checked_at);
    EXPECT_EQ(a.created_at, b.created_at);
}

TEST(manifest, full_round_trip) {
    manifest m = full_manifest();
    std::string text = serialize(m);
    auto back = parse_manifest(text);
    ASSERT_TRUE(back.ok()) << back.err().message;
    expect_same(m, back.value());
    EXPECT_EQ(serialize(back.value()), text);
    EXPECT_EQ(back->total_size(), 157u);
    ASSERT_NE(back->first_model_layer(), nullptr);
    EXPECT_EQ(back->first_model_layer()->digest, digest_of("part1"));

    json j = json::parse(text);
    EXPECT_EQ(j["schema_version"], manifest::schema_version);
    EXPECT_EQ(j["layers"][0]["digest"], digest_of("part1").str());
    EXPECT_EQ(j["status"], "failed");
    EXPECT_EQ(j["checked_at"], "2026-11-29T12:00:01.250Z");
}

TEST(manifest, minimal_round_trip_keeps_optionals_absent) {
    manifest m = minimal_manifest();
    auto back = parse_manifest(serialize(m));
    ASSERT_TRUE(back.ok()) << back.err().message;
    expect_same(m, back.value());
    EXPECT_FALSE(back->template_text);
    EXPECT_FALSE(back->file_type);
    EXPECT_FALSE(back->checked_at);
    EXPECT_EQ(back->status, model_status::quarantined);
    EXPECT_TRUE(back->parameters.is_object());
}

TEST(manifest, accepts_api_digest_spelling_and_short_names) {
    json j = to_json(minimal_manifest());
    j["layers"][0]["digest"] = digest_of("weights").api();
    j["name"] = "demo";
    j["unknown_future_field"] = {1, 2, 3};
    auto m = manifest_from_json(j);
    ASSERT_TRUE(m.ok()) << m.err().message;
    EXPECT_EQ(m->layers[0].digest, digest_of("weights"));
    EXPECT_EQ(m->name, "local/library/demo:latest");
}

TEST(manifest, invalid_utf8_is_replaced_not_thrown) {
    manifest m = minimal_manifest();
    m.system = "bad \xff byte";
    m.parameters = {{"stop", {"\xc3"}}};
    std::string text;
    ASSERT_NO_THROW(text = serialize(m));
    auto back = parse_manifest(text);
    ASSERT_TRUE(back.ok()) << back.err().message;
    EXPECT_EQ(*back->system, "bad \xef\xbf\xbd byte");  // U+FFFD
}

TEST(manifest, garbage_and_truncated_text_are_errors_not_crashes) {
    const std::vector<std::string> garbage = {"", "not json", "{", "[]", "null", "42", "\"str\"", "{\"a\":", "\xff\xfe{}",
                                              std::string("{\0}", 3)};
    for (const auto & bad : garbage) {
        auto m = parse_manifest(bad);
        ASSERT_FALSE(m.ok()) << bad;
        EXPECT_EQ(m.err().code, rc::errc::invalid_argument);
        EXPECT_NE(m.err().message.find("invalid manifest"), std::string::npos) << m.err().message;
    }
    // Every strict prefix of a real manifest (a write cut short) is refused.
    std::string text = serialize(full_manifest());
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    for (size_t n = 0; n < text.size(); ++n) EXPECT_FALSE(parse_manifest(text.substr(0, n)).ok()) << "prefix of " << n << " bytes";
}

TEST(manifest, malformed_fields_are_refused_with_the_field_named) {
    struct bad_case {
        const char * what;
        std::function<void(json &)> mutate;
        std::string problem;
    };
    const std::vector<bad_case> cases = {
        {"no name", [](json & j) { j.erase("name"); }, "name is missing"},
        {"bad name", [](json & j) { j["name"] = "../../etc"; }, "name is invalid"},
        {"no version", [](json & j) { j.erase("schema_version"); }, "schema_version is missing"},
        {"newer version", [](json & j) { j["schema_version"] = 2; }, "newer than this build"},
        {"layers not array", [](json & j) { j["layers"] = "x"; }, "layers must be an array"},
        {"no layers", [](json & j) { j["layers"] = json::array(); }, "must include a \"model\" layer"},
        {"only projector", [](json & j) { j["layers"][0]["kind"] = "projector"; }, "must include a \"model\" layer"},
        {"layer not object", [](json & j) { j["layers"][0] = 3; }, "layers[0] must be an object"},
        {"bad kind", [](json & j) { j["layers"][0]["kind"] = "weights"; }, "layers[0].kind has unknown value"},
        {"bad digest", [](json & j) { j["layers"][0]["digest"] = "sha256-abc"; }, "layers[0].digest is invalid"},
        {"negative size", [](json & j) { j["layers"][0]["size"] = -1; }, "layers[0].size must be a non-negative integer"},
        {"float size", [](json & j) { j["layers"][0]["size"] = 1.5; }, "layers[0].size must be a non-negative integer"},
        {"path filename", [](json & j) { j["layers"][0]["filename"] = "../../x.gguf"; }, "layers[0].filename must be a plain file name"},
        {"template type", [](json & j) { j["template"] = 5; }, "template must be a string"},
        {"parameters type", [](json & j) { j["parameters"] = json::array(); }, "parameters must be an object"},
        {"file_type type", [](json & j) { j["file_type"] = "Q4"; }, "file_type must be an integer"},
        {"no source", [](json & j) { j.erase("source"); }, "source is missing"},
        {"bad source kind", [](json & j) { j["source"]["kind"] = "ftp"; }, "source.kind has unknown value"},
        {"bad source files", [](json & j) { j["source"]["files"] = {1}; }, "source.files must be an array of strings"},
        {"bad status", [](json & j) { j["status"] = "fine"; }, "status has unknown value"},
        {"bad time", [](json & j) { j["created_at"] = "yesterday"; }, "created_at is not an RFC 3339 UTC time"},
        {"offset time", [](json & j) { j["checked_at"] = "2026-11-29T12:00:00+01:00"; }, "checked_at is not an RFC 3339"},
    };
    for (const auto & c : cases) {
        json j = to_json(minimal_manifest());
        c.mutate(j);
        auto m = parse_manifest(j.dump());
        ASSERT_FALSE(m.ok()) << c.what;
        EXPECT_EQ(m.err().code, rc::errc::invalid_argument) << c.what;
        EXPECT_NE(m.err().message.find(c.problem), std::string::npos) << c.what << ": " << m.err().message;
    }
}

TEST(manifest, enum_names) {
    EXPECT_EQ(to_string(model_status::ready), "ready");
    EXPECT_EQ(to_string(layer_kind::adapter), "adapter");
    EXPECT_EQ(to_string(source_kind::copy), "copy");
    EXPECT_EQ(parse_model_status("quarantined"), model_status::quarantined);
    EXPECT_FALSE(parse_model_status("Ready"));
}

TEST(timestamps, rfc3339_round_trip) {
    auto t = parse_rfc3339("2026-11-29T12:34:56.789Z");
    ASSERT_TRUE(t);
    EXPECT_EQ(format_rfc3339(*t), "2026-11-29T12:34:56.789Z");
    EXPECT_EQ(format_compact(*t), "20261129T123456Z");
    EXPECT_TRUE(parse_rfc3339("2026-11-29T12:34:56Z"));
    EXPECT_FALSE(parse_rfc3339("2026-11-29 12:34:56Z"));
    EXPECT_FALSE(parse_rfc3339("2026-13-01T00:00:00Z"));
    EXPECT_FALSE(parse_rfc3339("2026-11-29T12:34:56.Z"));
    EXPECT_FALSE(parse_rfc3339("2026-11-29T12:34:56Zjunk"));
}

class gguf_fill_test : public rc::store::test::temp_root_test {};

// A header-only-meaningful GGUF: one 8x4 F32 tensor, Q8_0 declared as the file type.
void write_tiny_gguf(const std::filesystem::path & path) {
    gguf_context * g = gguf_init_empty();
    gguf_set_val_str(g, "general.architecture", "llama");
    gguf_set_val_u32(g, "llama.context_length", 2048);
    gguf_set_val_u32(g, "general.file_type", 7);
    ggml_init_params ip{1 << 16, nullptr, false};
    ggml_context * ctx = ggml_init(ip);
    ggml_tensor * t = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 4);
    ggml_set_name(t, "w");
    gguf_add_tensor(g, t);
    ASSERT_TRUE(gguf_write_to_file(g, path.c_str(), false));
    ggml_free(ctx);
    gguf_free(g);
}

TEST_F(gguf_fill_test, fills_facts_from_the_header) {
    auto path = root / "tiny.gguf";
    write_tiny_gguf(path);
    manifest m = minimal_manifest();
    auto st = fill_from_gguf(m, path);
    ASSERT_TRUE(st.ok()) << st.err().message;
    EXPECT_EQ(m.architecture, "llama");
    EXPECT_EQ(m.context_length, 2048u);
    EXPECT_EQ(m.parameter_count, 32u);
    EXPECT_EQ(m.file_type, 7);
    EXPECT_EQ(m.quantization, "Q8_0");
}

TEST_F(gguf_fill_test, non_gguf_is_an_error) {
    manifest m = minimal_manifest();
    EXPECT_FALSE(fill_from_gguf(m, write_file("x.gguf", "not a gguf file at all")).ok());
    EXPECT_FALSE(fill_from_gguf(m, root / "missing.gguf").ok());
    EXPECT_TRUE(m.architecture.empty());
}

}  // namespace
