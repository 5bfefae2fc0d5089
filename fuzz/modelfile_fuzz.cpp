// The Modelfile parser (apps/rustycage/modelfile.*) and PARAMETER values on arbitrary text.
#include <cstdint>
#include <string>

#include "modelfile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    const std::string text(reinterpret_cast<const char *>(data), size);
    auto mf = rc::cli::parse_modelfile(text);
    if (mf) (void) mf->parameters.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    (void) rc::cli::parse_parameter_value(text);
    nlohmann::ordered_json params = nlohmann::ordered_json::object();
    const auto space = text.find(' ');
    if (space != std::string::npos) (void) rc::cli::add_parameter(params, std::string_view(text).substr(0, space), std::string_view(text).substr(space + 1));
    return 0;
}
