#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# load_soak.sh (ctest load_soak, label load): one fleetd through many
# admissions and passes with unproven traffic alongside, watching what must
# not grow. LOAD_SOAK_MACHINES (8) swtpm machines are admitted again and
# again, LOAD_SOAK_MACHINES at a time, LOAD_SOAK_ADMISSIONS (300) in all,
# while the forger sends forged intakes for them from 4 addresses as fast as
# the rate limits allow, and fleetd runs its pass every
# pass.interval_seconds (60, the least fleetd accepts; one pass at start).
# With LOAD_SOAK_PASSES=P the admissions are spread out so the run lasts
# until P passes are done (the issue's full size: LOAD_SOAK_ADMISSIONS=10000
# LOAD_SOAK_PASSES=1000, about 17 hours; tests/load/README.md).
#
# Sampled every LOAD_SOAK_SAMPLE_S (0.5) s: fleetd's VmRSS, its open
# descriptors, its log's size. Required:
#   - every admission admitted (tink-attest exit 0);
#   - flat RSS: after the warm-up (the first 10 % of the samples, at least
#     10 s), the last quarter's maximum at most LOAD_SOAK_RSS_SLACK_KB
#     (6144) above the first quarter's maximum. Why 6 MiB: the store's two
#     SQLite connections (fleetd's and the pass's) each keep a page cache
#     of up to 2000 KiB (SQLite's default cache_size), which fills as the
#     store grows with every admission and then stops; 2 MiB more for
#     malloc's per-thread arenas (the listener's and the pass's threads)
#     settling. A leak of a kilobyte per admission passes at 300
#     admissions (LeakSanitizer's run is what catches it there) and fails
#     the full-size run (10 MB);
#   - flat descriptors: the last quarter's maximum at most the first
#     quarter's plus 2, and, once the load has stopped and every client's
#     connection is closed, exactly as many open as before the load;
#   - the log: every limited kind (an unproven request's journal line:
#     intake-challenged, intake-refused, intake-busy, auth-failure, ...)
#     at most once per 60 s window per key, and its log-suppressed summary
#     at most once per window per key: the forged intakes, thousands of
#     them, add a bounded number of lines;
#   - fleetd stops cleanly (exit 0) and, when it is built with ASan
#     (LOAD_FLEETD=build-asan/fleetd/fleetd, or the whole tree under
#     FLEET_SANITIZE), LeakSanitizer reports nothing at that stop.
set -euo pipefail
# shellcheck source=load_lib.sh
. "$(dirname "$0")/load_lib.sh"

m=${LOAD_SOAK_MACHINES:-8}
total=${LOAD_SOAK_ADMISSIONS:-300}
passes=${LOAD_SOAK_PASSES:-2}
interval=${LOAD_SOAK_PASS_INTERVAL:-60}
sample_s=${LOAD_SOAK_SAMPLE_S:-0.5}
rss_slack=${LOAD_SOAK_RSS_SLACK_KB:-6144}
fd_slack=${LOAD_SOAK_FD_SLACK:-2}
load_init "$(mktemp -d "${TMPDIR:-/tmp}/fleet-soak.XXXXXX")"
w=$load_work

asan=
if ldd "${LOAD_FLEETD:-$FLEET_BINARY_DIR/fleetd/fleetd}" 2>/dev/null | grep -q libasan; then
	asan=1
	# LeakSanitizer runs at exit; its report fails the exit status (23)
	site_fleetd_env=("ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1:exitcode=23")
	# ASan's RSS is its quarantine (256 MiB, filling as memory is freed)
	# and shadow, not fleetd's: the flat-RSS bound is the normal build's,
	# and under ASan only a gross growth fails (LeakSanitizer is the check)
	rss_slack=${LOAD_SOAK_RSS_SLACK_KB:-32768}
fi

load_tpms "$m"
load_nodes_yaml "$m"
# spire.trust_domain set: each pass writes spire-nodes.json of the admitted
load_fleetd_start "$(printf 'pass:\n  interval_seconds: %s\n' "$interval")" --spire load.example.org
t_fleetd0=$(load_now_ms)
echo "load_soak: $m machines, fleetd pid $load_fleetd_pid on port $load_port${asan:+ (ASan: LeakSanitizer on)}"

# each pass journals one binding-authors-pass line
passes_done() { grep -c 'event=binding-authors-pass' "$w/fleetd.log" || true; }

