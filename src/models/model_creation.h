#pragma once
// Making a store model: the one implementation behind `rustycage create` and `POST /api/create`.
// A creation is a transaction: the new model is built from blobs in the store and checked beside
// the model that holds the name now (commit_checked_model), which keeps serving until the new one
// has passed; a refused creation changes no existing model.
//
// A caller first builds the new model's manifest from one source — another model
// (`base_from_model`), GGUF files to copy in (`base_from_files`), or blobs a client uploaded —
// then lays its settings over it and hands it to `create_model`.
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "models/local_catalog.h"
#include "store/manifest.h"
#include "store/model_name.h"
#include "util/result.h"

namespace rc::models {

// What a long step is doing ("importing x.gguf (1.2 GiB)", "checking model"), for a progress line.
using creation_progress = std::function<void(const std::string & step)>;

// A model named `from` as the base of a new one: a store model's manifest (its blobs are shared,
// its template, system prompt and parameters kept until overridden), or a loose GGUF file's parts
// copied into the store. Errors: not_found (naming the models directory), those of the import.
result<store::manifest> base_from_model(const local_catalog & catalog, const std::string & from, const creation_progress & progress = nullptr);

// GGUF files (the parts of one model, in order) copied into the blob store. Each is checked to be a
// GGUF before anything is copied. Errors: invalid_argument naming the file, io.
result<store::manifest> base_from_files(store::model_store & st, const std::vector<std::filesystem::path> & files,
                                        const creation_progress & progress = nullptr);

// The settings (template, system prompt, parameters) within the store's limits, to be checked before
// anything is imported. Errors: invalid_argument naming the setting.
status check_settings(const store::manifest & settings);

// `m` made ready to be the store model `name` — named, marked as created, unchecked — and checked
// before anything is written: a model layer, the template and system prompt within the store's
// limits, valid parameters (check_settings), a manifest the store can write. An API calls it first for a 400;
// create_model calls it again. Errors: invalid_argument naming what is wrong.
status prepare_new_model(const store::model_name & name, store::manifest & m);

// `m` (its layers and settings, from one of the bases above) as the store model `name`: prepared,
// the GGUF facts read from its first model layer, checked, and committed only if the check passes.
// Errors: invalid_argument (refused by prepare_new_model, not a readable GGUF, refused by the check:
// the message says why), io.
status create_model(store::model_store & st, const store::model_name & name, store::manifest m, const creation_progress & progress = nullptr);

}  // namespace rc::models
