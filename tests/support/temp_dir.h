#pragma once
// The one temp-dir class of the tests: a fresh directory under the system temp dir (honouring
// $TMPDIR), named rc-<tag>-XXXXXX, removed with everything in it on destruction.
#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace rc::test {

class temp_dir {
  public:
    explicit temp_dir(const std::string & tag) {
        std::string tmpl = (std::filesystem::temp_directory_path() / ("rc-" + tag + "-XXXXXX")).string();
        if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed under " + std::filesystem::temp_directory_path().string());
        path_ = tmpl;
    }
    ~temp_dir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    temp_dir(const temp_dir &) = delete;
    temp_dir & operator=(const temp_dir &) = delete;
    const std::filesystem::path & path() const { return path_; }

  private:
    std::filesystem::path path_;
};

}  // namespace rc::test
