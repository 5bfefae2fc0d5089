#pragma once
// The models a server can serve from its models directory: models in the store (named manifests
// over content-addressed blobs, src/store) and loose `*.gguf` files, servable under their file name
// without `.gguf`. A store model is servable once it passed its quarantine check; the others are
// listed with their status but never served.
// Thread-safe: every call reads the directory afresh, so a pull or a file dropped in is seen at once.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "store/model_store.h"
#include "util/result.h"

namespace rc::models {

struct model_entry {
    std::string name;                          // served name: "demo" (loose file), "demo:latest", "hf.co/o/r:Q4_K_M"
    std::filesystem::path path;                // the (first) model file
    std::vector<std::filesystem::path> parts;  // every model file in order (a split GGUF has several)
    uint64_t size_bytes = 0;
    std::chrono::system_clock::time_point modified;

    bool from_store = false;
    // Loose files are always ready; store models are ready once their quarantine check passed.
    store::model_status status = store::model_status::ready;
    std::string status_reason;
    std::string digest;            // store models: "sha256-<hex>" of the first model blob
    std::string quantization;      // store models: from the manifest; loose files: read from the GGUF elsewhere
    std::optional<std::string> template_text;  // store models: overrides the GGUF's chat template
    std::optional<std::string> system;         // store models: default system prompt
    nlohmann::ordered_json parameters = nlohmann::ordered_json::object();  // Ollama option defaults

    bool servable() const { return status == store::model_status::ready; }
    std::vector<std::string> part_strings() const;
};

// Names of loose files: no path separators, no leading dot, printable ASCII, <= 200 chars.
bool is_valid_model_name(const std::string & name);

class local_catalog {
  public:
    explicit local_catalog(std::filesystem::path dir) : dir_(dir), store_(std::make_shared<store::model_store>(std::move(dir))) {}
    const std::filesystem::path & dir() const { return dir_; }
    store::model_store & store() const { return *store_; }

    // Every model, servable or not, sorted by name (store models first when names tie).
    std::vector<model_entry> list() const;
    // Accepts store names ("demo", "demo:latest", "hf.co/owner/repo:Q8_0"), loose file names
    // ("demo", "demo.gguf") — a store model wins over a loose file of the same name. Errors:
    // invalid_argument (a name that could escape the directory), not_found.
    result<model_entry> find(const std::string & name) const;

  private:
    std::filesystem::path dir_;
    std::shared_ptr<store::model_store> store_;
};

}  // namespace rc::models
