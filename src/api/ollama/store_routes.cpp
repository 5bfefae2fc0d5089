// The model-store routes: POST /api/pull (Hugging Face, streamed progress, "retrying" lines while a
// download rides out a flaky link, tuned by RUSTYCAGE_PULL_* in the server's environment), POST
// /api/create (from uploaded blobs or an existing model, with template/system/parameters), POST
// /api/copy, DELETE /api/delete, HEAD/POST /api/blobs/:digest. Pulled and created models pass the
// quarantine check before they are listed as servable (src/models/model_puller.h).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "http/api_error.h"
#include "api/ollama/ollama_common.h"
#include "api/ollama/ollama_routes.h"
#include "hub/hub_client.h"
#include "hub/hub_config.h"
#include "models/model_creation.h"
#include "models/model_puller.h"
#include "store/manifest.h"
#include "store/model_name.h"

namespace rc::api::ollama {
using namespace rc::http;  // written against the HTTP shell (src/http)

namespace {

store::model_name parse_name(const std::string & text, const char * field) {
    auto n = store::model_name::parse(text);
    if (!n) throw api_error(400, n.err().message, field);
    return *n;
}

// One pull or create of a name at a time: two writers of one partial file would only waste work.
class busy_names {
  public:
    bool claim(const std::string & n) {
        std::lock_guard lock(mu_);
        return names_.insert(n).second;
    }
    void release(const std::string & n) {
        std::lock_guard lock(mu_);
        names_.erase(n);
    }

