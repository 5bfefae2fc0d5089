#pragma once
// An in-memory etcd_client for unit tests: KV with revisions, transactions, leases that expire only
// when a test says so (expire()), a one-candidate election. Watch is not modelled (unavailable):
// the units that need it are tested against real members. Every write is logged as "put KEY" /
// "del KEY" so tests can assert the exact keys touched. Thread-safe.
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "fleet/etcd/etcd_client.h"

namespace rc::test {

class fake_etcd final : public fleet::etcd_client {
  public:
    using kv = fleet::etcd_kv;

    result<fleet::etcd_range> get(const std::string & key) override {
        std::lock_guard<std::mutex> l(mu_);
        if (down_) return unavailable();
        fleet::etcd_range r{{}, rev_};
        if (auto it = data_.find(key); it != data_.end()) r.kvs.push_back(it->second);
        return r;
    }
    result<fleet::etcd_range> get_prefix(const std::string & prefix) override {
        std::lock_guard<std::mutex> l(mu_);
        if (down_) return unavailable();
        return range(prefix);
    }
    result<int64_t> put(const std::string & key, const std::string & value, int64_t lease = 0) override {
        std::lock_guard<std::mutex> l(mu_);
        if (down_) return unavailable();
        if (lease && !leases_.count(lease)) return make_error(errc::not_found, "etcdserver: requested lease not found");
        do_put(key, value, lease);
        return rev_;
    }
    result<int64_t> del(const std::string & key, bool prefix = false) override {
        std::lock_guard<std::mutex> l(mu_);
        if (down_) return unavailable();
        return do_del(key, prefix);
    }
    result<fleet::etcd_txn_result> txn(const std::vector<fleet::etcd_compare> & cmp, const std::vector<fleet::etcd_op> & success,
                                       const std::vector<fleet::etcd_op> & failure = {}) override {
        std::lock_guard<std::mutex> l(mu_);
        if (down_) return unavailable();
        bool ok = true;
        for (const auto & c : cmp) ok = ok && holds(c);
        fleet::etcd_txn_result r;
        r.succeeded = ok;
        for (const auto & op : ok ? success : failure) {
            if (op.what == fleet::etcd_op::kind::put) do_put(op.key, op.value, op.lease);
            else if (op.what == fleet::etcd_op::kind::del) do_del(op.key, op.prefix);
            else r.ranges.push_back(op.prefix ? range(op.key) : single(op.key));
        }
        r.revision = rev_;
        return r;
    }
    result<int64_t> grant(std::chrono::seconds ttl) override {
        std::lock_guard<std::mutex> l(mu_);
        if (down_) return unavailable();
        leases_[next_lease_] = ttl.count();
        return next_lease_++;
    }
    result<int64_t> keepalive(int64_t lease) override {
        std::lock_guard<std::mutex> l(mu_);
        if (down_) return unavailable();
        auto it = leases_.find(lease);
        return it == leases_.end() ? 0 : it->second;
    }
    status revoke(int64_t lease) override {
        std::lock_guard<std::mutex> l(mu_);
        drop_lease(lease);
        return {};
    }
    result<fleet::etcd_lease_ttl> time_to_live(int64_t lease) override {
        std::lock_guard<std::mutex> l(mu_);
        auto it = leases_.find(lease);
        if (it == leases_.end()) return fleet::etcd_lease_ttl{-1, 0};
        return fleet::etcd_lease_ttl{it->second, it->second};
    }
    result<std::vector<std::string>> alarms() override {
        std::lock_guard<std::mutex> l(mu_);
        return alarms_;
    }
    void set_alarms(std::vector<std::string> a) {
        std::lock_guard<std::mutex> l(mu_);
        alarms_ = std::move(a);
    }
    result<fleet::etcd_watch_end> watch(const std::string &, int64_t, const fleet::etcd_events_fn &, const fleet::stop_fn &) override {
        return make_error(errc::unavailable, "the fake does not watch");
    }
    result<fleet::etcd_leader> campaign(const std::string & name, int64_t lease, const std::string & value, const fleet::stop_fn &) override {
        std::lock_guard<std::mutex> l(mu_);
        const std::string key = name + "/" + std::to_string(lease);
        do_put(key, value, lease);
        return fleet::etcd_leader{name, key, rev_, lease, value};
    }
    result<std::optional<fleet::etcd_leader>> leader(const std::string & name) override {
        std::lock_guard<std::mutex> l(mu_);
        auto r = range(name + "/");
        if (r.kvs.empty()) return std::optional<fleet::etcd_leader>{};
        const auto & k = r.kvs.front();
        return std::optional<fleet::etcd_leader>(fleet::etcd_leader{name, k.key, k.create_revision, k.lease, k.value});
    }
    status resign(const fleet::etcd_leader & ld) override {
        std::lock_guard<std::mutex> l(mu_);
        do_del(ld.key, false);
        return {};
    }

