/*
 * join_token.c: the join-token attestor (spec 001 "join-token"): the
 * holder of a live token for this pool or site. The token's row is read in
 * the join transaction (BEGIN IMMEDIATE holds it until the commit), its
 * secret compared in constant time, revocation, expiry at the store's
 * clock, a use left and the role are checked (store.h J3, through X3 with
 * no take). node tokens admit node, site tokens admit site; the service
 * takes the use, enforces expect and reclaim, and makes the node.
 */
#include "policy/attestors/attestor.h"

#include <stdio.h>
#include <string.h>

static fleet_err verify(const struct fleet_attestor *a, struct fleet_store_tx *tx,
			const struct fleet_join_input *in, struct fleet_attest_result *out)
{
	bool refused;
	fleet_err e;
	(void)a;
	/* A token of role node admits role node, site admits site; a
	 * ramdisk never joins with a plain token (only discovery's). */
	if (strcmp(in->role, "node") != 0 && strcmp(in->role, "site") != 0)
		return fleet_attest_refuse(out, "token-role");
	if ((e = fleet_attest_token(tx, in, in->role, out, &refused)) || refused)
		return e;
	snprintf(out->role, sizeof(out->role), "%s", in->role);
	out->outcome = FLEET_ATTEST_RESULT;
	return FLEET_OK;
}

static const char *const reasons[] = {FLEET_ATTEST_TOKEN_REASONS, NULL};

const struct fleet_attestor fleet_attestor_join_token = {
	.id = "join-token",
	.verify = verify,
	.cfg = NULL,
	.reasons = reasons,
};
