#pragma once
// A temporary models directory holding links to generated test models (tests/generate_models.cmake),
// for tests that build a model_manager or an api_context in process. Removed when destroyed.
#include <unistd.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "test_models.h"

namespace rc::test {

class model_dir {
  public:
    // {served name, preset}: "demo" → tiny-chat.gguf is served as "demo".
    explicit model_dir(const std::vector<std::pair<std::string, std::string>> & models) {
        static int counter = 0;
        dir_ = std::filesystem::temp_directory_path() / ("rc-models-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
        std::filesystem::create_directories(dir_);
        for (const auto & [name, preset] : models) std::filesystem::create_symlink(model_path(preset), dir_ / (name + ".gguf"));
    }
    ~model_dir() {
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }
    model_dir(const model_dir &) = delete;
    model_dir & operator=(const model_dir &) = delete;

    const std::filesystem::path & path() const { return dir_; }

  private:
    std::filesystem::path dir_;
};

}  // namespace rc::test
