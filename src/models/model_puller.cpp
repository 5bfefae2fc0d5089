#include "models/model_puller.h"

#include "hub/gguf_choice.h"
#include "store/incident_log.h"
#include "store/model_name.h"
#include "util/log.h"

namespace rc::models {

namespace fs = std::filesystem;

namespace {

void report(const pull_progress_fn & fn, pull_progress p) {
    if (fn) fn(p);
}

std::string base_name(const std::string & path) {
    auto slash = path.find_last_of('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

result<quarantine_report> commit_checked_model(store::model_store & st, const store::model_name & name, store::manifest m,
                                               const checker_fn & checker) {
    m.name = name.full();
    m.status = store::model_status::quarantined;
    m.status_reason.clear();
    m.checked_at.reset();
    // Refuse what could not be written before spending a load on it.
    if (auto s = store::check_writable(m); !s) return s.err();
    quarantine_input in;
    for (const auto & l : m.layers) {
        if (l.kind != store::layer_kind::model) continue;
        in.paths.push_back(st.blobs().path(l.digest).string());
        in.digests.push_back(l.digest.str());
    }
    in.chat_template = m.template_text.value_or("");
    auto verdict = checker(in);
    if (verdict) {
        m.status = store::model_status::ready;
        m.checked_at = std::chrono::system_clock::now();
        if (auto s = st.put(name, m); !s) return s.err();
        return verdict;
    }
    const std::string reason = verdict.err().message;
    auto existing = st.find(name);
    // An unreadable manifest under the name is kept as well: it is the user's to delete.
    const bool kept_existing = existing || existing.err().code != errc::not_found;
    if (!kept_existing) {
        m.status = store::model_status::failed;
        m.status_reason = reason;
        m.checked_at = std::chrono::system_clock::now();
        if (auto s = st.put(name, m); !s) rc::log::warn("models", "failed_model_not_recorded", {{"model", name.display()}, {"reason", s.err().message}});
    }
    nlohmann::ordered_json details = {{"source", std::string(store::to_string(m.source.kind))}, {"repo", m.source.repo}, {"kept_existing", kept_existing}};
    auto layers = nlohmann::ordered_json::array();
    for (const auto & l : m.layers) layers.push_back(l.digest.str());
    details["layers"] = layers;
    auto inc = store::incident_log::in_store(st.root()).record("quarantine_failed", name.display(), reason, details);
    rc::log::warn("models", "quarantine_failed", {{"model", name.display()}, {"reason", reason}, {"kept_existing", kept_existing},
                                                  {"incident", inc ? inc->id : std::string("(not recorded)")}});
    return make_error(errc::invalid_argument, "model " + name.display() + " failed its quarantine check" +
                                                  (kept_existing ? " (the existing " + name.display() + " is unchanged)" : " and is listed as failed") + ": " + reason);
}

result<pull_result> pull_model(store::model_store & st, const hub::hub_client & hub, const std::string & requested,
                               const pull_progress_fn & progress, const std::atomic<bool> * cancel, const checker_fn & checker) {
    auto name = store::model_name::parse(requested);
    if (!name) return name.err();
    if (!name->is_hf())
        return make_error(errc::invalid_argument, "'" + requested + "' is not a Hugging Face name: pull hf.co/{owner}/{repo}[:{quantization or file}] (there is no other registry)");
    const std::string repo = name->ns + "/" + name->model;

    report(progress, {"pulling manifest"});
    auto files = hub.list_files(repo);
    if (!files) return files.err();
    auto choice = hub::choose_gguf(*files, name->tag == "latest" ? "" : name->tag);
    if (!choice) return choice.err();

    pull_result out;
    out.name = name->display();
    out.quantization = choice->quant;
    out.size = choice->total_size;

    store::manifest m;
    m.source.kind = store::source_kind::hf;
    m.source.repo = repo;
    m.source.revision = "main";
    const fs::path partial_dir = st.root() / "partial";
    std::error_code ec;
    fs::create_directories(partial_dir, ec);
    for (const auto & part : choice->parts) {
        if (part.sha256.empty()) return make_error(errc::invalid_argument, part.path + " has no sha256 on the Hub (not an LFS file): refusing an unverifiable download");
        auto digest = store::blob_digest::parse("sha256-" + part.sha256);
        if (!digest) return make_error(errc::invalid_argument, "the Hub gave " + part.path + " an invalid sha256: " + digest.err().message);
        const std::string api_digest = digest->api();
        if (!st.blobs().has(*digest)) {
            const fs::path partial = partial_dir / (digest->str() + ".partial");
            const std::string label = "pulling " + std::string(digest->hex().substr(0, 12));
            auto on_retry = [&](const hub::retry_notice & n) {
                pull_progress p{"retrying", api_digest};
                p.attempt = n.attempt;
                p.max_attempts = n.max_attempts;
                p.retry_in_ms = uint64_t(n.delay.count());
                p.reason = n.reason;
                report(progress, p);
            };
            auto dl = hub.download(repo, "main", part, partial,
                                   [&](uint64_t done, uint64_t total) { report(progress, {label, api_digest, total, done}); },
                                   cancel, on_retry);
            if (!dl) return dl.err();
            out.transferred += dl->transferred;
            report(progress, {"verifying sha256 digest"});
            auto adopted = st.blobs().adopt(partial, *digest);
            if (!adopted) return adopted.err();
        } else {
            report(progress, {"pulling " + std::string(digest->hex().substr(0, 12)), api_digest, part.size, part.size});
        }
        m.layers.push_back({store::layer_kind::model, *digest, part.size, base_name(part.path)});
        m.source.files.push_back(part.path);
    }
    if (auto s = store::fill_from_gguf(m, st.blobs().path(m.layers.front().digest)); !s) return s.err();
    if (!choice->quant.empty()) m.quantization = choice->quant;
    m.status = store::model_status::quarantined;

    report(progress, {"checking model"});
    if (auto v = commit_checked_model(st, *name, m, checker); !v) return v.err();
    report(progress, {"writing manifest"});
    report(progress, {"success"});
    rc::log::info("models", "pulled", {{"model", out.name}, {"quant", out.quantization}, {"bytes", out.size}, {"transferred", out.transferred}});
    return out;
}

}  // namespace rc::models
