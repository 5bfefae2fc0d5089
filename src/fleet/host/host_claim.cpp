#include "fleet/host/host_claim.h"

#include <fstream>

#include "fleet/host/host_record.h"

namespace rc::fleet {

namespace {

int64_t read_lease_file(const std::filesystem::path & p) {
    std::ifstream in(p);
    int64_t lease = 0;
    return in >> lease ? lease : 0;
}

void write_lease_file(const std::filesystem::path & p, int64_t lease) {
    const auto tmp = p.string() + ".tmp";
    {
        std::ofstream out(tmp, std::ios::trunc);
        out << lease << "\n";
        if (!out) return;
    }
    std::error_code ec;
    std::filesystem::rename(tmp, p, ec);
}

std::string describe_holder(const etcd_kv & kv) {
    auto rec = parse_host_record(kv.value);
    if (!rec.ok()) return "another agent (lease " + std::to_string(kv.lease) + ")";
    const std::string where = rec->openai_url.empty() ? std::string("an unknown address") : rec->openai_url;
    return "the agent at " + where + " (pid " + std::to_string(rec->agent_pid) + ", started " + rec->agent_started_at + ")";
}

}  // namespace

result<host_claim> claim_host_id_key(etcd_client & etcd, const fleet_keys & keys, const std::string & id, const std::string & record,
                                     int64_t lease, const std::filesystem::path & lease_file) {
    const std::string key = keys.host(id);
    for (int attempt = 0; attempt < 3; ++attempt) {
        auto t = etcd.txn({etcd_compare::absent(key)}, {etcd_op::put(key, record, lease)}, {etcd_op::get(key)});
        if (!t.ok()) return t.err();
        if (t->succeeded) {
            write_lease_file(lease_file, lease);
            return host_claim{};
        }
        if (t->ranges.empty() || t->ranges[0].kvs.empty()) continue;  // it went in between
        const etcd_kv & held = t->ranges[0].kvs[0];
        if (held.lease != 0 && held.lease == read_lease_file(lease_file)) {
            (void) etcd.revoke(held.lease);  // our previous life's lease: take the id back now
            continue;
        }
        return host_claim{describe_holder(held)};
    }
    return make_error(errc::unavailable, "hosts/" + id + " kept changing while it was claimed");
}

result<std::string> host_id_holder(etcd_client & etcd, const fleet_keys & keys, const std::string & id, const std::filesystem::path & lease_file) {
    auto held = etcd.get(keys.host(id));
    if (!held.ok()) return held.err();
    if (held->kvs.empty()) return std::string();
    const etcd_kv & kv = held->kvs[0];
    if (kv.lease != 0 && kv.lease == read_lease_file(lease_file)) return std::string();
    return describe_holder(kv);
}

}  // namespace rc::fleet
