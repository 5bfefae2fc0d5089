#include "fleet/rollout/rollout_artifact.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>
#include <vector>

#include "http/http_client.h"
#include "fleet/host/server_secrets.h"
#include "fleet/rollout/artifact_signature.h"
#include "fleet/rollout/rollout_record.h"
#include "hub/partial_file.h"
#include "util/ascii.h"
#include "util/log.h"
#include "util/sha256.h"

namespace rc::fleet {

namespace {

bool is_hex64(const std::string & s) {
    return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

std::string first_line(const fs::path & p) {
    std::ifstream f(p);
    std::string line;
    std::getline(f, line);
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    return line;
}

// Runs a tool (tar) to completion; its stdout and stderr come back in `out`.
int run_tool(const std::vector<std::string> & args, std::string & out) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&fa, fds[1], STDERR_FILENO);
    posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    std::vector<char *> argv;
    for (const auto & a : args) argv.push_back(const_cast<char *>(a.c_str()));
    argv.push_back(nullptr);
    // tar reads an artifact from the network: it gets no more of the agent's secrets than a server does.
    const child_environment env;
    pid_t pid = 0;
    const int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), env.envp());
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        out = std::string("cannot run ") + args[0];
        return -1;
    }
    char buf[8192];
    for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, size_t(n));
    close(fds[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

// A local file: copied into the partial file (hashed on the way).
status copy_local(const fs::path & from, hub::partial_file & pf) {
    if (auto st = pf.reset(); !st) return st;
    std::ifstream in(from, std::ios::binary);
    if (!in) return make_error(errc::not_found, "the artifact " + from.string() + " cannot be read on this host");
    std::vector<char> buf(1 << 20);
    while (in) {
        in.read(buf.data(), std::streamsize(buf.size()));
        if (in.gcount() > 0)
            if (auto st = pf.append(buf.data(), size_t(in.gcount())); !st) return st;
    }
    if (in.bad()) return make_error(errc::io, "reading " + from.string() + " failed");
    return {};
}

// One HTTP attempt, appending to the partial file from where it stands.
status fetch_http(const std::string & url, hub::partial_file & pf, const std::atomic<bool> * cancel) {
    http::client_request req;  // no token: artifact servers never get the Hub's
    req.url = url;
    if (pf.size() > 0) req.headers.push_back("Range: bytes=" + std::to_string(pf.size()) + "-");
    req.follow_redirects = true;
    req.timeout = std::chrono::milliseconds(0);  // a large artifact on a slow link may take long
    req.connect_timeout = std::chrono::seconds(10);
    req.stall_timeout = std::chrono::seconds(30);
    req.low_speed_bytes = 1024;
    req.low_speed_time = std::chrono::seconds(60);
    status failure;
    http::stream_handlers cb;
    cb.on_head = [&](const http::client_reply & head) {
        if (head.status == 200 && pf.size() > 0) {
            if (auto st = pf.reset(); !st) failure = st;  // the range was ignored: from zero
        }
        return failure.ok();
    };
    cb.on_data = [&](std::string_view d) {
        if (auto st = pf.append(d.data(), d.size()); !st) {
            failure = st;
            return false;
        }
        return true;
    };
    cb.should_stop = [&] { return cancel && cancel->load(); };
    auto r = http::stream(req, cb);
    if (!r.ok()) return r.err();
    if (!failure.ok()) return failure;
    if (r->stopped) return make_error(errc::unavailable, "the download was cancelled");
    if (r->status == 416) {
        if (auto st = pf.reset(); !st) return st;
        return make_error(errc::unavailable, "the server refused the resume range (416); restarting");
    }
    if (!r->ok()) return make_error(errc::unavailable, "HTTP " + std::to_string(r->status) + " from " + url);
    return {};
}

}  // namespace

fs::path versions_dir(const fs::path & data_dir) { return data_dir / "versions"; }

const uint64_t k_resume_keep_max_bytes = uint64_t(4) << 30;

std::string signature_source(const rollout_spec & spec) { return spec.signature.empty() ? spec.artifact + ".sig" : spec.signature; }

std::string signature_refusal(const rollout_spec & spec, const fs::path & trusted_keys, bool allow_unsigned, const std::string & rollout_id) {
    if (trusted_keys.empty()) {
        if (allow_unsigned) {
            rc::log::warn("fleet", "artifact_unverified", {{"rollout", rollout_id}, {"note", "--allow-unsigned-artifacts: the signature is not checked"}});
            return "";
        }
        return "refused: this host has no trusted keys (--trusted-keys), so it runs no artifact; nothing was unpacked";
    }
    auto keys = load_trusted_keys(trusted_keys);
    if (!keys.ok()) return "refused: " + keys.err().message;
    const std::string source = signature_source(spec);
    auto sig = fetch_signature(source);
    if (!sig.ok()) return "refused: the artifact's signature " + source + " cannot be read (" + sig.err().message + "); nothing was unpacked";
    auto who = verify_artifact(keys.value(), spec.sha256, sig.value());
    if (!who.ok()) return "refused: " + who.err().message + "; nothing was unpacked";
    rc::log::info("fleet", "artifact_verified", {{"rollout", rollout_id}, {"key", who.value()}});
    return "";
}

result<std::string> fetch_signature(const std::string & source) {
    constexpr size_t limit = 64 << 10;
    if (source.starts_with("http://") || source.starts_with("https://")) {
        http::client_request req;
        req.url = source;
        req.timeout = std::chrono::seconds(30);
        auto r = http::call(req);
        if (!r.ok()) return r.err();
        if (!r->ok()) return make_error(errc::unavailable, "HTTP " + std::to_string(r->status));
        if (r->body.size() > limit) return make_error(errc::invalid_argument, "larger than 64 KiB");
        return r->body;
    }
    const fs::path p = source.starts_with("file://") ? fs::path(source.substr(7)) : fs::path(source);
    if (!p.is_absolute()) return make_error(errc::invalid_argument, "the signature path must be absolute");
    std::ifstream in(p, std::ios::binary);
    if (!in) return make_error(errc::not_found, "no such file on this host");
    std::string out(limit + 1, '\0');
    in.read(out.data(), std::streamsize(out.size()));
    out.resize(size_t(in.gcount()));
    if (out.size() > limit) return make_error(errc::invalid_argument, "larger than 64 KiB");
    return out;
}

result<fs::path> fetch_artifact(const std::string & source, const std::string & sha256, const fs::path & data_dir, const std::atomic<bool> * cancel) {
    const std::string want = ascii_lower(sha256);
    if (!is_hex64(want)) return make_error(errc::invalid_argument, "--sha256 must be 64 hex digits");
    const bool http = source.starts_with("http://") || source.starts_with("https://");
    fs::path local;
    if (!http) {
        local = source.starts_with("file://") ? fs::path(source.substr(7)) : fs::path(source);
        if (!local.is_absolute()) return make_error(errc::invalid_argument, "the artifact path must be absolute: " + source);
    }
    const fs::path dir = data_dir / "downloads";
    std::error_code ec;
    fs::create_directories(dir, ec);
    const fs::path final_path = dir / (want + ".tar.gz");
    if (fs::exists(final_path)) {  // verified once; checked again, it is cheap next to a wrong build
        auto pf = hub::partial_file::open(final_path);
        if (pf.ok() && pf->hash_existing(cancel).ok() && pf->finish_hex() == want) return final_path;
        fs::remove(final_path, ec);
    }
    // Partial downloads of other artifacts are never resumed now: they only take space.
    for (const auto & e : fs::directory_iterator(dir, ec))
        if (e.path().extension() == ".part" && e.path().filename() != want + ".part") fs::remove(e.path(), ec);
    auto pf = hub::partial_file::open(dir / (want + ".part"));
    if (!pf.ok()) return pf.err();
    if (http && pf->size() > 0)
        if (auto st = pf->hash_existing(cancel); !st) return st.err();
    status last;
    for (int attempt = 0; attempt < 4; ++attempt) {
        last = http ? fetch_http(source, pf.value(), cancel) : copy_local(local, pf.value());
        if (last.ok() || !http || last.err().code != errc::unavailable || (cancel && cancel->load())) break;
        rc::log::warn("fleet", "artifact_download_retry", {{"error", last.err().message}, {"have_bytes", int64_t(pf->size())}});
    }
    if (!last.ok()) {
        // Only an HTTP download cut off in transit is a resume point worth its space; a local copy
        // never resumes, and a write failure (a full disk) would fail the same way again.
        const bool resumable = http && last.err().code == errc::unavailable && pf->size() > 0 && pf->size() <= k_resume_keep_max_bytes;
        if (!resumable) pf->remove();
        return last.err();
    }
    if (auto st = pf->sync(); !st) return st.err();
    const std::string got = pf->finish_hex();
    if (got != want) {
        pf->remove();
        return make_error(errc::data_loss, "sha256 mismatch: the artifact hashes to " + got + ", not " + want + "; it was deleted and nothing was unpacked");
    }
    const fs::path part = pf->path();
    fs::rename(part, final_path, ec);
    if (ec) return make_error(errc::io, "cannot move the artifact into place: " + ec.message());
    return final_path;
}

result<fs::path> unpack_artifact(const fs::path & tarball, const std::string & sha256, const std::string & version, const fs::path & data_dir) {
    const fs::path versions = versions_dir(data_dir);
    const fs::path dest = versions / version;
    const std::string want = ascii_lower(sha256);
    if (first_line(dest / ".artifact-sha256") == want && access((dest / "bin" / "rustycage").c_str(), X_OK) == 0) return dest;
    std::string listing;
    if (run_tool({"tar", "-tzf", tarball.string()}, listing) != 0) return make_error(errc::invalid_argument, "the artifact is not a readable .tar.gz: " + listing.substr(0, 300));
    std::istringstream lines(listing);
    std::string top;
    for (std::string name; std::getline(lines, name);) {
        if (name.empty()) continue;
        if (name[0] == '/' || name == ".." || name.starts_with("../") || name.find("/../") != std::string::npos || name.ends_with("/.."))
            return make_error(errc::invalid_argument, "the artifact has an unsafe member name: " + name);
        const std::string first = name.substr(0, name.find('/'));
        if (top.empty()) top = first;
        else if (first != top) return make_error(errc::invalid_argument, "the artifact has more than one top directory (" + top + ", " + first + ")");
    }
    if (top.empty() || top == ".") return make_error(errc::invalid_argument, "the artifact is empty or has no top directory");
    std::error_code ec;
    fs::create_directories(versions, ec);
    const fs::path staging = versions / (".staging-" + version + "." + std::to_string(getpid()));
    fs::remove_all(staging, ec);
    fs::create_directories(staging, ec);
    if (ec) return make_error(errc::io, "cannot create " + staging.string() + ": " + ec.message());
    std::string out;
    if (run_tool({"tar", "-xzf", tarball.string(), "-C", staging.string(), "--no-same-owner"}, out) != 0) {
        fs::remove_all(staging, ec);
        return make_error(errc::io, "unpacking the artifact failed: " + out.substr(0, 300));
    }
    const fs::path tree = staging / top;
    auto refuse = [&](const std::string & why) -> result<fs::path> {
        fs::remove_all(staging, ec);
        return make_error(errc::invalid_argument, why);
    };
    const std::string said = first_line(tree / "VERSION");
    if (said != version) return refuse("the artifact is version '" + said + "', not " + version);
    if (access((tree / "bin" / "rustycage").c_str(), X_OK) != 0) return refuse("the artifact has no executable bin/rustycage");
    std::ofstream(tree / ".artifact-sha256") << want << "\n";
    if (linked_version(data_dir, "current") == version) return refuse("version " + version + " is current here with another artifact; refusing to replace it in place");
    fs::remove_all(dest, ec);
    fs::rename(tree, dest, ec);
    if (ec) return refuse("cannot move the version into place: " + ec.message());
    fs::remove_all(staging, ec);
    return dest;
}

std::optional<std::string> linked_version(const fs::path & data_dir, const std::string & link) {
    std::error_code ec;
    const fs::path target = fs::read_symlink(versions_dir(data_dir) / link, ec);
    if (ec || target.empty()) return std::nullopt;
    return target.filename().string();
}

status set_version_link(const fs::path & data_dir, const std::string & link, const std::string & version) {
    const fs::path dir = versions_dir(data_dir);
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (version.empty()) {
        fs::remove(dir / link, ec);
        return {};
    }
    const fs::path tmp = dir / ("." + link + ".new");
    fs::remove(tmp, ec);
    fs::create_symlink(version, tmp, ec);
    if (!ec) fs::rename(tmp, dir / link, ec);  // rename(2) replaces the old link atomically
    if (ec) return make_error(errc::io, "cannot switch " + (dir / link).string() + ": " + ec.message());
    return {};
}

std::optional<fs::path> installed_server_binary(const fs::path & data_dir) {
    std::error_code ec;
    const fs::path bin = fs::canonical(versions_dir(data_dir) / "current" / "bin" / "rustycage", ec);
    if (ec || access(bin.c_str(), X_OK) != 0) return std::nullopt;
    return bin;
}

void prune_versions(const fs::path & data_dir, size_t keep) {
    const auto current = linked_version(data_dir, "current"), previous = linked_version(data_dir, "previous");
    std::vector<std::pair<fs::file_time_type, fs::path>> found;
    std::error_code ec;
    for (const auto & e : fs::directory_iterator(versions_dir(data_dir), ec)) {
        const std::string name = e.path().filename().string();
        if (!e.is_directory() || e.is_symlink() || name.starts_with(".") || name == current || name == previous) continue;
        found.emplace_back(e.last_write_time(ec), e.path());
    }
    std::sort(found.begin(), found.end(), [](const auto & a, const auto & b) { return a.first > b.first; });
    for (size_t i = keep; i < found.size(); ++i) fs::remove_all(found[i].second, ec);
}

}  // namespace rc::fleet
