#pragma once
// Drives one submitted request from an HTTP thread: hands each engine event to `on_event` until the
// terminal one, and cancels the request when the client disappears or `on_event` returns false.
#include <functional>

#include "engine/request_channel.h"

namespace rc::api {

// Returns the terminal event (done, error or embedding).
engine::generation_event pump(engine::request_channel & ch, const std::function<bool()> & client_alive,
                              const std::function<bool(const engine::generation_event &)> & on_event);

}  // namespace rc::api
