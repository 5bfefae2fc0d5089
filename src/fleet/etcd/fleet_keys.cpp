#include "fleet/etcd/fleet_keys.h"

#include <cctype>

namespace rc::fleet {

std::string fleet_keys::tail(const std::string & key, const std::string & dir) {
    if (!key.starts_with(dir)) return {};
    std::string rest = key.substr(dir.size());
    return rest.find('/') == std::string::npos ? rest : std::string();
}

std::pair<std::string, std::string> fleet_keys::pair_under(const std::string & key, const std::string & dir) {
    if (!key.starts_with(dir)) return {};
    const std::string rest = key.substr(dir.size());
    const size_t slash = rest.find('/');
    if (slash == 0 || slash == std::string::npos || slash + 1 == rest.size() || rest.find('/', slash + 1) != std::string::npos) return {};
    return {rest.substr(0, slash), rest.substr(slash + 1)};
}

bool valid_host_id(const std::string & id) {
    if (id.empty() || id.size() > 63 || id[0] == '.' || id[0] == '-') return false;
    for (char c : id)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') return false;
    return true;
}

bool valid_fleet_prefix(const std::string & prefix) {
    if (prefix.empty() || prefix.back() != '/') return false;
    for (char c : prefix)
        if (c <= ' ' || c > '~') return false;
    return true;
}

}  // namespace rc::fleet
