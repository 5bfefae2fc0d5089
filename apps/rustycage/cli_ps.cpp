// `rustycage ps`: the models a running server has loaded (its Ollama GET /api/ps), with where each
// one's KV cache lives: context cells in use, host-RAM and disk tier bytes.
#include <cpp-httplib/httplib.h>

#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli_common.h"
#include "commands.h"
#include "store/timestamps.h"
#include "util/byte_size.h"

namespace rc::cli {

namespace {

using json = nlohmann::json;

struct ps_flags {
    std::string host = "http://127.0.0.1:11434";
    std::string api_key;
    bool json = false;
};

std::string processor(uint64_t size, uint64_t vram) {
    if (vram == 0 || size == 0) return "100% CPU";
    if (vram >= size) return "100% GPU";
    const int gpu = static_cast<int>(vram * 100 / size);
    return std::to_string(100 - gpu) + "%/" + std::to_string(gpu) + "% CPU/GPU";
}

std::string until(const json & m) {
    const std::string at = m.value("expires_at", "");
    auto t = store::parse_rfc3339(at);
    if (!t) return at.empty() ? "-" : at;
    return relative_time(*t);
}

std::string tier_bytes(const json & tiers, const char * tier) {
    if (!tiers.contains(tier) || !tiers[tier].is_object()) return "off";
    return format_byte_size(tiers[tier].value("bytes", uint64_t(0)));
}

std::string context_cells(const json & tiers) {
    if (!tiers.contains("context")) return "-";
    const auto & c = tiers["context"];
    return std::to_string(c.value("cells_used", uint64_t(0))) + "/" + std::to_string(c.value("cells_total", uint64_t(0)));
}

// The device fit (rustycage's /api/ps extension): layers on the device, and its bytes there.
std::string fit_layers(const json & m) {
    if (!m.contains("fit") || !m["fit"].is_object()) return "-";
    return std::to_string(m["fit"].value("layers", 0)) + "/" + std::to_string(m["fit"].value("layers_total", 0));
}

std::string fit_device(const json & m) {
    if (!m.contains("fit") || !m["fit"].is_object()) return "-";
    return format_byte_size(m["fit"].value("device_bytes", uint64_t(0))) + " " + m["fit"].value("device", "");
}

int ps(ps_flags f) {
    while (f.host.size() > 1 && f.host.back() == '/') f.host.pop_back();
    httplib::Client client(f.host);
    if (!client.is_valid()) return fail("--host '" + f.host + "' is not a server address like http://127.0.0.1:11434");
    client.set_connection_timeout(5);
    client.set_read_timeout(30);
    if (!f.api_key.empty()) client.set_bearer_token_auth(f.api_key);
    auto res = client.Get("/api/ps");
    if (!res)
        return fail("no rustycage server answers at " + f.host + " (" + httplib::to_string(res.error()) +
                    "): start one with `rustycage serve`, or point --host (RUSTYCAGE_HOST_URL) at its Ollama port");
    if (res->status == 401) return fail("the server at " + f.host + " wants an API key: pass --api-key (RUSTYCAGE_API_KEY)");
    if (res->status != 200) return fail("the server at " + f.host + " answered " + std::to_string(res->status) + " to GET /api/ps: " + shorten(res->body, 200));
    auto body = json::parse(res->body, nullptr, false);
    if (body.is_discarded() || !body.contains("models") || !body["models"].is_array())
        return fail("the server at " + f.host + " did not answer GET /api/ps with a model list (is it an Ollama-compatible port?)");
    if (f.json) {
        std::cout << body.dump(2) << "\n";
        return 0;
    }
    text_table table({"NAME", "SIZE", "PROCESSOR", "UNTIL", "LAYERS", "DEVICE", "CONTEXT", "KV HOST", "KV DISK"});
    for (const auto & m : body["models"]) {
        const uint64_t size = m.value("size", uint64_t(0));
        const json tiers = m.value("kv_tiers", json::object());
        table.add({m.value("name", ""), format_byte_size(size), processor(size, m.value("size_vram", uint64_t(0))), until(m), fit_layers(m),
                   fit_device(m), context_cells(tiers),
                   tier_bytes(tiers, "host"), tier_bytes(tiers, "disk")});
    }
    table.print(std::cout);
    return 0;
}

}  // namespace

void register_ps(CLI::App & app, std::function<int()> & action) {
    auto f = std::make_shared<ps_flags>();
    auto * cmd = app.add_subcommand("ps", "List the models a running server has loaded, with their KV cache tiers");
    cmd->add_option("--host", f->host, "The server's Ollama address")->envname("RUSTYCAGE_HOST_URL")->capture_default_str();
    cmd->add_option("--api-key", f->api_key, "Bearer key, when the server requires one")->envname("RUSTYCAGE_API_KEY");
    cmd->add_flag("--json", f->json, "Print the server's JSON answer");
    cmd->callback([f, &action] { action = [f] { return ps(*f); }; });
}

}  // namespace rc::cli
