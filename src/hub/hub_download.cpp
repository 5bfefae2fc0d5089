// hub_client::download: one file, resumable, verified. See hub_client.h for the contract.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <optional>
#include <random>
#include <thread>

#include "hub/hub_client.h"
#include "hub/hub_errors.h"
#include "hub/hub_urls.h"
#include "hub/partial_file.h"
#include "hub/retry_policy.h"
#include "util/ascii.h"
#include "util/log.h"

namespace rc::hub {

namespace {

using clock = std::chrono::steady_clock;
constexpr auto progress_interval = std::chrono::milliseconds(100);
// Restarts (ignored ranges, 416s, a stale partial) before giving up; each is a fresh full download,
// so more than a couple means the server is confused, not that another try would help.
constexpr int max_rounds = 3;

// The first byte of "bytes 100-999/1000"; nullopt when it is not that shape.
std::optional<uint64_t> content_range_start(std::string_view v) {
    if (!v.starts_with("bytes ")) return std::nullopt;
    v.remove_prefix(6);
    uint64_t n = 0;
    size_t i = 0;
    for (; i < v.size() && v[i] >= '0' && v[i] <= '9'; ++i) n = n * 10 + uint64_t(v[i] - '0');
    if (i == 0 || i == v.size() || v[i] != '-') return std::nullopt;
    return n;
}

// What failed about one attempt, for deciding whether to make another.
struct attempt_failure {
    bool retryable = false;
    std::string reason;                       // short, for progress lines
    std::optional<milliseconds> retry_after;  // the server's Retry-After, when it sent a usable one
};

// The text after "GET <url> failed: " in an http_client error: curl's own words.
std::string curl_detail(const std::string & message) {
    const std::string marker = " failed: ";
    auto at = message.find(marker);
    return at == std::string::npos ? message : message.substr(at + marker.size());
}

class download_job {
  public:
    download_job(const http_client & http, const std::string & repo, const std::string & revision, const repo_file & file,
                 partial_file & pf, const progress_fn & progress, const std::atomic<bool> * cancel, const retry_fn & on_retry)
        : http_(http), url_(resolve_url(http.config().endpoint, repo, revision, file.path)),
          what_("file " + file.path + " of repository " + repo), file_(file), pf_(pf), progress_(progress), cancel_(cancel),
          on_retry_(on_retry) {}

    result<download_report> run() {
        download_report & rep = report_;
        if (pf_.size() > file_.size) {
            log::warn("hub", "download_restart", {{"file", file_.path}, {"reason", "partial larger than the file"}});
            if (auto st = pf_.reset(); !st) return st.err();
        }
        if (pf_.size() > 0) {
            if (auto st = pf_.hash_existing(cancel_); !st) return st.err();
        }
        rep.resumed_from = pf_.size();
        bool fetched = false;
        for (int round = 0; round < max_rounds; ++round) {
            if (pf_.size() < file_.size) {
                auto s = transfer_with_retries();
                if (!s.ok()) return s.err();
                fetched = true;
                if (s.value() == step::restart) {
                    if (auto st = pf_.reset(); !st) return st.err();
                    rep.resumed_from = 0;
                    continue;
                }
            }
            if (pf_.size() != file_.size) {
                // The transfer ended cleanly but short: the server's file is not the one listed.
                uint64_t got = pf_.size();
                pf_.remove();
                return make_error(errc::data_loss, "size mismatch for " + what_ + ": expected " + std::to_string(file_.size) +
                                                    " bytes, got " + std::to_string(got) + "; the partial download was deleted");
            }
            std::string digest = pf_.finish_hex();
            if (!file_.sha256.empty() && digest != ascii_lower(file_.sha256)) {
                if (!fetched) {
                    // Every byte came from an earlier attempt, which may have been cut by a crash: one fresh try.
                    log::warn("hub", "download_restart", {{"file", file_.path}, {"reason", "stale partial does not verify"}});
                    if (auto st = pf_.reset(); !st) return st.err();
                    rep.resumed_from = 0;
                    continue;
                }
                pf_.remove();
                return make_error(errc::data_loss, "sha256 mismatch for " + what_ + ": expected " + ascii_lower(file_.sha256) + ", got " + digest +
                                                    "; the partial download was deleted");
            }
            if (auto st = pf_.sync(); !st) return st.err();
            if (progress_) progress_(pf_.size(), file_.size);
            rep.sha256 = std::move(digest);
            rep.size = pf_.size();
            rep.transferred = transferred_;
            rep.attempts = attempts_;
            log::info("hub", "download_done", {{"file", file_.path}, {"bytes", rep.size}, {"resumed_from", rep.resumed_from},
                                               {"transferred", rep.transferred}, {"attempts", rep.attempts}});
            return rep;
        }
        return make_error(errc::unavailable, "gave up downloading " + what_ + " after " + std::to_string(max_rounds) + " restarts");
    }

