#include "kv/kv_events.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>

namespace rc::kv {

uint64_t event_key(const block_key & k) {
    uint64_t out;
    std::memcpy(&out, k.d.data(), sizeof out);
    return out;
}

std::string event_key_hex(uint64_t key) {
    static constexpr char digits[] = "0123456789abcdef";
    uint8_t bytes[sizeof key];
    std::memcpy(bytes, &key, sizeof key);
    std::string out(2 * sizeof key, '0');
    for (size_t i = 0; i < sizeof key; ++i) {
        out[2 * i] = digits[bytes[i] >> 4];
        out[2 * i + 1] = digits[bytes[i] & 15];
    }
    return out;
}

kv_event_log::kv_event_log(size_t capacity) : ring_(std::max<size_t>(capacity, 1)) {
    std::random_device rd;
    char buf[17];
    std::snprintf(buf, sizeof buf, "%08x%08x", rd(), rd());
    epoch_ = buf;
}

uint32_t kv_event_log::add_source(std::string model, int block_size, std::string identity, kv_snapshot_fn snapshot) {
    uint32_t id;
    {
        std::unique_lock lock(sources_mu_);
        id = next_source_++;
        sources_[id] = {{std::move(model), block_size, std::move(identity)}, std::move(snapshot)};
    }
    append(id, kv_event::kind::source_added, tier_name::context, block_key{});
    return id;
}

void kv_event_log::remove_source(uint32_t source) {
    {
        std::unique_lock lock(sources_mu_);  // waits for a snapshot calling it
        if (!sources_.erase(source)) return;
    }
    append(source, kv_event::kind::source_gone, tier_name::context, block_key{});
}

void kv_event_log::append(uint32_t source, kv_event::kind what, tier_name tier, const block_key & key) { append(source, what, tier, event_key(key)); }

void kv_event_log::append(uint32_t source, kv_event::kind what, tier_name tier, uint64_t key) {
    std::lock_guard lock(mu_);
    const uint64_t seq = ++last_;
    ring_[seq % ring_.size()] = {seq, source, what, tier, key};
    if (waiting_ > 0) appended_.notify_all();
}

kv_event_log::batch kv_event_log::read(uint64_t since, size_t max, std::chrono::milliseconds wait) const {
    batch out;
    std::unique_lock lock(mu_);
    if (last_ <= since && wait.count() > 0) {
        ++waiting_;
        appended_.wait_for(lock, wait, [&] { return last_ > since; });
        --waiting_;
    }
    out.last = last_;
    const uint64_t oldest = last_ >= ring_.size() ? last_ - ring_.size() + 1 : 1;
    if (since + 1 < oldest) {
        out.gap = true;
        ++gaps_;
        return out;
    }
    const uint64_t end = std::min<uint64_t>(last_, since + max);
    out.events.reserve(static_cast<size_t>(end > since ? end - since : 0));
    for (uint64_t s = since + 1; s <= end; ++s) out.events.push_back(ring_[s % ring_.size()]);
    return out;
}

kv_event_log::snapshot_result kv_event_log::snapshot(std::optional<uint32_t> source) const {
    snapshot_result out;
    std::shared_lock lock(sources_mu_);
    out.seq = last_seq();  // before the sources are read: what changes meanwhile is in the events after it
    for (const auto & [id, s] : sources_) {
        if (source && id != *source) continue;
        out.sources[id] = s.info;
        if (!s.snapshot) continue;
        s.snapshot([&out, id = id](tier_name tier, uint64_t key) { out.blocks.push_back({0, id, kv_event::kind::added, tier, key}); });
    }
    return out;
}

std::map<uint32_t, kv_event_log::source_info> kv_event_log::sources() const {
    std::shared_lock lock(sources_mu_);
    std::map<uint32_t, source_info> out;
    for (const auto & [id, s] : sources_) out[id] = s.info;
    return out;
}

uint64_t kv_event_log::last_seq() const {
    std::lock_guard lock(mu_);
    return last_;
}

uint64_t kv_event_log::gaps() const {
    std::lock_guard lock(mu_);
    return gaps_;
}

}  // namespace rc::kv
