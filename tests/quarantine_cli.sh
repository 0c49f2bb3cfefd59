#!/usr/bin/env bash
# quarantine_cli.sh: fleetctl quarantine list | lift over a store written by
# tests/unit/store_seed.c (w1 not quarantined; w2 quarantined
# "pcr7-authority"), owned, as on a host, by another user than root (nobody,
# standing for fleetd's): the lift's refusals and their exit codes (no
# --reason, a bad one, an unknown device, a device not quarantined, not
# root), then a lift that clears the store's flag, keeps the files the
# owner's, and journals who and why. Skips (77) when not root: the lift is
# root's, and the store must belong to someone else.
# Usage: quarantine_cli.sh STORE_SEED_BINARY
set -u

: "${FLEETCTL:?FLEETCTL must name the fleetctl binary}"
SEED=${1:?usage: quarantine_cli.sh STORE_SEED}
if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: fleetctl quarantine lift is root's, and the test gives the store to another user: run as root (CI does)"
	exit 77
fi
command -v jq >/dev/null || { echo "FAIL: jq is needed to read --json output"; exit 1; }
id nobody >/dev/null 2>&1 || { echo "SKIP: no user nobody to own the store"; exit 77; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/fleet-quarantine-cli-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
chmod 755 "$TMP" # nobody reaches the store and the binary's output files
STATE=$TMP/state
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# expect NAME WANT_EXIT ARGS...: run fleetctl (as root), keep stdout/stderr.
expect() {
	local name=$1 want=$2
	shift 2
	"$FLEETCTL" "$@" >"$TMP/out" 2>"$TMP/err"
	local got=$?
	if [ "$got" -ne "$want" ]; then
		fail "$name: exit $got, want $want"
		sed 's/^/  stdout: /' "$TMP/out"
		sed 's/^/  stderr: /' "$TMP/err"
	fi
}

jqok() {
	if ! jq -e "$2" "$TMP/out" >/dev/null 2>&1; then
		fail "$1: $2 does not hold for: $(head -c 600 "$TMP/out")"
	fi
}

errhas() { grep -q -- "$2" "$TMP/err" || fail "$1: stderr lacks '$2': $(head -c 400 "$TMP/err")"; }

"$SEED" "$STATE" >/dev/null || { echo "FAIL: store_seed failed"; exit 1; }
chown -R nobody: "$STATE"
dbsum() { sha256sum "$STATE/fleetd.db" | cut -d' ' -f1; }
before=$(dbsum)

expect "list" 0 quarantine list --state-dir "$STATE"
grep -q '^w2  *SER-2  *admitted  *2025-11-30T06:20:00Z  *pcr7-authority$' "$TMP/out" ||
	fail "list: no w2 line: $(cat "$TMP/out")"
grep -q '^w1 ' "$TMP/out" && fail "list: w1 is not quarantined"
expect "list --json" 0 quarantine list --json --state-dir "$STATE"
jqok "list --json" '.quarantined == [{"name":"w2","serial":"SER-2","state":"admitted","reason":"pcr7-authority","since":"2025-11-30T06:20:00Z"}]'

# Refusals: each its own exit code, nothing written.
expect "no --reason" 2 quarantine lift w2 --state-dir "$STATE"
errhas "no --reason" "--reason TEXT is required"
expect "empty --reason" 2 quarantine lift w2 --reason "" --state-dir "$STATE"
expect "spaces --reason" 2 quarantine lift w2 --reason "   " --state-dir "$STATE"
expect "control --reason" 2 quarantine lift w2 --reason $'ok\nFLEET_OPERATOR=forged' --state-dir "$STATE"
errhas "control --reason" "printable ASCII: byte 2 is 0x0a"
expect "long --reason" 2 quarantine lift w2 --reason "$(printf 'x%.0s' $(seq 256))" --state-dir "$STATE"
expect "no device" 2 quarantine lift --reason "x" --state-dir "$STATE"
expect "unknown device" 4 quarantine lift nosuch --reason "checked" --state-dir "$STATE"
errhas "unknown device" "nosuch: no device with that name"
expect "unknown device --json" 4 quarantine lift nosuch --reason "checked" --json --state-dir "$STATE"
jqok "unknown device --json" '.result == "refused" and .reason == "unknown-device"'
expect "not quarantined" 5 quarantine lift w1 --reason "checked" --state-dir "$STATE"
errhas "not quarantined" "w1: the device is not quarantined"
expect "missing store" 2 quarantine lift w2 --reason "checked" --state-dir "$TMP/none"

# Not root: setpriv, else runuser; that part is skipped when neither exists.
asuser=""
if command -v setpriv >/dev/null; then
	asuser="setpriv --reuid=nobody --regid=$(id -g nobody) --clear-groups --"
elif command -v runuser >/dev/null; then
	asuser="runuser -u nobody --"
fi
if [ -n "$asuser" ]; then
	# nobody owns the store and could open it itself: the refusal is fleetctl's.
	$asuser "$FLEETCTL" quarantine lift w2 --reason "checked" --state-dir "$STATE" \
		>"$TMP/out" 2>"$TMP/err"
	got=$?
	[ "$got" -eq 3 ] || fail "not root: exit $got, want 3: $(cat "$TMP/err")"
	errhas "not root" "only root may lift a quarantine"
	# and a reader's list still works for the store's owner
	$asuser "$FLEETCTL" quarantine list --json --state-dir "$STATE" >"$TMP/out" 2>"$TMP/err" ||
		fail "list as the owner: $(cat "$TMP/err")"
	jqok "list as the owner" '.quarantined | length == 1'
else
	echo "note: neither setpriv nor runuser: the not-root refusal is not tested"
fi

[ "$before" = "$(dbsum)" ] || fail "a refused lift changed the database"

# The lift: the flag cleared in the store, the entry journaled. Without
# journald the entry is the stderr line (fleetd/obs/journal.h); with it,
# the journal is read back.
REASON="board reseated, firmware reflashed (ticket 42)"
journald=0
[ -S /run/systemd/journal/socket ] && command -v journalctl >/dev/null && journald=1
since=$(date +%s)
SUDO_USER=root expect "lift" 0 quarantine lift w2 --reason "$REASON" --state-dir "$STATE"
grep -q '^quarantine lift: w2: lifted (quarantined since 2025-11-30T06:20:00Z: pcr7-authority)$' \
	"$TMP/out" || fail "lift: stdout: $(cat "$TMP/out")"
grep -q 'next passing check' "$TMP/out" || fail "lift: does not say the next passing check restores it"
if [ "$journald" -eq 0 ]; then
	line=$(grep ' event=quarantine-lifted ' "$TMP/err")
	[ -n "$line" ] || fail "lift: no event=quarantine-lifted line on stderr: $(cat "$TMP/err")"
	case $line in *" fleetctl["*" notice event=quarantine-lifted "*) ;;
	*) fail "lift: not a notice from fleetctl: $line" ;; esac
	for want in "FLEET_DEVICE=w2" "FLEET_OPERATOR=root" "FLEET_REASON=\"$REASON\"" \
		"FLEET_QUARANTINE_REASON=pcr7-authority" "FLEET_QUARANTINED_AT=2025-11-30T06:20:00Z"; do
		case $line in *" $want "*) ;; *) fail "lift: journal line lacks $want: $line" ;; esac
	done
