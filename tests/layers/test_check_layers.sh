#!/usr/bin/env bash
# The layer check (scripts/check-layers.py, docs/ARCHITECTURE.md) passes on
# the tree as built, and fails, naming the edge, on what it exists to stop:
# a wrong-way include planted in lib/ and in the SPIRE applier, and an
# applier binary that carries the store (SQLite).
set -euo pipefail
src=${FLEET_SOURCE_DIR:?}
bin=${FLEET_BINARY_DIR:?}
check="$src/scripts/check-layers.py"
command -v python3 >/dev/null || { echo "skip: no python3"; exit 77; }
command -v readelf >/dev/null || { echo "skip: no readelf"; exit 77; }

fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

out=$(python3 "$check" --build "$bin" 2>&1) || fail "the tree as built: $out"

t=$(mktemp -d "${TMPDIR:-/tmp}/layers.XXXXXX")
trap 'rm -rf "$t"' EXIT
# A copy of the sources (tracked files), outside git: the checker walks it.
(cd "$src" && git ls-files -z --cached --others --exclude-standard '*.c' '*.h' docs/ARCHITECTURE.md | xargs -0 tar cf -) |
	(mkdir -p "$t/tree" && cd "$t/tree" && tar xf -)
out=$(python3 "$check" --root "$t/tree" 2>&1) || fail "the copy, unplanted: $out"

# planted PATH LINE WANT: PATH gets LINE; the check must fail and say WANT.
planted() {
	cp "$t/tree/$1" "$t/saved"
	printf '%s\n' "$2" >>"$t/tree/$1"
	if out=$(python3 "$check" --root "$t/tree" 2>&1); then
		fail "$1 with '$2' passed the check"
	elif ! grep -qF -- "$3" <<<"$out"; then
		fail "$1 with '$2': the check did not say '$3': $out"
	fi
	cp "$t/saved" "$t/tree/$1"
}
planted lib/hex.c '#include "policy/profile.h"' \
	'lib/hex.c:'
planted lib/hex.c '#include "fleetd/store/store.h"' \
	'lib/ may not include fleetd/store/store.h'
planted spire-server-fleet-entries/plan.c '#include "fleetd/spire/spire_nodes.h"' \
	'spire-server-fleet-entries/ may not include fleetd/spire/spire_nodes.h'
planted fleetd/config/config.c '#include "fleetd/spire/spire_nodes.h"' \
	'fleetd/config/ may not include'
planted fleetctl/main.c '#include "fleetd/admission/admission.h"' \
	'fleetctl/ may not include'

# An applier binary that links the store: fleetd's own binary in its place.
mkdir -p "$t/build/fleetd" "$t/build/fleetctl" "$t/build/spire-server-fleet-entries" \
	"$t/build/tink-attest"
cp "$bin/fleetd/fleetd" "$t/build/fleetd/fleetd"
cp "$bin/fleetctl/fleetctl" "$t/build/fleetctl/fleetctl"
cp "$bin/tink-attest/tink-attest" "$t/build/tink-attest/tink-attest"
cp "$bin/fleetd/fleetd" "$t/build/spire-server-fleet-entries/spire-server-fleet-entries"
if out=$(python3 "$check" --build "$t/build" 2>&1); then
	fail "an applier linking SQLite passed the check"
else
	grep -qF 'spire-server-fleet-entries (spire-server-fleet-entries/spire-server-fleet-entries) needs libsqlite3' <<<"$out" ||
		fail "no word of libsqlite3: $out"
	grep -qF 'starting sqlite3_' <<<"$out" || fail "no word of sqlite3_ symbols: $out"
	grep -qF 'starting fleet_store_' <<<"$out" || fail "no word of fleet_store_ symbols: $out"
fi

if [ "$fails" -gt 0 ]; then
	echo "$fails failure(s)"
	exit 1
fi
echo "layers: the check passes on the tree and refuses each planted edge"
