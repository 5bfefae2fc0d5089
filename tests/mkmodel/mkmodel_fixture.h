#pragma once
// The mkmodel tests' fixture: runs the built rustycage-mkmodel into a temp dir, reads what it wrote
// (tensor directory, F32 values) and loads and decodes it with llama.cpp.
#include <gguf.h>
#include <gtest/gtest.h>
#include <llama.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "support/process.h"
#include "support/temp_dir.h"


namespace rc::test::mkmodel_fixture {


namespace fs = std::filesystem;
using rc::test::spawn;
using rc::test::spawn_options;
using rc::test::temp_dir;
using rc::test::wait_exit;

struct run_result {
    int exit_code = -1;
    std::string out;
    std::string err;
};

inline std::string read_file(const fs::path & path) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    std::string bytes(in ? static_cast<size_t>(in.tellg()) : 0, '\0');
    in.seekg(0);
    in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return bytes;
}

struct model_deleter {
    void operator()(llama_model * m) const { llama_model_free(m); }
};
using model_ptr = std::unique_ptr<llama_model, model_deleter>;

struct context_deleter {
    void operator()(llama_context * c) const { llama_free(c); }
};
using context_ptr = std::unique_ptr<llama_context, context_deleter>;

struct gguf_deleter {
    void operator()(gguf_context * c) const { gguf_free(c); }
};
using gguf_file_ptr = std::unique_ptr<gguf_context, gguf_deleter>;

struct tensor_entry {
    std::string name;
    ggml_type type = GGML_TYPE_F32;
    bool operator==(const tensor_entry &) const = default;
};

// The tensor directory of a GGUF file, in file order, read with gguf alone (no llama.cpp loader).
inline std::vector<tensor_entry> tensor_directory(const fs::path & path) {
    const gguf_init_params params{/*.no_alloc =*/true, /*.ctx =*/nullptr};
    const gguf_file_ptr ctx(gguf_init_from_file(path.c_str(), params));
    std::vector<tensor_entry> out;
    if (!ctx) {
        ADD_FAILURE() << "cannot read " << path << " as GGUF";
        return out;
    }
    for (int64_t i = 0; i < gguf_get_n_tensors(ctx.get()); ++i) {
        out.push_back({gguf_get_tensor_name(ctx.get(), i), gguf_get_tensor_type(ctx.get(), i)});
    }
    return out;
}

// The values of F32 tensor `name` of a GGUF file (empty, with a failure, when absent or not F32).
inline std::vector<float> f32_tensor_values(const fs::path & path, const char * name) {
    ggml_context * data = nullptr;
    const gguf_init_params params{/*.no_alloc =*/false, /*.ctx =*/&data};
    const gguf_file_ptr ctx(gguf_init_from_file(path.c_str(), params));
    std::vector<float> out;
    if (!ctx || data == nullptr) {
        ADD_FAILURE() << "cannot read " << path << " as GGUF";
        return out;
    }
    const ggml_tensor * t = ggml_get_tensor(data, name);
    if (t == nullptr || t->type != GGML_TYPE_F32) {
        ADD_FAILURE() << name << " is missing or not F32";
    } else {
        const auto * v = static_cast<const float *>(t->data);
        out.assign(v, v + ggml_nelements(t));
    }
    ggml_free(data);
    return out;
}

inline std::vector<std::string> names_of(const std::vector<tensor_entry> & tensors) {
    std::vector<std::string> names;
    for (const tensor_entry & t : tensors) {
        names.push_back(t.name);
    }
    return names;
}

// Norm weights and biases (1-D), which --type must leave F32.
inline bool is_norm_or_bias(const std::string & name) {
    return name.ends_with(".bias") || name.find("norm") != std::string::npos;
}

constexpr const char * k_chat_prompt =
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "<|im_start|>user\nWrite a short poem about the sea.<|im_end|>\n<|im_start|>assistant\n";

// What greedy decoding of a chat model produced, up to an end-of-generation token or the cap.
struct greedy_run {
    std::vector<llama_token> tokens;  // without the end-of-generation token
    bool ended = false;               // stopped at an end-of-generation token
    std::vector<double> top_logprobs; // log-softmax of the chosen token, one per step
};

inline void quiet_log(ggml_log_level level, const char * text, void *) {
    if (level >= GGML_LOG_LEVEL_ERROR) {
        std::fputs(text, stderr);
    }
}

