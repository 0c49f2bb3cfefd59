#!/usr/bin/env bash
# join_x509pop_loop.sh: x509pop with a CURRENT certificate has no cap.
#
# fleetd/join/join_renew.c caps renewals at JOIN_RENEW_MAX_CURRENT (4)
# current certificates so that "a node that renews in a loop, or a captured
# renewal sent again, stops there rather than grow its rows without end"
# (join.h JS8). policy/attestors/x509pop.c accepts a leaf that has not
# expired at all (only not_after < now - grace is refused), and every
# re-join inserts one more node_certs row (fleet_store_tx_node_reclaim:
# the old ones are revoked, never deleted) and raises the generation. A
# node (or whoever holds one node key) loops x509pop instead of renew and
# grows the store without bound, ~5 rows a second under the default
# per-source rate limit, each a full DER certificate.
# shellcheck source=join_lib.sh
. "$(dirname "$0")/join_lib.sh"
tok t1 --pool pool-a --role node
fj "${J[@]}" --token-file t1 --key-out n.key --cert-out n.pem
[ "$rc" = 0 ] || die "no node: $(cat err.txt)"
n=$node
loops=12
for i in $(seq 1 $loops); do
	fj "${X[@]}" --x509pop-cert n.pem --x509pop-key n.key --node-id "$n" --key-out n2.key --cert-out n2.pem
	[ "$rc" = 0 ] || break
	mv n2.key n.key && mv n2.pem n.pem
done
rows=$(sql "SELECT count(*) FROM node_certs WHERE node_id = '$n'")
gen=$(sql "SELECT generation FROM nodes WHERE id = '$n'")
if [ "$rows" -gt 4 ]; then
	defect "$i x509pop re-joins of a current certificate in a row: $rows node_certs rows, generation $gen (the renewal cap is 4)"
else
	held "x509pop stopped after $rows rows"
fi
finish
