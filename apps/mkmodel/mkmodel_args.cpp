#include "mkmodel_args.h"

#include <charconv>
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
    const std::vector<std::string_view> args(argv + 1, argv + argc);
    for (size_t i = 0; i < args.size(); ++i) {
        std::string_view flag = args[i];
        std::optional<std::string_view> inline_value;
        if (const size_t eq = flag.find('='); flag.starts_with("--") && eq != std::string_view::npos) {
            inline_value = flag.substr(eq + 1);
            flag = flag.substr(0, eq);
        }
        auto value = [&]() -> std::optional<std::string_view> {
            if (inline_value) {
                return inline_value;
            }
            if (i + 1 < args.size()) {
                return args[++i];
            }
            return std::nullopt;
        };
        auto missing = [&] { return error{"option " + std::string(flag) + " needs a value"}; };

        if (flag == "--help" || flag == "-h") {
            opt.help = true;
        } else if (flag == "--list") {
            opt.list = true;
        } else if (flag == "--preset") {
            const auto v = value();
            if (!v) return missing();
            opt.preset = *v;
        } else if (flag == "--out") {
            const auto v = value();
            if (!v) return missing();
            opt.out = *v;
        } else if (flag == "--seed") {
            const auto v = value();
            if (!v) return missing();
            const auto seed = parse_unsigned<uint64_t>(*v);
            if (!seed) return error{"--seed wants an unsigned 64-bit integer, got '" + std::string(*v) + "'"};
            opt.seed = *seed;
        } else if (flag == "--type") {
            const auto v = value();
            if (!v) return missing();
            const matrix_type_choice * choice = find_matrix_type(*v);
            if (choice == nullptr) return error{"--type wants one of " + matrix_type_names() + ", got '" + std::string(*v) + "'"};
            opt.matrix_type = *choice;
        } else if (flag == "--name") {
            const auto v = value();
            if (!v) return missing();
            if (v->empty()) return error{"--name must not be empty"};
            opt.name = std::string(*v);
        } else if (flag == "--llama-src") {
            const auto v = value();
            if (!v) return missing();
            opt.llama_src = std::string(*v);
        } else if (flag == "--threads") {
            const auto v = value();
            if (!v) return missing();
            const auto n = parse_unsigned<unsigned>(*v);
            if (!n || *n == 0 || *n > 1024) return error{"--threads wants a count from 1 to 1024, got '" + std::string(*v) + "'"};
            opt.n_threads = *n;
        } else {
            return error{"unknown option '" + std::string(args[i]) + "'"};
        }
    }
    if (!opt.help && !opt.list) {
        if (opt.preset.empty()) return error{"--preset is required (see --list)"};
        if (opt.out.empty()) return error{"--out is required"};
    }
    return opt;
}

}  // namespace rc::mkmodel
