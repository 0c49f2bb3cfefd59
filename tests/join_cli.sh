#!/usr/bin/env bash
# join_cli.sh: the join service's key, pools and tokens from the operator's
# side (fleetctl join init | pool | token; docs/join-tokens.md, store.h
# J1-J5), over a store written by tests/unit/store_seed.c and owned, as on a
# host, by another user than root (nobody, standing for fleetd's):
#   - join init makes the sealing key 0600 and owned like the state
#     directory (the daemon reads it), and never replaces it;
#   - pools: created once; --join-attestors only names attestors this
#     fleetd runs;
#   - a token is printed sealed, once; inspect opens it with the service's
#     key and finds its row (the secret never shown, never stored); a
#     tampered seal does not open; revoke is for ever; every writing command
#     and inspect are root's.
# Skips (77) when not root. Usage: join_cli.sh STORE_SEED_BINARY
set -u

: "${FLEETCTL:?FLEETCTL must name the fleetctl binary}"
SEED=${1:?usage: join_cli.sh STORE_SEED}
if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: the join service's commands are root's, and the test gives the store to another user: run as root (CI does)"
	exit 77
fi
command -v jq >/dev/null || { echo "FAIL: jq is needed to read --json output"; exit 1; }
id nobody >/dev/null 2>&1 || { echo "SKIP: no user nobody to own the store"; exit 77; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/fleet-join-cli-XXXXXX")
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

"$SEED" "$STATE" >/dev/null || { echo "FAIL: store_seed failed"; exit 1; }
chown -R nobody: "$STATE"

# ---- the sealing key
expect "join init" 0 join init --state-dir "$STATE"
[ "$(stat -c '%U %a' "$STATE/join/seal.key")" = "nobody 600" ] ||
	fail "seal.key is $(stat -c '%U %a' "$STATE/join/seal.key"), want nobody 600"
[ "$(stat -c '%U %a' "$STATE/join")" = "nobody 700" ] || fail "join/ is $(stat -c '%U %a' "$STATE/join")"
openssl pkey -pubin -in "$STATE/join/seal.pub" -noout -text 2>/dev/null | grep -q 'NIST CURVE: P-256' ||
	fail "seal.pub is not a P-256 public key"
keysum=$(sha256sum "$STATE/join/seal.key")
expect "join init again" 5 join init --state-dir "$STATE"
[ "$keysum" = "$(sha256sum "$STATE/join/seal.key")" ] || fail "a second join init replaced the key"

# ---- pools
expect "pool create" 0 pool create pool-a --owner root --state-dir "$STATE"
expect "pool create again" 5 pool create pool-a --owner root --state-dir "$STATE"
expect "pool: an attestor this fleetd does not run" 2 pool create pool-b --owner root --join-attestors sev-snp --state-dir "$STATE"
grep -q "not an attestor this fleetd runs" "$TMP/err" || fail "no reason for the unknown attestor"
expect "pool: a bad id" 2 pool create "Pool B" --owner root --state-dir "$STATE"
expect "pool create with attestors" 0 pool create pool-b --owner ops --join-attestors join-token --state-dir "$STATE"
expect "pool list" 0 pool list --json --state-dir "$STATE"
jqok "pool list" '.pools == [{"id":"pool-a","owner":"root","join_attestors":null},{"id":"pool-b","owner":"ops","join_attestors":["join-token"]}]'

# ---- tokens
expect "token create" 0 token create --pool pool-a --role node --uses 2 --ttl 3600 \
	--expect-mac 52:54:00:00:00:21 --json --state-dir "$STATE"
id=$(jq -r .id "$TMP/out")
sealed=$(jq -r .sealed "$TMP/out")
[ "${#id}" -eq 26 ] || fail "token id $id is not 26 characters"
grep -q "shown only once" "$TMP/err" || fail "token create does not say the token is shown once"
expect "token: no such pool" 4 token create --pool nosuch --role node --state-dir "$STATE"
expect "token: a site token without its site" 2 token create --pool pool-a --role site --state-dir "$STATE"
expect "token: --uses 0" 2 token create --pool pool-a --role node --uses 0 --state-dir "$STATE"
expect "token: --expect-mac in capitals" 2 token create --pool pool-a --role node --expect-mac 52:54:00:00:00:AB --state-dir "$STATE"
expect "token inspect" 0 token inspect "$sealed" --json --state-dir "$STATE"
jqok "token inspect" ".id == \"$id\" and .uses_left == 2 and .uses_total == 2 and .expect_mac == \"52:54:00:00:00:21\" and .role == \"node\""
grep -qi secret "$TMP/out" && fail "inspect shows something called secret"
# The sealed bytes name the service's key; one changed character does not open.
flip=$(python3 -c 'import sys; s=sys.argv[1]; i=len(s)//2; print(s[:i] + ("A" if s[i] != "A" else "B") + s[i+1:])' "$sealed")
expect "token inspect: a tampered seal" 1 token inspect "$flip" --state-dir "$STATE"
expect "token inspect: not base64url" 1 token inspect 'not*base64' --state-dir "$STATE"
expect "token list" 0 token list --json --state-dir "$STATE"
jqok "token list" ".tokens | length == 1 and .[0].id == \"$id\" and .[0].revoked_at == \"-\""
python3 - "$STATE/fleetd.db" "$id" <<'PY' || fail "the store holds more of the token than its hash"
import sqlite3, sys
c = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
cols = [r[1] for r in c.execute("PRAGMA table_info(join_tokens)")]
assert "secret" not in cols and "secret_sha256" in cols, cols
(h,) = c.execute("SELECT secret_sha256 FROM join_tokens WHERE id = ?", (sys.argv[2],)).fetchone()
assert len(h) == 32
PY
expect "token revoke" 0 token revoke "$id" --state-dir "$STATE"
expect "token revoke again" 5 token revoke "$id" --state-dir "$STATE"
expect "token revoke: no such token" 4 token revoke aaaaaaaaaaaaaaaaaaaaaaaaaa --state-dir "$STATE"
expect "token list after revoke" 0 token list --state-dir "$STATE"
grep -q "^$id .* revoked$" "$TMP/out" || fail "token list does not show $id revoked: $(cat "$TMP/out")"

# ---- root's
asuser=""
if command -v setpriv >/dev/null; then
	asuser="setpriv --reuid=nobody --regid=$(id -g nobody) --clear-groups --"
elif command -v runuser >/dev/null; then
	asuser="runuser -u nobody --"
fi
if [ -n "$asuser" ]; then
	for args in "token create --pool pool-a --role node" "token revoke $id" "token inspect $sealed" \
		"pool create pool-c --owner x" "join init"; do
		# shellcheck disable=SC2086 # the words are the command's
		$asuser "$FLEETCTL" $args --state-dir "$STATE" >"$TMP/out" 2>"$TMP/err"
		got=$?
		[ "$got" -eq 3 ] || fail "not root: fleetctl $args: exit $got, want 3"
	done
	ok "not root: every writing command and inspect exit 3"
	$asuser "$FLEETCTL" token list --state-dir "$STATE" >/dev/null 2>&1 || fail "token list as the store's owner failed"
else
	echo "note: neither setpriv nor runuser: the not-root refusals are not tested"
fi

[ "$failures" -eq 0 ] || { echo "FAIL: $failures failure(s)"; exit 1; }
echo "join_cli: every check held"
