#!/usr/bin/env bash
# The README's demo (scripts/demo.sh) against this build: fleetd with the
# nodes file behind real HTTPS, three machines on real swtpms running the real
# tink-attest. Asserts each machine's outcome and what the operator sees.
set -euo pipefail
out=$(mktemp)
trap 'rm -f "$out"' EXIT
set +e
FLEET_DEMO_BUILD_DIR="$FLEET_BINARY_DIR" bash "$FLEET_SOURCE_DIR/scripts/demo.sh" >"$out" 2>&1
rc=$?
set -e
[ "$rc" -eq 77 ] && { echo "SKIP: swtpm not installed"; exit 77; }
cat "$out"
[ "$rc" -eq 0 ] || { echo "FAIL: demo exited $rc"; exit 1; }
expect() { grep -qE -- "$1" "$out" || { echo "FAIL: demo output lacks: $1"; exit 1; }; }
expect "tink-attest: confirmed"                                  # A: three rounds
expect "subject=CN = worker-a, serialNumber = DEMO-A-0001"       # A's LDevID
expect "event=intake-refused .*FLEET_SERIAL=DEMO-B-0002 .*FLEET_REASON=ek-not-approved"
expect "^DEMO-C-0003 +unknown-serial"                            # C's claim
expect "worker-a +DEMO-A-0001 +pass"                             # the verdict
expect 'fleetd_verdicts_total\{result="pass"\} 1'
# Machine A installed (when ../shared/contracts is there: the demo says so)
if ! grep -q "the installation steps are skipped" "$out"; then
  expect "tink-attest activated the code with A's TPM"
  expect "^workflow fleet-worker-a-[0-9a-f]+ template folly-talos-install hardware worker-a"
  expect "^HTTP 200, [0-9]+ bytes"
  expect "the same code again: HTTP 410"
  expect "fleetd approved node-csr-worker-a"
  expect "fleetd deleted bootstrap-token-"
  expect "^1 +worker-a +worker +done .* deleted +node-csr-worker-a"
  expect "worker-a is active"
  expect "the hourly check passed"
fi
echo "demo: every machine got its expected outcome"