  private:
    std::mutex mu_;
    std::set<std::string> names_;
};
busy_names & in_progress() {
    static busy_names b;
    return b;
}

// A retry is reported as {"status":"retrying","digest":…,"attempt":2,"max_attempts":8,
// "retry_in_ms":1400,"reason":"connection reset: …"}. The reason is deliberately not under "error":
// Ollama's clients (ollama-js, ollama-python) end a pull at the first line that has an "error" key,
// and a retry is not the end of one.
json progress_json(const models::pull_progress & p) {
    json j = {{"status", p.status}};
    if (!p.digest.empty()) j["digest"] = p.digest;
    if (p.total > 0) {
        j["total"] = p.total;
        j["completed"] = p.completed;
    }
    if (p.attempt > 0) {
        j["attempt"] = p.attempt;
        j["max_attempts"] = p.max_attempts;
        j["retry_in_ms"] = p.retry_in_ms;
        j["reason"] = p.reason;
    }
    return j;
}

// Runs `work` (which reports progress and returns a status) as Ollama does: an NDJSON stream of
// status lines ending in {"status":"success"} or {"error":…}, or one object when stream is false.
using progress_work = std::function<status(const models::pull_progress_fn &, const std::atomic<bool> *)>;

// One object answers a non-streamed call, at the end: nothing written tells that the client left,
// so its connection is watched and the work cancelled then (a pull from a Hub trickling one byte a
// second went on for ever after its client had gone, holding its claim).
status run_watching_the_client(const progress_work & work, const std::function<bool()> & client_gone) {
    std::atomic<bool> cancel{false};
    std::mutex mu;
    std::condition_variable cv;
    bool finished = false;
    std::thread watch([&] {
        std::unique_lock lock(mu);
        while (!cv.wait_for(lock, std::chrono::milliseconds(250), [&] { return finished; }))
            if (client_gone && client_gone()) {
                cancel = true;
                return;
            }
    });
    status st = work({}, &cancel);
    {
        std::lock_guard lock(mu);
        finished = true;
    }
    cv.notify_all();
    watch.join();
    return st;
}

http_response run_with_progress(const std::string & claim, bool stream, progress_work work, const std::function<bool()> & client_gone = {}) {
    if (!in_progress().claim(claim)) throw api_error(409, "'" + claim + "' is already being pulled or created; wait for it to finish");
    if (!stream) {
        status st = run_watching_the_client(work, client_gone);
        in_progress().release(claim);
        if (!st) raise(st.err());
        return json_response(json{{"status", "success"}});
    }
    http_response r;
    r.content_type = "application/x-ndjson";
    r.stream = [claim, work = std::move(work)](stream_sink & sink) {
        std::atomic<bool> cancel{false};
        auto send = [&](const json & j) {
            if (!sink.write(dump(j) + "\n")) cancel = true;  // client gone: stop; a pull resumes next time
        };
        status st = work([&](const models::pull_progress & p) { send(progress_json(p)); }, &cancel);
        in_progress().release(claim);
        if (st) send(json{{"status", "success"}});
        else send(json{{"error", st.err().message}});
    };
    return r;
}

http_response pull(api_context & ctx, const http_request & req) {
    json body = parse_body(req);
    const std::string text = model_field(body);
    const auto name = parse_name(text, "model");
    const bool stream = opt_bool(body, "stream").value_or(true);
    auto cfg = hub::config_from_env();
    if (!cfg) raise(cfg.err());
    auto & store = ctx.models.catalog().store();
    return run_with_progress(name.full(), stream, [&store, cfg = *cfg, text](const models::pull_progress_fn & progress, const std::atomic<bool> * cancel) -> status {
        hub::hub_client hub(cfg);
        // Ollama's stream has no "success" from the puller itself: run_with_progress sends it.
        auto filtered = [&](const models::pull_progress & p) {
            if (p.status != "success" && progress) progress(p);
        };
        auto r = models::pull_model(store, hub, text, filtered, cancel);
        if (!r) return r.err();
        return {};
    }, req.client_gone);
}

// A client's text quoted in an error: JSON-escaped and cut short, so no name makes a message huge.
std::string quote_for_error(const std::string & text) {
    constexpr size_t max_quote = 64;
    std::string q = dump(json(text.size() > max_quote ? text.substr(0, max_quote) : text));
    return text.size() > max_quote ? q + "…" : q;
}

// The model layers of a create: uploaded blobs named by `files` ({"file.gguf": "sha256:…"}), in
// file-name order (split parts sort by their numbers).
std::vector<store::layer> layers_from_files(store::model_store & st, const json & files) {
    if (!files.is_object() || files.empty()) bad_request("'files' must be an object of file name → blob digest", "files");
    if (files.size() > store::manifest_limits::max_layers)
        bad_request("'files' names " + std::to_string(files.size()) + " files (at most " + std::to_string(store::manifest_limits::max_layers) + ")", "files");
    std::vector<std::pair<std::string, std::string>> sorted;
    for (auto it = files.begin(); it != files.end(); ++it) {
        if (!store::is_plain_filename(it.key()))
            bad_request("'files' key " + quote_for_error(it.key()) + " must be a plain file name (no '/', '\\', '..' or control characters)", "files");
        if (!it.value().is_string()) bad_request("'files." + it.key() + "' must be a digest string", "files");
        sorted.emplace_back(it.key(), it.value().get<std::string>());
    }
    std::sort(sorted.begin(), sorted.end());
    std::vector<store::layer> out;
    for (const auto & [file, text] : sorted) {
        auto d = store::blob_digest::parse(text);
        if (!d) bad_request("'files." + file + "': " + d.err().message, "files");
        auto size = st.blobs().size(*d);
        if (!size) bad_request("blob " + d->api() + " for '" + file + "' is not on the server: upload it first with POST /api/blobs/" + d->api(), "files");
        auto kind = file.find("mmproj") != std::string::npos ? store::layer_kind::projector : store::layer_kind::model;
        out.push_back({kind, *d, *size, file});
    }
    return out;
}

// The settings a create may set, checked against the store's limits before anything is written.
void read_settings(const json & body, store::manifest & m) {
    using L = store::manifest_limits;
    auto bounded = [&](const char * key, size_t max) -> std::optional<std::string> {
        auto v = opt_string(body, key);
        if (v && v->size() > max)
            bad_request(std::string("'") + key + "' is " + std::to_string(v->size()) + " bytes (at most " + std::to_string(max) + ")", key);
        return v;
    };
    if (auto t = bounded("template", L::max_template_bytes)) m.template_text = *t;
    if (auto s = bounded("system", L::max_system_bytes)) m.system = *s;
    if (body.contains("parameters") && !body["parameters"].is_null()) {
        if (auto st = store::validate_parameters(body["parameters"]); !st) bad_request(st.err().message, "parameters");
        m.parameters = body["parameters"];
    }
}

// Create is a transaction (models/model_creation.h, shared with `rustycage create`): the new model is built from blobs already
// stored and checked beside the old one, which keeps serving until the new one has passed and
// replaced it; a refused create changes no existing model.
http_response create(api_context & ctx, const http_request & req) {
    json body = parse_body(req);
    const std::string text = model_field(body);
    const auto name = parse_name(text, "model");
    if (body.contains("modelfile")) bad_request("the Modelfile form of /api/create is not supported: use 'from' or 'files' (as current Ollama clients do)", "modelfile");
    if (body.contains("quantize") && !body["quantize"].is_null()) bad_request("quantizing on create is not supported: pull or upload the quantization you want", "quantize");
    if (body.contains("adapters") && !body["adapters"].is_null() && !body["adapters"].empty()) bad_request("adapters are not supported yet", "adapters");
    const bool stream = opt_bool(body, "stream").value_or(true);
    auto & st = ctx.models.catalog().store();

    store::manifest settings;
    read_settings(body, settings);
    store::manifest m;
    if (body.contains("files") && !body["files"].is_null()) {
        m.layers = layers_from_files(st, body["files"]);
    } else if (auto from = opt_string(body, "from")) {
        auto base = models::base_from_model(ctx.models.catalog(), *from);  // a loose file is copied into the store
        if (!base && base.err().code == errc::not_found) throw api_error(404, "model " + quote_for_error(*from) + " not found", "from");
        if (!base) raise(base.err());
        m = std::move(base.value());
    } else {
        bad_request("one of 'from' or 'files' is required", "from");
    }
    if (settings.template_text) m.template_text = settings.template_text;
    if (settings.system) m.system = settings.system;
    if (body.contains("parameters") && !body["parameters"].is_null()) m.parameters = settings.parameters;
    if (auto s = models::prepare_new_model(name, m); !s) bad_request(s.err().message, m.first_model_layer() ? "" : "files");

    return run_with_progress(name.full(), stream, [&st, &ctx, name, m](const models::pull_progress_fn & progress, const std::atomic<bool> *) mutable -> status {
        auto report = [&](const std::string & s) {
            models::pull_progress p;
            p.status = s;
            if (progress) progress(p);
        };
        for (const auto & l : m.layers) report("using existing layer " + l.digest.api());
        if (auto s = models::create_model(st, name, std::move(m), report); !s) return s;
        report("writing manifest");
        ctx.models.unload(name.display());  // the replaced model must not keep serving its old weights
        return {};
    });
}

http_response copy(api_context & ctx, const http_request & req) {
    json body = parse_body(req);
    const std::string source = require_string(body, "source");
    const std::string destination = require_string(body, "destination");
    parse_name(destination, "destination");
    auto src = ctx.models.catalog().find(source);
    if (!src) throw api_error(404, "model '" + source + "' not found", "source");
    if (!src->from_store) bad_request("'" + source + "' is a loose GGUF file: create a store model from it first (POST /api/create with 'from')", "source");
    if (auto s = ctx.models.catalog().store().copy(source, destination); !s) raise(s.err());
    return json_response(json::object());
}

http_response remove(api_context & ctx, const http_request & req) {
    json body = parse_body(req);
    const std::string text = model_field(body);
    auto entry = ctx.models.catalog().find(text);
    if (entry && !entry->from_store) bad_request("'" + entry->name + "' is a loose GGUF file; delete it from the models directory yourself", "model");
    if (entry) ctx.models.unload(entry->name);
    // Without a catalog entry the store may still hold a manifest it cannot read (damaged, too
    // large, from a newer build): deleting it is how the user gets rid of it.
    auto s = ctx.models.catalog().store().remove(text);
    if (!s && (s.err().code == errc::not_found || s.err().code == errc::invalid_argument))
        throw api_error(404, "model " + quote_for_error(text) + " not found", "model");
    if (!s) raise(s.err());
    return json_response(json::object());
}

store::blob_digest digest_param(const http_request & req) {
    auto d = store::blob_digest::parse(req.path_params.at("digest"));
    if (!d) throw api_error(400, d.err().message, "digest");
    return *d;
}

http_response blob_exists(api_context & ctx, const http_request & req) {
    http_response r;
    r.status = ctx.models.catalog().store().blobs().has(digest_param(req)) ? 200 : 404;
    return r;
}

http_response blob_upload(api_context & ctx, const http_request & req, const body_reader & read) {
    const auto expected = digest_param(req);
    auto & blobs = ctx.models.catalog().store().blobs();
    if (blobs.has(expected)) return json_response(json::object(), 200);
    auto writer = blobs.begin_write();
    if (!writer) raise(writer.err());
    status failed;
    bool whole = read([&](const char * d, size_t n) {
        failed = writer->write(d, n);
        return failed.ok();
    });
    if (!failed) raise(failed.err());
    if (!whole) throw api_error(400, "the upload ended before the whole blob arrived", "body");
    auto committed = writer->commit(expected);
    if (!committed) throw api_error(400, "the uploaded bytes do not match " + expected.api() + ": " + committed.err().message, "digest");
    return json_response(json::object(), 201);
}

}  // namespace

std::vector<route> store_routes(api_context & ctx) {
    auto c = &ctx;
    return {
        {"POST", "/api/pull", [c](const http_request & r) { return pull(*c, r); }},
        {"POST", "/api/push", [](const http_request &) -> http_response { throw api_error(501, "push is not supported: Rustycage pulls from Hugging Face only"); }},
        {"POST", "/api/create", [c](const http_request & r) { return create(*c, r); }},
        {"POST", "/api/copy", [c](const http_request & r) { return copy(*c, r); }},
        {"DELETE", "/api/delete", [c](const http_request & r) { return remove(*c, r); }},
        {"HEAD", "/api/blobs/:digest", [c](const http_request & r) { return blob_exists(*c, r); }},
        {"POST", "/api/blobs/:digest", nullptr, [c](const http_request & r, const body_reader & b) { return blob_upload(*c, r, b); }},
    };
}

}  // namespace rc::api::ollama
