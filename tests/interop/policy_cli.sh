#!/usr/bin/env bash
# policy_cli.sh: `fleetctl policy check` on real firmware logs: exit codes,
# text and --json output, --pcrs from `fleetctl eventlog replay --json` of
# the same log (pass) and with one PCR value changed (log-quote-mismatch).
set -u

: "${FLEETCTL:?FLEETCTL must name the fleetctl binary}"
: "${FLEET_SOURCE_DIR:?}"
: "${FLEET_SHARED_DATA:?}"
LOGS="$FLEET_SHARED_DATA/eventlogs"
if [ ! -d "$LOGS" ]; then
	echo "SKIP: $LOGS not found (the shared real-world data is not beside this checkout)"
	exit 77
fi
command -v jq >/dev/null || { echo "FAIL: jq is needed to read --json output"; exit 1; }

PROFILES="$FLEET_SOURCE_DIR/policy/profiles"
GCE="$LOGS/tpm2tools-event-gce-ubuntu-2104-log.bin"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/fleet-policy-cli-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
failures=0

# expect NAME WANT_EXIT ARGS...: run fleetctl, keep stdout/stderr in $TMP.
expect() {
	local name=$1 want=$2
	shift 2
	"$FLEETCTL" "$@" >"$TMP/out" 2>"$TMP/err"
	local got=$?
	if [ "$got" -ne "$want" ]; then
		echo "FAIL: $name: exit $got, want $want"
		sed 's/^/  stdout: /' "$TMP/out"
		sed 's/^/  stderr: /' "$TMP/err"
		failures=$((failures + 1))
		return 1
	fi
	echo "ok: $name"
}

# check NAME COMMAND...: a shell test on the last run's output.
check() {
	local name=$1
	shift
	if ! "$@"; then
		echo "FAIL: $name"
		sed 's/^/  stdout: /' "$TMP/out"
		sed 's/^/  stderr: /' "$TMP/err"
		failures=$((failures + 1))
	fi
}

base=(policy check --profile "$PROFILES/worker-gce-shielded.yaml" --log "$GCE" --bios Google)

expect "admits the GCE log" 0 "${base[@]}"
check "prints pass" grep -qx pass "$TMP/out"
check "says no quote was checked" grep -q "own replay only" "$TMP/err"

expect "admits with --json" 0 "${base[@]}" --json
check "json verdict pass" test "$(jq -r .verdict "$TMP/out")" = pass
check "json quote_checked false" test "$(jq -r .quote_checked "$TMP/out")" = false
check "json class" test "$(jq -r .class "$TMP/out")" = worker

# The quote as eventlog replay prints it: the same log must pass.
"$FLEETCTL" eventlog replay --json "$GCE" >"$TMP/pcrs.json" ||
	{ echo "FAIL: fleetctl eventlog replay --json"; exit 1; }
expect "admits with --pcrs from eventlog replay" 0 "${base[@]}" --pcrs "$TMP/pcrs.json" --json
check "json quote_checked true" test "$(jq -r .quote_checked "$TMP/out")" = true
check "json no reasons" test "$(jq -r '.reasons | length' "$TMP/out")" = 0

# The same, with PCR 4 changed by one digit: the log no longer explains it.
jq '.pcrs.sha256["4"] |= (if startswith("0") then "1" else "0" end) + .[1:]' \
	"$TMP/pcrs.json" >"$TMP/tampered.json"
expect "refuses a tampered PCR 4" 1 "${base[@]}" --pcrs "$TMP/tampered.json" --json
check "json verdict fail" test "$(jq -r .verdict "$TMP/out")" = fail
check "json reason log-quote-mismatch only" \
	test "$(jq -c '[.reasons[].reason]' "$TMP/out")" = '["log-quote-mismatch"]'

# A named refusal on a real log, text mode: the reason goes to stderr.
expect "secure boot required" 1 policy check --profile "$PROFILES/worker-gce-secureboot.yaml" \
	--log "$GCE" --bios Google
check "prints fail" grep -qx fail "$TMP/out"
check "names secure-boot-mismatch" grep -q "secure-boot-mismatch: PCR 7" "$TMP/err"

expect "no --bios" 1 policy check --profile "$PROFILES/worker-gce-shielded.yaml" --log "$GCE" --json
check "json bios-version-missing" \
	test "$(jq -c '[.reasons[].reason]' "$TMP/out")" = '["bios-version-missing"]'

# Usage and input errors: exit 2, with the line of a bad profile.
printf 'version: 1\nclass: worker\nquote: {bank: sha256, pcrs: [0]}\nsecure_boot: any\nsecureboot: true\n' \
	>"$TMP/bad.yaml"
expect "bad profile" 2 policy check --profile "$TMP/bad.yaml" --log "$GCE"
check "bad profile names line 5" grep -q "bad.yaml:5:1: unknown key 'secureboot'" "$TMP/err"
expect "missing --log" 2 policy check --profile "$PROFILES/worker-gce-shielded.yaml"
expect "unknown option" 2 "${base[@]}" --verbose
expect "unreadable log" 2 policy check --profile "$PROFILES/worker-gce-shielded.yaml" \
	--log "$TMP/nonexistent.bin"
printf '{"pcrs": {"sha256": {"4": "zz"}}}' >"$TMP/badpcrs.json"
expect "bad --pcrs" 2 "${base[@]}" --pcrs "$TMP/badpcrs.json"

# A log that does not parse is refused input: exit 1.
head -c 100 "$GCE" >"$TMP/short.bin"
expect "truncated log" 1 policy check --profile "$PROFILES/worker-gce-shielded.yaml" \
	--log "$TMP/short.bin" --bios Google

if [ "$failures" -ne 0 ]; then
	echo "$failures failure(s)"
	exit 1
fi
echo "all passed"
