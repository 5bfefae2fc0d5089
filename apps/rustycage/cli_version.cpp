// `rustycage version [--json]`: what this binary is (version, commits, backend, compiler, build date)
// and what it finds on this host (the ggml devices and the features of the backends it loaded — for
// a release build, which CPU variant ggml picked).
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "build_info.h"
#include "commands.h"
#include "llama/backend.h"
#include "util/byte_size.h"

namespace rc::cli {

std::string running_version() {
    static const std::string v = [] {
        std::error_code ec;
        const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
        if (!ec) {
            std::ifstream in(exe.parent_path().parent_path() / "VERSION");
            std::string line;
            if (in && std::getline(in, line)) {
                while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
                if (!line.empty() && line.size() <= 64) return line;
            }
        }
        return std::string(this_build().version);
    }();
    return v;
}

namespace {

using json = nlohmann::json;

struct version_flags {
    bool json = false;
    bool no_devices = false;
};

// "AVX2 FMA F16C …": the features that are on (value "1"); others as NAME=VALUE.
std::string feature_line(const llama::backend_features & b) {
    std::string out;
    for (const auto & [name, value] : b.features) {
        if (value == "0") continue;
        if (!out.empty()) out += ' ';
        out += value == "1" ? name : name + "=" + value;
    }
    return out.empty() ? "-" : out;
}

json to_json(const version_flags & f) {
    const auto & b = this_build();
    json j = {{"version", running_version()},           {"commit", b.commit},       {"dirty", b.dirty},
              {"llama_cpp_commit", b.llama_commit}, {"backend", b.backend}, {"backend_loading", b.backend_loading},
              {"compiler", b.compiler},         {"build_type", b.build_type}, {"build_date", b.build_date}};
    if (f.no_devices) return j;
    j["backend_dir"] = llama::backend_module_dir();
    j["devices"] = json::array();
    for (const auto & d : llama::backend_devices())
        j["devices"].push_back({{"name", d.name}, {"description", d.description}, {"type", d.type},
                                {"memory_total", d.memory_total}, {"memory_free", d.memory_free}});
    j["backends"] = json::array();
    for (const auto & be : llama::backend_feature_list()) {
        json features = json::object();
        for (const auto & [name, value] : be.features) features[name] = value;
        j["backends"].push_back({{"name", be.backend}, {"features", features}});
    }
    return j;
}

int print_version(const version_flags & f) {
    if (f.json) {
        std::cout << to_json(f).dump(2) << '\n';
        return 0;
    }
    const auto & b = this_build();
    std::cout << "rustycage " << running_version() << " (llama.cpp " << b.llama_commit << ")\n"
              << "commit:     " << b.commit << (b.dirty ? " (modified)" : "") << '\n'
              << "backend:    " << b.backend << " (" << b.backend_loading << ")\n"
              << "compiler:   " << b.compiler << '\n'
              << "build:      " << b.build_type << ", " << b.build_date << '\n';
    if (f.no_devices) return 0;
    const std::string dir = llama::backend_module_dir();
    if (!dir.empty()) std::cout << "modules:    " << dir << '\n';
    for (const auto & d : llama::backend_devices()) {
        std::cout << "device:     " << d.name << " (" << d.type << ") " << d.description;
        if (d.memory_total > 0) std::cout << ", " << format_byte_size(d.memory_total);
        std::cout << '\n';
    }
    for (const auto & be : llama::backend_feature_list())
        if (!be.features.empty()) std::cout << "features:   " << be.backend << ": " << feature_line(be) << '\n';
    return 0;
}

}  // namespace

void register_version(CLI::App & app, std::function<int()> & action) {
    auto f = std::make_shared<version_flags>();
    auto * cmd = app.add_subcommand("version", "Print the version, commits, backend and build, and the devices found on this host");
    cmd->add_flag("--json", f->json, "Print one JSON object");
    cmd->add_flag("--no-devices", f->no_devices, "Only the build facts: do not load the backends");
    cmd->callback([f, &action] { action = [f] { return print_version(*f); }; });
}

}  // namespace rc::cli
