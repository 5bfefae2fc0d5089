#include "kv/kv_manager.h"

#include <chrono>

#include "util/log.h"

namespace rc::kv {

result<std::unique_ptr<kv_manager>> kv_manager::open(const kv_options & opts, const kv_identity & id) {
    if (opts.block_size < 1 || opts.block_size > 4096) return make_error(errc::invalid_argument, "KV block size must be 1..4096 tokens");
    std::unique_ptr<kv_manager> m(new kv_manager());
    m->opts_ = opts;
    m->id_ = id;
    if (opts.host_budget > 0) m->host_ = std::make_unique<host_store>(opts.host_budget);
    if (!opts.disk_dir.empty() && opts.disk_budget > 0) {
        auto d = disk_store::open(opts.disk_dir, opts.disk_budget, id.digest());
        if (!d) return d.err();
        m->disk_ = std::move(d.value());
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
        stats_.add_move(move::host_to_disk, blob->bytes.size());
    } else {
        rc::log::warn("kv", "disk_write_failed", {{"error", st.err().message}});
    }
}

void kv_manager::store(const block_key & key, blob_ptr blob) {
    if (host_) {
        stats_.add_move(move::context_to_host, blob->bytes.size());
        stats_.evictions[static_cast<int>(tier_name::host)] += host_->put(key, blob).size();
    }
    if (!disk_ || disk_->contains(key)) return;
    if (opts_.write_through) {
        write_to_disk(key, blob);
    } else {
        io_->submit([this, key, blob] { write_to_disk(key, blob); });
    }
}

void kv_manager::promote_from_disk(std::vector<block_key> keys, std::function<void(std::vector<blob_ptr>)> done) {
    io_->submit([this, keys = std::move(keys), done = std::move(done)] {
        auto start = std::chrono::steady_clock::now();
        std::vector<blob_ptr> out;
        for (const auto & k : keys) {
            if (blob_ptr cached = host_get(k)) {
                out.push_back(std::move(cached));
                continue;
            }
            auto b = disk_ ? disk_->read(k) : result<std::shared_ptr<block_blob>>(make_error(errc::not_found, "no disk tier"));
            if (!b) break;
            blob_ptr blob = std::move(b.value());
            stats_.add_move(move::disk_to_host, blob->bytes.size());
            if (host_) stats_.evictions[static_cast<int>(tier_name::host)] += host_->put(k, blob).size();
            out.push_back(std::move(blob));
        }
        stats_.promotion_latency[1].observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        done(std::move(out));
    });
}

}  // namespace rc::kv
