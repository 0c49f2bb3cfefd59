#!/usr/bin/env bash
# join_hook_flood.sh: each unproven request runs the on_refusal program.
#
# fleetd/join/join_refusal.c limits the journal (one entry per attestor and
# reason a minute) precisely because "unproven traffic cannot flood it",
# but queues a fork+execve of join.on_refusal for EVERY refusal, including
# ones that prove nothing at all (an attestor fleetd does not run, a CSR
# that is not one, a token sealed by anyone with the public seal.pub). An
# unauthenticated client keeps the hook busy (one process per request: the
# operator's pager or audit sink is flooded) and, once the 64-slot queue
# is full, the refusals that matter (pool-attestor, reclaim-*) are dropped
# from the hook (fleetd_join_hook_dropped_total).
# shellcheck source=join_lib.sh
. "$(dirname "$0")/join_lib.sh"
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=x -keyout /dev/null \
	-outform DER -out x.csr 2>/dev/null
python3 - >junk.json <<'PY'
import base64, json
b = lambda x: base64.urlsafe_b64encode(x).decode().rstrip("=")
print(json.dumps({"v": 1, "attestor": "nope", "csr": b(open("x.csr", "rb").read()), "role": "node"}))
PY
n=15
for _ in $(seq 1 $n); do post junk.json >/dev/null; done
sleep 2
runs=$(wc -l <hook/refusals.jsonl 2>/dev/null || echo 0)
lines=$(grep -c 'join:attestor-unknown' fleetd.log || true)
echo "$n unauthenticated requests: $runs hook runs, $lines journal entries"
if [ "$runs" -ge "$n" ]; then
	defect "$n requests that prove nothing ran the on_refusal program $runs times (the journal limiter let $lines entries through)"
else
	held "the hook ran $runs times for $n requests"
fi
finish
