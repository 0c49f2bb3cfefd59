#!/usr/bin/env bash
# join_crash.sh: kill -9 at every durable write of a token join's final
# round (store.h N1, fleet_store_join_commit), through the crash shim
# (tests/e2e/crash_shim.c, LD_PRELOAD; the store knows nothing of it):
# after each kill the store holds the whole join or none of it — the token
# unspent with no node and no certificate, or spent with both. Never a
# spent token without its node, never a recorded certificate without the
# token's use. Usage: join_crash.sh STORE_JOIN_TOOL CRASH_SHIM
set -u
TOOL=${1:?usage: join_crash.sh TOOL SHIM}
SHIM=${2:?usage: join_crash.sh TOOL SHIM}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/fleet-join-crash-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
killed=0
for n in $(seq 1 200); do
	rm -rf "$TMP/s" "$TMP/arm" "$TMP/arm.count"
	"$TOOL" setup "$TMP/s" >/dev/null || { echo "FAIL: setup"; exit 1; }
	echo "$n" >"$TMP/arm"
	LD_PRELOAD="$SHIM" FLEET_CRASH_ARM="$TMP/arm" \
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
		"$TOOL" commit "$TMP/s" >/dev/null 2>&1
	rc=$?
	rm -f "$TMP/arm"
	state=$("$TOOL" check "$TMP/s") || { echo "FAIL: check after a kill at write $n"; exit 1; }
	case "$rc:$state" in
	137:"uses_left=1 node=0 cert=0" | 137:"uses_left=0 node=1 cert=1") killed=$((killed + 1)) ;;
	0:"uses_left=0 node=1 cert=1")
		echo "ok: killed at each of the $killed durable writes before the commit's end: none or all"
		echo "ok: write $n: the join completed (token spent, node and certificate recorded)"
		[ "$killed" -ge 3 ] || { echo "FAIL: only $killed kill points: the shim did not count"; exit 1; }
		exit 0
		;;
	*) echo "FAIL: kill at write $n (exit $rc) left: $state"; exit 1 ;;
	esac
done
echo "FAIL: the join never completed in 200 writes"
exit 1
