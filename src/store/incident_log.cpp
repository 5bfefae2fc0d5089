#include "store/incident_log.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <random>
#include <sstream>

#include "store/file_io.h"
#include "util/small_file.h"

namespace rc::store {

namespace {

using json = nlohmann::ordered_json;

std::string random_hex8() {
    thread_local std::mt19937 rng(std::random_device{}());
    static constexpr char hex[] = "0123456789abcdef";
    uint32_t v = rng();
    std::string out(8, '0');
    for (int i = 7; i >= 0; --i, v >>= 4) out[static_cast<size_t>(i)] = hex[v & 15];
    return out;
}

std::optional<incident> parse_line(const std::string & line) {
    json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) return std::nullopt;
    auto str = [&](const char * key) -> std::optional<std::string> {
        auto it = j.find(key);
        if (it == j.end() || !it->is_string()) return std::nullopt;
        return it->get<std::string>();
    };
    auto id = str("id"), time = str("time");
    if (!id || !time) return std::nullopt;
    auto t = parse_rfc3339(*time);
    if (!t) return std::nullopt;
    incident inc{*id, *t, str("kind").value_or(""), str("model").value_or(""), str("reason").value_or(""), json::object()};
    if (auto it = j.find("details"); it != j.end()) inc.details = *it;
    return inc;
}

}  // namespace

result<incident> incident_log::record(std::string kind, std::string model, std::string reason, json details) {
    const sys_time t = std::chrono::system_clock::now();
    incident inc{"inc-" + format_compact(t) + "-" + random_hex8(), t, std::move(kind), std::move(model), std::move(reason),
                 std::move(details)};
    json j{{"id", inc.id}, {"time", format_rfc3339(t)}, {"kind", inc.kind}, {"model", inc.model}, {"reason", inc.reason},
           {"details", inc.details}};
    // Invalid UTF-8 in a reason (a file name, a client's text) must not make the record unwritable.
    std::string line = j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";

    std::lock_guard<std::mutex> lock(mu_);
    if (auto st = detail::make_dirs(file_.parent_path()); !st) return st.err();
    detail::unique_fd fd(::open(file_.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644));
    if (!fd) return detail::io_error("cannot open", file_, errno);
    while (::flock(fd.get(), LOCK_EX) != 0) {
        if (errno != EINTR) return detail::io_error("cannot lock", file_, errno);
    }
    // A crash mid-append leaves a line without its newline; start ours on a fresh line so the torn
    // one stays a single unparsable line instead of corrupting this record too.
    struct stat st {};
    if (::fstat(fd.get(), &st) == 0 && st.st_size > 0) {
        char last = '\n';
        if (::pread(fd.get(), &last, 1, st.st_size - 1) == 1 && last != '\n') line.insert(line.begin(), '\n');
    }
    if (auto s = detail::write_all(fd.get(), line.data(), line.size(), file_); !s) return s.err();
    if (auto s = detail::fsync_fd(fd.get(), file_); !s) return s.err();
    return inc;  // closing the descriptor releases the flock
}

std::vector<incident> incident_log::list(size_t limit, const std::optional<std::string> & model) const {
    std::vector<incident> out;
    auto text = rc::read_small_file(file_, size_t(1) << 30);
    if (!text) return out;
    std::vector<incident> all;
    std::istringstream in(text.value());
    for (std::string line; std::getline(in, line);) {
        if (auto inc = parse_line(line); inc && (!model || inc->model == *model)) all.push_back(std::move(*inc));
    }
    for (auto it = all.rbegin(); it != all.rend() && out.size() < limit; ++it) out.push_back(std::move(*it));
    return out;
}

}  // namespace rc::store
