// rc-gateway-scale: the gateway's routing cost as the fleet grows (issue 33; bench/gateway.sh --scale
// drives it, docs/GATEWAY.md reports it). One in-process gateway on a real etcd member, in front of
// N hosts: simulated ones (bench/sim_hosts.h: each asked does a host's lookup work, each announces its
// blocks) and, with --real, real servers for the data path. Conversations are started and resumed
// through the gateway; for each request the gateway's own measure of its proxy path
// (X-Rustycage-Route-Us: arrival → the host call starting) is recorded.
//
//   rc-gateway-scale --etcd URL --model-file GGUF --hosts N --mode index|lookup [--real URL]…
//                    [--api chat|completions] [--blocks 100000] [--requests 400] [--conversations 40]
//                    [--words 300] [--reply-words 0] [--clients 1] [--out FILE]
//
// --api completions sends each conversation as one text prompt (no chat template to render): the
// routing cost without the template's share.
//
// --clients N sends from N threads at once, each with its own conversations (--conversations and
// --requests are shared out): the overhead while requests are routed side by side.
//
// One JSON line per run (stdout, appended to --out): routing overhead p50/p99 (µs), lookups sent per
// request, CPU seconds the simulated hosts spent answering lookups per 1,000 requests, hit rate
// (resumes routed to a host that had served the conversation).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <mutex>
#include <random>
#include <set>
#include <tuple>
#include <thread>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "bench/sim_hosts.h"
#include "fleet/etcd/etcd_gateway.h"
#include "fleet/host/host_record.h"
#include "fleet/host/server_probe.h"
#include "gateway/gateway_server.h"
#include "http/http_client.h"

using json = nlohmann::json;
using namespace rc;
using clock_type = std::chrono::steady_clock;

namespace {

template <typename F>
bool wait_for(F ready, std::chrono::seconds limit) {
    const auto end = clock_type::now() + limit;
    while (clock_type::now() < end) {
        if (ready()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return ready();
}

double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5))];
}

double metric_sum(const gateway::gateway_context & g, const std::string & name) {
    double n = 0;
    for (const auto & s : fleet::parse_prometheus_text(g.metrics.expose()))
        if (s.name == name) n += s.value;
    return n;
}

std::string words(std::mt19937_64 & rng, int n) {
    static const char * vocab[] = {"river", "bridge", "archive", "record", "stone", "harbour", "lantern", "meadow", "signal", "copper", "winter", "orchard"};
    std::string out;
    for (int i = 0; i < n; ++i) out += std::string(i ? " " : "") + vocab[rng() % 12] + std::to_string(rng() % 1000);
    return out;
}

// The KV identity and block size a real server announces for `model` (the first snapshot of its
// event stream); identity "" when it says none.
std::pair<std::string, int> announced_identity(const std::string & url, const std::string & model) {
    std::string text, identity;
    int block_size = 0;
    http::client_request r;
    r.method = "GET";
    r.url = url + "/v1/kv/events";
    r.timeout = std::chrono::seconds(30);
    (void) http::stream(
        r,
        [&](std::string_view data) {
            text.append(data);
            const auto end = text.find("\n\n");
            if (end == std::string::npos) return text.size() < (64u << 20);
            const auto at = text.find("data: ");
            if (at == std::string::npos || at > end) return false;
            const json snap = json::parse(text.substr(at + 6, end - at - 6), nullptr, false);
            if (snap.is_object() && snap.contains("sources") && snap["sources"].is_array())
                for (const auto & src : snap["sources"])
                    if (src.is_object() && src.value("model", "") == model) {
                        identity = src.value("identity", "");
                        block_size = src.value("block_size", 0);
                    }
            return false;
        },
        [] { return false; });
    return {identity, block_size};
}

}  // namespace

