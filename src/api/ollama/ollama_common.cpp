#include "api/ollama/ollama_common.h"

#include <ctime>

#include "http/api_error.h"
#include "api/generation_session.h"
#include "util/log.h"
#include "util/safe_quote.h"

namespace rc::api::ollama {
using namespace rc::http;  // written against the HTTP shell (src/http)

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
            throw api_error(404, "model " + safe_quote(name, max_echoed_name) + " not found", "model");
        raise(e.err(), "model");
    }
    return std::move(e.value());
}

std::optional<std::string> apply_model_defaults(const models::model_entry & entry, json & body) {
    if (!entry.parameters.empty()) {
        auto it = body.find("options");
        if (it == body.end() || it->is_null()) body["options"] = json::object();
        json & o = body["options"];
        if (o.is_object()) {
            for (auto p = entry.parameters.begin(); p != entry.parameters.end(); ++p)
                if (!o.contains(p.key())) o[p.key()] = p.value();
        }
    }
    return entry.system;
}

std::chrono::nanoseconds keep_alive_or_default(const api_context & ctx, std::optional<std::chrono::nanoseconds> keep_alive) {
    return keep_alive.value_or(ctx.models.options().default_keep_alive);
}

http_response load_or_unload(api_context & ctx, const models::model_entry & entry, const std::string & name,
                             std::optional<std::chrono::nanoseconds> keep_alive, json reply) {
    reply["model"] = name;
    reply["done"] = true;
    if (keep_alive && keep_alive->count() == 0) {
        ctx.models.unload(entry.name);
        reply["done_reason"] = "unload";
    } else {
        lease_model(ctx, entry, keep_alive_or_default(ctx, keep_alive));  // loaded, then idle: its keep_alive starts now
        reply["done_reason"] = "load";
    }
    reply["created_at"] = rfc3339_now();
    return json_response(reply);
}

http_response json_response(const json & body, int status) {
    http_response r;
    r.status = status;
    r.body = dump(body);
    return r;
}

std::string ndjson(const json & j) { return dump(j) + "\n"; }

}  // namespace rc::api::ollama
