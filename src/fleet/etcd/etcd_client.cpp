#include "fleet/etcd/etcd_client.h"

namespace rc::fleet {

std::string etcd_prefix_end(const std::string & prefix) {
    std::string end = prefix;
    while (!end.empty()) {
        if (static_cast<unsigned char>(end.back()) < 0xff) {
            end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
            return end;
        }
        end.pop_back();
    }
    return std::string(1, '\0');  // every key: etcd's "\0" range end
}

}  // namespace rc::fleet
