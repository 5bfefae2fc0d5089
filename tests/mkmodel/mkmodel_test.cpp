// rustycage-mkmodel end to end: runs the real binary into a temp dir and checks the files it writes
// (determinism, metadata as llama.cpp reads it, that they run) and how it fails (clear message on
// stderr, non-zero exit, no partial file). bench-1b is too big to generate here.
#include "mkmodel_fixture.h"

namespace {

using namespace rc::test::mkmodel_fixture;

TEST_F(mkmodel_test, tiny_chat_is_byte_identical_per_seed) {
    const auto a = read_file(generate("tiny-chat", 7, "a.gguf"));
    const auto b = read_file(generate("tiny-chat", 7, "b.gguf"));
    const auto c = read_file(generate("tiny-chat", 8, "c.gguf"));
    ASSERT_GT(a.size(), 1000000u);
    EXPECT_TRUE(a == b) << "same preset and seed must give the same bytes";
    EXPECT_EQ(a.size(), c.size());
    EXPECT_FALSE(a == c) << "a different seed must give different weights";
}

TEST_F(mkmodel_test, tiny_embed_is_byte_identical_per_seed) {
    const auto a = read_file(generate("tiny-embed", 7, "a.gguf"));
    const auto b = read_file(generate("tiny-embed", 7, "b.gguf"));
    const auto c = read_file(generate("tiny-embed", 8, "c.gguf"));
    ASSERT_GT(a.size(), 1000000u);
    EXPECT_TRUE(a == b) << "same preset and seed must give the same bytes";
    EXPECT_FALSE(a == c) << "a different seed must give different weights";
}

TEST_F(mkmodel_test, tiny_mamba_is_byte_identical_per_seed) {
    const auto a = read_file(generate("tiny-mamba", 7, "a.gguf"));
    const auto b = read_file(generate("tiny-mamba", 7, "b.gguf"));
    const auto c = read_file(generate("tiny-mamba", 8, "c.gguf"));
    ASSERT_GT(a.size(), 1000000u);
    EXPECT_TRUE(a == b) << "same preset and seed must give the same bytes";
    EXPECT_EQ(a.size(), c.size());
    EXPECT_FALSE(a == c) << "a different seed must give different weights";
}

TEST_F(mkmodel_test, thread_count_does_not_change_the_bytes) {
    const auto one = read_file(generate("tiny-chat", 3, "one.gguf", {"--threads", "1"}));
    const auto three = read_file(generate("tiny-chat", 3, "three.gguf", {"--threads", "3"}));
    EXPECT_TRUE(one == three);
}

TEST_F(mkmodel_test, tiny_chat_loads_as_qwen2_with_a_chat_template_and_decodes) {
    const model_ptr model = load(generate("tiny-chat", 42, "tiny-chat.gguf"));
    ASSERT_NE(model, nullptr);
    EXPECT_EQ(meta(model.get(), "general.architecture"), "qwen2");
    EXPECT_EQ(meta(model.get(), "general.name"), "tiny-chat");
    EXPECT_EQ(meta(model.get(), "general.file_type"), std::to_string(LLAMA_FTYPE_MOSTLY_F16));
    EXPECT_EQ(llama_model_ftype(model.get()), LLAMA_FTYPE_MOSTLY_F16);
    EXPECT_EQ(llama_model_n_embd(model.get()), 128);
    EXPECT_EQ(llama_model_n_layer(model.get()), 4);
    EXPECT_EQ(llama_model_n_head(model.get()), 4);
    EXPECT_EQ(llama_model_n_head_kv(model.get()), 2);
    EXPECT_EQ(llama_model_n_ctx_train(model.get()), 32768);
    EXPECT_EQ(llama_vocab_n_tokens(llama_model_get_vocab(model.get())), 151936);

    const char * tmpl = llama_model_chat_template(model.get(), nullptr);
    ASSERT_NE(tmpl, nullptr);
    EXPECT_NE(std::string(tmpl).find("<|im_start|>"), std::string::npos);
    EXPECT_NE(std::string(tmpl).find("tools"), std::string::npos) << "the Qwen2.5 template supports tools";

    // A short prompt decodes to finite logits.
    llama_context_params cparams = llama_context_default_params();
    cparams.n_ctx = 256;
    cparams.n_threads = 2;
    const context_ptr ctx(llama_init_from_model(model.get(), cparams));
    ASSERT_NE(ctx, nullptr);
    std::vector<llama_token> prompt = tokenize(model.get(), "<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n", false);
    ASSERT_FALSE(prompt.empty());
    ASSERT_EQ(llama_decode(ctx.get(), llama_batch_get_one(prompt.data(), static_cast<int32_t>(prompt.size()))), 0);
    const float * logits = llama_get_logits_ith(ctx.get(), -1);
    ASSERT_NE(logits, nullptr);
    for (int i = 0; i < 151936; i += 997) {
        ASSERT_TRUE(std::isfinite(logits[i])) << "logit " << i;
    }
}

TEST_F(mkmodel_test, tiny_embed_loads_as_bert_and_embeds) {
    const model_ptr model = load(generate("tiny-embed", 42, "tiny-embed.gguf"));
    ASSERT_NE(model, nullptr);
    EXPECT_EQ(meta(model.get(), "general.architecture"), "bert");
    EXPECT_EQ(meta(model.get(), "general.name"), "tiny-embed");
    EXPECT_EQ(meta(model.get(), "general.file_type"), std::to_string(LLAMA_FTYPE_MOSTLY_F16));
    EXPECT_EQ(meta(model.get(), "bert.pooling_type"), "1");
    EXPECT_EQ(llama_model_n_embd(model.get()), 128);
    EXPECT_EQ(llama_model_n_layer(model.get()), 2);
    EXPECT_EQ(llama_vocab_n_tokens(llama_model_get_vocab(model.get())), 30522);
    EXPECT_EQ(llama_model_chat_template(model.get(), nullptr), nullptr) << "an embedding model has no chat template";

    llama_context_params cparams = llama_context_default_params();
    cparams.embeddings = true;
    cparams.n_ctx = 512;
    cparams.n_batch = 512;
    cparams.n_ubatch = 512;
    cparams.n_threads = 2;
    const context_ptr ctx(llama_init_from_model(model.get(), cparams));
    ASSERT_NE(ctx, nullptr);
    EXPECT_EQ(llama_pooling_type(ctx.get()), LLAMA_POOLING_TYPE_MEAN);

    std::vector<llama_token> tokens = tokenize(model.get(), "hello world", true);
    ASSERT_GE(tokens.size(), 3u);  // [CLS] hello world [SEP]
    ASSERT_EQ(llama_encode(ctx.get(), llama_batch_get_one(tokens.data(), static_cast<int32_t>(tokens.size()))), 0);
    const float * embd = llama_get_embeddings_seq(ctx.get(), 0);
    ASSERT_NE(embd, nullptr);
    ASSERT_EQ(llama_model_n_embd_out(model.get()), 128);
    double norm = 0.0;
    for (int i = 0; i < 128; ++i) {
        ASSERT_TRUE(std::isfinite(embd[i])) << "component " << i;
        norm += embd[i] * embd[i];
    }
    EXPECT_GT(norm, 0.0);
}

TEST_F(mkmodel_test, bench_tiny_has_bench_1b_tokenizer_on_a_small_body_and_decodes) {
    const model_ptr model = load(generate("bench-tiny", 42, "bench-tiny.gguf"));
    ASSERT_NE(model, nullptr);
    EXPECT_EQ(meta(model.get(), "general.architecture"), "llama");
    EXPECT_EQ(llama_model_ftype(model.get()), LLAMA_FTYPE_MOSTLY_Q8_0);
    EXPECT_EQ(llama_model_n_layer(model.get()), 2);
    EXPECT_EQ(llama_vocab_n_tokens(llama_model_get_vocab(model.get())), 32000);  // bench-1b's vocabulary

    llama_context_params cparams = llama_context_default_params();
    cparams.n_ctx = 256;
    cparams.n_threads = 1;
    const context_ptr ctx(llama_init_from_model(model.get(), cparams));
    ASSERT_NE(ctx, nullptr);
    std::vector<llama_token> prompt = tokenize(model.get(), "[INST] hello [/INST]", true);
    ASSERT_EQ(llama_decode(ctx.get(), llama_batch_get_one(prompt.data(), static_cast<int32_t>(prompt.size()))), 0);
    const float * logits = llama_get_logits_ith(ctx.get(), -1);
    ASSERT_NE(logits, nullptr);
    for (int i = 0; i < 32000; ++i) ASSERT_TRUE(std::isfinite(logits[i])) << i;
}

TEST_F(mkmodel_test, name_flag_sets_general_name) {
    const model_ptr model = load(generate("tiny-embed", 1, "named.gguf", {"--name", "my-embedder"}));
    ASSERT_NE(model, nullptr);
    EXPECT_EQ(meta(model.get(), "general.name"), "my-embedder");
}

TEST_F(mkmodel_test, list_names_every_preset) {
    const run_result r = run_tool({"--list"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    for (const char * name : {"tiny-chat", "tiny-embed", "tiny-mamba", "bench-1b", "bench-135m", "bench-tiny"}) {
        EXPECT_NE(r.out.find(name), std::string::npos) << name;
    }
}

TEST_F(mkmodel_test, unknown_preset_fails_clearly_and_writes_nothing) {
    const fs::path out = outs() / "nope.gguf";
    const run_result r = run_tool({"--preset", "no-such-model", "--out", out.string()});
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("unknown preset 'no-such-model'"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("tiny-chat"), std::string::npos) << "the message lists the known presets: " << r.err;
    EXPECT_TRUE(entries(outs()).empty());
}

TEST_F(mkmodel_test, unwritable_out_fails_clearly_and_leaves_no_file) {
    const fs::path missing_dir = outs() / "missing" / "model.gguf";
    run_result r = run_tool({"--preset", "tiny-embed", "--out", missing_dir.string()});
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find(missing_dir.string()), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(missing_dir));

    fs::create_directory(outs() / "a-directory");
    r = run_tool({"--preset", "tiny-embed", "--out", (outs() / "a-directory").string()});
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("is a directory"), std::string::npos) << r.err;
    EXPECT_EQ(entries(outs()), std::vector<std::string>{"a-directory"}) << "no partial or temporary file";
    EXPECT_TRUE(fs::is_empty(outs() / "a-directory"));
}

TEST_F(mkmodel_test, failed_write_midway_leaves_no_file) {
    // A 16 MiB file-size limit (inherited by the child; SIGXFSZ ignored so write() fails with EFBIG
    // instead of killing it) makes the tool fail in the middle of the tensor data.
    rlimit saved{};
    ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
    rlimit limited = saved;
    limited.rlim_cur = 16 << 20;  // past the ~6 MB header, inside token_embd (~39 MB)
    const auto saved_handler = std::signal(SIGXFSZ, SIG_IGN);
    ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &limited), 0);
    const fs::path out = outs() / "model.gguf";
    const run_result r = run_tool({"--preset", "tiny-chat", "--out", out.string()});
    setrlimit(RLIMIT_FSIZE, &saved);
    std::signal(SIGXFSZ, saved_handler);

    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find(out.string()), std::string::npos) << r.err;
    EXPECT_TRUE(entries(outs()).empty()) << "neither the model nor its temporary file may remain";
}