# Warm-up: each machine admitted once (the device rows, curl, TLS), then
# the descriptors with nothing in flight.
load_round "$m" "$w/warmup.results"
if awk '$2 != 0' "$w/warmup.results" | grep -q .; then
	echo "FAIL: the warm-up admissions failed:"; cat "$w/warmup.results"
	tail -5 "$w"/m1/tink.log; exit 1
fi
sleep 1
fd_idle0=$(load_fds)

# The sampler.
: >"$w/results"
(
	while kill -0 "$load_fleetd_pid" 2>/dev/null && [ ! -e "$w/stop-sampler" ]; do
		printf '%s %s %s %s %s\n' "$(load_now_ms)" "$(wc -l <"$w/results")" "$(load_rss_kb)" \
			"$(load_fds)" "$(stat -c %s "$w/fleetd.log")" >>"$w/samples"
		sleep "$sample_s"
	done
) &
load_pids+=($!)
sampler=$!

srcs=127.0.2.1,127.0.2.2,127.0.2.3,127.0.2.4
load_flood_start 0 "$srcs"

# The workers: machine i admitted per_worker times; with LOAD_SOAK_PASSES
# paced so the admissions last until that many passes are due.
per_worker=$(((total + m - 1) / m))
period_ms=0
# (the first pass runs at start: P passes are done (P - 1) intervals later)
[ "$passes" -gt 1 ] && period_ms=$(((passes - 1) * interval * 1000 * m / total))
t_start=$(load_now_ms)
workers=()
for i in $(seq 1 "$m"); do
	(
		for k in $(seq 1 "$per_worker"); do
			load_attest "$i" "$w/results"
			if [ "$period_ms" -gt 0 ]; then
				next=$((t_start + k * period_ms))
				now=$(load_now_ms)
				[ "$now" -lt "$next" ] && sleep "$(awk -v d=$((next - now)) 'BEGIN {print d / 1000}')"
			fi
		done
	) &
	workers+=($!)
	load_pids+=($!)
done
for p in "${workers[@]}"; do
	wait "$p" 2>/dev/null || true
done
# LOAD_SOAK_PASSES: the passes still due
while [ "$(passes_done)" -lt "$passes" ]; do sleep 5; done
load_flood_stop
t_end=$(load_now_ms)
touch "$w/stop-sampler"
wait "$sampler" 2>/dev/null || true
# every connection closed (the clients are gone; fleetd's own idle timeout)
fd_idle1=$(load_fds)
for _ in $(seq 1 30); do
	[ "$fd_idle1" -le "$fd_idle0" ] && break
	sleep 1
	fd_idle1=$(load_fds)
done

fail=0
done_n=$(wc -l <"$w/results")
bad=$(awk '$2 != 0' "$w/results" | wc -l)
secs=$(awk -v a="$t_start" -v b="$t_end" 'BEGIN {printf "%.0f", (b - a) / 1000}')
awk '{print $3}' "$w/results" >"$w/ms"
echo "load_soak: $done_n admissions in $secs s ($((done_n - bad)) admitted), latency p50 $(load_pct 50 "$w/ms") ms, p99 $(load_pct 99 "$w/ms") ms; $(passes_done) passes"
echo "load_soak: forged intakes: $(cat "$load_flood_out")"
[ "$bad" -eq 0 ] || { echo "FAIL: $bad admissions failed:"; awk '$2 != 0' "$w/results" | head; fail=1; }

