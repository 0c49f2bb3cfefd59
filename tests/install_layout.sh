#!/usr/bin/env bash
# `cmake --install build --prefix P` puts the binaries in P/bin and the
# profiles and docs under P/share/fleetd.
set -euo pipefail
p=$(mktemp -d)
trap 'rm -rf "$p"' EXIT
cmake --install "$FLEET_BINARY_DIR" --prefix "$p" >/dev/null
for f in bin/fleetctl share/fleetd/profiles/worker-gce-shielded.yaml \
         share/fleetd/docs/README.md share/fleetd/docs/protocol.md; do
  [ -f "$p/$f" ] || { echo "FAIL: $f not installed"; exit 1; }
done
[ -x "$p/bin/fleetctl" ] || { echo "FAIL: bin/fleetctl not executable"; exit 1; }
"$p/bin/fleetctl" --help | grep -q "eventlog replay" || { echo "FAIL: installed fleetctl"; exit 1; }
echo "install layout ok"
