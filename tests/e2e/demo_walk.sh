#!/usr/bin/env bash
# The evidence walk (scripts/evidence-walk.sh), run against this build: one machine's EK certificates,
# simulated firmware boot, quote, policy and certificates on a real swtpm.
# Asserts each step's verdict, so a regression in any layer fails here too.
set -euo pipefail
out=$(mktemp)
trap 'rm -f "$out"' EXIT
set +e
FLEET_DEMO_BUILD_DIR="$FLEET_BINARY_DIR" bash "$FLEET_SOURCE_DIR/scripts/evidence-walk.sh" >"$out" 2>&1
rc=$?
set -e
[ "$rc" -eq 77 ] && { echo "SKIP: swtpm not installed"; exit 77; }
cat "$out"
[ "$rc" -eq 0 ] || { echo "FAIL: demo exited $rc"; exit 1; }
expect() { grep -qF -- "$1" "$out" || { echo "FAIL: demo output lacks: $1"; exit 1; }; }
expect "ok"                                   # EK chains verify
expect "quote: ok"                            # quote against the log's replay
expect "secure-boot-mismatch"                 # the Secure-Boot-off machine
expect "certify: ok"                          # LDevID certification
expect "subject=CN = worker-a, serialNumber = DEMO0001"
expect "quote: refused: attest-extradata"     # the replayed quote
[ "$(grep -c '^pass$' "$out")" -eq 1 ] || { echo "FAIL: expected exactly one policy pass"; exit 1; }
echo "demo walk: every step gave its expected verdict"