  private:
    enum class step { done, restart };

    bool cancelled() const { return cancel_ && cancel_->load(); }

    void report() {
        if (!progress_) return;
        auto now = clock::now();
        if (now - last_progress_ < progress_interval) return;
        last_progress_ = now;
        progress_(pf_.size(), file_.size);
    }

    std::string position() const { return std::to_string(pf_.size()) + " of " + std::to_string(file_.size) + " bytes"; }

    result<step> cancelled_error() const {
        return make_error(errc::unavailable, "download of " + what_ + " cancelled at " + position() + "; the partial file is kept for resuming");
    }

    // Waits `d` unless cancelled meanwhile (polled every 50 ms); false when cancelled.
    bool wait(milliseconds d) const {
        const auto until = clock::now() + d;
        while (!cancelled()) {
            const auto now = clock::now();
            if (now >= until) return true;
            std::this_thread::sleep_for(std::min<clock::duration>(until - now, std::chrono::milliseconds(50)));
        }
        return false;
    }

    // transfer(), again after each failure worth retrying, until it succeeds, fails for good, the
    // attempts in a row without new bytes run out, or the download is cancelled.
    result<step> transfer_with_retries() {
        const retry_settings & rs = http_.config().retry;
        const int max_attempts = std::max(1, rs.max_attempts);
        int failures = 0;  // attempts in a row that brought no new byte
        for (;;) {
            attempt_failure why;
            const uint64_t before = transferred_;
            ++attempts_;
            auto s = transfer(why);
            if (s.ok() || !why.retryable) return s;
            if (cancelled()) return cancelled_error();
            failures = transferred_ > before ? 1 : failures + 1;
            if (failures >= max_attempts) {
                std::string kept = pf_.size() > 0 ? "; the partial download (" + position() + ") is kept: run the same pull again to resume"
                                                  : "; nothing was downloaded";
                log::info("hub", "download_gave_up", {{"file", file_.path}, {"attempts", attempts_}, {"reason", why.reason}});
                return make_error(errc::unavailable, "download of " + what_ + " failed after " + std::to_string(attempts_) + " attempts (" +
                                                         std::to_string(failures) + " in a row brought no new data); last error: " +
                                                         s.err().message + kept);
            }
            milliseconds delay = backoff_delay(rs, failures, std::uniform_real_distribution<double>(0.0, 1.0)(rng_));
            if (why.retry_after) {
                const milliseconds asked = *why.retry_after;
                delay = std::min(asked, rs.retry_after_cap);
                if (asked > rs.retry_after_cap) why.reason += ", capped to " + format_wait(rs.retry_after_cap);
            }
            const retry_notice notice{failures + 1, max_attempts, delay, why.reason};
            log::info("hub", "download_retry", {{"file", file_.path}, {"attempt", notice.attempt}, {"max_attempts", max_attempts},
                                                {"delay_ms", int64_t(delay.count())}, {"offset", pf_.size()}, {"reason", why.reason}});
            if (on_retry_) on_retry_(notice);
            if (!wait(delay)) return cancelled_error();
        }
    }

