#!/usr/bin/env bash
# join_requests_cli.sh: the discovery and provisioned attestors from the
# operator's side (fleetctl join-requests | site lease | node | token create
# --node; store.h D1-D8), over a store written by
# tests/unit/join_requests_seed.c and owned, as on a host, by another user
# than root (nobody, standing for fleetd's):
#   - join-requests list shows the requests newest first, an expired one as
#     "expired"; approve and deny decide a pending one once (5 after), never
#     an expired one; unknown ids are 4; each decision is journaled with who;
#   - site lease gives a site's boot lease to a site node of that site and
#     prints the epoch, raised by every grant; any other node is refused;
#   - token create --node names a provisioned token's target node, of the
#     token's pool;
#   - node list | show show the joined nodes and their certificates;
#   - the writes are root's; the daemon's user still owns every file.
# Skips (77) when not root. Usage: join_requests_cli.sh JOIN_REQUESTS_SEED
set -u

: "${FLEETCTL:?FLEETCTL must name the fleetctl binary}"
SEED=${1:?usage: join_requests_cli.sh JOIN_REQUESTS_SEED}
if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: the join service's commands are root's, and the test gives the store to another user: run as root (CI does)"
	exit 77
fi
command -v jq >/dev/null || { echo "FAIL: jq is needed to read --json output"; exit 1; }
id nobody >/dev/null 2>&1 || { echo "SKIP: no user nobody to own the store"; exit 77; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/fleet-join-requests-cli-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
chmod 755 "$TMP"
STATE=$TMP/state
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }
expect() { # name want-exit args...
	local name=$1 want=$2
	shift 2
	"$FLEETCTL" "$@" >"$TMP/out" 2>"$TMP/err"
	local got=$?
	if [ "$got" -ne "$want" ]; then
		fail "$name: exit $got, want $want"
		sed 's/^/  stdout: /' "$TMP/out"
		sed 's/^/  stderr: /' "$TMP/err"
	else
		ok "$name: exit $got"
	fi
}
jqok() { jq -e "$2" "$TMP/out" >/dev/null 2>&1 || fail "$1: $2 does not hold for: $(head -c 600 "$TMP/out")"; }
# The store's rows (the WAL included, which a hash of the file would miss).
dbsum() {
	python3 -c 'import sqlite3, sys
c = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
print("\n".join(c.iterdump()))' "$STATE/fleetd.db" | sha256sum
}

"$SEED" "$STATE" >/dev/null || { echo "FAIL: join_requests_seed failed"; exit 1; }
chown -R nobody: "$STATE"
LIVE=jr_live0000000000000000000000
DENY=jr_deny0000000000000000000000
GONE=jr_gone0000000000000000000000

journald=0
[ -S /run/systemd/journal/socket ] && command -v journalctl >/dev/null && journald=1
# journaled NAME EVENT FIELD=VALUE...: the last command's entry (stderr
# without journald, else the journal since $since).
journaled() {
	local name=$1 event=$2
	shift 2
	if [ "$journald" -eq 0 ]; then
		local line
		line=$(grep " event=$event " "$TMP/err")
		[ -n "$line" ] || { fail "$name: no event=$event line on stderr: $(cat "$TMP/err")"; return; }
		case $line in *" fleetctl["*" notice event=$event "*) ;;
		*) fail "$name: not a notice from fleetctl: $line" ;; esac
		for want in "$@"; do
			case "$line " in *" $want "*) ;; *) fail "$name: journal line lacks $want: $line" ;; esac
		done
	else
		journalctl --sync 2>/dev/null || true
		journalctl --since "@$since" -o json FLEET_EVENT="$event" >"$TMP/journal" 2>/dev/null
		for want in "$@"; do
			local k=${want%%=*} v=${want#*=}
			jq -e -s --arg k "$k" --arg v "$v" 'map(select(.[$k] == $v and .SYSLOG_IDENTIFIER == "fleetctl" and .PRIORITY == "5")) | length >= 1' \
				"$TMP/journal" >/dev/null || fail "$name: no $event entry with $want"
		done
	fi
}

# ---- join requests
expect "join-requests list" 0 join-requests list --json --state-dir "$STATE"
jqok "list: newest first" "[.join_requests[].id] == [\"$LIVE\", \"$DENY\", \"$GONE\"]"
jqok "list: expired at the store's clock" ".join_requests[2].status == \"expired\" and .join_requests[0].status == \"pending\""
jqok "list: fields" ".join_requests[0] | .attestor == \"discovery\" and .site == \"site-1\" and .mac == \"52:54:00:00:00:dd\" and .product_uuid == null and .decided_by == null and (.hw_key | test(\"^d{64}$\"))"
expect "join-requests list (text)" 0 join-requests list --state-dir "$STATE"
grep -q "^$GONE .* expired " "$TMP/out" || fail "list (text) does not show $GONE expired: $(cat "$TMP/out")"

before=$(dbsum)
expect "approve: an expired request" 5 join-requests approve "$GONE" --state-dir "$STATE"
expect "approve: no such request" 4 join-requests approve jr_none0000000000000000000000 --state-dir "$STATE"
expect "approve: not an id" 4 join-requests approve nonsense --state-dir "$STATE"
expect "approve: no id" 2 join-requests approve --state-dir "$STATE"
[ "$before" = "$(dbsum)" ] || fail "a refused decision changed the database"

