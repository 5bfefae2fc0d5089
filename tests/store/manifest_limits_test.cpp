// The bounds on what a manifest may hold (manifest_limits, check_writable, validate_parameters) and
// that the store never writes a manifest it could not read back.
#include <gtest/gtest.h>

#include <string>

#include "store/manifest.h"
#include "store/model_store.h"
#include "store_test_util.h"
#include "util/sha256.h"

using namespace rc::store;
using json = nlohmann::ordered_json;
namespace fs = std::filesystem;

namespace {

manifest small_manifest() {
    manifest m;
    m.name = "local/library/demo:latest";
    m.layers = {{layer_kind::model, blob_digest::of(rc::sha256_of("w")), 1, "demo.gguf"}};
    m.created_at = *parse_rfc3339("2026-01-02T03:04:05.006Z");
    return m;
}

json nested_object(int depth) {
    json j = 1;
    for (int i = 0; i < depth; ++i) j = json{{"k", j}};
    return j;
}

std::string error_of(const rc::status & st) { return st.ok() ? std::string("(ok)") : st.err().message; }

}  // namespace

TEST(manifest_limits, serialized_manifests_are_compact) {
    manifest m = small_manifest();
    m.parameters = {{"stop", {"a", "b"}}, {"temperature", 0.5}};
    const std::string text = serialize(m);
    EXPECT_EQ(text.find("\n"), text.size() - 1) << "one line, ending in a newline";
    EXPECT_EQ(text.find("  "), std::string::npos) << text;
}

TEST(manifest_limits, check_writable_accepts_what_a_normal_create_writes) {
    manifest m = small_manifest();
    m.template_text = std::string(100 << 10, 'x');
    m.system = "You are terse.";
    m.parameters = {{"temperature", 0.7}, {"stop", {"<|im_end|>", "</s>"}}, {"num_ctx", 8192}, {"penalize_newline", true}};
    EXPECT_TRUE(check_writable(m).ok()) << error_of(check_writable(m));
    EXPECT_TRUE(validate_parameters(m.parameters).ok());
}

TEST(manifest_limits, check_writable_names_what_is_too_large_or_unsafe) {
    manifest m = small_manifest();
    m.system = std::string(5 << 20, 's');
    EXPECT_NE(error_of(check_writable(m)).find("system is 5242880 bytes"), std::string::npos) << error_of(check_writable(m));

    m = small_manifest();
    m.template_text = std::string(manifest_limits::max_template_bytes + 1, 't');
    EXPECT_NE(error_of(check_writable(m)).find("template is"), std::string::npos);

    m = small_manifest();
    m.layers[0].filename = "../../x.gguf";
    EXPECT_NE(error_of(check_writable(m)).find("plain file names"), std::string::npos);
    m.layers[0].filename = "";
    EXPECT_TRUE(check_writable(m).ok()) << "the file name is optional: " << error_of(check_writable(m));

    m = small_manifest();
    m.parameters = {{"deep", nested_object(20)}};
    EXPECT_NE(error_of(check_writable(m)).find("nest deeper"), std::string::npos) << error_of(check_writable(m));

    m = small_manifest();  // each piece within its own limit, the whole over the write limit
    m.template_text = std::string(manifest_limits::max_template_bytes, 't');
    m.system = std::string(manifest_limits::max_system_bytes, 's');
    for (int i = 0; i < 200; ++i) m.source.files.push_back(std::string(4000, 'f'));
    EXPECT_NE(error_of(check_writable(m)).find("the manifest is"), std::string::npos) << error_of(check_writable(m));
}

TEST(manifest_limits, parameters_are_a_flat_object_of_option_names) {
    EXPECT_TRUE(validate_parameters(json::object()).ok());
    EXPECT_NE(error_of(validate_parameters(json::array())).find("must be an object"), std::string::npos);
    EXPECT_NE(error_of(validate_parameters({{"temperature", {{"nested", 1}}}})).find("parameters.temperature"), std::string::npos);
    EXPECT_NE(error_of(validate_parameters({{"stop", {json::array({"a"})}}})).find("parameters.stop items"), std::string::npos);
    EXPECT_NE(error_of(validate_parameters({{"../x", 1}})).find("not an option name"), std::string::npos);
    EXPECT_FALSE(validate_parameters({{"stop", std::string(5000, 'x')}}).ok());
    EXPECT_FALSE(validate_parameters({{"n", nullptr}}).ok());
    json many = json::object();
    for (int i = 0; i <= int(manifest_limits::max_parameters); ++i) many["k" + std::to_string(i)] = i;
    EXPECT_NE(error_of(validate_parameters(many)).find("keys (at most"), std::string::npos);
    json stops = json::array();
    for (int i = 0; i <= int(manifest_limits::max_parameter_items); ++i) stops.push_back("s");
    EXPECT_NE(error_of(validate_parameters({{"stop", stops}})).find("items (at most"), std::string::npos);
}

