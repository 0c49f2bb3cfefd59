#!/usr/bin/env bash
# join_discovery_approved_lockout.sh: an approval that can never be used
# locks the machine out for good.
#
# A pending request records the CSR of the first attempt
# (policy/attestors/discovery.c approval()). Once approved, only that CSR
# joins ("discovery-request-csr" otherwise), and an approved request never
# expires (store D4 reads only a *pending* one as expired), is never
# replaced (D3: "approved is CONFLICT"), and cannot be denied (D5: only a
# pending one is decided). A ramdisk that lost its key before the operator
# approved -- it rebooted, fleet-join ran again after --max-wait (exit 12:
# a fresh key each run), or its 15-minute assertion went stale while it
# waited -- is refused for that site and MAC for ever, whatever fresh token
# and assertion it brings, days later, and the operator has no command to
# undo it. (The same shape lets whoever first reaches fleetd with a valid
# assertion for a MAC have the operator approve *their* CSR.)
# shellcheck source=join_lib.sh
approval=always
. "$(dirname "$0")/join_lib.sh"
make_site
M=52:54:00:00:0f:01
"$join" assert --key s1.key --cert s1.pem --site s1 --signer "$s1" --epoch "$epoch" --mac $M >a1.json
tok td1 --pool pool-a --role discovery --site s1 --expect-mac $M
fj "${D[@]}" --token-file td1 --discovery-file a1.json --mac $M --max-wait 1 --key-out x.key --cert-out x.pem
[ "$rc" = 12 ] || die "the first attempt did not wait (exit $rc)"
rq=$("$fleetctl" join-requests list --json --state-dir "$work/state" | jq -r '.join_requests[] | select(.status == "pending") | .id' | head -n1)
"$fleetctl" join-requests approve "$rq" --state-dir "$work/state" >/dev/null || die "approve"
# The machine tries again (fleet-join makes a new key each run), with a
# fresh assertion and a fresh token.
"$join" assert --key s1.key --cert s1.pem --site s1 --signer "$s1" --epoch "$epoch" --mac $M >a2.json
tok td2 --pool pool-a --role discovery --site s1 --expect-mac $M
fj "${D[@]}" --token-file td2 --discovery-file a2.json --mac $M --max-wait 1 --key-out x.key --cert-out x.pem
[ "$rc" = 10 ] || held "the second attempt: exit $rc"
rc_deny=0
"$fleetctl" join-requests deny "$rq" --state-dir "$work/state" >/dev/null 2>&1 || rc_deny=$?
# Two days later, fresh evidence again.
if [ -f "$faketime_lib" ]; then
	site_fleetd_env=(LD_PRELOAD="$faketime_lib" FAKETIME=+2d FAKETIME_DONT_FAKE_MONOTONIC=1 "$asan")
	restart
	"$fleetctl" site lease s1 "$s1" --state-dir "$work/state" >/dev/null 2>&1 || true
	epoch=$("$fleetctl" site lease s1 "$s1" --json --state-dir "$work/state" 2>/dev/null | jq -r .epoch)
	# s1's certificate expired: the site node renews it first (x509pop).
	env LD_PRELOAD="$faketime_lib" FAKETIME=+2d FAKETIME_DONT_FAKE_MONOTONIC=1 "$asan" \
		"$join" "${X[@]}" --role site --x509pop-cert s1.pem --x509pop-key s1.key --node-id "$s1" \
		--key-out s1b.key --cert-out s1b.pem >/dev/null 2>&1 || die "the site node's x509pop"
	env LD_PRELOAD="$faketime_lib" FAKETIME=+2d FAKETIME_DONT_FAKE_MONOTONIC=1 "$asan" \
		"$join" assert --key s1b.key --cert s1b.pem --site s1 --signer "$s1" --epoch "$epoch" --mac $M >a3.json
	env LD_PRELOAD="$faketime_lib" FAKETIME=+2d FAKETIME_DONT_FAKE_MONOTONIC=1 "$asan" \
		"$fleetctl" token create --pool pool-a --role discovery --site s1 --expect-mac $M \
		--state-dir "$work/state" --json 2>/dev/null | jq -r .sealed >td3
	rc=0
	env LD_PRELOAD="$faketime_lib" FAKETIME=+2d FAKETIME_DONT_FAKE_MONOTONIC=1 "$asan" \
		"$join" "${D[@]}" --token-file td3 --discovery-file a3.json --mac $M --max-wait 1 \
		--key-out x.key --cert-out x.pem >out.txt 2>err.txt || rc=$?
	status=$(sql "SELECT status FROM join_requests WHERE id = '$rq'")
	if [ "$rc" = 10 ] && [ "$status" = approved ] && [ "$rc_deny" != 0 ]; then
		defect "MAC $M is locked out: 2 days after the approval, fresh token and assertion: denied ($(tail -n1 hook/refusals.jsonl | jq -r .reason)); request $rq still '$status'; 'join-requests deny' fails (exit $rc_deny)"
	else
		held "2 days later: exit $rc, request $status, deny exit $rc_deny"
	fi
fi
finish