TEST_F(mkmodel_test, missing_llama_tree_fails_clearly_and_leaves_no_file) {
    const fs::path out = outs() / "model.gguf";
    const run_result r = run_tool({"--preset", "tiny-chat", "--out", out.string(), "--llama-src",
                                   (outs() / "no-tree").string()});
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("ggml-vocab-qwen2.gguf"), std::string::npos) << r.err;
    EXPECT_TRUE(entries(outs()).empty());
}

TEST_F(mkmodel_test, tiny_chat_has_an_untied_output_head) {
    const auto tensors = tensor_directory(generate("tiny-chat", 42, "tiny-chat.gguf"));
    ASSERT_FALSE(tensors.empty());
    EXPECT_EQ(tensors.front(), (tensor_entry{"token_embd.weight", GGML_TYPE_F16}));
    EXPECT_EQ(tensors.back(), (tensor_entry{"output.weight", GGML_TYPE_F16}))
        << "a separate lm head (std 0.5) keeps the logits from being flat";
}

// The point of the tiny-chat scales: greedy decoding is long, varied, and its choices are not
// near-ties over a flat distribution (which would flip under tiny numeric differences).
TEST_F(mkmodel_test, tiny_chat_greedy_output_is_long_varied_and_peaked) {
    const model_ptr model = load(generate("tiny-chat", 42, "tiny-chat.gguf"));
    ASSERT_NE(model, nullptr);
    const auto prompt = tokenize(model.get(), k_chat_prompt, false);
    ASSERT_FALSE(prompt.empty());
    const greedy_run run = greedy(model.get(), prompt, 32);
    EXPECT_FALSE(run.ended) << "ended after " << run.tokens.size() << " tokens";
    ASSERT_EQ(run.tokens.size(), 32u);
    EXPECT_GE(std::set<llama_token>(run.tokens.begin(), run.tokens.end()).size(), 24u);
    double mean = 0.0;
    for (const double lp : run.top_logprobs) {
        mean += lp / static_cast<double>(run.top_logprobs.size());
    }
    EXPECT_GT(mean, -4.0) << "flat logits: a uniform choice over 151936 tokens is -11.9";
}

