// The Hugging Face Hub answers we parse (hub/hub_json): any JSON, any shape.
#include <cstdint>
#include <string>
#include <vector>

#include "hub/hub_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    auto j = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return 0;
    if (auto tree = rc::hub::parse_tree(j)) {
        std::vector<std::string> names;
        for (const auto & f : *tree) names.push_back(f.path);
        (void) rc::hub::quants_of(names);
    }
    (void) rc::hub::parse_search(j);
    return 0;
}
