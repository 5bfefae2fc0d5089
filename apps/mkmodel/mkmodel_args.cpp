#include "mkmodel_args.h"

#include <CLI/CLI.hpp>

#include <charconv>
#include <regex>
#include <string_view>
#include <vector>

namespace rc::mkmodel {
namespace {

template <class T>
std::optional<T> parse_unsigned(std::string_view text) {
    T value{};
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || text.empty()) {
        return std::nullopt;
    }
    return value;
}

// "f32|f16|q8_0", from the table so usage and errors never drift from what is accepted.
std::string matrix_type_names() {
    std::string names;
    for (const matrix_type_choice & c : all_matrix_types()) {
        names += (names.empty() ? "" : "|") + std::string(c.name);
    }
    return names;
}

// CLI11's words for a flag without its value ("--type: 1 required TEXT missing") said plainly.
std::string plain(const CLI::ParseError & e) {
    static const std::regex missing(R"(^(-[-\w]+): \d+ required \S+ missing$)");
    std::smatch m;
    const std::string what = e.what();
    if (std::regex_match(what, m, missing)) return "option " + m[1].str() + " needs a value";
    return what;
}

}  // namespace

std::string usage_text() {
    return "usage: rustycage-mkmodel --preset NAME --out FILE [--seed N] [--type " + matrix_type_names() +
           "] [--name NAME]\n"
           "                         [--llama-src DIR] [--threads N]\n"
           "       rustycage-mkmodel --list | --help\n"
           "\n"
           "Writes a GGUF model with seeded random weights and a real tokenizer and chat template taken\n"
           "from the pinned llama.cpp tree. Same preset, seed and type give a byte-identical file.\n"
           "\n"
           "  --preset NAME     model to generate (see --list)\n"
           "  --out FILE        output path; written to FILE.tmp-PID and renamed when complete\n"
           "  --seed N          random seed (default " + std::to_string(k_default_seed) + ")\n"
           "  --type TYPE       matrix weight type, " + matrix_type_names() + " (default: the preset's own);\n"
           "                    general.file_type follows it, norms and biases stay f32\n"
           "  --name NAME       general.name (default: the preset name)\n"
           "  --llama-src DIR   llama.cpp source tree with models/ggml-vocab-*.gguf and models/templates/\n"
           "                    (default: $RUSTYCAGE_LLAMA_SRC, else the tree this binary was built with)\n"
           "  --threads N       worker threads (default: all hardware threads); does not change the output\n"
           "  --list            list the presets\n"
           "  --help            this text\n";
}

result<options> parse_args(int argc, const char * const * argv) {
    options opt;
    // CLI11 reads the command line ("--flag value" and "--flag=value"); the values' meaning is
    // checked below, with messages that say what is accepted.
    CLI::App app{"rustycage-mkmodel"};
    app.set_help_flag();  // --help prints usage_text(), not CLI11's page
    app.add_flag("-h,--help", opt.help);
    app.add_flag("--list", opt.list);
    app.add_option("--preset", opt.preset);
    app.add_option("--out", opt.out);
    std::string seed, type, name, llama_src, threads;
    auto * seed_opt = app.add_option("--seed", seed);
    auto * type_opt = app.add_option("--type", type);
    auto * name_opt = app.add_option("--name", name);
    auto * src_opt = app.add_option("--llama-src", llama_src);
    auto * threads_opt = app.add_option("--threads", threads);
    // CLI11 reads "--type=" as a flag without its value; here it is the (refused) empty value.
    std::vector<std::string> args;
    for (int i = argc - 1; i > 0; --i) {  // CLI11 takes the arguments in reverse order
        std::string a = argv[i];
        if (a.size() > 3 && a.starts_with("--") && a.back() == '=') {
            args.emplace_back();
            a.pop_back();
        }
        args.push_back(std::move(a));
    }
    try {
        app.parse(args);
    } catch (const CLI::ParseError & e) {
        return make_error(errc::invalid_argument, plain(e));
    }

    if (seed_opt->count() > 0) {
        const auto v = parse_unsigned<uint64_t>(seed);
        if (!v) return make_error(errc::invalid_argument, "--seed wants an unsigned 64-bit integer, got '" + seed + "'");
        opt.seed = *v;
    }
    if (type_opt->count() > 0) {
        const matrix_type_choice * choice = find_matrix_type(type);
        if (choice == nullptr) return make_error(errc::invalid_argument, "--type wants one of " + matrix_type_names() + ", got '" + type + "'");
        opt.matrix_type = *choice;
    }
    if (name_opt->count() > 0) {
        if (name.empty()) return make_error(errc::invalid_argument, "--name must not be empty");
        opt.name = name;
    }
    if (src_opt->count() > 0) opt.llama_src = llama_src;
    if (threads_opt->count() > 0) {
        const auto n = parse_unsigned<unsigned>(threads);
        if (!n || *n == 0 || *n > 1024) return make_error(errc::invalid_argument, "--threads wants a count from 1 to 1024, got '" + threads + "'");
        opt.n_threads = *n;
    }
    if (!opt.help && !opt.list) {
        if (opt.preset.empty()) return make_error(errc::invalid_argument, "--preset is required (see --list)");
        if (opt.out.empty()) return make_error(errc::invalid_argument, "--out is required");
    }
    return opt;
}

}  // namespace rc::mkmodel
