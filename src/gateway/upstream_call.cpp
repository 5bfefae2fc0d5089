#include "gateway/upstream_call.h"

namespace rc::gateway {

namespace {

using json = nlohmann::json;

constexpr size_t max_buffered_body = 64u << 20;  // a non-streamed answer (embeddings of a large batch)
constexpr size_t max_queued_stream = 8u << 20;   // a slow client: the transfer waits (TCP backpressure)

bool is_stream_type(const std::string & content_type) {
    return content_type.find("text/event-stream") != std::string::npos || content_type.find("application/x-ndjson") != std::string::npos;
}

}  // namespace

upstream_attempt::upstream_attempt(http::client_request req, std::function<bool()> abandon_waiting, std::function<bool()> abandon_streaming,
                                   std::shared_ptr<void> inflight_token)
    : abandon_waiting_(std::move(abandon_waiting)), abandon_streaming_(std::move(abandon_streaming)), inflight_(std::move(inflight_token)) {
    worker_ = std::thread([this, r = std::move(req)]() mutable { work(std::move(r)); });
}

upstream_attempt::~upstream_attempt() {
    {
        std::lock_guard lock(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    if (worker_.joinable()) worker_.join();
}

void upstream_attempt::work(http::client_request req) {
    bool streamed = false;
    std::string stopped_why;  // set when we stopped the transfer ourselves
    auto on_head = [&](const http::client_reply & head) {
        std::lock_guard lock(mu_);
        head_ = head;
        streamed = is_stream_type(head.header("Content-Type"));
        return !stop_;
    };
    auto on_data = [&](std::string_view data) {
        std::unique_lock lock(mu_);
        if (!streamed) {
            if (body_.size() + data.size() > max_buffered_body) {
                stopped_why = "the answer is larger than 64 MiB";
                return false;
            }
            body_.append(data);
            return !stop_;
        }
        cv_.wait(lock, [&] { return stop_ || queued_bytes_ < max_queued_stream; });
        if (stop_) return false;
        chunks_.emplace_back(data);
        queued_bytes_ += data.size();
        phase_ = phase::streaming;
        cv_.notify_all();
        return true;
    };
    auto should_stop = [&] {
        phase now;
        {
            std::lock_guard lock(mu_);
            if (stop_) return true;
            now = phase_;
        }
        const bool abandon = now == phase::waiting ? abandon_waiting_ && abandon_waiting_() : abandon_streaming_ && abandon_streaming_();
        if (abandon) {
            std::lock_guard lock(mu_);
            stopped_why = now == phase::waiting ? "the host left the up state before answering" : "the host went down";
        }
        return abandon;
    };
    auto r = http::stream(req, stream_handlers{on_head, on_data, should_stop});

    std::lock_guard lock(mu_);
    std::string broke;
    if (!r.ok()) broke = r.err().message;
    else if (!stopped_why.empty()) broke = stopped_why;
    else if (stop_) broke = "stopped";
    if (phase_ == phase::streaming) {
        ended_ = true;
        error_ = broke;
    } else if (!broke.empty()) {
        phase_ = phase::failed;
        error_ = broke;
    } else {
        phase_ = phase::complete;
        head_.status = r->status;
        head_.headers = r->headers;
        if (!r->ok()) body_ = r->body;  // an error answer is buffered by the transport
    }
    cv_.notify_all();
}

upstream_attempt::outcome upstream_attempt::wait(const std::function<bool()> & client_gone) {
    std::unique_lock lock(mu_);
    while (phase_ == phase::waiting) {
        cv_.wait_for(lock, std::chrono::milliseconds(20));
        if (phase_ != phase::waiting) break;
        lock.unlock();
        const bool gone = client_gone && client_gone();
        lock.lock();
        if (gone) {
            stop_ = true;
            cv_.notify_all();
            return outcome::client_gone;
        }
    }
    switch (phase_) {
        case phase::streaming: return outcome::streaming;
        case phase::complete: return outcome::complete;
        default: return outcome::failed;
    }
}

long upstream_attempt::status() const {
    std::lock_guard lock(mu_);
    return head_.status;
}

std::string upstream_attempt::header(const std::string & name) const {
    std::lock_guard lock(mu_);
    return head_.header(name);
}

upstream_attempt::relay_end upstream_attempt::relay(http::stream_sink & sink) {
    for (;;) {
        std::unique_lock lock(mu_);
        cv_.wait_for(lock, std::chrono::milliseconds(100), [&] { return !chunks_.empty() || ended_; });
        if (!chunks_.empty()) {
            std::string chunk = std::move(chunks_.front());
            chunks_.pop_front();
            queued_bytes_ -= chunk.size();
            cv_.notify_all();
            lock.unlock();
            if (!sink.write(chunk)) {
                std::lock_guard again(mu_);
                stop_ = true;
                cv_.notify_all();
                return {true, {}};
            }
            continue;
        }
        if (ended_) return {false, error_};
        lock.unlock();
        if (sink.alive && !sink.alive()) {
            std::lock_guard again(mu_);
            stop_ = true;
            cv_.notify_all();
            return {true, {}};
        }
    }
}

std::string stream_error_frame(const std::string & path, const std::string & content_type, const std::string & message) {
    if (content_type.find("ndjson") != std::string::npos) return json{{"error", message}}.dump() + "\n";
    if (path == "/v1/responses")
        return "event: error\ndata: " + json{{"type", "error"}, {"code", "upstream_failed"}, {"message", message}, {"param", nullptr}}.dump() + "\n\n";
    return "data: " + json{{"error", {{"message", message}, {"type", "server_error"}, {"param", nullptr}, {"code", "upstream_failed"}}}}.dump() + "\n\n";
}

std::vector<result<http::client_reply>> parallel_calls(const std::vector<http::client_request> & requests) {
    std::vector<std::optional<result<http::client_reply>>> slots(requests.size());
    std::vector<std::thread> threads;
    for (size_t i = 0; i < requests.size(); ++i) threads.emplace_back([&, i] { slots[i] = http::call(requests[i]); });
    for (auto & t : threads) t.join();
    std::vector<result<http::client_reply>> out;
    for (auto & s : slots) out.push_back(std::move(*s));
    return out;
}

lookup_reply parse_lookup_reply(const result<http::client_reply> & r) {
    lookup_reply out;
    if (!r.ok()) {
        out.error = r.err().message;
        return out;
    }
    auto j = json::parse(r->body, nullptr, false);
    if (!r->ok() || !j.is_object()) {
        out.error = "HTTP " + std::to_string(r->status) + (j.is_object() && j.contains("error") ? ": " + j["error"].dump() : "");
        return out;
    }
    auto num = [](const json & o, const char * k) { return o.contains(k) && o[k].is_number_integer() ? o[k].get<int>() : 0; };
    kv_answer a;
    a.loaded = j.value("loaded", true);
    a.prompt_tokens = num(j, "prompt_tokens");
    if (auto t = j.find("tiers"); t != j.end() && t->is_object()) {
        a.context = num(*t, "context");
        a.host = num(*t, "host");
        a.disk = num(*t, "disk");
    }
    out.answer = a;
    if (auto l = j.find("load"); l != j.end() && l->is_object()) {
        out.busy = num(*l, "running") + num(*l, "queued");
        out.slots = num(*l, "slots");
    }
    return out;
}

}  // namespace rc::gateway
