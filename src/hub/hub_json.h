#pragma once
// Parsers for the Hub's JSON answers: pure functions, no I/O, tolerant of fields the Hub adds later
// and strict about the ones we rely on.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hub/hub_types.h"
#include "util/result.h"

namespace rc::hub {

// GET /api/models/{repo}/tree/{rev}?recursive=true: an array of
// {type: "file"|"directory", path, size, oid, lfs?: {oid, size, pointerSize}}. Files only, in the
// given order; sha256 is the LFS oid (its size is the content's). Errors: unavailable when the shape
// is not a tree listing.
result<std::vector<repo_file>> parse_tree(const nlohmann::json & j);

// GET /api/models?search=...&full=true: an array of {id | modelId, downloads, likes, siblings:
// [{rfilename}]}. Entries without an id are skipped.
result<std::vector<search_hit>> parse_search(const nlohmann::json & j);

// The quantizations named by the GGUF model files among `file_names` (projectors excluded),
// deduplicated, in rc::quant::preference_order().
std::vector<std::string> quants_of(const std::vector<std::string> & file_names);

}  // namespace rc::hub
