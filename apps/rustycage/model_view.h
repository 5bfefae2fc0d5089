#pragma once
// What `list` and `show` say about a model of the catalog, whether it lives in the store or is a
// loose *.gguf file of the models directory.
#include <chrono>
#include <string>

#include "llama/gguf_metadata.h"
#include "models/local_catalog.h"

namespace rc::cli {

// The model's digest as hex: a store model's first blob sha256; for a loose file a hash of its path,
// size and mtime (the same value /api/tags reports), since hashing a multi-GB file per listing is
// too slow.
std::string digest_hex(const models::model_entry & e);

// The quantization: the manifest's for store models, else read from the GGUF header (`md` when the
// caller already has it). "unknown" when neither says.
std::string quantization_of(const models::model_entry & e, const llama::gguf_metadata * md = nullptr);

// "ready", "quarantined" or "failed: <reason>" (the reason cut to `max_reason` characters).
std::string status_text(const models::model_entry & e, size_t max_reason = 40);

// "store" or "file".
inline const char * origin_of(const models::model_entry & e) { return e.from_store ? "store" : "file"; }

// RFC 3339 in UTC with milliseconds.
std::string iso_time(std::chrono::system_clock::time_point t);

}  // namespace rc::cli