since=$(date +%s)
expect "approve" 0 join-requests approve "$LIVE" --json --state-dir "$STATE"
jqok "approve" ".id == \"$LIVE\" and .status == \"approved\" and .decided_by == \"root\" and .decided_at != null"
journaled "approve" join-request-approved "FLEET_JOIN_REQUEST=$LIVE" "FLEET_OPERATOR=root" \
	"FLEET_ATTESTOR=discovery" "FLEET_SITE=site-1" "FLEET_MAC=52:54:00:00:00:dd"
expect "approve again" 5 join-requests approve "$LIVE" --state-dir "$STATE"
expect "deny an approved one" 5 join-requests deny "$LIVE" --state-dir "$STATE"
expect "deny" 0 join-requests deny "$DENY" --state-dir "$STATE"
grep -q "^join-requests deny: $DENY denied" "$TMP/out" || fail "deny: stdout: $(cat "$TMP/out")"
journaled "deny" join-request-denied "FLEET_JOIN_REQUEST=$DENY" "FLEET_OPERATOR=root"
expect "list after" 0 join-requests list --json --state-dir "$STATE"
jqok "list after" "[.join_requests[].status] == [\"approved\", \"denied\", \"expired\"]"

# ---- the boot lease
expect "site lease" 0 site lease site-1 site_a --json --state-dir "$STATE"
jqok "site lease" '. == {"site":"site-1","lease":"boot","holder":"site_a","epoch":1}'
journaled "site lease" site-lease-granted "FLEET_SITE=site-1" "FLEET_NODE=site_a" "FLEET_EPOCH=1" "FLEET_OPERATOR=root"
expect "site lease moved" 0 site lease site-1 site_b --state-dir "$STATE"
grep -q "held by site_b, epoch 2 " "$TMP/out" || fail "site lease moved: stdout: $(cat "$TMP/out")"
before=$(dbsum)
expect "site lease: not a site node" 5 site lease site-1 node_n --state-dir "$STATE"
expect "site lease: another site's node" 5 site lease site-1 site_c --state-dir "$STATE"
expect "site lease: no such node" 4 site lease site-1 nobody --state-dir "$STATE"
expect "site lease: no node given" 2 site lease site-1 --state-dir "$STATE"
[ "$before" = "$(dbsum)" ] || fail "a refused lease changed the database"
expect "site lease again" 0 site lease site-1 site_b --json --state-dir "$STATE"
jqok "site lease again: the epoch always rises" '.epoch == 3'

# ---- provisioned tokens name their node
expect "join init" 0 join init --state-dir "$STATE"
expect "token create --node" 0 token create --pool pool-a --role provisioned --node node_n --json --state-dir "$STATE"
tid=$(jq -r .id "$TMP/out")
expect "token list" 0 token list --json --state-dir "$STATE"
jqok "token list: the target" ".tokens | map(select(.id == \"$tid\"))[0].target_node == \"node_n\""
expect "token create --node: not provisioned" 2 token create --pool pool-a --role node --node node_n --state-dir "$STATE"
expect "token create --node: no such node" 4 token create --pool pool-a --role provisioned --node nobody --state-dir "$STATE"
expect "token create --node: another pool's node" 5 token create --pool pool-a --role provisioned --node node_p --state-dir "$STATE"

# ---- nodes
expect "node list" 0 node list --json --state-dir "$STATE"
jqok "node list" '[.nodes[].id] == ["node_n", "node_p", "site_a", "site_b", "site_c"]'
jqok "node list: fields" '.nodes[2] | .role == "site" and .site == "site-1" and .pool == "pool-a" and .generation == 1 and .joined_by == "join-token" and .retired_at == null'
expect "node show" 0 node show site_a --json --state-dir "$STATE"
jqok "node show" '.id == "site_a" and (.certificates | length == 1) and (.certificates[0] | (.sha256 | test("^[0-9a-f]{64}$")) and .revoked == false and .generation == 1 and .not_after != null)'
expect "node show (text)" 0 node show site_a --state-dir "$STATE"
grep -q "generation 1" "$TMP/out" || fail "node show (text): $(cat "$TMP/out")"
expect "node show: no such node" 4 node show nobody --state-dir "$STATE"

# ---- root's
asuser=""
if command -v setpriv >/dev/null; then
	asuser="setpriv --reuid=nobody --regid=$(id -g nobody) --clear-groups --"
elif command -v runuser >/dev/null; then
	asuser="runuser -u nobody --"
fi
if [ -n "$asuser" ]; then
	for args in "join-requests approve $GONE" "join-requests deny $GONE" "site lease site-1 site_a"; do
		# shellcheck disable=SC2086 # the words are the command's
		$asuser "$FLEETCTL" $args --state-dir "$STATE" >"$TMP/out" 2>"$TMP/err"
		got=$?
		[ "$got" -eq 3 ] || fail "not root: fleetctl $args: exit $got, want 3"
	done
	ok "not root: approve, deny and site lease exit 3"
	for args in "join-requests list" "node list" "node show site_a"; do
		# shellcheck disable=SC2086
		$asuser "$FLEETCTL" $args --state-dir "$STATE" >/dev/null 2>&1 || fail "fleetctl $args as the store's owner failed"
	done
else
	echo "note: neither setpriv nor runuser: the not-root refusals are not tested"
fi
# The daemon's user still owns every file root's writes touched.
for f in "$STATE"/fleetd.db*; do
	[ "$(stat -c %U "$f")" = nobody ] || fail "$f is owned by $(stat -c %U "$f"), want nobody"
done

[ "$failures" -eq 0 ] || { echo "FAIL: $failures failure(s)"; exit 1; }
echo "join_requests_cli: every check held"
