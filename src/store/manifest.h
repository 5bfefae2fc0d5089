#pragma once
// One model's manifest: which blobs make it (in order), how to run it (template, system prompt,
// Ollama-style parameters), what it is (facts from its GGUF header), where it came from, and
// whether it has passed the quarantine check. Stored as JSON at <root>/manifests/<host>/<ns>/<model>/<tag>.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "store/digest.h"
#include "store/timestamps.h"
#include "util/result.h"

namespace rc::store {

enum class layer_kind { model, projector, adapter };
enum class source_kind { hf, create, copy, import };
enum class model_status {
    quarantined,  // stored but not yet checked: not servable
    ready,
    failed,       // the check refused it; status_reason says why
};

std::string_view to_string(layer_kind k);
std::string_view to_string(source_kind k);
std::string_view to_string(model_status s);
std::optional<model_status> parse_model_status(std::string_view s);

// A layer's filename is the original file's bare name (at most 255 bytes, no '/', '\\', control
// characters, "." or ".."), so it can never be misused as a path.
bool is_plain_filename(std::string_view f);

struct layer {
    layer_kind kind = layer_kind::model;
    blob_digest digest;
    uint64_t size = 0;
    std::string filename;  // the file's original name (informational, optional; never used as a path here)
};

struct model_source {
    source_kind kind = source_kind::import;
    std::string repo;      // hf: owner/repo; copy: the source model's full name
    std::string revision;  // hf: the commit the files came from
    std::vector<std::string> files;
};

struct manifest {
    static constexpr int schema_version = 1;

    std::string name;           // model_name::full()
    std::vector<layer> layers;  // several "model" layers are one split GGUF, in order
    std::optional<std::string> template_text;
    std::optional<std::string> system;
    nlohmann::ordered_json parameters = nlohmann::ordered_json::object();  // Ollama option names
    std::string quantization;
    std::optional<int64_t> file_type;
    std::string architecture;
    std::optional<uint64_t> parameter_count;
    std::optional<uint64_t> context_length;
    model_source source;
    model_status status = model_status::quarantined;
    std::string status_reason;
    std::optional<sys_time> checked_at;
    sys_time created_at{};

    const layer * first_model_layer() const;
    uint64_t total_size() const;
};

// What a manifest may hold. A client controls the template, system prompt, parameters and layer
// file names of a create, so these bound what it can make the store write, and keep every manifest
// this build writes well inside what it reads back (max_read_bytes).
struct manifest_limits {
    static constexpr size_t max_template_bytes = 256u << 10;
    static constexpr size_t max_system_bytes = 256u << 10;
    static constexpr size_t max_parameters = 64;             // keys of `parameters`
    static constexpr size_t max_parameter_items = 64;        // elements of one list value (`stop`)
    static constexpr size_t max_parameter_string_bytes = 4096;
    static constexpr size_t max_layers = 256;
    static constexpr size_t max_bytes = 1u << 20;            // a whole serialized manifest, as written
    static constexpr size_t max_read_bytes = 4u << 20;       // larger files are garbage (or from a buggy build)
    static constexpr size_t max_read_depth = 16;             // JSON nesting accepted when reading
};

nlohmann::ordered_json to_json(const manifest & m);
std::string serialize(const manifest & m);  // compact JSON with a trailing newline

// `parameters` as a create may set them: a flat object of Ollama option names ([A-Za-z0-9_]+) to a
// string, number or boolean, or a list of those (`stop`), within manifest_limits. Errors:
// invalid_argument naming the key ("parameters.stop: ...").
status validate_parameters(const nlohmann::ordered_json & params);

// Whether the store may write `m`: the limits above, plain layer file names, and a serialized form
// that parse_manifest() reads back. Errors: invalid_argument naming the field. put() calls it, so
// nothing it writes can later be unreadable; callers taking input from a client call it first for
// a 400 before anything is stored.
status check_writable(const manifest & m);

// Strict: missing required fields, wrong types, unknown enum values, invalid digests or names and
// a newer schema version are errc::invalid_argument with the field named. Unknown extra fields are
// ignored, so an older build can read what a newer one added without a version bump.
result<manifest> parse_manifest(std::string_view text);
result<manifest> manifest_from_json(const nlohmann::ordered_json & j);

// Fills architecture, context_length, parameter_count, file_type and quantization from the GGUF
// header at `path` (the first model layer's blob). Errors: those of llama::read_gguf_metadata.
status fill_from_gguf(manifest & m, const std::filesystem::path & path);

}  // namespace rc::store
