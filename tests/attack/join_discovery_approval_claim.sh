#!/usr/bin/env bash
# join_discovery_approval_claim.sh: discovery_approval unknown-machines is
# bypassed by a claim.
#
# policy/attestors/discovery.c approval(): under unknown-machines a machine
# is "known" when in->req->product_uuid -- the product UUID the ramdisk
# CLAIMS -- is bound to a node. When the boot server's assertion names no
# product UUID (iPXE reported none), nothing vouches for the claim, yet it
# decides that the operator is skipped. An unexpected machine that the boot
# server booted names any enrolled node's UUID and joins without waiting.
# (The spec keys "known" on a workflow that names the machine, and requests
# on a *trusted* hardware key.)
# shellcheck source=join_lib.sh
approval=unknown-machines
. "$(dirname "$0")/join_lib.sh"
make_site
U=11111111-2222-3333-4444-555555555555
tok t-u --pool pool-a --role node --expect-product-uuid $U
fj "${J[@]}" --token-file t-u --product-uuid $U --key-out u.key --cert-out u.pem
[ "$rc" = 0 ] || die "the known node did not join: $(cat err.txt)"
known=$node
[ "$(sql "SELECT node_id FROM node_bindings WHERE subject = '$U'")" = "$known" ] || die "no binding"

# Control: an unknown machine, no claim: it waits.
M1=52:54:00:00:0e:01
"$join" assert --key s1.key --cert s1.pem --site s1 --signer "$s1" --epoch "$epoch" --mac $M1 >a1.json
tok td1 --pool pool-a --role discovery --site s1 --expect-mac $M1
fj "${D[@]}" --token-file td1 --discovery-file a1.json --mac $M1 --max-wait 1 --key-out x.key --cert-out x.pem
[ "$rc" = 12 ] || die "control: an unknown machine did not wait (exit $rc)"
held "control: an unknown machine waits for the operator (exit 12)"

# The attack: another unknown machine claims the known node's UUID.
M2=52:54:00:00:0e:02
"$join" assert --key s1.key --cert s1.pem --site s1 --signer "$s1" --epoch "$epoch" --mac $M2 >a2.json
tok td2 --pool pool-a --role discovery --site s1 --expect-mac $M2
fj "${D[@]}" --token-file td2 --discovery-file a2.json --mac $M2 --product-uuid $U --max-wait 1 \
	--key-out x.key --cert-out x.pem
if [ "$rc" = 0 ]; then
	defect "an unknown machine claiming known node $known's product UUID joined as ramdisk $node with no operator's approval"
	[ "$(sql "SELECT count(*) FROM join_requests WHERE mac = '$M2'")" = 0 ] && defect "no join request was ever made for $M2"
else
	held "the claimed UUID: exit $rc"
fi
finish
