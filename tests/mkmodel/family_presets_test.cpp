// The architecture matrix's generator presets (issue 52): every family is written, loads in the
// pinned llama.cpp as the architecture it names, with the memory layout that makes it interesting
// (sliding windows, experts, latent attention, recurrent layers), its tokenizer and template, and
// decodes varied, finite greedy text.
#include "mkmodel_fixture.h"

namespace {

using namespace rc::test::mkmodel_fixture;

enum class memory { attention, recurrent, hybrid };

struct family {
    const char * preset;
    const char * arch;
    memory kind;
    int n_swa;          // 0: every layer attends to the whole context
    int n_expert;       // 0: dense
    int n_vocab;
    const char * template_marker;  // a string of the family's chat template
};

void PrintTo(const family & f, std::ostream * os) { *os << f.preset; }

const family k_families[] = {
    {"tiny-llama3", "llama", memory::attention, 0, 0, 128256, "<|start_header_id|>"},
    {"tiny-qwen3", "qwen3", memory::attention, 0, 0, 151936, "<think>"},
    {"tiny-gemma3", "gemma3", memory::attention, 128, 0, 262144, "<|turn>"},
    {"tiny-cohere2", "cohere2", memory::attention, 128, 0, 256000, "<|START_OF_TURN_TOKEN|>"},
    {"tiny-qwen3moe", "qwen3moe", memory::attention, 0, 8, 151936, "<think>"},
    {"tiny-gpt-oss", "gpt-oss", memory::attention, 128, 8, 128256, "<|channel|>"},
    {"tiny-deepseek2", "deepseek2", memory::attention, 0, 4, 102400, "<｜Assistant｜>"},
    {"tiny-qwen35", "qwen35", memory::hybrid, 0, 0, 151936, "<think>"},
    {"tiny-granite4", "granitehybrid", memory::hybrid, 0, 0, 128256, "<|start_of_role|>"},
    {"tiny-lfm2", "lfm2", memory::hybrid, 0, 0, 128256, "<|im_start|>"},
    {"tiny-mamba2", "mamba2", memory::recurrent, 0, 0, 50432, "<|im_start|>"},
    {"tiny-rwkv7", "rwkv7", memory::recurrent, 0, 0, 50432, "Assistant:"},
};

class family_preset_test : public mkmodel_test, public ::testing::WithParamInterface<family> {};

TEST_P(family_preset_test, loads_as_its_architecture_with_its_layout_and_decodes) {
    const family & f = GetParam();
    const fs::path path = generate(f.preset, 42, std::string(f.preset) + ".gguf");
    const model_ptr model = load(path);
    ASSERT_NE(model, nullptr) << "llama.cpp refused " << f.preset;
    EXPECT_EQ(meta(model.get(), "general.architecture"), f.arch);
    EXPECT_EQ(llama_model_n_layer(model.get()), 4);
    EXPECT_EQ(llama_model_n_embd(model.get()), 128);
    EXPECT_EQ(llama_model_is_recurrent(model.get()), f.kind == memory::recurrent);
    EXPECT_EQ(llama_model_is_hybrid(model.get()), f.kind == memory::hybrid);
    EXPECT_EQ(llama_model_n_swa(model.get()), f.n_swa);
    const std::string experts = meta(model.get(), (std::string(f.arch) + ".expert_count").c_str());
    EXPECT_EQ(experts, f.n_expert ? std::to_string(f.n_expert) : "<missing " + std::string(f.arch) + ".expert_count>");
    const llama_vocab * vocab = llama_model_get_vocab(model.get());
    EXPECT_EQ(llama_vocab_n_tokens(vocab), f.n_vocab);
    const char * tmpl = llama_model_chat_template(model.get(), nullptr);
    ASSERT_NE(tmpl, nullptr);
    EXPECT_NE(std::string(tmpl).find(f.template_marker), std::string::npos);

    // llama.cpp's loader offers optional tensors no real release of the family has; none of the
    // per-weight FP8 scales or RoPE frequency tables is written (random values there would silently
    // distort the model).
    for (const auto & name : names_of(tensor_directory(path))) {
        EXPECT_FALSE(name.ends_with(".scale") || name.ends_with(".input_scale") || name.find("rope_freqs") != std::string::npos) << name;
    }

    const auto prompt = tokenize(model.get(), "Hello! Write a short poem about the sea, please.", true);
    ASSERT_FALSE(prompt.empty());
    const greedy_run run = greedy(model.get(), prompt, 24);
    ASSERT_FALSE(run.tokens.empty());
    EXPECT_GE(std::set<llama_token>(run.tokens.begin(), run.tokens.end()).size(), run.tokens.size() / 2)
        << "greedy text collapses onto few tokens";
    for (const double lp : run.top_logprobs) {
        EXPECT_TRUE(std::isfinite(lp));
    }
}

INSTANTIATE_TEST_SUITE_P(families, family_preset_test, ::testing::ValuesIn(k_families),
                         [](const ::testing::TestParamInfo<family> & param) {
                             std::string name = param.param.preset;
                             std::replace(name.begin(), name.end(), '-', '_');
                             return name;
                         });

TEST_F(mkmodel_test, a_family_preset_is_byte_identical_per_seed_and_types_its_experts) {
    const fs::path a = generate("tiny-qwen3moe", 7, "a.gguf");
    const fs::path b = generate("tiny-qwen3moe", 7, "b.gguf");
    EXPECT_EQ(read_file(a), read_file(b));
    const fs::path q8 = generate("tiny-qwen3moe", 7, "q8.gguf", {"--type", "q8_0"});
    const model_ptr model = load(q8);
    ASSERT_NE(model, nullptr);
    for (const auto & t : tensor_directory(q8)) {
        if (t.name.find("_exps") != std::string::npos) {
            EXPECT_EQ(t.type, GGML_TYPE_Q8_0) << t.name;
        }
        if (t.name.find("ffn_gate_inp") != std::string::npos) {
            EXPECT_EQ(t.type, GGML_TYPE_F32) << t.name << ": the router stays F32";
        }
    }
}

}  // namespace