TEST(manifest_limits, deeply_nested_text_is_refused_not_a_crash) {
    // 400,000 levels in 800 KB: parsing is iterative, and the depth check refuses it before any
    // recursive dump could run.
    std::string text = "{\"schema_version\":1,\"parameters\":{\"p\":";
    text += std::string(400000, '[') + std::string(400000, ']') + "}}";
    auto m = parse_manifest(text);
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.err().message.find("nests deeper"), std::string::npos) << m.err().message;
}

TEST(manifest_limits, a_layer_without_a_file_name_round_trips) {
    // Found by fuzz_manifest: the name is optional when reading, but was written as "" — which the
    // reader refuses, so rewriting such a manifest (set_status) made the model unreadable.
    auto m = parse_manifest(R"({"schema_version":1,"name":"demo","layers":[{"kind":"model","digest":"sha256-)" + std::string(64, 'a') +
                            R"(","size":5}],"source":{"kind":"import"},"status":"ready","created_at":"2026-01-02T03:04:05.006Z"})");
    ASSERT_TRUE(m.ok()) << m.err().message;
    auto back = parse_manifest(serialize(*m));
    ASSERT_TRUE(back.ok()) << back.err().message;
    EXPECT_EQ(serialize(*back), serialize(*m));
}

TEST(manifest_limits, times_beyond_the_clock_are_refused) {
    // Found by fuzz_manifest: year 4052 overflowed the nanosecond clock while converting.
    EXPECT_FALSE(parse_rfc3339("4052-01-02T03:04:05.006Z"));
    EXPECT_FALSE(parse_rfc3339("1969-12-31T23:59:59Z"));
    EXPECT_TRUE(parse_rfc3339("2261-12-31T23:59:59.999Z"));
    EXPECT_TRUE(parse_rfc3339("1970-01-01T00:00:00Z"));
}

class manifest_limits_store : public rc::store::test::temp_root_test {};

TEST_F(manifest_limits_store, put_writes_nothing_it_could_not_read_back) {
    model_store store(root);
    auto d = store.blobs().import_file(write_file("in/m.gguf", "weights"));
    ASSERT_TRUE(d.ok());
    manifest m;
    m.layers = {{layer_kind::model, *d, 7, "m.gguf"}};
    m.system = std::string(5 << 20, 's');
    auto st = store.put(model_name::parse("big").value(), m);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.err().code, rc::errc::invalid_argument);
    EXPECT_FALSE(fs::exists(root / "manifests/local/library/big/latest"));

    m.system.reset();
    m.layers[0].filename = "../../x.gguf";
    EXPECT_FALSE(store.put(model_name::parse("trav").value(), m).ok());
    EXPECT_FALSE(fs::exists(root / "manifests/local/library/trav/latest"));
    EXPECT_TRUE(store.blobs().has(*d)) << "a refused put collects nothing";
}

TEST_F(manifest_limits_store, long_status_reasons_are_cut_so_the_manifest_stays_writable) {
    model_store store(root);
    auto d = store.blobs().import_file(write_file("in/m.gguf", "weights"));
    ASSERT_TRUE(d.ok());
    manifest m;
    m.layers = {{layer_kind::model, *d, 7, "m.gguf"}};
    ASSERT_TRUE(store.put(model_name::parse("m").value(), m).ok());
    ASSERT_TRUE(store.set_status("m", model_status::failed, std::string(2 << 20, 'r')).ok());
    auto r = store.find("m");
    ASSERT_TRUE(r.ok()) << r.err().message;
    EXPECT_LT(r->m.status_reason.size(), 2100u);
}