# The series: warm-up dropped, quarters compared.
python3 - "$w/samples" "$rss_slack" "$fd_slack" >"$w/series.txt" <<'PY' || fail=1
import sys
rows = [list(map(int, l.split())) for l in open(sys.argv[1]) if len(l.split()) == 5]
slack_rss, slack_fd = int(sys.argv[2]), int(sys.argv[3])
t0 = rows[0][0]
warm = min(max(len(rows) // 10, sum(1 for r in rows if r[0] - t0 < 10000)), len(rows) // 2)
s = rows[warm:]
q = max(len(s) // 4, 1)
q1, q4 = s[:q], s[-q:]
ok = True
def show(name, col, unit, slack):
    global ok
    a, b = max(r[col] for r in q1), max(r[col] for r in q4)
    lo, hi = min(r[col] for r in s), max(r[col] for r in s)
    verdict = "flat" if b - a <= slack else "GROWS"
    print(f"load_soak: {name}: first quarter max {a} {unit}, last quarter max {b} {unit} "
          f"(+{b - a}, allowed +{slack}); range {lo}..{hi} over {len(s)} samples after "
          f"{warm} warm-up: {verdict}")
    ok &= b - a <= slack
show("VmRSS", 2, "kB", slack_rss)
show("open fds", 3, "", slack_fd)
# RSS per 1000 admissions, a least-squares slope over the samples
xs, ys = [r[1] for r in s], [r[2] for r in s]
n = len(xs); mx, my = sum(xs) / n, sum(ys) / n
vx = sum((x - mx) ** 2 for x in xs)
if vx:
    print(f"load_soak: VmRSS slope {1000 * sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / vx:.0f} kB per 1000 admissions")
print(f"load_soak: log {rows[-1][4] - rows[0][4]} bytes over the run, "
      f"{(rows[-1][4] - rows[0][4]) / max(rows[-1][1] - rows[0][1], 1):.0f} bytes per admission")
sys.exit(0 if ok else 1)
PY
cat "$w/series.txt"
echo "load_soak: open fds with nothing in flight: $fd_idle0 before, $fd_idle1 after"
[ "$fd_idle1" -le "$fd_idle0" ] || { echo "FAIL: descriptors left open"; fail=1; }

echo "load_soak: fleetd counted unproven: intake-proof $(load_metric 'fleetd_unproven_total{reason="intake-proof"}'), session-caps $(load_metric 'fleetd_unproven_total{reason="session-caps"}'), lookup-budget $(load_metric 'fleetd_unproven_total{reason="lookup-budget"}'); intakes challenged $(load_metric 'fleetd_intake_total{result="challenge"}')"
# fleetd stops before its log is read: the limiter flushes its summaries
# at shutdown, and those count too.
rc=0
site_fleetd_stop || rc=$?
if [ "$rc" -ne 0 ]; then
	echo "FAIL: fleetd's stop exited $rc"; fail=1
fi
if grep -qE "LeakSanitizer|ERROR: AddressSanitizer|runtime error:" "$w/fleetd.log"; then
	echo "FAIL: the sanitizer reported at fleetd's stop:"
	grep -A30 -E "LeakSanitizer|ERROR: AddressSanitizer|runtime error:" "$w/fleetd.log" | head -60
	fail=1
elif [ -n "$asan" ]; then
	echo "load_soak: LeakSanitizer reported nothing at fleetd's clean stop"
fi
# The limiter's bound: a limited kind once per key per window, its summary
# once per key per window.
windows=$((($(load_now_ms) - t_fleetd0) / 60000 + 2))
python3 - "$w/fleetd.log" "$windows" <<'PY' || fail=1
import re, sys, collections
limited = {"intake-challenged", "intake-refused", "intake-busy", "intake-unavailable",
           "intake-store-failed", "intake-error", "auth-failure", "binding-author-from-record"}
def field(l, k):
    m = re.search(r"\b" + k + r"=(\S+)", l)
    return m.group(1) if m else ""
keys, summaries, total, limited_lines, other = collections.Counter(), collections.Counter(), 0, 0, collections.Counter()
suppressed = lim_bytes = 0
for l in open(sys.argv[1], errors="replace"):
    total += 1
    ev = field(l, "event")
    if ev in limited or ev == "log-suppressed":
        lim_bytes += len(l.encode())
    if ev in limited:
        limited_lines += 1
        keys[(ev, field(l, "FLEET_REASON"), field(l, "FLEET_DEVICE"))] += 1
    elif ev == "log-suppressed":
        summaries[field(l, "FLEET_KEY")] += 1
        m = re.search(r"FLEET_SUPPRESSED=(\d+)", l)
        suppressed += int(m.group(1)) if m else 0
    else:
        other[ev] += 1
w = int(sys.argv[2])
worst = max(keys.values(), default=0)
worst_s = max(summaries.values(), default=0)
print(f"load_soak: log: {total} lines; {limited_lines} limited lines over {len(keys)} keys "
      f"(at most {worst} per key), {sum(summaries.values())} log-suppressed summaries "
      f"(at most {worst_s} per key) standing for {suppressed} suppressed events; "
      f"bound {w} per key ({w} windows)")
print(f"load_soak: log bytes of the limited kinds and their summaries: {lim_bytes}")
print("load_soak: other events: " + ", ".join(f"{k} {v}" for k, v in other.most_common(12)))
ok = worst <= w and worst_s <= w
if not ok:
    print("FAIL: a limited kind was journaled more than once per window:",
          [k for k, v in keys.items() if v > w], [k for k, v in summaries.items() if v > w])
sys.exit(0 if ok else 1)
PY

[ "$fail" -eq 0 ] || { tail -20 "$w/fleetd.log"; exit 1; }
echo "load_soak: PASS"
