#include "util/result.h"

namespace rc {

const char * errc_name(errc code) {
    switch (code) {
        case errc::invalid_argument: return "invalid_argument";
        case errc::not_found: return "not_found";
        case errc::unavailable: return "unavailable";
        case errc::context_overflow: return "context_overflow";
        case errc::unauthenticated: return "unauthenticated";
        case errc::permission_denied: return "permission_denied";
        case errc::data_loss: return "data_loss";
        case errc::io: return "io";
        case errc::internal: return "internal";
    }
    return "internal";
}

errc errc_from_name(std::string_view name) {
    for (errc c : {errc::invalid_argument, errc::not_found, errc::unavailable, errc::context_overflow, errc::unauthenticated,
                   errc::permission_denied, errc::data_loss, errc::io}) {
        if (name == errc_name(c)) return c;
    }
    return errc::internal;
}

}  // namespace rc
