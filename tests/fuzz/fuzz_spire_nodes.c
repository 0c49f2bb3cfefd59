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

#include "spire-server-fleet-entries/applier_config.h"
#include "spire-server-fleet-entries/plan.h"
#include "spire-server-fleet-entries/spire_nodes.h"
#include "lib/hex.h"

static void check_device(const struct sn_device *d, int revoked)
{
	if (!fleet_spire_name_ok(d->name) || !fleet_hex_is_lower(d->ek_hash, 64) ||
	    (d->ek_hash_ecc[0] && !fleet_hex_is_lower(d->ek_hash_ecc, 64)) ||
	    d->n_ldevid > SN_MAX_LDEVID || (revoked && strlen(d->not_after) != 20) ||
	    (!revoked && d->not_after[0]))
		abort();
	for (size_t i = 0; i < d->n_ldevid; i++)
		if (!fleet_hex_is_lower(d->ldevid_sha1[i], 40))
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sn_file f;
	char why[300];
	memset(why, 'x', sizeof(why));
	if (sn_parse(data, size, &f, why, sizeof(why)) != FLEET_OK) {
		if (f.eligible || f.revoked || !why[0] || strnlen(why, sizeof(why)) == sizeof(why))
			abort();
		return 0;
	}
	if (!fleet_spire_trust_domain_ok(f.trust_domain) || f.serial < 0 ||
	    f.n_eligible > SN_MAX_DEVICES || f.n_revoked > SN_MAX_DEVICES)
		abort();
	for (size_t i = 0; i < f.n_eligible; i++) {
		check_device(&f.eligible[i], 0);
		if (sn_find_eligible(&f, f.eligible[i].name) != &f.eligible[i] ||
		    sn_find_revoked(&f, f.eligible[i].name))
			abort();
	}
	for (size_t i = 0; i < f.n_revoked; i++) {
		check_device(&f.revoked[i], 1);
		if (sn_find_revoked(&f, f.revoked[i].name) != &f.revoked[i])
			abort();
	}
	/* Plan against an empty server: one create per EK, bans for revoked. */
	struct applier_config c;
	struct sp_entries none = {0};
	struct sp_agents no_agents = {0};
	struct plan p;
	ac_defaults(&c);
	if (plan_build(&f, &c, &none, &no_agents, &p, why, sizeof(why)) == FLEET_OK) {
		size_t eks = 0;
		for (size_t i = 0; i < f.n_eligible; i++)
			eks += 1 + (f.eligible[i].ek_hash_ecc[0] != 0);
		if (plan_count(&p, PK_CREATE) != eks || p.removed_nodes != 0 ||
		    plan_count(&p, PK_DELETE) || plan_count(&p, PK_UPDATE))
			abort();
		plan_free(&p);
	}
	sn_free(&f);
	return 0;
}
