/*
 * spire_nodes.h: the strict reader of spire-nodes.json, the file fleetd
 * writes each pass and spire-server-fleet-entries applies (docs/spire.md).
 *
 *   {"version": 1, "serial": 42, "generated_at": "2026-11-30T05:00:00Z",
 *    "trust_domain": "fleet.example",
 *    "eligible": [{"name", "ek_hash", "ek_hash_ecc" | null, "ldevid_sha1": [...]}],
 *    "revoked":  [{... the same ..., "not_after": "2027-01-01T00:00:00Z"}]}
 *
 * Every field is required, no other field is allowed, and every value is
 * checked here; a file that breaks any rule is refused whole, with a
 * sentence that names the rule and where (never the offending bytes).
 */
#ifndef FLEETD_APPLIER_SPIRE_NODES_H
#define FLEETD_APPLIER_SPIRE_NODES_H

#include <stddef.h>
#include <stdint.h>

#include "lib/spire_nodes_format.h"
#include "lib/fleet_err.h"

#define SN_VERSION 1
#define SN_MAX_FILE (4u * 1024 * 1024) /* bytes */
#define SN_MAX_DEVICES 4096            /* per list */
#define SN_MAX_LDEVID 16               /* fingerprints per device */
#define SN_NAME_MAX FLEET_SPIRE_NAME_MAX
#define SN_TD_MAX FLEET_SPIRE_TRUST_DOMAIN_MAX

struct sn_device {
	char name[SN_NAME_MAX + 1];
	char ek_hash[65];     /* 64 lowercase hex */
	char ek_hash_ecc[65]; /* "" when the file says null */
	char ldevid_sha1[SN_MAX_LDEVID][41];
	size_t n_ldevid;
	char not_after[21]; /* revoked only: YYYY-MM-DDTHH:MM:SSZ */
};

struct sn_file {
	long long serial;
	char generated_at[21];
	char trust_domain[SN_TD_MAX + 1];
	struct sn_device *eligible;
	size_t n_eligible;
	struct sn_device *revoked;
	size_t n_revoked;
};

/* Parse the bytes of the file into *out (zeroed first). On failure out
 * holds nothing to free and why[] says what is wrong. */
fleet_err sn_parse(const uint8_t *buf, size_t len, struct sn_file *out, char *why,
		   size_t whylen);
void sn_free(struct sn_file *f);

/* The name and trust-domain rules are the writer's own, one definition for
 * both sides of the handoff: fleet_spire_name_ok and
 * fleet_spire_trust_domain_ok (lib/spire_nodes_format.h). */

/* The eligible device with this name, or NULL. */
const struct sn_device *sn_find_eligible(const struct sn_file *f, const char *name);
const struct sn_device *sn_find_revoked(const struct sn_file *f, const char *name);

#endif
