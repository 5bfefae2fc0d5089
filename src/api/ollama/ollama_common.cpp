#include "api/ollama/ollama_common.h"

#include <ctime>

#include "api/api_error.h"
#include "api/ollama/keep_alive.h"
#include "util/log.h"

namespace rc::api::ollama {

std::string rfc3339(std::chrono::system_clock::time_point t) {
    using namespace std::chrono;
    auto ns = duration_cast<nanoseconds>(t.time_since_epoch()).count();
    std::time_t secs = static_cast<std::time_t>(ns / 1000000000);
    long frac = static_cast<long>(ns % 1000000000);
    if (frac < 0) {  // before 1970: floor, so the fraction stays positive
        frac += 1000000000;
        --secs;
    }
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[64];
    size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    std::snprintf(buf + n, sizeof buf - n, ".%09ldZ", frac);
    return buf;
}

std::string rfc3339_now() { return rfc3339(std::chrono::system_clock::now()); }

long long ns_from_ms(double ms) { return static_cast<long long>(ms * 1e6); }

long long ns_since(steady::time_point start) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(steady::now() - start).count();
}

std::string display_name(const std::string & catalog_name) {
    return catalog_name.find(':') == std::string::npos ? catalog_name + ":latest" : catalog_name;
}

std::string model_field(const json & body) {
    if (auto m = opt_string(body, "model"); m && !m->empty()) return *m;
    if (auto n = opt_string(body, "name"); n && !n->empty()) return *n;
    bad_request("'model' is required", "model");
}

models::model_entry find_model(api_context & ctx, const std::string & name) {
    auto e = ctx.models.catalog().find(name);
    if (!e) {
        if (e.err().code == errc::not_found || e.err().code == errc::invalid_argument)
            throw api_error(404, "model '" + name + "' not found", "model");
        raise(e.err());
    }
    return e.value();
}

std::optional<std::string> apply_model_defaults(api_context & ctx, const std::string & name, json & body) {
    auto e = ctx.models.catalog().find(name);
    if (!e) return std::nullopt;
    if (!e->parameters.empty()) {
        auto it = body.find("options");
        if (it == body.end() || it->is_null()) body["options"] = json::object();
        json & o = body["options"];
        if (o.is_object()) {
            for (auto p = e->parameters.begin(); p != e->parameters.end(); ++p)
                if (!o.contains(p.key())) o[p.key()] = p.value();
        }
    }
    return e->system;
}

acquired_model acquire(api_context & ctx, const std::string & name, std::optional<std::chrono::nanoseconds> keep_alive) {
    find_model(ctx, name);  // 404 in Ollama's words before anything loads
    auto started = steady::now();
    auto e = ctx.models.acquire(name);
    if (!e) raise(e.err());
    acquired_model out{e.value(), steady::now() - started};
    // As in Ollama, a request without keep_alive resets the model to the default.
    auto ka = keep_alive.value_or(ctx.models.options().default_keep_alive);
    if (ka.count() != 0) ctx.models.set_keep_alive(name, ka);
    return out;
}

http_response load_or_unload(api_context & ctx, const std::string & name, std::optional<std::chrono::nanoseconds> keep_alive, json reply) {
    reply["model"] = name;
    reply["done"] = true;
    if (keep_alive && keep_alive->count() == 0) {
        find_model(ctx, name);
        ctx.models.unload(name);
        reply["done_reason"] = "unload";
    } else {
        acquire(ctx, name, keep_alive);
        reply["done_reason"] = "load";
    }
    reply["created_at"] = rfc3339_now();
    return json_response(reply);
}

void unload_if_asked(api_context & ctx, const std::string & name, std::optional<std::chrono::nanoseconds> keep_alive) {
    if (!keep_alive || keep_alive->count() != 0) return;
    try {
        ctx.models.unload(name);
    } catch (const std::exception & e) {
        rc::log::error("ollama", "unload_failed", {{"model", name}, {"what", e.what()}});
    }
}

http_response json_response(const json & body, int status) {
    http_response r;
    r.status = status;
    r.body = dump(body);
    return r;
}

std::string ndjson(const json & j) { return dump(j) + "\n"; }

}  // namespace rc::api::ollama
