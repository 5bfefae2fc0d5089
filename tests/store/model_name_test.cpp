#include "store/model_name.h"

#include <gtest/gtest.h>

using rc::store::model_name;
using rc::store::same_model_name;
using rc::store::short_model_name;

namespace {

struct valid_case {
    std::string input, full, display;
};

TEST(model_name, valid_names_parse_to_full_and_display) {
    const std::vector<valid_case> cases = {
        {"llama3", "local/library/llama3:latest", "llama3:latest"},
        {"llama3:8b", "local/library/llama3:8b", "llama3:8b"},
        {"qwen2.5:0.5b-instruct-q4_K_M", "local/library/qwen2.5:0.5b-instruct-q4_K_M", "qwen2.5:0.5b-instruct-q4_K_M"},
        {"library/llama3", "local/library/llama3:latest", "llama3:latest"},
        {"me/my_model:v1", "local/me/my_model:v1", "me/my_model:v1"},
        {"local/me/m", "local/me/m:latest", "me/m:latest"},
        {"registry.ollama.ai/library/qwen2.5:0.5b", "registry.ollama.ai/library/qwen2.5:0.5b", "registry.ollama.ai/library/qwen2.5:0.5b"},
        {"Example.COM/Ns/Model:Tag", "example.com/Ns/Model:Tag", "example.com/Ns/Model:Tag"},
        {"hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M", "hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M",
         "hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M"},
        {"hf.co/owner/repo", "hf.co/owner/repo:latest", "hf.co/owner/repo:latest"},
        {"huggingface.co/owner/repo:q4_k_m", "hf.co/owner/repo:Q4_K_M", "hf.co/owner/repo:Q4_K_M"},
        {"https://huggingface.co/owner/repo", "hf.co/owner/repo:latest", "hf.co/owner/repo:latest"},
        {"https://hf.co/owner/repo:iq3_xs", "hf.co/owner/repo:IQ3_XS", "hf.co/owner/repo:IQ3_XS"},
        {"HF.co/owner/repo:model-Q4_K_M.gguf", "hf.co/owner/repo:model-Q4_K_M.gguf", "hf.co/owner/repo:model-Q4_K_M.gguf"},
        {"0x/1.2-3_4:5", "local/0x/1.2-3_4:5", "0x/1.2-3_4:5"},
    };
    for (const auto & c : cases) {
        auto n = model_name::parse(c.input);
        ASSERT_TRUE(n.ok()) << c.input << ": " << n.err().message;
        EXPECT_EQ(n->full(), c.full) << c.input;
        EXPECT_EQ(n->display(), c.display) << c.input;
        // Both spellings name the same model.
        auto from_full = model_name::parse(n->full());
        auto from_display = model_name::parse(n->display());
        ASSERT_TRUE(from_full.ok() && from_display.ok()) << c.input;
        EXPECT_EQ(from_full.value(), n.value()) << c.input;
        EXPECT_EQ(from_display.value(), n.value()) << c.input;
    }
}

TEST(model_name, parts_and_hf_detection) {
    auto n = model_name::parse("hf.co/TheBloke/Some-Model-GGUF:Q8_0");
    ASSERT_TRUE(n.ok());
    EXPECT_TRUE(n->is_hf());
    EXPECT_EQ(n->host, "hf.co");
    EXPECT_EQ(n->ns, "TheBloke");
    EXPECT_EQ(n->model, "Some-Model-GGUF");
    EXPECT_EQ(n->tag, "Q8_0");

    auto local = model_name::parse("demo");
    ASSERT_TRUE(local.ok());
    EXPECT_FALSE(local->is_hf());
    EXPECT_EQ(local->host, "local");
    EXPECT_EQ(local->ns, "library");
    EXPECT_EQ(local->tag, "latest");
}

TEST(model_name, manifest_path_stays_under_root) {
    auto n = model_name::parse("hf.co/owner/repo:Q4_K_M");
    ASSERT_TRUE(n.ok());
    EXPECT_EQ(n->manifest_path("/store"), std::filesystem::path("/store/manifests/hf.co/owner/repo/Q4_K_M"));
    auto l = model_name::parse("demo");
    EXPECT_EQ(l->manifest_path("/store"), std::filesystem::path("/store/manifests/local/library/demo/latest"));
}

struct invalid_case {
    std::string input;
    std::string problem;  // must appear in the message
};

TEST(model_name, traversal_and_malformed_names_are_refused_with_the_problem_named) {
    const std::vector<invalid_case> cases = {
        {"", "empty"},
        {"..", "'..'"},
        {"../x", "'..'"},
        {"a/../../b", "'..'"},
        {"x:../../y", "'..'"},
        {"x:..", "'..'"},
        {"a..b", "'..'"},
        {"hf.co/owner/..", "'..'"},
        {"/etc/passwd", "absolute path"},
        {"a\\b", "backslash"},
        {"..\\..\\windows", "backslash"},
        {"a%2f..", "'%'"},
        {"%2e%2e/x", "'%'"},
        {std::string(400, 'a'), "longer than 350"},
        {std::string(129, 'a'), "longer than 128"},
        {"ns/" + std::string(200, 'b') + ":t", "longer than 128"},
        {"mod\xc3\xa8le", "non-ASCII"},
        {"\xe2\x80\xae" "evil", "non-ASCII"},
        {"a b", "space"},
        {std::string("a\0b", 3), "NUL"},
        {"a\nb", "control character"},
        {"a/b/c/d", "more than 3"},
        {"a//b", "empty path component"},
        {"a/", "empty path component"},
        {"model:", "tag after ':' is empty"},
        {".hidden", "must start with a letter or digit"},
        {"./x", "must start with a letter or digit"},
        {"x/.", "must start with a letter or digit"},
        {"-x", "must start with a letter or digit"},
        {"m:_t", "must start with a letter or digit"},
        {"m:v~1", "may contain only"},
        {"m@sha256", "may contain only"},
        {"a:b:c", "':' may only separate the tag"},
        {"host:8080/ns/m", "':' may only separate the tag"},
        {"hf.co/owner", "Hugging Face names"},
        {"hf.co/a/b/c", "Hugging Face names"},
        {"hf.co/", "empty"},
        {"locAl/huggingface.co/ate", "reserved for Hugging Face"},  // found by fuzz_model_name: shown as hf.co/...
        {"local/HF.co/m:t", "reserved for Hugging Face"},
        {"example.com/hf.co/m", "reserved for Hugging Face"},
        {"http://example.com/a/b", "only https://huggingface.co/"},
        {"file:///etc/passwd", "only https://huggingface.co/"},
    };
    for (const auto & c : cases) {
        auto n = model_name::parse(c.input);
        ASSERT_FALSE(n.ok()) << "accepted: " << c.input;
        EXPECT_EQ(n.err().code, rc::errc::invalid_argument) << c.input;
        EXPECT_NE(n.err().message.find("invalid model name"), std::string::npos) << n.err().message;
        EXPECT_NE(n.err().message.find(c.problem), std::string::npos) << "input: " << c.input << "\nmessage: " << n.err().message;
    }
}

TEST(model_name, error_messages_are_bounded_and_printable) {
    auto n = model_name::parse(std::string(1000, 'x') + "\x01");
    ASSERT_FALSE(n.ok());
    EXPECT_LT(n.err().message.size(), 200u);
    auto ctl = model_name::parse("a\x01" "b");
    ASSERT_FALSE(ctl.ok());
    EXPECT_NE(ctl.err().message.find("\\x01"), std::string::npos) << ctl.err().message;
}

// The one rule of served-name equivalence (the server's catalog, the fleet and the gateway use it).
TEST(model_name, served_names_equal_up_to_latest_and_gguf) {
    EXPECT_EQ(short_model_name("demo:latest"), "demo");
    EXPECT_EQ(short_model_name("demo.gguf"), "demo");
    EXPECT_EQ(short_model_name("demo.gguf:latest"), "demo");
    EXPECT_EQ(short_model_name("hf.co/o/r:Q4_K_M"), "hf.co/o/r:Q4_K_M");
    EXPECT_EQ(short_model_name(":latest"), ":latest") << "a name that is only the suffix keeps it";
    EXPECT_TRUE(same_model_name("demo", "demo:latest"));
    EXPECT_TRUE(same_model_name("demo.gguf", "demo:latest"));
    EXPECT_FALSE(same_model_name("demo", "demo:v2"));
    EXPECT_FALSE(same_model_name("demo", "demo2"));
}

}  // namespace

