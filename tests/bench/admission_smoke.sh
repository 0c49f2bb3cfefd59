#!/usr/bin/env bash
# bench/admission with two machines, so the benchmark cannot rot: every
# admission succeeds and every key docs/benchmark.md names is printed. The
# figures themselves are not checked (a test never times anything).
set -euo pipefail
src=${FLEET_SOURCE_DIR:?}
bin=${FLEET_BINARY_DIR:?}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
rc=0
BENCH_SECONDS=0.4 "$src/bench/admission" "$bin" 2 3 >"$out" 2>&1 || rc=$?
[ "$rc" -ne 77 ] || { cat "$out"; exit 77; }
[ "$rc" -eq 0 ] || { cat "$out"; echo "bench/admission failed ($rc)" >&2; exit 1; }
fail=0
for key in admissions admitted device_admitted_log_lines healthz_requests fleetd_cpu_ticks \
  wall_per_admission_ms cpu_per_admission_us floor_per_admission_us ratio_cpu_vs_floor \
  healthz_cpu_per_request_us healthz_ratio_vs_floor floor_admission_us floor_healthz_us \
  floor_ek_chain_links op_ecdsa_p256_verify_us op_cert_sign_us op_tls_sign_us op_tls_x25519_us; do
  grep -Eq "^$key=[0-9.]+\$" "$out" || { echo "missing or non-numeric: $key" >&2; fail=1; }
done
grep -qx 'admitted=2' "$out" || { echo "not both admitted" >&2; fail=1; }
grep -qx 'device_admitted_log_lines=2' "$out" || { echo "fleetd did not log two admissions" >&2; fail=1; }
grep -qx 'floor_ek_chain_links=4' "$out" || { echo "expected two links per EK chain" >&2; fail=1; }
[ "$fail" -eq 0 ] || { cat "$out"; exit 1; }
echo "bench/admission: both admitted, every key present"
