#!/usr/bin/env bash
# The bench label's test of bench/pass (docs/benchmark-pass.md): a small
# fleet (2,000 devices), every output key present and well-formed, the pass
# "ok" and spire-nodes.json holding every eligible and every revoked device
# (bench_pass checks each entry and exits 1 otherwise). The timing is not
# checked: it is the benchmark's to print, not a test's to assert.
# With FLEET_TEST_PG (the test cluster's conninfo file, tests/CMakeLists.txt)
# the pass runs on a fresh PostgreSQL database of that cluster instead
# (BENCH_STORE), dropped afterwards.
# usage: pass_check.sh BUILD_DIR [DEVICES]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$1
devices=${2:-2000}
if [ -n "${FLEET_TEST_PG:-}" ]; then
  conninfo=$(cat "$FLEET_TEST_PG")
  if [ "$conninfo" = none ]; then
    echo "pass_check: the test cluster could not start (no PostgreSQL server installed)" >&2
    [ "${FLEET_REQUIRE_PG:-}" = 1 ] && exit 1
    exit 77
  fi
  db=bench_pass_$$
  psql "$conninfo" -qAtc "CREATE DATABASE $db" >/dev/null
  trap 'psql "$conninfo" -qAtc "DROP DATABASE IF EXISTS $db" >/dev/null' EXIT
  # the same URI, the database swapped: postgresql:///postgres?host=... as the script writes it
  export BENCH_STORE=${conninfo/\/\/\/postgres?/\/\/\/$db?}
  [ "$BENCH_STORE" != "$conninfo" ] || { echo "pass_check: cannot name a database in $conninfo" >&2; exit 1; }
fi
set +e
out=$("$root/bench/pass" "$build" "$devices")
rc=$?
set -e
printf '%s\n' "$out"
[ "$rc" = 77 ] && exit 77
[ "$rc" = 0 ] || { echo "pass_check: bench/pass exited $rc" >&2; exit 1; }
num='^[0-9]+(\.[0-9]+)?$'
for k in devices requests connections bytes_received cpu_s cpu_s_per_10k rss_max_mib wall_s \
	jansson_parse_cpu_s ratio_cpu_vs_jansson_parse eligible revoked peer_bytes; do
	v=$(printf '%s\n' "$out" | sed -n "s/^$k=//p")
	[[ $v =~ $num ]] || { echo "pass_check: $k=\"$v\" is not a number" >&2; exit 1; }
done
want() { printf '%s\n' "$out" | grep -qx "$1" || { echo "pass_check: no line $1" >&2; exit 1; }; }
want "devices=$devices"
if [ -n "${BENCH_STORE:-}" ]; then
  want "store=postgresql"
  v=$(printf '%s\n' "$out" | sed -n 's/^pg_server_cpu_s=//p')
  [[ $v =~ $num ]] || { echo "pass_check: pg_server_cpu_s=\"$v\" is not a number" >&2; exit 1; }
else
  want "store=sqlite"
fi
want "pass_result=ok"
want "correct=yes"
want "connections=1"
want "fields_ignored=0"
want "eligible=$((devices * 98 / 100))"
want "revoked=$((devices - devices * 98 / 100))"
printf '%s\n' "$out" | grep -Eqx 'targets_met=(yes|no)' || { echo "pass_check: no targets_met" >&2; exit 1; }
# the peer read the very bytes the client received
b=$(printf '%s\n' "$out" | sed -n 's/^bytes_received=//p')
want "peer_bytes=$b"
echo "pass_check: ok"
