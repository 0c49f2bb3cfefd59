#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# load_admission.sh (ctest load_admission, label load): LOAD_MACHINES (50)
# machines on swtpm admitted at once by one real fleetd (HTTPS, the
# nodes-file inventory with every machine planned and bound to its EKs, a
# fresh CA), each tink-attest from its own loopback address, at fleetd's
# default listener limits. Round 1 without, round 2 with a forged-intake
# flood from LOAD_FLOOD_SOURCES (4) addresses, as fast as the per-source
# rate limit allows. (A round 0 before them admits each machine the first
# time.) Requires: every run admitted (exit 0) in both rounds;
# round 2's p50 and p99 latency under LOAD_MAX_RATIO (2) times round 1's.
# Prints p50/p99 of each round, fleetd's CPU per admission, the ratios.
set -euo pipefail
# shellcheck source=load_lib.sh
. "$(dirname "$0")/load_lib.sh"

n=${LOAD_MACHINES:-50}
sources_n=${LOAD_FLOOD_SOURCES:-4}
max_ratio=${LOAD_MAX_RATIO:-2}
load_init "$(mktemp -d "${TMPDIR:-/tmp}/fleet-load.XXXXXX")"
w=$load_work

t0=$(date +%s)
load_tpms "$n"
load_nodes_yaml "$n"
load_fleetd_start
echo "load: $n machines manufactured and booted, fleetd on port $load_port ($(($(date +%s) - t0)) s)"

tck=$(getconf CLK_TCK)
fail=0
# round NAME: every machine at once; p50/p99 and CPU per admission
round() {
	local name="$1" c0 c1 bad
	c0=$(load_cpu_ticks)
	local s0; s0=$(load_now_ms)
	load_round "$n" "$w/$name.results"
	local wall=$(($(load_now_ms) - s0))
	c1=$(load_cpu_ticks)
	awk '{print $3}' "$w/$name.results" >"$w/$name.ms"
	bad=$(awk '$2 != 0' "$w/$name.results" | wc -l)
	local ok=$(($(wc -l <"$w/$name.results") - bad))
	eval "${name}_p50=$(load_pct 50 "$w/$name.ms") ${name}_p99=$(load_pct 99 "$w/$name.ms")"
	local p50 p99
	p50=$(load_pct 50 "$w/$name.ms")
	p99=$(load_pct 99 "$w/$name.ms")
	local cpu
	cpu=$(awk -v d=$((c1 - c0)) -v t="$tck" -v k="$ok" 'BEGIN {printf "%.1f", k ? d / t * 1000 / k : 0}')
	printf 'load: %-8s %d/%d admitted in %.1f s; latency p50 %d ms, p99 %d ms; fleetd CPU %s ms per admission (round 2: the flood CPU included)\n' \
		"$name" "$ok" "$n" "$(awk -v w="$wall" 'BEGIN {print w / 1000}')" "$p50" "$p99" "$cpu"
	if [ "$bad" -ne 0 ]; then
		echo "FAIL: $name: $bad admissions failed (machine rc ms):"
		awk '$2 != 0' "$w/$name.results" | head -20
		local i
		for i in $(awk '$2 != 0 {print $1}' "$w/$name.results" | head -3); do
			echo "--- machine $i's tink-attest:"; tail -5 "$w/m$i/tink.log"
		done
		fail=1
	fi
}

# Round 0 is each machine's first admission (the device row inserted);
# rounds 1 and 2 re-admit the same machines (the row touched), so the two
# compared differ only by the flood.
round first
sleep 2
round quiet
sleep 2 # the lookup budget's bucket refills
srcs=$(seq -s, -f '127.0.2.%g' 1 "$sources_n")
load_flood_start 0 "$srcs"
sleep 3 # the flood at its steady rate before the machines start
round flood
sleep 1
load_flood_stop
echo "load: flood from $sources_n sources: $(cat "$load_flood_out")"
echo "load: fleetd's intakes: challenge $(load_metric 'fleetd_intake_total{result="challenge"}'), busy $(load_metric 'fleetd_intake_total{result="busy"}'), unproven lookup-budget $(load_metric 'fleetd_unproven_total{reason="lookup-budget"}'), session-caps $(load_metric 'fleetd_unproven_total{reason="session-caps"}'); 429s $(load_metric 'fleetd_http_rejected_total{reason="rate-limited"}')"

# The forged intakes must have reached admission (a challenge each): a
# flood that fails I5 would measure nothing but the decoder.
challenged=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["challenge"])' "$load_flood_out")
[ "$challenged" -gt 0 ] || { echo "FAIL: no forged intake was challenged (the forgery is refused at I5?)"; fail=1; }

r50=$(awk -v a="$flood_p50" -v b="$quiet_p50" 'BEGIN {printf "%.2f", a / b}')
r99=$(awk -v a="$flood_p99" -v b="$quiet_p99" 'BEGIN {printf "%.2f", a / b}')
echo "load: latency ratio flood/no-flood: p50 $r50, p99 $r99 (limit $max_ratio)"
awk -v r="$r50" -v m="$max_ratio" 'BEGIN {exit !(r < m)}' || { echo "FAIL: the flood costs p50 ${r50}x"; fail=1; }
awk -v r="$r99" -v m="$max_ratio" 'BEGIN {exit !(r < m)}' || { echo "FAIL: the flood costs p99 ${r99}x"; fail=1; }

grep -E "event=(admission-error|intake-error|.*-store-failed)" "$w/fleetd.log" | head -5 && fail=1
site_fleetd_stop || { echo "FAIL: fleetd did not stop cleanly"; fail=1; }
[ "$fail" -eq 0 ] || { tail -30 "$w/fleetd.log"; exit 1; }
echo "load: PASS"
