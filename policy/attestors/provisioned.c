/*
 * provisioned.c: the provisioned attestor (spec 001 "provisioned"): the OS
 * a deploy or a provider bootstrap installed joins with the single-use
 * token rendered into its user data and its product UUID.
 *
 * Refused unless, in this order:
 *   the role asked is node                           provisioned-role
 *   a token of role provisioned, live (J3)           token-* (store.h J3)
 *   exactly one use left                             not-single-use
 *   a product UUID in the claims                     no-product-uuid
 *   bound to one machine: the token's target node
 *     (fleetctl token create --node, the spec's
 *     resolveTarget) or its expect product UUID       unbound
 *   the claimed UUID is the bound one                 product-uuid-mismatch
 *
 * With a target node the join re-keys that node in place (its generation
 * raised, every older certificate revoked, its pool and state kept);
 * without one the machine joins as a new node of the token's pool, which
 * is what a provider bootstrap does. The token's expect binding and reclaim
 * flag are then the service's, as for every token-based attestor.
 */
#include "policy/attestors/attestor.h"

#include <stdio.h>
#include <string.h>

const char *const fleet_attestor_provisioned_reasons[] = {
	"provisioned-role", FLEET_ATTEST_TOKEN_REASONS, "not-single-use", "no-product-uuid",
	"unbound",          "node-retired",             "product-uuid-mismatch", NULL};

fleet_err fleet_attestor_provisioned_verify(const struct fleet_attestor *a,
					    struct fleet_store_tx *tx,
					    const struct fleet_join_input *in,
					    struct fleet_attest_result *out)
{
	struct fleet_store_node target;
	const char *want = NULL;
	bool refused;
	fleet_err e;
	(void)a;
	if (strcmp(in->role, "node") != 0)
		return fleet_attest_refuse(out, "provisioned-role");
	if ((e = fleet_attest_token(tx, in, "provisioned", out, &refused)) || refused)
		return e;
	/* A token minted for several machines is never a machine's
	 * credential (spec 001, "Single-use evidence"). */
	if (out->token.uses_left != 1)
		return fleet_attest_refuse(out, "not-single-use");
	if (!in->req->product_uuid[0])
		return fleet_attest_refuse(out, "no-product-uuid");
	if (out->token.target_node[0]) {
		e = fleet_store_tx_node(tx, out->token.target_node, &target);
		if (e == FLEET_STORE_E_NOT_FOUND)
			return fleet_attest_refuse(out, "unbound");
		if (e)
			return e;
		if (target.retired_at)
			return fleet_attest_refuse(out, "node-retired");
		want = out->token.expect_product_uuid[0] ? out->token.expect_product_uuid
			: target.product_uuid[0]         ? target.product_uuid
							 : NULL;
		if (!want)
			return fleet_attest_refuse(out, "unbound");
		/* The target's own recorded UUID binds too: a token that expects
		 * another one cannot re-key the target onto other hardware. */
		if (target.product_uuid[0] && strcmp(target.product_uuid, in->req->product_uuid) != 0)
			return fleet_attest_refuse(out, "product-uuid-mismatch");
		memcpy(out->node_id, target.id, sizeof(out->node_id));
		memcpy(out->pool, target.pool, sizeof(out->pool));
		memcpy(out->site, target.site, sizeof(out->site));
	} else {
		if (!out->token.expect_product_uuid[0])
			return fleet_attest_refuse(out, "unbound");
		want = out->token.expect_product_uuid;
	}
	if (strcmp(want, in->req->product_uuid) != 0)
		return fleet_attest_refuse(out, "product-uuid-mismatch");
	snprintf(out->product_uuid, sizeof(out->product_uuid), "%s", in->req->product_uuid);
	snprintf(out->role, sizeof(out->role), "node");
	out->outcome = FLEET_ATTEST_RESULT;
	return FLEET_OK;
}