// A recurrent model: llama.cpp must take it as mamba (per-sequence state, no KV cache), its prompt
// must decode to finite logits and greedy decoding must be varied, like tiny-chat's.
TEST_F(mkmodel_test, tiny_mamba_loads_as_a_recurrent_mamba_and_generates) {
    const fs::path path = generate("tiny-mamba", 42, "tiny-mamba.gguf");
    const model_ptr model = load(path);
    ASSERT_NE(model, nullptr);
    EXPECT_EQ(meta(model.get(), "general.architecture"), "mamba");
    EXPECT_EQ(meta(model.get(), "general.name"), "tiny-mamba");
    EXPECT_EQ(llama_model_ftype(model.get()), LLAMA_FTYPE_MOSTLY_F16);
    EXPECT_TRUE(llama_model_is_recurrent(model.get()));
    EXPECT_FALSE(llama_model_is_hybrid(model.get()));
    EXPECT_EQ(llama_model_n_embd(model.get()), 128);
    EXPECT_EQ(llama_model_n_layer(model.get()), 4);
    EXPECT_EQ(meta(model.get(), "mamba.ssm.conv_kernel"), "4");
    EXPECT_EQ(meta(model.get(), "mamba.ssm.inner_size"), "256");
    EXPECT_EQ(meta(model.get(), "mamba.ssm.state_size"), "16");
    EXPECT_EQ(meta(model.get(), "mamba.ssm.time_step_rank"), "8");
    EXPECT_EQ(meta(model.get(), "mamba.ssm.dt_b_c_rms"), "false");
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model.get()));
    EXPECT_EQ(n_vocab, 50432) << "GPT-NeoX vocabulary, as Mamba checkpoints use";
    EXPECT_EQ(meta(model.get(), "tokenizer.ggml.pre"), "mpt") << "as convert_hf_to_gguf.py writes for Mamba";
    const char * tmpl = llama_model_chat_template(model.get(), nullptr);
    ASSERT_NE(tmpl, nullptr);
    EXPECT_NE(std::string(tmpl).find("<|im_start|>"), std::string::npos);

    // Sane SSM parameters: A = -exp(A_log) is negative (else the state grows without bound), D = 1.
    const std::vector<float> a = f32_tensor_values(path, "blk.0.ssm_a");
    ASSERT_EQ(a.size(), 16u * 256u);
    EXPECT_EQ(a.front(), -1.0f);
    EXPECT_EQ(a[15], -16.0f);
    EXPECT_TRUE(std::all_of(a.begin(), a.end(), [](float x) { return x < 0.0f; }));
    const std::vector<float> d = f32_tensor_values(path, "blk.3.ssm_d");
    EXPECT_TRUE(!d.empty() && std::all_of(d.begin(), d.end(), [](float x) { return x == 1.0f; }));
    const std::vector<float> dt_bias = f32_tensor_values(path, "blk.1.ssm_dt.bias");
    ASSERT_EQ(dt_bias.size(), 256u);
    for (const float b : dt_bias) {
        const double dt = std::log1p(std::exp(static_cast<double>(b)));  // softplus
        EXPECT_TRUE(dt > 1e-5 && dt < 0.5) << "softplus(dt bias) = " << dt;
    }

    // The whole prompt in one batch: every logit finite.
    {
        llama_context_params cparams = llama_context_default_params();
        cparams.n_ctx = 256;
        cparams.n_threads = 2;
        const context_ptr ctx(llama_init_from_model(model.get(), cparams));
        ASSERT_NE(ctx, nullptr);
        std::vector<llama_token> prompt = tokenize(model.get(), "<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n", false);
        ASSERT_FALSE(prompt.empty());
        ASSERT_EQ(llama_decode(ctx.get(), llama_batch_get_one(prompt.data(), static_cast<int32_t>(prompt.size()))), 0);
        const float * logits = llama_get_logits_ith(ctx.get(), -1);
        ASSERT_NE(logits, nullptr);
        for (int i = 0; i < n_vocab; ++i) {
            ASSERT_TRUE(std::isfinite(logits[i])) << "logit " << i;
        }
    }

    const auto prompt = tokenize(model.get(), k_chat_prompt, false);
    ASSERT_FALSE(prompt.empty());
    const greedy_run run = greedy(model.get(), prompt, 32);
    EXPECT_FALSE(run.ended) << "ended after " << run.tokens.size() << " tokens";
    ASSERT_EQ(run.tokens.size(), 32u);
    EXPECT_GE(std::set<llama_token>(run.tokens.begin(), run.tokens.end()).size(), 24u);
    double mean = 0.0;
    for (const double lp : run.top_logprobs) {
        mean += lp / static_cast<double>(run.top_logprobs.size());
    }
    EXPECT_GT(mean, -4.0) << "flat logits: a uniform choice over 50432 tokens is -10.8";
}

