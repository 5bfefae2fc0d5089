#include "gateway/model_vocabs.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "api/request_prompt.h"
#include "http/http_client.h"
#include "llama/gguf_metadata.h"
#include "util/log.h"

namespace rc::gateway {

namespace {

using clock = std::chrono::steady_clock;

// llama.cpp loads from a path: the bytes go to a private temporary file, removed once loaded.
class temp_file {
  public:
    explicit temp_file(const std::string & bytes) {
        std::string tmpl = (std::filesystem::temp_directory_path() / "rustycage-vocab-XXXXXX").string();
        const int fd = mkstemp(tmpl.data());
        if (fd < 0) return;
        path_ = tmpl;
        size_t done = 0;
        while (done < bytes.size()) {
            const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
            if (n <= 0) break;
            done += static_cast<size_t>(n);
        }
        ok_ = done == bytes.size();
        ::close(fd);
    }
    ~temp_file() {
        if (!path_.empty()) std::remove(path_.c_str());
    }
    bool ok() const { return ok_; }
    const std::string & path() const { return path_; }

  private:
    std::string path_;
    bool ok_ = false;
};

}  // namespace

result<std::string> fetch_vocab(const std::string & host_url, const std::string & model, const std::string & api_key) {
    http::client_request req;
    req.url = host_url + "/v1/kv/vocab?model=" + http::url_encode(model);
    if (!api_key.empty()) req.headers.push_back("Authorization: Bearer " + api_key);
    req.timeout = std::chrono::seconds(30);
    // A host that stops sending (or trickles) is left after 5 s, not 30: its fetch holds a worker.
    req.stall_timeout = std::chrono::seconds(5);
    req.low_speed_bytes = 64 << 10;
    req.low_speed_time = std::chrono::seconds(5);
    auto reply = http::call(req);
    if (!reply) return reply.err();
    if (!reply->ok()) return make_error(errc::unavailable, "GET /v1/kv/vocab answered HTTP " + std::to_string(reply->status) + ": " + reply->body.substr(0, 300));
    return std::move(reply->body);
}

result<model_vocab> load_model_vocab(const std::string & gguf_bytes) {
    temp_file file(gguf_bytes);
    if (!file.ok()) return make_error(errc::unavailable, "cannot write the vocabulary to a temporary file");
    auto md = llama::read_gguf_metadata(file.path());
    if (!md) return make_error(errc::invalid_argument, "the vocabulary is not a GGUF file: " + md.err().message);
    const std::string text = md->get_string(std::string(api::vocab_entry_key));
    auto defaults = nlohmann::ordered_json::parse(text, nullptr, false);
    if (!defaults.is_object() || !defaults.contains("name") || !defaults["name"].is_string())
        return make_error(errc::invalid_argument, "the vocabulary carries no model entry (" + std::string(api::vocab_entry_key) + ")");
    model_vocab v;
    v.entry.name = defaults["name"].get<std::string>();
    if (auto p = defaults.find("parameters"); p != defaults.end() && p->is_object()) v.entry.parameters = *p;
    if (auto s = defaults.find("system"); s != defaults.end() && s->is_string()) v.entry.system = s->get<std::string>();
    if (auto t = defaults.find("template"); t != defaults.end() && t->is_string()) v.entry.template_text = t->get<std::string>();
    llama::model_load_options lo;
    lo.vocab_only = true;
    lo.use_mmap = false;
    lo.tokenize_cache_bytes = vocab_tokenize_cache_bytes;  // resumed conversations re-tokenize only their new turns
    lo.chat_template = v.entry.template_text.value_or("");  // as the hosts' model manager loads it
    auto m = llama::model::load(file.path(), lo);
    if (!m) return make_error(errc::invalid_argument, "llama.cpp could not load the vocabulary: " + m.err().message);
    v.model = std::move(m.value());
    v.memo = std::make_shared<engine::render_memo>(*v.model);
    return v;
}

model_vocabs::model_vocabs(fetch_fn fetch, std::chrono::milliseconds retry_after, size_t max_models)
    : fetch_(std::move(fetch)), retry_after_(retry_after), max_models_(std::max<size_t>(1, max_models)) {
    for (size_t i = 0; i < fetch_workers; ++i) workers_.emplace_back([this] { run(); });
}

model_vocabs::~model_vocabs() {
    {
        std::lock_guard lock(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    for (auto & w : workers_) w.join();
}

std::shared_ptr<const model_vocab> model_vocabs::get(const std::string & model, const std::string & host_url) {
    std::lock_guard lock(mu_);
    slot & s = models_[model];
    s.used = clock::now();
    if (s.vocab || s.fetching) return s.vocab;
    if (!s.error.empty() && clock::now() - s.failed_at < retry_after_) return nullptr;
    s.fetching = true;
    queue_.emplace_back(model, host_url);
    cv_.notify_one();
    return nullptr;
}

void model_vocabs::forget(const std::string & model) {
    std::lock_guard lock(mu_);
    if (auto it = models_.find(model); it != models_.end() && !it->second.fetching) models_.erase(it);
}

void model_vocabs::run() {
    std::unique_lock lock(mu_);
    while (true) {
        cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (stop_) return;
        auto [model, url] = queue_.front();
        queue_.pop_front();
        lock.unlock();
        const auto t0 = clock::now();
        size_t bytes = 0;
        auto loaded = [&]() -> result<model_vocab> {
            auto body = fetch_(url, model);
            if (!body) return body.err();
            bytes = body->size();
            return load_model_vocab(*body);
        }();
        lock.lock();
        slot & s = models_[model];
        s.fetching = false;
        s.bytes = bytes;
        if (loaded) {
            s.vocab = std::make_shared<const model_vocab>(std::move(loaded.value()));
            s.error.clear();
            rc::log::info("gateway", "vocab_loaded", {{"model", model}, {"from", url}, {"bytes", bytes},
                                                       {"ms", std::chrono::duration<double, std::milli>(clock::now() - t0).count()}});
        } else {
            s.error = loaded.err().message;
            s.failed_at = clock::now();
            rc::log::warn("gateway", "vocab_failed", {{"model", model}, {"from", url}, {"error", s.error}, {"note", "hosts are asked meanwhile"}});
        }
        // Bounded: the least recently used vocabulary beyond max_models goes.
        while (models_.size() > max_models_) {
            auto oldest = models_.end();
            for (auto it = models_.begin(); it != models_.end(); ++it)
                if (!it->second.fetching && (oldest == models_.end() || it->second.used < oldest->second.used)) oldest = it;
            if (oldest == models_.end()) break;
            models_.erase(oldest);
        }
    }
}

nlohmann::ordered_json model_vocabs::to_json() const {
    std::lock_guard lock(mu_);
    auto out = nlohmann::ordered_json::object();
    for (const auto & [name, s] : models_) {
        nlohmann::ordered_json j = {{"state", s.vocab ? "ready" : s.fetching ? "fetching" : s.error.empty() ? "idle" : "failed"}, {"bytes", s.bytes}};
        if (!s.error.empty()) j["error"] = s.error;
        if (s.vocab && s.vocab->memo) {
            const auto m = s.vocab->memo->stats();
            j["render_memo"] = {{"enabled", m.enabled}, {"hits", m.hits}, {"misses", m.misses}, {"bypassed", m.bypassed}, {"checked", m.checked},
                                {"mismatches", m.mismatches}, {"shapes", m.shapes}, {"bytes", m.bytes}};
            if (!m.enabled) j["render_memo"]["off_reason"] = m.off_reason;
        }
        out[name] = std::move(j);
    }
    return out;
}

}  // namespace rc::gateway
