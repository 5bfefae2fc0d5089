#include "hub/hub_urls.h"

namespace rc::hub {

namespace {

bool printable(std::string_view s) {
    for (unsigned char c : s)
        if (c < 0x20 || c == 0x7f) return false;
    return true;
}

bool valid_id_part(std::string_view p) {
    if (p.empty() || p.size() > 96) return false;
    for (unsigned char c : p) {
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
        if (!ok) return false;
    }
    auto edge = [](char c) { return c == '.' || c == '-'; };
    if (edge(p.front()) || edge(p.back())) return false;
    return p.find("..") == std::string_view::npos && p.find("--") == std::string_view::npos;
}

}  // namespace

status check_repo_id(std::string_view repo) {
    size_t slash = repo.find('/');
    bool ok = slash != std::string_view::npos && valid_id_part(repo.substr(0, slash)) && valid_id_part(repo.substr(slash + 1));
    if (ok) return {};
    std::string shown = printable(repo) ? std::string(repo) : "(non-printable)";
    return make_error(errc::invalid_argument, "invalid Hugging Face repository id '" + shown +
                                                  "': expected owner/name using letters, digits, '.', '-' and '_'");
}

status check_revision(std::string_view rev) {
    bool ok = !rev.empty() && rev.size() <= 255 && printable(rev) && rev.find("..") == std::string_view::npos;
    if (ok) return {};
    return make_error(errc::invalid_argument, "invalid revision '" + std::string(printable(rev) ? rev : "(non-printable)") + "'");
}

status check_repo_path(std::string_view path) {
    bool ok = !path.empty() && path.size() <= 1024 && printable(path) && path.front() != '/' && path.find('\\') == std::string_view::npos;
    for (size_t start = 0; ok && start <= path.size();) {
        size_t end = path.find('/', start);
        if (end == std::string_view::npos) end = path.size();
        std::string_view seg = path.substr(start, end - start);
        ok = !seg.empty() && seg != "." && seg != "..";
        start = end + 1;
    }
    if (ok) return {};
    return make_error(errc::invalid_argument, "invalid file path in repository: '" +
                                                  std::string(printable(path) ? path : "(non-printable)") + "'");
}

std::string encode_component(std::string_view s) {
    static const char * hex = "0123456789ABCDEF";
    std::string out;
    out.reserve(s.size());
    for (unsigned char c : s) {
        bool unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
        if (unreserved) {
            out += (char) c;
        } else {
            out += '%';
            out += hex[c >> 4];
            out += hex[c & 15];
        }
    }
    return out;
}

std::string encode_path(std::string_view path) {
    std::string out;
    for (size_t start = 0; start <= path.size();) {
        size_t end = path.find('/', start);
        if (end == std::string_view::npos) end = path.size();
        if (start > 0) out += '/';
        out += encode_component(path.substr(start, end - start));
        start = end + 1;
    }
    return out;
}

// Repository ids are validated to safe characters, so they go into URLs as they are.
std::string tree_url(std::string_view endpoint, std::string_view repo, std::string_view revision) {
    return std::string(endpoint) + "/api/models/" + std::string(repo) + "/tree/" + encode_component(revision) + "?recursive=true";
}

std::string resolve_url(std::string_view endpoint, std::string_view repo, std::string_view revision, std::string_view path) {
    return std::string(endpoint) + "/" + std::string(repo) + "/resolve/" + encode_component(revision) + "/" + encode_path(path);
}

std::string search_url(std::string_view endpoint, std::string_view text, int limit) {
    return std::string(endpoint) + "/api/models?search=" + encode_component(text) +
           "&filter=gguf&sort=downloads&direction=-1&limit=" + std::to_string(limit) + "&full=true";
}

}  // namespace rc::hub
