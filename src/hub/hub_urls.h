#pragma once
// Hub URLs, built only from validated repository ids and percent-encoded components, so no user input
// can change which host or route a request goes to.
#include <string>
#include <string_view>

#include "util/result.h"

namespace rc::hub {

// "owner/name", each part 1–96 of [A-Za-z0-9._-], not starting or ending with '.' or '-', without
// ".." or "--" (the Hub's own rules). Errors are invalid_argument naming the id.
status check_repo_id(std::string_view repo);
inline bool is_valid_repo_id(std::string_view repo) { return check_repo_id(repo).ok(); }

// A branch, tag or commit ("main", "refs/pr/1", a sha): 1–255 printable characters without "..".
status check_revision(std::string_view revision);

// A file path inside a repo: relative, '/'-separated, no empty, "." or ".." segments, printable.
status check_repo_path(std::string_view path);

// RFC 3986 percent-encoding of everything but unreserved characters (so '/' becomes %2F).
std::string encode_component(std::string_view s);
// encode_component() per '/'-separated segment, keeping the slashes.
std::string encode_path(std::string_view path);

// The URLs; arguments must have passed the checks above.
std::string tree_url(std::string_view endpoint, std::string_view repo, std::string_view revision);
std::string resolve_url(std::string_view endpoint, std::string_view repo, std::string_view revision, std::string_view path);
std::string search_url(std::string_view endpoint, std::string_view text, int limit);

}  // namespace rc::hub
