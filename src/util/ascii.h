#pragma once
// ASCII text rules the protocols we speak use (HTTP header names, hex digests, file names on the Hub):
// case folding and whitespace trimming of ASCII only, whatever the C locale says.
#include <string>
#include <string_view>

namespace rc {

// `s` with A-Z folded to a-z; every other byte as it was.
std::string ascii_lower(std::string_view s);
// Equal when folded to lower case (HTTP header names).
bool iequals(std::string_view a, std::string_view b);
// `s` without leading and trailing spaces, tabs, CRs and LFs.
std::string_view trim(std::string_view s);

}  // namespace rc