// conv1d, A and D stay F32 whatever --type says; ssm_dt.weight (rows of dt_rank = 8) cannot be
// Q8_0 and falls back to F16, as in llama-quantize.
TEST_F(mkmodel_test, tiny_mamba_type_q8_0_keeps_ssm_tensors_loadable) {
    const fs::path path = generate("tiny-mamba", 42, "tiny-mamba-q8_0.gguf", {"--type", "q8_0"});
    for (const tensor_entry & t : tensor_directory(path)) {
        const bool f32 = is_norm_or_bias(t.name) || t.name.find("ssm_conv1d") != std::string::npos ||
                         t.name.ends_with("ssm_a") || t.name.ends_with("ssm_d");
        const ggml_type want = f32 ? GGML_TYPE_F32 : t.name.ends_with("ssm_dt.weight") ? GGML_TYPE_F16 : GGML_TYPE_Q8_0;
        EXPECT_EQ(t.type, want) << t.name;
    }
    const model_ptr model = load(path);
    ASSERT_NE(model, nullptr);
    EXPECT_EQ(llama_model_ftype(model.get()), LLAMA_FTYPE_MOSTLY_Q8_0);
    const greedy_run run = greedy(model.get(), tokenize(model.get(), k_chat_prompt, false), 8);
    EXPECT_EQ(run.tokens.size(), 8u);
}

