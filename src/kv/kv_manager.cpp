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
    return m;
}

kv_manager::~kv_manager() {
    io_.reset();  // drains pending write-backs before the stores go away
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

void kv_manager::promote_from_disk(std::vector<block_key> keys, std::function<void(size_t, blob_ptr)> on_block,
                                   std::function<void(size_t)> on_end) {
    io_->submit([this, keys = std::move(keys), on_block = std::move(on_block), on_end = std::move(on_end)] {
        constexpr size_t k_read_ahead = 4;
        size_t delivered = 0;
        for (size_t i = 0; i < keys.size(); ++i) {
            const auto & k = keys[i];
            blob_ptr blob = host_get(k);
            if (!blob) {
                if (!disk_) break;
                // The kernel reads the next few files while this one is verified and restored.
                if (i % k_read_ahead == 0) {
                    std::vector<block_key> ahead(keys.begin() + static_cast<long>(i) + 1,
                                                 keys.begin() + static_cast<long>(std::min(keys.size(), i + 1 + k_read_ahead)));
                    disk_->will_read(ahead);
                }
                auto start = std::chrono::steady_clock::now();
                auto b = disk_->read(k, read_buffers_.get());
                if (!b) break;
                blob = std::move(b.value());
                stats_.promotion_disk.observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
                // A block read for a restore goes into the context and no further: a copy in host
                // RAM as well would hold it twice (and the page cache a third time), and its buffer
                // would not come back for the next read. A prefetch keeps it in host RAM.
                if (!on_block && host_) {
                    stats_.disk_to_host.add(blob->bytes.size());
                    stats_.evicted_host.add(host_->put(k, blob).size());
                }
            }
            if (on_block) on_block(i, std::move(blob));
            ++delivered;
        }
        if (on_end) on_end(delivered);
    });
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