else
	journalctl --sync 2>/dev/null || true
	journalctl --since "@$since" -o json FLEET_EVENT=quarantine-lifted FLEET_DEVICE=w2 \
		>"$TMP/out" 2>/dev/null
	jq -e -s --arg r "$REASON" 'map(select(.FLEET_REASON == $r)) | length == 1 and
		(.[0] | .PRIORITY == "5" and .FLEET_OPERATOR == "root" and
		 .FLEET_QUARANTINE_REASON == "pcr7-authority" and .SYSLOG_IDENTIFIER == "fleetctl")' \
		"$TMP/out" >/dev/null || fail "lift: no matching journal entry: $(head -c 600 "$TMP/out")"
fi

expect "devices --json after" 0 devices --json --state-dir "$STATE"
jqok "devices --json after" '.devices | map(select(.name == "w2"))[0] | .quarantined == false and .quarantine_reason == null and .quarantined_at == null'
jqok "devices --json after" '.devices | map(select(.name == "w1"))[0] | .quarantined == false'
expect "list after" 0 quarantine list --json --state-dir "$STATE"
jqok "list after" '.quarantined == []'
# The daemon's user still owns every file root's write touched (SQLite gives
# the -wal and -shm it creates as root the database's owner).
left=$(find "$STATE" ! -user nobody)
[ -z "$left" ] || fail "files no longer the store owner's: $left"
# Lifting again: nothing to lift.
expect "lift again" 5 quarantine lift w2 --reason "$REASON" --state-dir "$STATE"

# Who: SUDO_USER names the operator when it is a known user; otherwise the uid's.
"$SEED" "$TMP/s2" >/dev/null && chown -R nobody: "$TMP/s2"
SUDO_USER=nobody expect "lift via sudo" 0 quarantine lift w2 --reason "sudo's" --json --state-dir "$TMP/s2"
jqok "lift via sudo" '.result == "lifted" and .operator == "nobody" and .previous_reason == "pcr7-authority" and .eligible == false'
if [ "$journald" -eq 0 ]; then
	grep -q ' FLEET_OPERATOR=nobody ' "$TMP/err" || fail "lift via sudo: operator: $(cat "$TMP/err")"
fi
"$SEED" "$TMP/s3" >/dev/null && chown -R nobody: "$TMP/s3"
SUDO_USER='no such user' expect "lift, bogus SUDO_USER" 0 quarantine lift w2 --reason "x" --json --state-dir "$TMP/s3"
jqok "lift, bogus SUDO_USER" '.operator == "root"'

if [ "$failures" -ne 0 ]; then
	echo "$failures failure(s)"
	exit 1
fi
echo "ok"
