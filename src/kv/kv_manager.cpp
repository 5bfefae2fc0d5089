#include "kv/kv_manager.h"

#include <algorithm>
#include <chrono>

#include "util/log.h"

namespace rc::kv {

result<std::unique_ptr<kv_manager>> kv_manager::open(const kv_options & opts, const kv_identity & id, kv_stats & stats) {
    if (opts.block_size < 1 || opts.block_size > 4096) return make_error(errc::invalid_argument, "KV block size must be 1..4096 tokens");
    std::unique_ptr<kv_manager> m(new kv_manager(stats));
    m->opts_ = opts;
    m->id_ = id;
    if (opts.host_budget > 0) m->host_ = std::make_unique<host_store>(opts.host_budget);
    if (!opts.disk_dir.empty() && opts.disk_budget > 0) {
        auto d = disk_store::open(opts.disk_dir, opts.disk_budget, id.digest());
        if (!d) return d.err();
        m->disk_ = std::move(d.value());
        m->read_buffers_ = blob_pool::create(k_read_buffer_bytes);
    }
    m->io_ = std::make_unique<io_pool>(std::max(1, opts.io_threads));
    if (m->disk_ && m->disk_->largest_payload() > 0) {
        // After a restart the first restore comes from disk: its read buffers are ready before it.
        m->io_->submit([pool = m->read_buffers_, n = m->disk_->largest_payload()] { pool->reserve(k_blocks_in_flight + 1, n); });
    }
    if (opts.events) m->publish_events();
    return m;
}

void kv_manager::publish_events() {
    auto snapshot = [this](const std::function<void(tier_name, uint64_t)> & emit) {
        if (host_) host_->each_key([&](const block_key & k) { emit(tier_name::host, event_key(k)); });
        if (disk_) disk_->each_key([&](const block_key & k) { emit(tier_name::disk, event_key(k)); });
        std::lock_guard lock(context_mutex_);
        for (uint64_t k : context_) emit(tier_name::context, k);
    };
    event_source_ = opts_.events->add_source(opts_.model, opts_.block_size, to_hex(id_.digest()), snapshot);
    auto sink = [log = opts_.events.get(), source = event_source_](tier_name tier) {
        return [log, source, tier](bool entered, const block_key & k) {
            log->append(source, entered ? kv_event::kind::added : kv_event::kind::removed, tier, k);
        };
    };
    if (host_) host_->on_change(sink(tier_name::host));
    if (disk_) disk_->on_change(sink(tier_name::disk));
}

void kv_manager::context_holds(const std::vector<uint64_t> & keys) {
    if (!opts_.events) return;
    std::unordered_set<uint64_t> now(keys.begin(), keys.end());
    std::lock_guard lock(context_mutex_);  // held while appending: a snapshot sees the set and the events in one order
    for (uint64_t k : now)
        if (!context_.contains(k)) opts_.events->append(event_source_, kv_event::kind::added, tier_name::context, k);
    for (uint64_t k : context_)
        if (!now.contains(k)) opts_.events->append(event_source_, kv_event::kind::removed, tier_name::context, k);
    context_ = std::move(now);
}

kv_manager::~kv_manager() {
    {
        std::lock_guard lock(link_->mutex);  // a block released from now on reads nothing more
        link_->manager = nullptr;
    }
    io_.reset();  // drains pending write-backs before the stores go away
    if (opts_.events) opts_.events->remove_source(event_source_);  // after the last change it tells of
}

std::optional<tier_name> kv_manager::where(const block_key & key) const {
    if (host_ && host_->contains(key)) return tier_name::host;
    if (disk_ && disk_->contains(key)) return tier_name::disk;
    return std::nullopt;
}

blob_ptr kv_manager::host_get(const block_key & key) { return host_ ? host_->get(key) : nullptr; }

void kv_manager::write_to_disk(const block_key & key, const blob_ptr & blob) {
    auto st = disk_->write(key, *blob);
    if (st) {
        stats_.host_to_disk.add(blob->bytes.size());
    } else {
        rc::log::warn("kv", "disk_write_failed", {{"error", st.err().message}});
    }
}

void kv_manager::store(const block_key & key, blob_ptr blob, const std::shared_ptr<write_group> & group) {
    if (host_) {
        stats_.context_to_host.add(blob->bytes.size());
        stats_.evicted_host.add(host_->put(key, blob).size());
    }
    if (!disk_ || disk_->contains(key)) return;
    {
        std::lock_guard lock(writing_mutex_);
        auto [it, fresh] = writing_.try_emplace(key);
        if (group) {
            group->add();
            it->second.push_back(group);
        }
        if (!fresh) return;  // already queued: the group waits for that write
    }
    io_->submit([this, key, blob] {
        write_to_disk(key, blob);
        finish_write(key);
    });
}

void kv_manager::finish_write(const block_key & key) {
    std::vector<std::shared_ptr<write_group>> waiting;
    {
        std::lock_guard lock(writing_mutex_);
        auto it = writing_.find(key);
        if (it == writing_.end()) return;
        waiting = std::move(it->second);
        writing_.erase(it);
    }
    for (auto & g : waiting) g->finish_one();
}

void kv_manager::join_pending_writes(const std::shared_ptr<write_group> & group) {
    std::lock_guard lock(writing_mutex_);
    for (auto & [key, waiting] : writing_) {
        if (std::find(waiting.begin(), waiting.end(), group) != waiting.end()) continue;
        group->add();
        waiting.push_back(group);
    }
}

// One streamed promotion. Its I/O task reads blocks in order while fewer than k_blocks_in_flight
// of those it delivered are still held by the caller; then it parks, and the release of a delivered
// block (the caller restored and dropped it) starts another task where it stopped. So a restore
// never has more than k_blocks_in_flight read buffers out and the reads reuse them, however much
// faster the page cache reads than the context restores; no I/O thread ever waits for the caller.
struct kv_manager::disk_promotion {
    std::vector<block_key> keys;
    std::function<bool(size_t, blob_ptr)> on_block;
    std::function<void(size_t)> on_end;
    std::mutex mutex;
    size_t next = 0;       // the next block to read
    int held = 0;          // delivered blocks the caller still holds
    bool parked = false;   // no task reads it: waiting for a release
};

void kv_manager::promote_from_disk(std::vector<block_key> keys, std::function<bool(size_t, blob_ptr)> on_block,
                                   std::function<void(size_t)> on_end) {
    auto p = std::make_shared<disk_promotion>();
    p->keys = std::move(keys);
    p->on_block = std::move(on_block);
    p->on_end = std::move(on_end);
    io_->submit([this, p] { read_promotion(p); });
}

void kv_manager::read_promotion(const std::shared_ptr<disk_promotion> & p) {
    constexpr size_t k_read_ahead = 4;
    for (;;) {
        size_t i;
        {
            std::lock_guard lock(p->mutex);
            if (p->next < p->keys.size() && p->on_block && p->held >= k_blocks_in_flight) {
                p->parked = true;  // a release resumes it
                return;
            }
            i = p->next;
        }
        blob_ptr blob = i < p->keys.size() ? host_get(p->keys[i]) : nullptr;
        if (i < p->keys.size() && !blob && disk_) {
            // The kernel reads the next few files while this one is verified and restored.
            if (i % k_read_ahead == 0) {
                std::vector<block_key> ahead(p->keys.begin() + static_cast<long>(i) + 1,
                                             p->keys.begin() + static_cast<long>(std::min(p->keys.size(), i + 1 + k_read_ahead)));
                disk_->will_read(ahead);
            }
            auto start = std::chrono::steady_clock::now();
            if (auto b = disk_->read(p->keys[i], read_buffers_.get())) {
                blob = std::move(b.value());
                stats_.promotion_disk.observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
                // A block read for a restore goes into the context and no further: a copy in host
                // RAM as well would hold it twice (and the page cache a third time), and its buffer
                // would not come back for the next read. A prefetch keeps it in host RAM.
                if (!p->on_block && host_) {
                    stats_.disk_to_host.add(blob->bytes.size());
                    stats_.evicted_host.add(host_->put(p->keys[i], blob).size());
                }
            }
        }
        if (!blob) {  // all read, or the first one missing or corrupt: nothing after it is served
            if (p->on_end) p->on_end(i);
            return;
        }
        {
            std::lock_guard lock(p->mutex);
            ++p->next;
            if (p->on_block) ++p->held;
        }
        if (p->on_block) {
            // The caller's copy: dropping it hands the buffer back and lets the reading go on.
            std::weak_ptr<io_link> link = link_;
            blob_ptr tracked(blob.get(), [blob, p, link](const block_blob *) mutable {
                blob.reset();
                released(p, link);
            });
            if (!p->on_block(i, std::move(tracked))) {  // the caller gave up on it: read no further
                if (p->on_end) p->on_end(i);
                return;
            }
        }
    }
}

void kv_manager::released(const std::shared_ptr<disk_promotion> & p, const std::weak_ptr<io_link> & link) {
    {
        std::lock_guard lock(p->mutex);
        --p->held;
        if (!p->parked) return;
        p->parked = false;
    }
    auto l = link.lock();
    if (!l) return;
    std::lock_guard lock(l->mutex);
    if (l->manager) l->manager->io_->submit([m = l->manager, p] { m->read_promotion(p); });
}

void kv_manager::append_record(std::vector<uint8_t> record) {
    if (!disk_) return;
    io_->submit([this, record = std::move(record)] {
        if (auto st = disk_->append_record(record); !st) rc::log::debug("kv", "record_append_failed", {{"error", st.err().message}});
    });
}

void kv_manager::rewrite_records(const std::vector<std::vector<uint8_t>> & records) {
    if (!disk_) return;
    if (auto st = disk_->rewrite_records(records); !st) rc::log::warn("kv", "records_rewrite_failed", {{"error", st.err().message}});
}

std::vector<std::vector<uint8_t>> kv_manager::read_records() const { return disk_ ? disk_->read_records() : std::vector<std::vector<uint8_t>>{}; }

}  // namespace rc::kv
