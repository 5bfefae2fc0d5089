#include "hub/hub_client.h"

#include <algorithm>

#include "hub/hub_json.h"
#include "hub/hub_urls.h"

namespace rc::hub {

namespace {
// Far more than any real repository needs; stops a misbehaving server from paging forever.
constexpr int max_tree_pages = 1000;
}  // namespace

hub_client::hub_client(hub_config cfg) : http_(std::move(cfg)) {}

result<std::vector<repo_file>> hub_client::list_files(const std::string & repo, const std::string & revision) const {
    if (auto st = check_repo_id(repo); !st) return st.err();
    if (auto st = check_revision(revision); !st) return st.err();
    const std::string what = "repository " + repo + (revision == "main" ? "" : " at revision " + revision);

    std::vector<repo_file> files;
    std::string url = tree_url(config().endpoint, repo, revision);
    for (int page = 0; !url.empty(); ++page) {
        if (page == max_tree_pages) return make_error(errc::unavailable, "the Hub's listing of " + what + " does not end");
        std::string next;
        auto j = http_.get_json(url, what, &next);
        if (!j.ok()) return j.err();
        auto parsed = parse_tree(j.value());
        if (!parsed.ok()) return parsed.err();
        files.insert(files.end(), parsed->begin(), parsed->end());
        // Follow pages only on the Hub itself: the request carries the token.
        if (!next.empty() && !next.starts_with(config().endpoint + "/"))
            return make_error(errc::unavailable, "the Hub's listing of " + what + " points to another host");
        url = std::move(next);
    }
    return files;
}

result<std::vector<search_hit>> hub_client::search(const std::string & text, int limit) const {
    limit = std::clamp(limit, 1, 1000);
    auto j = http_.get_json(search_url(config().endpoint, text, limit), "search '" + text + "'");
    if (!j.ok()) return j.err();
    return parse_search(j.value());
}

}  // namespace rc::hub
