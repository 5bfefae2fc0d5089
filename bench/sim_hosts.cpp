#include "bench/sim_hosts.h"

#include <time.h>

#include <random>

#include "api/request_prompt.h"
#include "fleet/host/host_record.h"
#include "gateway/prompt_keys.h"
#include "kv/kv_events.h"
#include "llama/vocab_file.h"

namespace rc::bench {

namespace {

using json = nlohmann::json;

// As a host writes a key in its event stream: the key's 8 bytes in memory order, as hex.

std::string sse(const char * name, const json & data) { return std::string("event: ") + name + "\ndata: " + data.dump() + "\n\n"; }

uint64_t thread_cpu_ns() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<uint64_t>(t.tv_sec) * 1000000000ull + static_cast<uint64_t>(t.tv_nsec);
}

http::http_response json_response(int status, const json & body) {
    http::http_response r;
    r.status = status;
    r.body = body.dump();
    return r;
}

}  // namespace

sim_hosts::sim_hosts(sim_options opts) : opts_(std::move(opts)) {}

sim_hosts::~sim_hosts() { stop(); }

std::vector<uint64_t> sim_hosts::chain_of(json body, const std::string & api, int & prompt_tokens) const {
    nlohmann::ordered_json fields = body;
    const auto prompt = api::read_request_prompt(vocab_->entry, *vocab_->model, 1 << 20, fields, api);
    prompt_tokens = static_cast<int>(prompt.tokens.size());
    return gateway::prompt_chain(opts_.identity, opts_.block_size, prompt.cache_salt, prompt.tokens);
}

http::http_response sim_hosts::events(host & h) {
    http::http_response r;
    r.content_type = "text/event-stream";
    r.stream = [this, &h](http::stream_sink & sink) {
        json keys = json::array();
        uint64_t seq;
        {
            std::lock_guard lock(h.mu);
            for (uint64_t k : h.blocks) keys.push_back(kv::event_key_hex(k));
            h.pending.clear();
            seq = h.seq;
        }
        json source = {{"source", 1}, {"model", opts_.model}, {"block_size", opts_.block_size}, {"identity", opts_.identity}, {"blocks", {{"host", keys}}}};
        if (!sink.write(sse("snapshot", {{"epoch", h.id + "-epoch"}, {"seq", seq}, {"sources", json::array({source})}}))) return;
        while (!stop_ && sink.alive()) {
            std::unique_lock lock(h.mu);
            h.changed.wait_for(lock, std::chrono::seconds(1), [&] { return stop_ || !h.pending.empty(); });
            if (h.pending.empty()) {
                const uint64_t at = h.seq;
                lock.unlock();
                if (!sink.write(sse("tick", {{"seq", at}}))) return;
                continue;
            }
            json added = json::array();
            for (uint64_t k : h.pending) added.push_back(kv::event_key_hex(k));
            h.pending.clear();
            const uint64_t at = h.seq;
            lock.unlock();
            json change = {{"source", 1}, {"op", "added"}, {"tier", "host"}, {"keys", added}};
            if (!sink.write(sse("kv", {{"seq", at}, {"changes", json::array({change})}}))) return;
        }
    };
    return r;
}

http::http_response sim_hosts::lookup(host & h, const http::http_request & req) {
    const uint64_t t0 = thread_cpu_ns();
    json body = json::parse(req.body, nullptr, false);
    if (!body.is_object()) return json_response(400, {{"error", "not JSON"}});
    int prompt_tokens = 0;
    const auto chain = chain_of(body, body.value("api", "openai"), prompt_tokens);
    size_t held = 0;
    {
        std::lock_guard lock(h.mu);
        while (held < chain.size() && h.blocks.contains(chain[held])) ++held;
    }
    const int cached = std::min(static_cast<int>(held) * opts_.block_size, std::max(0, prompt_tokens - 1));
    auto out = json_response(200, {{"model", opts_.model}, {"loaded", true}, {"prompt_tokens", prompt_tokens}, {"cached_tokens", cached},
                                   {"tiers", {{"context", 0}, {"host", cached}, {"disk", 0}}}, {"load", {{"running", 0}, {"queued", 0}, {"slots", 4}}}});
    lookup_cpu_ns_ += thread_cpu_ns() - t0;
    ++lookups_;
    return out;
}

http::http_response sim_hosts::complete(host & h, const http::http_request & req) {
    json body = json::parse(req.body, nullptr, false);
    if (!body.is_object()) return json_response(400, {{"error", "not JSON"}});
    int prompt_tokens = 0;
    const auto chain = chain_of(body, "openai", prompt_tokens);
    {
        std::lock_guard lock(h.mu);
        for (uint64_t k : chain)
            if (h.blocks.insert(k).second) {
                h.pending.push_back(k);
                ++h.seq;
            }
    }
    h.changed.notify_all();
    ++completions_;
    return json_response(200, {{"id", "sim"}, {"object", "chat.completion"}, {"model", opts_.model},
                               {"choices", json::array({{{"index", 0}, {"message", {{"role", "assistant"}, {"content", "ok"}}}, {"finish_reason", "length"}}})},
                               {"usage", {{"prompt_tokens", prompt_tokens}, {"completion_tokens", 1}, {"total_tokens", prompt_tokens + 1}}}});
}

