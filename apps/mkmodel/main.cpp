// rustycage-mkmodel: writes small (or 1B-shaped) GGUF models with seeded random weights for tests
// and benchmarks. See README.md.
#include "mkmodel_args.h"
#include "mkmodel_presets.h"
#include "mkmodel_writer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <thread>

#ifndef RC_MKMODEL_LLAMA_SRC
#define RC_MKMODEL_LLAMA_SRC ""
#endif

namespace {

using namespace rc::mkmodel;

constexpr int k_exit_failure = 1;
constexpr int k_exit_usage = 2;

void print_presets() {
    for (const preset & p : all_presets()) {
        std::cout << p.name << "\t" << p.summary << "\n";
    }
}

// --llama-src, else $RUSTYCAGE_LLAMA_SRC, else the tree the build used.
std::string resolve_llama_src(const options & opt) {
    if (opt.llama_src) {
        return *opt.llama_src;
    }
    if (const char * env = std::getenv("RUSTYCAGE_LLAMA_SRC"); env != nullptr && *env != '\0') {
        return env;
    }
    return RC_MKMODEL_LLAMA_SRC;
}

int run(const options & opt) {
    const preset * p = find_preset(opt.preset);
    if (p == nullptr) {
        std::cerr << "rustycage-mkmodel: error: unknown preset '" << opt.preset << "'; known presets:";
        for (const preset & known : all_presets()) {
            std::cerr << " " << known.name;
        }
        std::cerr << "\n";
        return k_exit_usage;
    }

    const preset model = opt.matrix_type ? with_matrix_type(*p, *opt.matrix_type) : *p;
    model_request req;
    req.model = &model;
    req.seed = opt.seed;
    req.name = opt.name.value_or(std::string(p->name));
    req.llama_src = resolve_llama_src(opt);
    req.out = opt.out;
    req.n_threads = opt.n_threads != 0 ? opt.n_threads : std::max(1u, std::thread::hardware_concurrency());

    const auto start = std::chrono::steady_clock::now();
    const auto written = write_model(req);
    if (!written.ok()) {
        std::cerr << "rustycage-mkmodel: error: " << written.err().message << "\n";
        return k_exit_failure;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const model_report & r = written.value();
    std::printf("wrote out=%s preset=%s type=%s seed=%llu tensors=%zu params=%lld bytes=%llu seconds=%.2f\n",
                opt.out.c_str(), std::string(p->name).c_str(), ggml_type_name(model.matrix_type),
                static_cast<unsigned long long>(opt.seed), r.n_tensors,
                static_cast<long long>(r.n_params), static_cast<unsigned long long>(r.file_bytes), seconds);
    return 0;
}

}  // namespace

int main(int argc, char ** argv) {
    const auto parsed = parse_args(argc, argv);
    if (!parsed.ok()) {
        std::cerr << "rustycage-mkmodel: error: " << parsed.err().message << "\n" << "try 'rustycage-mkmodel --help'\n";
        return k_exit_usage;
    }
    const options & opt = parsed.value();
    if (opt.help) {
        std::cout << usage_text();
        return 0;
    }
    if (opt.list) {
        print_presets();
        return 0;
    }
    try {
        return run(opt);
    } catch (const std::exception & e) {
        // Only allocation failures and the like reach here; everything expected is a result value.
        std::cerr << "rustycage-mkmodel: error: " << e.what() << "\n";
        return k_exit_failure;
    }
}
