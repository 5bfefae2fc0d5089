#pragma once
// Secrets out of text that leaves the process: the server output an agent keeps as evidence and
// forwards to its log, incident reasons and evidence (docs/SECURITY.md "The fleet"). Replaces with
// "[redacted]": bearer tokens and Authorization values; values of key=, token=, password=, secret=
// (and their JSON and flag spellings: "api_key": "…", --api-key …); GitHub and Hugging Face tokens;
// the body of a PEM private key.
#include <string>
#include <string_view>
#include <vector>

namespace rc {

std::string scrub_secrets(std::string_view line);

// Line by line, keeping state across lines: every line inside a PEM private key block is redacted.
class secret_scrubber {
  public:
    std::string line(std::string_view text);

  private:
    bool in_private_key_ = false;
};

std::vector<std::string> scrub_lines(const std::vector<std::string> & lines);

}  // namespace rc