status sim_hosts::start(fleet::etcd_client & etcd, const fleet::fleet_keys & keys) {
    auto bytes = llama::vocab_gguf(opts_.model_file, {{std::string(api::vocab_entry_key), json{{"name", opts_.model}, {"parameters", json::object()}}.dump()}});
    if (!bytes) return bytes.err();
    vocab_bytes_ = std::move(bytes.value());
    auto vocab = gateway::load_model_vocab(vocab_bytes_);
    if (!vocab) return vocab.err();
    vocab_ = std::make_shared<const gateway::model_vocab>(std::move(vocab.value()));

    std::mt19937_64 rng(42);
    for (int i = 0; i < opts_.hosts; ++i) {
        auto h = std::make_unique<host>();
        h->id = opts_.id_prefix + std::to_string(i);
        h->blocks.reserve(opts_.blocks * 2);
        for (size_t b = 0; b < opts_.blocks; ++b) h->blocks.insert(rng());
        hosts_.push_back(std::move(h));
    }
    std::vector<http::route> routes;
    auto find = [this](const http::http_request & req) -> host * {
        const size_t i = std::stoul(req.path_params.at("id"));
        return i < hosts_.size() ? hosts_[i].get() : nullptr;
    };
    auto missing = [] { return json_response(404, {{"error", "no such simulated host"}}); };
    routes.push_back({"GET", "/sim/:id/v1/kv/events", [=, this](const http::http_request & req) { auto * h = find(req); return h ? events(*h) : missing(); }});
    routes.push_back({"GET", "/sim/:id/v1/kv/vocab", [this](const http::http_request &) {
                          http::http_response r;
                          r.content_type = "application/octet-stream";
                          r.body = vocab_bytes_;
                          return r;
                      }});
    routes.push_back({"POST", "/sim/:id/v1/kv/lookup", [=, this](const http::http_request & req) { auto * h = find(req); return h ? lookup(*h, req) : missing(); }});
    routes.push_back({"POST", "/sim/:id/v1/chat/completions", [=, this](const http::http_request & req) { auto * h = find(req); return h ? complete(*h, req) : missing(); }});
    routes.push_back({"POST", "/sim/:id/v1/completions", [=, this](const http::http_request & req) { auto * h = find(req); return h ? complete(*h, req) : missing(); }});
    http::http_server_options so;
    so.max_connections = 4096;
    so.on_exception = [](const http::http_request &, std::exception_ptr e) {
        std::string what = "error";
        try {
            std::rethrow_exception(e);
        } catch (const std::exception & x) {
            what = x.what();
        } catch (...) {
        }
        return json_response(400, {{"error", what}});
    };
    server_ = std::make_unique<http::http_server>(std::move(routes), so);
    auto port = server_->bind("127.0.0.1", 0);
    if (!port) return port.err();
    port_ = *port;
    serving_ = std::thread([this] { server_->serve(); });
    server_->wait_until_serving();

    // Registered as agents register: each host's record under its own id, on a lease kept alive.
    etcd_ = &etcd;
    auto lease = etcd.grant(std::chrono::seconds(30));
    if (!lease) return lease.err();
    lease_ = *lease;
    for (size_t i = 0; i < hosts_.size(); ++i) {
        fleet::host_record r;
        r.id = hosts_[i]->id;
        r.openai_url = "http://127.0.0.1:" + std::to_string(port_) + "/sim/" + std::to_string(i);
        r.server.ready = true;
        r.server.state = "ready";
        r.server.pid = 1;
        r.models.push_back({opts_.model, "sha256-sim", "ready", true, 1});
        r.load.known = true;
        if (auto st = etcd.put(keys.host(r.id), fleet::to_json(r).dump(), lease_); !st) return st.err();
    }
    keepalive_ = std::thread([this] {
        while (!stop_) {
            for (int i = 0; i < 50 && !stop_; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
            if (!stop_) (void) etcd_->keepalive(lease_);
        }
    });
    return {};
}

void sim_hosts::stop() {
    if (stop_.exchange(true)) return;
    for (auto & h : hosts_) h->changed.notify_all();
    if (keepalive_.joinable()) keepalive_.join();
    if (etcd_ && lease_) (void) etcd_->revoke(lease_);
    if (server_) server_->stop();
    if (serving_.joinable()) serving_.join();
}

double sim_hosts::lookup_cpu_seconds() const { return static_cast<double>(lookup_cpu_ns_.load()) / 1e9; }

}  // namespace rc::bench
