#!/usr/bin/env bash
# store_cli.sh: fleetctl claims | devices | verdicts | device show over a
# store written by tests/unit/store_seed.c: text and --json output, the
# filters, the exit codes, and that reading never changes the database.
# Usage: store_cli.sh STORE_SEED_BINARY
set -u

: "${FLEETCTL:?FLEETCTL must name the fleetctl binary}"
SEED=${1:?usage: store_cli.sh STORE_SEED}
command -v jq >/dev/null || { echo "FAIL: jq is needed to read --json output"; exit 1; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/fleet-store-cli-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
STATE=$TMP/state
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# expect NAME WANT_EXIT ARGS...: run fleetctl, keep stdout/stderr in $TMP.
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

# jqok NAME FILTER: the JSON on stdout satisfies FILTER.
jqok() {
	if ! jq -e "$2" "$TMP/out" >/dev/null 2>&1; then
		fail "$1: $2 does not hold for: $(head -c 600 "$TMP/out")"
	fi
}

SHA1=$("$SEED" "$STATE") || { echo "FAIL: store_seed failed"; exit 1; }
before=$(sha256sum "$STATE/fleetd.db" | cut -d' ' -f1)

expect "devices" 0 devices --state-dir "$STATE"
grep -q '^w1  *SER-1  *admitted  *no ' "$TMP/out" || fail "devices: no w1 line"
grep -q '^w2  *SER-2  *admitted  *yes ' "$TMP/out" || fail "devices: w2 not quarantined"

expect "devices --json" 0 devices --state-dir "$STATE" --json
jqok "devices --json" '.devices | length == 2'
jqok "devices --json" '.devices[0] | .name == "w1" and .ek_hash == ("a" * 64) and .inventory_id == 11'
jqok "devices --json" '.devices[1] | .ek_hash == null and .quarantined and .quarantine_reason == "pcr7-authority"'
jqok "devices --json" '.devices[0].first_admitted == "2025-11-30T05:20:00Z"'

expect "provisional" 0 provisional --state-dir "$STATE"
grep -q '^w3  *lak  *[0-9a-f]\{40\}  *2025-11-30T06:43:20Z  *2025-11-30T07:00:00Z' "$TMP/out" ||
  fail "provisional: no revoked w3 LAK line"
grep -q '^w3  *ldevid ' "$TMP/out" || fail "provisional: no w3 LDevID line"
expect "provisional --json" 0 provisional --state-dir "$STATE" --json
jqok "provisional --json" '.provisional | length == 2 and all(.revoked and .name == "w3" and .revoked_at == "2025-11-30T07:00:00Z")'
expect "device show w3" 1 device show w3 --state-dir "$STATE"

expect "claims" 0 claims --state-dir "$STATE"
grep -q '^NEW-1  *unknown-serial  *2 ' "$TMP/out" || fail "claims: NEW-1 not counted twice"
grep -q '^NEW-2  *no-binding  *1 ' "$TMP/out" || fail "claims: no NEW-2"
expect "claims --json" 0 claims --json --state-dir "$STATE"
jqok "claims --json" '.claims | map(.serial) == ["NEW-2", "NEW-1"]'
jqok "claims --json" '.claims[1] | .count == 2 and (.eks | length) == 1 and .eks[0].ek_hash == ("c" * 64) and .eks[0].ek_hash_ecc == null'

expect "verdicts" 0 verdicts --state-dir "$STATE"
[ "$(wc -l <"$TMP/out")" -eq 4 ] || fail "verdicts: want a header and 3 lines"
expect "verdicts --json" 0 verdicts --json --state-dir "$STATE"
jqok "verdicts --json" '.verdicts | map(.session) == ["03", "02", "01"]'
jqok "verdicts --json" '.verdicts[0] | .device == null and .serial == "ORPHAN" and .result == "fail"'
expect "verdicts --device" 0 verdicts --device w1 --limit 1 --json --state-dir "$STATE"
jqok "verdicts --device" '.verdicts | length == 1 and .[0].result == "pass" and .[0].reasons == []'
expect "verdicts --device w1" 0 verdicts --device w1 --json --state-dir "$STATE"
jqok "verdicts --device w1" '.verdicts | length == 2 and .[1].reasons == ["pcr4-app"]'
expect "verdicts --limit 0" 2 verdicts --limit 0 --state-dir "$STATE"
expect "verdicts --limit x" 2 verdicts --limit 5x --state-dir "$STATE"

expect "device show" 0 device show w1 --state-dir "$STATE"
grep -q "^ek_hash:  *$(printf 'a%.0s' $(seq 64))$" "$TMP/out" || fail "device show: ek_hash"
grep -q "ldevid sha1 $SHA1 " "$TMP/out" || fail "device show: certificate $SHA1"
grep -A1 '^last verdict:' "$TMP/out" | grep -q ' pass ' || fail "device show: last verdict"
expect "device show --json" 0 device show w1 --json --state-dir "$STATE"
jqok "device show --json" ".certificates | length == 1 and .[0].sha1 == \"$SHA1\" and .[0].kind == \"ldevid\" and .[0].revoked == false"
jqok "device show --json" '.device.ek_hash_ecc == ("b" * 64) and .last_verdict.session == "02"'
jqok "device show --json" '.certificates[0].not_after == "2026-02-28T05:20:00Z"'
expect "device show w2 --json" 0 device show w2 --json --state-dir "$STATE"
jqok "device show w2 --json" '.certificates == [] and .last_verdict == null and .device.quarantined'

expect "device show unknown" 1 device show nobody --state-dir "$STATE"
grep -q "no device with that name" "$TMP/err" || fail "device show unknown: message"
expect "device usage" 2 device list --state-dir "$STATE"
expect "missing store" 2 devices --state-dir "$TMP/none"
grep -q "no store at" "$TMP/err" || fail "missing store: message"
expect "unknown option" 2 devices --state-dir "$STATE" --color

after=$(sha256sum "$STATE/fleetd.db" | cut -d' ' -f1)
[ "$before" = "$after" ] || fail "fleetctl changed the database"

if [ "$failures" -ne 0 ]; then
	echo "$failures failure(s)"
	exit 1
fi
echo "ok"