class mkmodel_test : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        llama_log_set(quiet_log, nullptr);
        llama_backend_init();
    }

    void SetUp() override {
        fs::create_directories(logs());
        fs::create_directories(outs());
    }

    fs::path logs() const { return dir_.path() / "logs"; }
    fs::path outs() const { return dir_.path() / "out"; }

    // Runs the tool without a shell; stdout and stderr are captured through files in logs().
    run_result run_tool(const std::vector<std::string> & args) {
        const fs::path out_log = logs() / ("stdout." + std::to_string(++runs_));
        const fs::path err_log = logs() / ("stderr." + std::to_string(runs_));
        std::vector<std::string> argv{RC_MKMODEL_BIN};
        argv.insert(argv.end(), args.begin(), args.end());
        spawn_options o;
        o.stdout_file = out_log.string();
        o.stderr_file = err_log.string();
        run_result r;
        const pid_t pid = spawn(argv, o);
        if (pid < 0) {
            ADD_FAILURE() << "cannot start " << RC_MKMODEL_BIN << ": " << std::strerror(errno);
            return r;
        }
        const int code = wait_exit(pid);
        if (code < 128) r.exit_code = code;
        r.out = read_file(out_log);
        r.err = read_file(err_log);
        return r;
    }

    // Generates preset with seed into out()/file; fails the test if the tool fails.
    fs::path generate(const std::string & preset, uint64_t seed, const std::string & file,
                      std::vector<std::string> extra = {}) {
        const fs::path path = outs() / file;
        std::vector<std::string> args{"--preset", preset, "--out", path.string(), "--seed", std::to_string(seed)};
        args.insert(args.end(), extra.begin(), extra.end());
        const run_result r = run_tool(args);
        EXPECT_EQ(r.exit_code, 0) << r.err;
        EXPECT_TRUE(fs::is_regular_file(path)) << path;
        return path;
    }

    std::vector<std::string> entries(const fs::path & dir) const {
        std::vector<std::string> names;
        for (const auto & e : fs::directory_iterator(dir)) {
            names.push_back(e.path().filename().string());
        }
        return names;
    }

    static model_ptr load(const fs::path & path) {
        llama_model_params params = llama_model_default_params();
        params.n_gpu_layers = 0;
        return model_ptr(llama_model_load_from_file(path.c_str(), params));
    }

    static std::string meta(const llama_model * model, const char * key) {
        char buf[256] = {};
        if (llama_model_meta_val_str(model, key, buf, sizeof(buf)) < 0) {
            return "<missing " + std::string(key) + ">";
        }
        return buf;
    }

    static std::vector<llama_token> tokenize(const llama_model * model, const std::string & text, bool add_special) {
        const llama_vocab * vocab = llama_model_get_vocab(model);
        std::vector<llama_token> tokens(text.size() + 8);
        const int n = llama_tokenize(vocab, text.c_str(), static_cast<int32_t>(text.size()), tokens.data(),
                                     static_cast<int32_t>(tokens.size()), add_special, /*parse_special=*/true);
        tokens.resize(n > 0 ? static_cast<size_t>(n) : 0);
        return tokens;
    }

    // Greedy decoding after prompt (one batch), up to max_tokens. Two threads, CPU only.
    static greedy_run greedy(llama_model * model, std::vector<llama_token> prompt, int max_tokens) {
        llama_context_params cparams = llama_context_default_params();
        cparams.n_ctx = 512;
        cparams.n_batch = 512;
        cparams.n_ubatch = 512;
        cparams.n_threads = 2;
        cparams.n_threads_batch = 2;
        const context_ptr ctx(llama_init_from_model(model, cparams));
        greedy_run run;
        if (!ctx) {
            ADD_FAILURE() << "cannot create a context";
            return run;
        }
        if (llama_decode(ctx.get(), llama_batch_get_one(prompt.data(), static_cast<int32_t>(prompt.size()))) != 0) {
            ADD_FAILURE() << "prompt decode failed";
            return run;
        }
        const llama_vocab * vocab = llama_model_get_vocab(model);
        const int n_vocab = llama_vocab_n_tokens(vocab);
        for (int step = 0; step < max_tokens; ++step) {
            const float * logits = llama_get_logits_ith(ctx.get(), -1);
            const int best = static_cast<int>(std::max_element(logits, logits + n_vocab) - logits);
            double sum = 0.0;
            for (int i = 0; i < n_vocab; ++i) {
                sum += std::exp(static_cast<double>(logits[i]) - logits[best]);
            }
            run.top_logprobs.push_back(-std::log(sum));
            if (llama_vocab_is_eog(vocab, best)) {
                run.ended = true;
                break;
            }
            llama_token next = best;
            run.tokens.push_back(next);
            if (llama_decode(ctx.get(), llama_batch_get_one(&next, 1)) != 0) {
                ADD_FAILURE() << "decode failed at step " << step;
                break;
            }
        }
        return run;
    }

private:
    temp_dir dir_{"mkmodel"};
    int runs_ = 0;
};

}  // namespace rc::test::mkmodel_fixture
