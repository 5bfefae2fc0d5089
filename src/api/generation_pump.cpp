#include "api/generation_pump.h"

namespace rc::api {

engine::generation_event pump(engine::request_channel & ch, const std::function<bool()> & client_alive,
                              const std::function<bool(const engine::generation_event &)> & on_event) {
    using namespace std::chrono_literals;
    for (;;) {
        auto ev = ch.pop(100ms);
        if (!ev) {
            if (!ch.cancelled() && client_alive && !client_alive()) ch.cancel();
            continue;  // the engine answers a cancel with a terminal event within one step
        }
        if (ev->kind != engine::generation_event::type::text) return std::move(*ev);
        if (!ch.cancelled() && !on_event(*ev)) ch.cancel();
    }
}

}  // namespace rc::api
