// model_name::parse on arbitrary text: never crashes, and a name it accepts is canonical (parsing
// its full form gives the same name) and maps to a path inside <root>/manifests.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "store/model_name.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    const std::string text(reinterpret_cast<const char *>(data), size);
    auto name = rc::store::model_name::parse(text);
    if (!name) return 0;
    auto again = rc::store::model_name::parse(name->full());
    if (!again || !(*again == *name)) std::abort();  // full() must read back as the same name
    auto shown = rc::store::model_name::parse(name->display());
    if (!shown || !(*shown == *name)) std::abort();  // so must what clients are shown
    const auto root = std::filesystem::path("/store");
    const auto path = name->manifest_path(root);
    if (path.lexically_normal() != path || path.lexically_relative(root / "manifests").empty()) std::abort();
    for (const auto & part : path.lexically_relative(root / "manifests")) {
        if (part == ".." || part == ".") std::abort();
    }
    return 0;
}
