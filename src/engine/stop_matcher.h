#pragma once
// Turns the stream of detokenized pieces into visible text, holding back whatever might still
// become a stop string or is an incomplete UTF-8 sequence. Pure logic, no llama.cpp.
#include <string>
#include <string_view>
#include <vector>

namespace rc::engine {

class stop_matcher {
  public:
    explicit stop_matcher(std::vector<std::string> stops);

    struct step {
        std::string visible;   // text now safe to emit
        bool stopped = false;  // a stop string matched; nothing after it is emitted
        std::string stop_word;
    };

    step feed(std::string_view piece);
    // End of generation: release what was held back (nothing, if stopped).
    std::string flush();

  private:
    std::vector<std::string> stops_;
    std::string pending_;  // held-back text
    bool stopped_ = false;
};

}  // namespace rc::engine
