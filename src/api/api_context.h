#pragma once
// What every route handler may use: the model manager and the server's API settings.
#include <chrono>
#include <string>
#include <vector>

#include "models/model_manager.h"

namespace rc::api {

struct api_options {
    int max_tokens_cap = 32768;         // upper bound for max_tokens / num_predict
    int default_max_tokens = -1;        // when a request names none (-1: until stop or context end)
    std::vector<std::string> api_keys;  // empty: no auth
    std::string version = "0.1.0";
};

struct api_context {
    models::model_manager & models;
    api_options opts;
    std::chrono::system_clock::time_point started = std::chrono::system_clock::now();
};

}  // namespace rc::api