    // Test controls.
    void expire(int64_t lease) {
        std::lock_guard<std::mutex> l(mu_);
        drop_lease(lease);
    }
    void set_down(bool down) {
        std::lock_guard<std::mutex> l(mu_);
        down_ = down;
    }
    std::vector<std::string> writes() const {
        std::lock_guard<std::mutex> l(mu_);
        return writes_;
    }
    void clear_writes() {
        std::lock_guard<std::mutex> l(mu_);
        writes_.clear();
    }
    std::optional<std::string> value(const std::string & key) const {
        std::lock_guard<std::mutex> l(mu_);
        auto it = data_.find(key);
        if (it == data_.end()) return std::nullopt;
        return it->second.value;
    }

  private:
    static error unavailable() { return make_error(errc::unavailable, "fake etcd is down"); }

    bool holds(const fleet::etcd_compare & c) const {
        using t = fleet::etcd_compare::target;
        auto it = data_.find(c.key);
        int64_t actual = 0;
        std::string value;
        if (it != data_.end()) {
            actual = c.what == t::create_revision ? it->second.create_revision : c.what == t::mod_revision ? it->second.mod_revision : it->second.version;
            value = it->second.value;
        }
        if (c.what == t::value) return it != data_.end() && value == c.value;
        switch (c.result) {
            case fleet::etcd_compare::op::equal: return actual == c.number;
            case fleet::etcd_compare::op::not_equal: return actual != c.number;
            case fleet::etcd_compare::op::greater: return actual > c.number;
            case fleet::etcd_compare::op::less: return actual < c.number;
        }
        return false;
    }
    fleet::etcd_range range(const std::string & prefix) const {
        fleet::etcd_range r{{}, rev_};
        for (auto it = data_.lower_bound(prefix); it != data_.end() && it->first.starts_with(prefix); ++it) r.kvs.push_back(it->second);
        return r;
    }
    fleet::etcd_range single(const std::string & key) const {
        fleet::etcd_range r{{}, rev_};
        if (auto it = data_.find(key); it != data_.end()) r.kvs.push_back(it->second);
        return r;
    }
    void do_put(const std::string & key, const std::string & value, int64_t lease) {
        ++rev_;
        auto & k = data_[key];
        if (k.create_revision == 0) k.create_revision = rev_;
        k.key = key;
        k.value = value;
        k.mod_revision = rev_;
        ++k.version;
        k.lease = lease;
        writes_.push_back("put " + key);
    }
    int64_t do_del(const std::string & key, bool prefix) {
        int64_t n = 0;
        for (auto it = data_.lower_bound(key); it != data_.end() && (prefix ? it->first.starts_with(key) : it->first == key);) {
            writes_.push_back("del " + it->first);
            it = data_.erase(it);
            ++n;
        }
        if (n) ++rev_;
        return n;
    }
    void drop_lease(int64_t lease) {
        leases_.erase(lease);
        for (auto it = data_.begin(); it != data_.end();) {
            if (it->second.lease == lease) {
                writes_.push_back("expire " + it->first);
                it = data_.erase(it);
            } else {
                ++it;
            }
        }
        ++rev_;
    }

    mutable std::mutex mu_;
    std::map<std::string, kv> data_;
    std::map<int64_t, int64_t> leases_;
    std::vector<std::string> writes_;
    int64_t rev_ = 1;
    int64_t next_lease_ = 1000;
    bool down_ = false;
    std::vector<std::string> alarms_;
};

}  // namespace rc::test
