#include "model_view.h"

#include "cli_common.h"
#include "store/timestamps.h"
#include "util/sha256.h"

namespace rc::cli {

std::string digest_hex(const models::model_entry & e) {
    if (!e.digest.empty()) return e.digest.substr(e.digest.find('-') + 1);
    rc::sha256 h;
    h.feed(e.path.string());
    h.feed_value(e.size_bytes);
    h.feed_value(static_cast<int64_t>(e.modified.time_since_epoch().count()));
    return to_hex(h.finish());
}

std::string quantization_of(const models::model_entry & e, const llama::gguf_metadata * md) {
    if (!e.quantization.empty()) return e.quantization;
    if (md) return llama::quantization_level(*md);
    auto read = llama::read_gguf_metadata(e.path.string(), 0);
    return read ? llama::quantization_level(read.value()) : "unknown";
}

std::string status_text(const models::model_entry & e, size_t max_reason) {
    if (e.status != store::model_status::failed || e.status_reason.empty()) return std::string(store::to_string(e.status));
    return "failed: " + shorten(e.status_reason, max_reason);
}

std::string iso_time(std::chrono::system_clock::time_point t) { return store::format_rfc3339(t); }

}  // namespace rc::cli
