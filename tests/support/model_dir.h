#pragma once
// A temporary models directory holding links to generated test models (tests/generate_models.cmake),
// for tests that build a model_manager or an api_context in process. Removed when destroyed.
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "support/temp_dir.h"
#include "test_models.h"

namespace rc::test {

class model_dir {
  public:
    // {served name, preset}: "demo" → tiny-chat.gguf is served as "demo".
    explicit model_dir(const std::vector<std::pair<std::string, std::string>> & models) : dir_("models") {
        for (const auto & [name, preset] : models) std::filesystem::create_symlink(model_path(preset), dir_.path() / (name + ".gguf"));
    }
    model_dir(const model_dir &) = delete;
    model_dir & operator=(const model_dir &) = delete;

    const std::filesystem::path & path() const { return dir_.path(); }

  private:
    temp_dir dir_;
};

}  // namespace rc::test