TEST_F(mkmodel_test, type_f32_writes_an_all_f32_model) {
    const fs::path path = generate("tiny-chat", 42, "tiny-chat-f32.gguf", {"--type", "f32"});
    for (const tensor_entry & t : tensor_directory(path)) {
        EXPECT_EQ(t.type, GGML_TYPE_F32) << t.name;
    }
    const model_ptr model = load(path);
    ASSERT_NE(model, nullptr);
    EXPECT_EQ(meta(model.get(), "general.file_type"), std::to_string(LLAMA_FTYPE_ALL_F32));
    EXPECT_EQ(meta(model.get(), "general.quantization_version"), "<missing general.quantization_version>");
    EXPECT_EQ(llama_model_ftype(model.get()), LLAMA_FTYPE_ALL_F32);
    char desc[128] = {};
    llama_model_desc(model.get(), desc, sizeof(desc));
    EXPECT_NE(std::string(desc).find("F32"), std::string::npos) << desc;
}

TEST_F(mkmodel_test, type_q8_0_writes_a_mostly_q8_0_model) {
    const fs::path path = generate("tiny-chat", 42, "tiny-chat-q8_0.gguf", {"--type=q8_0"});
    for (const tensor_entry & t : tensor_directory(path)) {
        EXPECT_EQ(t.type, is_norm_or_bias(t.name) ? GGML_TYPE_F32 : GGML_TYPE_Q8_0) << t.name;
    }
    const model_ptr model = load(path);
    ASSERT_NE(model, nullptr);
    EXPECT_EQ(meta(model.get(), "general.file_type"), std::to_string(LLAMA_FTYPE_MOSTLY_Q8_0));
    EXPECT_EQ(meta(model.get(), "general.quantization_version"), std::to_string(GGML_QNT_VERSION));
    EXPECT_EQ(llama_model_ftype(model.get()), LLAMA_FTYPE_MOSTLY_Q8_0);
}

