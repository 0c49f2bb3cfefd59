/*
 * fuzz_spire_nodes.c: the spire-nodes.json reader. Whatever it accepts must
 * hold what the applier relies on: valid names and trust domain, hashes of
 * exactly 64 (EK) and 40 (LDevID) lowercase hex digits, counts within caps,
 * names unique across both lists; and a plan built from it must stay
 * within its own bounds. Whatever it refuses comes with a terminated,
 * non-empty reason and nothing to free.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/hex.h"
#include "lib/spire_nodes_format.h"
#include "spire-server-fleet-entries/applier_config.h"
#include "spire-server-fleet-entries/plan.h"

static void check_device(const struct fleet_spire_node *d, int revoked)
{
	char t[21];
	if (!fleet_spire_name_ok(d->name) || !fleet_hex_is_lower(d->ek_hash, 64) ||
	    (d->ek_hash_ecc[0] && !fleet_hex_is_lower(d->ek_hash_ecc, 64)) ||
	    d->n_ldevid > FLEET_SPIRE_LDEVID_MAX ||
	    (revoked && !fleet_spire_time_format(d->not_after, t)) || (!revoked && d->not_after))
		abort();
	for (size_t i = 0; i < d->n_ldevid; i++)
		if (!fleet_hex_is_lower(d->ldevid_sha1[i], 40))
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fleet_spire_nodes f;
	struct fleet_errctx ec;
	memset(ec.detail, 'x', sizeof(ec.detail));
	if (fleet_spire_nodes_decode(data, size, &f, &ec) != FLEET_OK) {
		if (f.eligible || f.revoked || !ec.detail[0] ||
		    strnlen(ec.detail, sizeof(ec.detail)) == sizeof(ec.detail))
			abort();
		return 0;
	}
	if (!fleet_spire_trust_domain_ok(f.trust_domain) || f.serial < 0 ||
	    f.n_eligible > FLEET_SPIRE_LIST_MAX || f.n_revoked > FLEET_SPIRE_LIST_MAX)
		abort();
	for (size_t i = 0; i < f.n_eligible; i++) {
		check_device(&f.eligible[i], 0);
		if (fleet_spire_nodes_find(f.eligible, f.n_eligible, f.eligible[i].name) !=
			    &f.eligible[i] ||
		    fleet_spire_nodes_find(f.revoked, f.n_revoked, f.eligible[i].name))
			abort();
	}
	for (size_t i = 0; i < f.n_revoked; i++) {
		check_device(&f.revoked[i], 1);
		if (fleet_spire_nodes_find(f.revoked, f.n_revoked, f.revoked[i].name) !=
		    &f.revoked[i])
			abort();
	}
	/* Plan against an empty server: one create per EK, bans for revoked. */
	struct applier_config c;
	struct sp_entries none = {0};
	struct sp_agents no_agents = {0};
	struct plan p;
	ac_defaults(&c);
	if (plan_build(&f, &c, &none, &no_agents, &p, &ec) == FLEET_OK) {
		size_t eks = 0;
		for (size_t i = 0; i < f.n_eligible; i++)
			eks += 1 + (f.eligible[i].ek_hash_ecc[0] != 0);
		if (plan_count(&p, PK_CREATE) != eks || p.removed_nodes != 0 ||
		    plan_count(&p, PK_DELETE) || plan_count(&p, PK_UPDATE))
			abort();
		plan_free(&p);
	}
	fleet_spire_nodes_free(&f);
	return 0;
}