int main(int argc, char ** argv) {
    CLI::App app("rc-gateway-scale: the gateway's routing cost at N hosts");
    std::string etcd_url, model_file, model = "scale", mode = "index", api = "chat", out_file;
    std::vector<std::string> real;
    int hosts = 64, requests = 400, conversations = 40, n_words = 300, reply_words = 0, clients = 1;
    size_t blocks = 100000;
    app.add_option("--etcd", etcd_url, "An etcd member")->required();
    app.add_option("--model-file", model_file, "A GGUF whose vocabulary the hosts serve")->required();
    app.add_option("--model", model, "The name every host serves it under");
    app.add_option("--hosts", hosts, "Hosts in all (real + simulated)")->check(CLI::Range(1, 1024));
    app.add_option("--real", real, "A real server's URL (repeatable), serving --model");
    app.add_option("--mode", mode, "index (the block index) or lookup (ask every host)")->check(CLI::IsMember({"index", "lookup"}));
    app.add_option("--api", api, "chat (/v1/chat/completions) or completions (/v1/completions, a text prompt)")->check(CLI::IsMember({"chat", "completions"}));
    app.add_option("--blocks", blocks, "Synthetic blocks each simulated host holds");
    app.add_option("--requests", requests, "Requests measured");
    app.add_option("--conversations", conversations, "Conversations started (then resumed)");
    app.add_option("--words", n_words, "Words in a conversation's first message");
    app.add_option("--reply-words", reply_words, "Words in each assistant reply the client sends back (0: every reply is \"ok\")");
    app.add_option("--clients", clients, "Clients sending at once, each with its own conversations")->check(CLI::Range(1, 256));
    app.add_option("--out", out_file, "Append the result line here");
    CLI11_PARSE(app, argc, argv);
    const int n_real = static_cast<int>(real.size());
    if (n_real > hosts) {
        std::cerr << "more --real servers than --hosts\n";
        return 2;
    }

    fleet::etcd_options eo;
    eo.endpoints = {etcd_url};
    fleet::etcd_gateway etcd(eo);
    fleet::fleet_keys keys;
    keys.prefix = "scale-" + std::to_string(getpid()) + "-" + mode + "-" + std::to_string(hosts) + "/";

    bench::sim_options so;
    so.hosts = hosts - n_real;
    so.blocks = blocks;
    so.model = model;
    so.model_file = model_file;
    // One model file and cache layout across the fleet, as hosts that pulled the same model have:
    // the simulated hosts announce the real servers' identity, so a request computes one chain.
    so.identity = std::string(64, 'a');
    if (n_real > 0) std::tie(so.identity, so.block_size) = announced_identity(real.front(), model);
    if (so.identity.size() != 64 || so.block_size <= 0) {
        std::cerr << real.front() << " announces no KV identity for '" << model << "'\n";
        return 1;
    }
    bench::sim_hosts sims(so);
    if (auto st = sims.start(etcd, keys); !st) {
        std::cerr << "simulated hosts: " << st.err().message << "\n";
        return 1;
    }
    // Real servers: registered as their agents would (own record, on a lease kept alive).
    int64_t real_lease = 0;
    std::atomic<bool> done{false};
    std::thread real_keepalive;
    if (n_real > 0) {
        real_lease = etcd.grant(std::chrono::seconds(30)).value();
        for (int i = 0; i < n_real; ++i) {
            fleet::host_record r;
            r.id = "real-" + std::to_string(i);
            r.openai_url = real[static_cast<size_t>(i)];
            r.server.ready = true;
            r.server.state = "ready";
            r.server.pid = 1;
            r.models.push_back({model, "sha256-real", "ready", true, 1});
            (void) etcd.put(keys.host(r.id), fleet::to_json(r).dump(), real_lease);
        }
        real_keepalive = std::thread([&] {
            while (!done) {
                for (int i = 0; i < 50 && !done; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
                (void) etcd.keepalive(real_lease);
            }
        });
    }

    gateway::gateway_options go;
    go.use_index = mode == "index";
    gateway::gateway_server gw(etcd, keys, go);
    gateway::gateway_listen listen;
    listen.openai_port = 0;
    listen.ollama_port = -1;
    listen.max_connections = 4096;
    if (auto st = gw.start(listen); !st) {
        std::cerr << "gateway: " << st.err().message << "\n";
        return 1;
    }
    auto & g = gw.context();
    const std::string base = "http://127.0.0.1:" + std::to_string(gw.openai_port());
    const auto t_ready = clock_type::now();
    if (!wait_for([&] {
            int n = 0;
            for (const auto & h : g.hosts.hosts()) n += h.routable();
            return n == hosts;
        }, std::chrono::seconds(60))) {
        std::cerr << "not every host became routable\n";
        return 1;
    }
    if (go.use_index && !wait_for([&] {
            for (const auto & h : g.hosts.hosts())
                if (!g.kv_feed.trusted(h.id)) return false;
            return true;
        }, std::chrono::seconds(300))) {
        std::cerr << "not every host's event stream is trusted: " << g.kv_feed.to_json().dump() << "\n";
        return 1;
    }
    const double feeds_s = std::chrono::duration<double>(clock_type::now() - t_ready).count();

    // One client: its own conversations and random stream, so clients never resume the same
    // conversation at once; each keeps its own measures, merged after.
    struct conversation {
        json messages;
        std::set<std::string> served_by;
    };
    struct client {
        std::mt19937_64 rng;
        std::vector<conversation> convs;
        int conversations = 0;
        std::vector<double> route_us, resume_us, new_us;
        int hits = 0, resumes = 0;
        bool failed = false;
    };
    std::vector<client> cs(static_cast<size_t>(clients));
    for (int i = 0; i < clients; ++i) {
        cs[static_cast<size_t>(i)].rng.seed(7 + static_cast<uint64_t>(i));
        cs[static_cast<size_t>(i)].conversations = std::max(1, conversations / clients);
    }
    auto send = [&](client & cl, conversation & c, bool measured) {
        const bool resume = !c.served_by.empty();
        json body = {{"model", model}, {"max_tokens", 1}, {"temperature", 0}};
        if (api == "chat") {
            body["messages"] = c.messages;
        } else {
            std::string prompt;
            for (const auto & m : c.messages) prompt += m["role"].get<std::string>() + ": " + m["content"].get<std::string>() + "\n";
            body["prompt"] = prompt;
        }
        http::client_request r;
        r.method = "POST";
        r.url = base + (api == "chat" ? "/v1/chat/completions" : "/v1/completions");
        r.headers = {"Content-Type: application/json"};
        r.body = body.dump();
        r.timeout = std::chrono::seconds(300);
        auto reply = http::call(r);
        if (!reply || !reply->ok()) {
            std::cerr << "request failed: " << (reply ? reply->body : reply.err().message) << "\n";
            return false;
        }
        const std::string host = reply->header("X-Rustycage-Host");
        if (measured) {
            cl.route_us.push_back(std::stod(reply->header("X-Rustycage-Route-Us")));
            (resume ? cl.resume_us : cl.new_us).push_back(cl.route_us.back());
            if (resume) {
                ++cl.resumes;
                cl.hits += c.served_by.contains(host);
            }
        }
        c.served_by.insert(host);
        c.messages.push_back({{"role", "assistant"}, {"content", reply_words > 0 ? words(cl.rng, reply_words) : std::string("ok")}});
        c.messages.push_back({{"role", "user"}, {"content", words(cl.rng, 20)}});
        return true;
    };
    int started = 0;  // conversations started by every client: each one's system prompt is unique
    std::mutex started_mu;
    auto pick = [&](client & cl) -> conversation & {
        if (static_cast<int>(cl.convs.size()) < cl.conversations && (cl.convs.empty() || cl.rng() % 2 == 0)) {
            int n;
            {
                std::lock_guard lk(started_mu);
                n = started++;
            }
            cl.convs.push_back({json::array({{{"role", "system"}, {"content", "Conversation " + std::to_string(n) + "."}},
                                             {{"role", "user"}, {"content", words(cl.rng, n_words)}}}), {}});
            return cl.convs.back();
        }
        return cl.convs[cl.rng() % cl.convs.size()];
    };
    // Warm-up, one request at a time: the vocabulary's fetch (index mode), connections, the first conversations.
    for (int i = 0; i < std::max(4, conversations / 4); ++i) {
        auto & cl = cs[static_cast<size_t>(i % clients)];
        if (!send(cl, pick(cl), false)) return 1;
    }
    if (go.use_index && !wait_for([&] { return g.vocabs.to_json().value(model, json::object()).value("state", "") == "ready"; }, std::chrono::seconds(60))) {
        std::cerr << "the vocabulary did not load: " << g.vocabs.to_json().dump() << "\n";
        return 1;
    }

    const double lookups0 = metric_sum(g, "rustycage_gateway_lookups_total");
    const double cpu0 = sims.lookup_cpu_seconds();
    const auto t0 = clock_type::now();
    {
        std::vector<std::jthread> threads;
        for (int i = 0; i < clients; ++i)
            threads.emplace_back([&, i] {
                auto & cl = cs[static_cast<size_t>(i)];
                const int mine = requests / clients + (i < requests % clients);
                for (int k = 0; k < mine && !cl.failed; ++k) cl.failed = !send(cl, pick(cl), true);
            });
    }
    std::vector<double> route_us, resume_us, new_us;
    int hits = 0, resumes = 0;
    for (const auto & cl : cs) {
        if (cl.failed) return 1;
        route_us.insert(route_us.end(), cl.route_us.begin(), cl.route_us.end());
        resume_us.insert(resume_us.end(), cl.resume_us.begin(), cl.resume_us.end());
        new_us.insert(new_us.end(), cl.new_us.begin(), cl.new_us.end());
        hits += cl.hits;
        resumes += cl.resumes;
    }
    const double wall = std::chrono::duration<double>(clock_type::now() - t0).count();
    const double lookups = metric_sum(g, "rustycage_gateway_lookups_total") - lookups0;
    const double host_cpu = sims.lookup_cpu_seconds() - cpu0;

    json result = {{"mode", mode}, {"api", api}, {"hosts", hosts}, {"clients", clients}, {"real_hosts", n_real}, {"blocks_per_host", blocks}, {"requests", requests},
                   {"route_us_p50", percentile(route_us, 0.5)}, {"route_us_p99", percentile(route_us, 0.99)},
                   {"resume_us_p50", percentile(resume_us, 0.5)}, {"resume_us_p99", percentile(resume_us, 0.99)},
                   {"new_us_p50", percentile(new_us, 0.5)}, {"new_us_p99", percentile(new_us, 0.99)}, {"new_conversations", new_us.size()},
                   {"lookups_per_request", lookups / requests}, {"sim_host_cpu_s_per_1k", host_cpu / requests * 1000},
                   {"hit_rate", resumes ? static_cast<double>(hits) / resumes : 0.0}, {"resumes", resumes},
                   {"index_blocks", g.blocks.blocks()}, {"index_mib", static_cast<double>(g.blocks.bytes()) / (1 << 20)},
                   {"feeds_trusted_s", feeds_s}, {"wall_s", wall}};
    if (auto v = g.vocabs.to_json(); v.contains(model) && v[model].contains("render_memo")) result["render_memo"] = v[model]["render_memo"];
    std::cout << result.dump() << std::endl;
    if (!out_file.empty()) std::ofstream(out_file, std::ios::app) << result.dump() << "\n";
    gw.stop();
    sims.stop();
    done = true;
    if (real_keepalive.joinable()) real_keepalive.join();
    if (real_lease) (void) etcd.revoke(real_lease);
    return 0;
}