TEST_F(mkmodel_test, type_changes_the_bytes_but_not_the_tensor_names) {
    const fs::path preset_default = generate("tiny-chat", 5, "default.gguf");
    const fs::path f16 = generate("tiny-chat", 5, "f16.gguf", {"--type", "f16"});
    const fs::path f32 = generate("tiny-chat", 5, "f32.gguf", {"--type", "f32"});
    const fs::path q8_0 = generate("tiny-chat", 5, "q8_0.gguf", {"--type", "q8_0"});
    EXPECT_TRUE(read_file(preset_default) == read_file(f16)) << "f16 is tiny-chat's own type";
    EXPECT_FALSE(read_file(f16) == read_file(f32));
    EXPECT_FALSE(read_file(f16) == read_file(q8_0));
    EXPECT_FALSE(read_file(f32) == read_file(q8_0));
    const auto names = names_of(tensor_directory(f16));
    EXPECT_EQ(names.size(), 51u);
    EXPECT_EQ(names_of(tensor_directory(f32)), names);
    EXPECT_EQ(names_of(tensor_directory(q8_0)), names);
}

TEST_F(mkmodel_test, bad_type_fails_clearly_and_writes_nothing) {
    const fs::path out = outs() / "model.gguf";
    for (const char * bad : {"bf16", "F32", "q4_0", ""}) {
        const run_result r = run_tool({"--preset", "tiny-chat", "--out", out.string(), "--type=" + std::string(bad)});
        EXPECT_EQ(r.exit_code, 2) << bad;
        EXPECT_NE(r.err.find("rustycage-mkmodel: error: --type wants one of f32|f16|q8_0, got '" + std::string(bad) + "'"),
                  std::string::npos)
            << r.err;
    }
    const run_result missing = run_tool({"--preset", "tiny-chat", "--out", out.string(), "--type"});
    EXPECT_EQ(missing.exit_code, 2);
    EXPECT_NE(missing.err.find("--type needs a value"), std::string::npos) << missing.err;
    EXPECT_TRUE(entries(outs()).empty());
}

TEST_F(mkmodel_test, bad_usage_exits_non_zero) {
    EXPECT_NE(run_tool({"--preset", "tiny-chat"}).exit_code, 0) << "--out is required";
    EXPECT_NE(run_tool({"--preset", "tiny-chat", "--out", (outs() / "x.gguf").string(), "--seed", "-1"}).exit_code, 0);
    EXPECT_NE(run_tool({"--frobnicate"}).exit_code, 0);
    EXPECT_TRUE(entries(outs()).empty());
}

}  // namespace
