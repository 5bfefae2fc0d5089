#!/usr/bin/env bash
# Turns on etcd's authentication for a fleet and creates its users and roles (docs/SECURITY.md
# "The fleet"). Idempotent: existing users and roles are kept (passwords are not changed), grants
# are made again. Needs etcdctl (Debian: etcd-client) and the cluster's root password.
#
#   scripts/fleet-etcd-setup.sh --endpoints URL[,URL…] [--cacert F --cert F --key F] [--prefix fleet/]
#       --root-password-file F [--operator NAME:PASSWORD_FILE] [--viewer NAME:PASSWORD_FILE]
#       [--agent HOST_ID:PASSWORD_FILE]... [--triager HOST_ID]...
#
# Roles, on key ranges under the prefix (the layout: src/fleet/etcd/fleet_keys.h):
#   fleet-viewer          read the whole prefix                       (console, gateway, fleet status)
#   fleet-operator        read; write rollouts/ and rollout-active (create, pause, abort), incidents/
#                         (ack), roster/ and health/ (forget)
#   fleet-agent-<host>    read; write what is its own: hosts/<host>, roster/<host>, health/<host>/,
#                         incidents/<host>/, outbox/<host>/, rollout-progress/<host>/; and the ranges
#                         agents coordinate in: election/rollout, rollout-state/ (the elected driver's
#                         plan), rollout-sems/, rollout-slots/. Never rollouts/: no agent names an artifact.
#   fleet-triager         write outbox/, issues/, election/triager: files every host's incidents on
#                         GitHub. Given to the agents named by --triager (those that hold a GitHub token).
# An agent's user is named after its host id and signs in with its password. Client certificates carry
# no CommonName: etcd's JSON gateway, which rustycage speaks, refuses one with a CN (docs/SECURITY.md).
set -euo pipefail

die() { echo "[fleet-etcd-setup] $*" >&2; exit 1; }
say() { echo "[fleet-etcd-setup] $*"; }
command -v etcdctl >/dev/null || die "etcdctl is missing (apt-get install etcd-client)"

endpoints="" cacert="" cert="" key="" prefix="fleet/" root_pw_file="" operator="" viewer=""
agents=() triagers=()
while [ $# -gt 0 ]; do
    case "$1" in
        --endpoints) endpoints=$2; shift 2 ;;
        --cacert) cacert=$2; shift 2 ;;
        --cert) cert=$2; shift 2 ;;
        --key) key=$2; shift 2 ;;
        --prefix) prefix=$2; shift 2 ;;
        --root-password-file) root_pw_file=$2; shift 2 ;;
        --operator) operator=$2; shift 2 ;;
        --viewer) viewer=$2; shift 2 ;;
        --agent) agents+=("$2"); shift 2 ;;
        --triager) triagers+=("$2"); shift 2 ;;
        *) sed -n '2,22p' "$0" >&2; exit 2 ;;
    esac
done
[ -n "$endpoints" ] && [ -n "$root_pw_file" ] || die "--endpoints and --root-password-file are required"
case "$prefix" in */) ;; *) die "--prefix must end in /" ;; esac
root_pw=$(head -1 "$root_pw_file")

export ETCDCTL_API=3
ctl() {
    local args=(--endpoints "$endpoints" --dial-timeout 5s --command-timeout 10s)
    [ -z "$cacert" ] || args+=(--cacert "$cacert")
    [ -z "$cert" ] || args+=(--cert "$cert" --key "$key")
    if [ "${auth_on:-false}" = true ]; then args+=(--user "root:$root_pw"); fi
    etcdctl "${args[@]}" "$@"
}
# Is authentication on already? (a read without a user is refused then)
auth_on=false
if ! ctl get --prefix "${prefix}schema" >/dev/null 2>&1; then auth_on=true; fi

has_user() { ctl user get "$1" >/dev/null 2>&1; }
has_role() { ctl role get "$1" >/dev/null 2>&1; }
add_user() {  # name password-file
    local pw
    [ -f "$2" ] || die "password file $2 does not exist"
    pw=$(head -1 "$2")
    if has_user "$1"; then say "user $1 exists (password kept)"; else ctl user add "$1:$pw" >/dev/null; say "user $1 added"; fi
}
add_role() { ctl role add "$1" >/dev/null 2>&1 || has_role "$1" || die "cannot add role $1"; }
grant() {  # role read|write|readwrite key [--prefix]
    ctl role grant-permission "$1" "$2" "$3" ${4:+"$4"} >/dev/null
}

add_user root "$root_pw_file"
add_role root
ctl user grant-role root root >/dev/null

add_role fleet-viewer
grant fleet-viewer read "$prefix" --prefix
add_role fleet-operator
grant fleet-operator read "$prefix" --prefix
for r in rollouts/ incidents/ roster/ health/; do grant fleet-operator readwrite "$prefix$r" --prefix; done
grant fleet-operator readwrite "${prefix}rollout-active"

for spec in "${agents[@]}"; do
    host=${spec%%:*} file=${spec#*:}
    [[ "$host" =~ ^[A-Za-z0-9_][A-Za-z0-9._-]{0,62}$ ]] || die "'$host' is not a host id"
    role="fleet-agent-$host"
    add_role "$role"
    grant "$role" read "$prefix" --prefix
    grant "$role" readwrite "${prefix}hosts/$host"
    grant "$role" readwrite "${prefix}roster/$host"
    for r in health incidents outbox rollout-progress; do grant "$role" readwrite "$prefix$r/$host/" --prefix; done
    for r in election/rollout rollout-state/ rollout-sems/ rollout-slots/; do grant "$role" readwrite "$prefix$r" --prefix; done
    add_user "$host" "$file"
    ctl user grant-role "$host" "$role" >/dev/null
done
if [ ${#triagers[@]} -gt 0 ]; then
    add_role fleet-triager
    for r in outbox/ issues/ election/triager; do grant fleet-triager readwrite "$prefix$r" --prefix; done
    for host in "${triagers[@]}"; do
        has_user "$host" || die "--triager $host: no such user (name it with --agent too)"
        ctl user grant-role "$host" fleet-triager >/dev/null
    done
fi
if [ -n "$operator" ]; then add_user "${operator%%:*}" "${operator#*:}"; ctl user grant-role "${operator%%:*}" fleet-operator >/dev/null; fi
if [ -n "$viewer" ]; then add_user "${viewer%%:*}" "${viewer#*:}"; ctl user grant-role "${viewer%%:*}" fleet-viewer >/dev/null; fi

# The layout version, written once here: agents only read it under auth.
ctl put "${prefix}schema" 2 >/dev/null
if [ "$auth_on" = false ]; then
    ctl auth enable >/dev/null
    say "authentication enabled"
fi
say "done: roles fleet-viewer, fleet-operator$(for s in "${agents[@]}"; do printf ', fleet-agent-%s' "${s%%:*}"; done)"
