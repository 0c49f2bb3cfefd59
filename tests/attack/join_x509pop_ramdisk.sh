#!/usr/bin/env bash
# join_x509pop_ramdisk.sh: a ramdisk certificate re-joins with x509pop.
#
# Spec 001: x509pop admits roles node and site; a ramdisk is "a ramdisk
# identity of at most 2 hours" whose certificate "allows only the
# commissioning command kinds". policy/attestors/x509pop.c compares the
# leaf's role with the role asked (strcmp(ident.role, in->role)) and never
# refuses ramdisk, so a ramdisk asks role ramdisk with its own certificate
# and is re-keyed in place: a fresh 2-hour certificate, WITHOUT the
# urn:bc:allowed-kinds statement (the result carries no statement), and
# again up to x509pop_grace_seconds (7 days) after each one expired: the
# two hours are extended for ever, where /v1/renew refuses renew-ramdisk.
# shellcheck source=join_lib.sh
. "$(dirname "$0")/join_lib.sh"
make_site
make_ramdisk 52:54:00:00:0d:01
sans rd.pem | grep -q '^URI:urn:bc:allowed-kinds:' || die "the discovery certificate has no kinds"

# Held: the ramdisk certificate asking to be a node.
fj "${X[@]}" --role node --x509pop-cert rd.pem --x509pop-key rd.key --node-id "$rd" \
	--key-out x.key --cert-out x.pem
[ "$rc" = 10 ] && held "a ramdisk certificate re-joining as a node: denied" ||
	defect "a ramdisk certificate re-joined as a node (exit $rc)"
fj "${X[@]}" --role ramdisk --x509pop-cert rd.pem --x509pop-key rd.key --node-id "$rd" \
	--key-out rd2.key --cert-out rd2.pem
if [ "$rc" = 0 ]; then
	defect "a ramdisk certificate re-joined with x509pop as $node (spec: x509pop roles node, site)"
	sans rd2.pem | grep -q '^URI:urn:bc:allowed-kinds:' ||
		defect "the re-joined ramdisk certificate carries no allowed-kinds statement: $(sans rd2.pem | tr '\n' ' ')"
else
	held "a ramdisk's x509pop re-join: exit $rc"
fi

# Three hours later (past the 2 h ramdisk life): still re-joins.
if [ "$rc" = 0 ] && [ -f "$faketime_lib" ]; then
	site_fleetd_env=(LD_PRELOAD="$faketime_lib" FAKETIME=+3h FAKETIME_DONT_FAKE_MONOTONIC=1 "$asan")
	restart
	rc=0
	env LD_PRELOAD="$faketime_lib" FAKETIME=+3h FAKETIME_DONT_FAKE_MONOTONIC=1 "$asan" \
		"$join" "${X[@]}" --role ramdisk --x509pop-cert rd2.pem --x509pop-key rd2.key \
		--node-id "$rd" --key-out rd3.key --cert-out rd3.pem >out.txt 2>err.txt || rc=$?
	[ "$rc" = 0 ] && defect "3 h later, the expired ramdisk certificate re-joined again (generation $(sql "SELECT generation FROM nodes WHERE id = '$rd'"))" ||
		held "the expired ramdisk certificate: exit $rc"
fi
finish
