#!/usr/bin/env bash
# `fleetctl eventlog replay --json` on every shared real log equals its
# *.expected.json (compared with jq -S), and a truncated copy exits 1 naming
# the byte offset. Skips (77) without ../shared/data.
set -u
data=${FLEET_SHARED_DATA:-}/eventlogs
if [ -z "${FLEET_SHARED_DATA:-}" ] || [ ! -d "$data" ]; then
  echo "SKIP: ${FLEET_SHARED_DATA:-FLEET_SHARED_DATA unset}/eventlogs not found"
  exit 77
fi
command -v jq >/dev/null || { echo "FAIL: jq is needed"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0 n=0

for bin in "$data"/*.bin; do
  exp=${bin%.bin}.expected.json
  n=$((n + 1))
  if ! "$FLEETCTL" eventlog replay --json "$bin" >"$tmp/out" 2>"$tmp/err"; then
    echo "FAIL: $bin: exit $? ($(cat "$tmp/err"))"; fail=1; continue
  fi
  if ! diff <(jq -S . "$tmp/out") <(jq -S . "$exp") >/dev/null; then
    echo "FAIL: $bin differs from $exp"; fail=1; continue
  fi
  echo "ok: $bin"
done
[ "$n" -gt 0 ] || { echo "FAIL: no logs in $data"; exit 1; }

# A copy cut inside its last record: exit 1, the offset on stderr, nothing
# on stdout.
src=$data/tpm2tools-event-arch-linux.bin
size=$(stat -c %s "$src")
head -c $((size - 7)) "$src" >"$tmp/cut.bin"
"$FLEETCTL" eventlog replay --json "$tmp/cut.bin" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -ne 1 ] || ! grep -Eq "^fleetctl: eventlog: .*cut.bin: malformed at byte [0-9]+: " "$tmp/err" \
   || [ -s "$tmp/out" ]; then
  echo "FAIL: truncated log: exit $rc, stderr: $(cat "$tmp/err")"; fail=1
else
  echo "ok: truncated log refused: $(cat "$tmp/err")"
fi

# An empty file is refused the same way, at byte 0.
: >"$tmp/empty.bin"
"$FLEETCTL" eventlog replay --json "$tmp/empty.bin" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -ne 1 ] || ! grep -q "empty.bin: malformed at byte 0: " "$tmp/err"; then
  echo "FAIL: empty log: exit $rc, stderr: $(cat "$tmp/err")"; fail=1
fi

# Usage errors exit 2.
"$FLEETCTL" eventlog replay >/dev/null 2>&1; rc=$?
[ "$rc" -eq 2 ] || { echo "FAIL: missing FILE exits $rc, not 2"; fail=1; }
"$FLEETCTL" eventlog replay --bogus "$src" >/dev/null 2>&1; rc=$?
[ "$rc" -eq 2 ] || { echo "FAIL: unknown option exits $rc, not 2"; fail=1; }
exit $fail