    // One request for the bytes not yet in the partial file; on failure, `why` says whether another
    // attempt may help.
    result<step> transfer(attempt_failure & why) {
        const uint64_t offset = pf_.size();
        std::vector<std::string> headers;
        if (offset > 0) headers.push_back("Range: bytes=" + std::to_string(offset) + "-");
        log::info("hub", "download_start", {{"file", file_.path}, {"offset", offset}, {"size", file_.size}});

        bool restart = false, overflow = false;
        status write_status;
        stream_callbacks cb;
        cb.on_head = [&](const http_response & h) {
            if (h.status == 206) {
                // Trust the range only if it starts where we asked; anything else restarts cleanly.
                auto start = content_range_start(h.header("Content-Range"));
                if (!start || *start != offset) return !(restart = true);
            } else if (h.status == 200 && offset > 0) {
                log::warn("hub", "download_restart", {{"file", file_.path}, {"reason", "server ignored the range"}});
                report_.resumed_from = 0;
                write_status = pf_.reset();  // the body starts at byte 0: rewrite from scratch
                return write_status.ok();
            } else if (h.status == 416) {
                return !(restart = true);  // our offset is past the server's file
            }
            return true;
        };
        cb.on_data = [&](std::string_view data) {
            const size_t n = data.size();
            if (pf_.size() + n > file_.size) return !(overflow = true);
            write_status = pf_.append(data.data(), n);
            if (!write_status) return false;
            transferred_ += n;
            report();
            return true;
        };
        cb.should_stop = [&] { return cancelled(); };

        transport_failure failure = transport_failure::none;
        auto out = http_.stream(url_, headers, cb, &failure);
        if (!write_status) return write_status.err();
        if (overflow) {
            pf_.remove();
            return make_error(errc::data_loss, "the Hub sent more than the " + std::to_string(file_.size) + " bytes listed for " + what_ +
                                                "; the partial download was deleted");
        }
        if (restart) {
            if (offset == 0) return make_error(errc::unavailable, "the Hub sent an unusable range answer for " + what_);
            log::warn("hub", "download_restart", {{"file", file_.path}, {"reason", "range not satisfiable"}});
            return step::restart;
        }
        if (!out.ok() || out->aborted) {
            if (cancelled()) return cancelled_error();
            if (!out.ok()) {
                why.retryable = is_retryable(failure);
                why.reason = std::string(describe(failure)) + ": " + curl_detail(out.err().message);
                // A retryable failure that ends the download gets its resume advice from transfer_with_retries.
                return make_error(errc::unavailable, "download of " + what_ + " interrupted at " + position() + " (" + out.err().message + ")" +
                                                         (why.retryable ? "" : "; run again to resume"));
            }
            return make_error(errc::internal, "download of " + what_ + " stopped unexpectedly");
        }
        if (!out->head.ok()) {
            if (is_retryable_status(out->head.status)) {
                why.retryable = true;
                why.reason = "HTTP " + std::to_string(out->head.status);
                const std::string after = out->head.header("Retry-After");
                why.retry_after = parse_retry_after(after, std::chrono::system_clock::now());
                if (why.retry_after) why.reason += ", Retry-After " + after.substr(0, 40);
            }
            return error_for_status(out->head, what_, http_.config());
        }
        return step::done;
    }

    const http_client & http_;
    const std::string url_;
    const std::string what_;
    const repo_file & file_;
    partial_file & pf_;
    const progress_fn & progress_;
    const std::atomic<bool> * cancel_;
    const retry_fn & on_retry_;
    download_report report_;
    uint64_t transferred_ = 0;
    int attempts_ = 0;
    std::mt19937_64 rng_{std::random_device{}()};
    clock::time_point last_progress_{};
};

}  // namespace

result<download_report> hub_client::download(const std::string & repo, const std::string & revision, const repo_file & file,
                                             const std::filesystem::path & partial_path, const progress_fn & progress,
                                             const std::atomic<bool> * cancel, const retry_fn & on_retry) const {
    if (auto st = check_repo_id(repo); !st) return st.err();
    if (auto st = check_revision(revision); !st) return st.err();
    if (auto st = check_repo_path(file.path); !st) return st.err();
    auto pf = partial_file::open(partial_path);
    if (!pf.ok()) return pf.err();
    auto out = download_job(http_, repo, revision, file, pf.value(), progress, cancel, on_retry).run();
    // A failure before any byte arrived (access denied, not found) leaves nothing worth resuming.
    if (!out.ok() && pf->size() == 0) pf->remove();
    return out;
}

}  // namespace rc::hub
