#include "fleet/etcd/etcd_client.h"

#include <thread>

namespace rc::fleet {

void pause_unless_stopped(const stop_fn & should_stop, std::chrono::milliseconds d) {
    const auto until = std::chrono::steady_clock::now() + d;
    while (!should_stop() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

bool put_until_taken(etcd_client & etcd, const std::string & key, const std::string & value, const stop_fn & should_stop,
                     std::chrono::milliseconds poll) {
    for (;;) {
        if (etcd.put(key, value).ok()) return true;
        if (should_stop()) return false;
        pause_unless_stopped(should_stop, poll);
    }
}

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
