/*
 * applier_config.h: spire-server-fleet-entries' optional configuration
 * (--config), key = value lines (docs/spire.md):
 *
 *   # one line per selector of each node entry; the first one given
 *   # replaces the default list
 *   selector = tpm:pub_hash:{ek_hash}
 *   # one line per agent ID form to ban when a device leaves
 *   agent_id = spiffe://{trust_domain}/spire/agent/tpm/{ek_hash}
 *   timeout_seconds = 60
 *
 * Placeholders: {name}, {ek_hash}, {trust_domain}, and in agent_id also
 * {ldevid_sha1}. Unknown keys, placeholders or repeated scalar keys are
 * refused with the line number.
 */
#ifndef FLEETD_APPLIER_CONFIG_H
#define FLEETD_APPLIER_CONFIG_H

#include <stddef.h>

#include "lib/fleet_err.h"

#define AC_MAX_TEMPLATES 16
#define AC_TEMPLATE_MAX 255
#define AC_MAX_CONFIG (64u * 1024)

struct applier_config {
	char selector[AC_MAX_TEMPLATES][AC_TEMPLATE_MAX + 1];
	size_t n_selector;
	char agent_id[AC_MAX_TEMPLATES][AC_TEMPLATE_MAX + 1];
	size_t n_agent_id;
	int timeout_seconds;
	/* True when some selector uses {ek_hash}: then each EK gets its own
	 * entry (fleet-<name> and fleet-<name>-ecc); else one per device. */
	int per_ek;
};

/* The defaults: tpm:pub_hash:{ek_hash}; the tpm_devid and tpm agent IDs;
 * 60 s per CLI call. */
void ac_defaults(struct applier_config *c);
/* Parse text over the defaults: FLEET_E_MALFORMED with ec (may be NULL)
 * saying which line and rule, FLEET_E_NOMEM. */
fleet_err ac_parse(const char *text, size_t len, struct applier_config *c, struct fleet_errctx *ec);

struct ac_vars {
	const char *name, *ek_hash, *trust_domain, *ldevid_sha1; /* NULL: absent */
};

/* Expand tmpl into out; FLEET_E_TOO_LARGE if it does not fit,
 * FLEET_E_INVALID_ARG for a placeholder with no value. */
fleet_err ac_expand(const char *tmpl, const struct ac_vars *v, char *out, size_t outlen);
/* Does tmpl use this placeholder ("{ek_hash}", ...)? */
int ac_uses(const char *tmpl, const char *placeholder);
/* If s is tmpl expanded with some 64-hex {ek_hash} (and the given other
 * vars), copy that hash into ek (65 bytes) and return 1. */
int ac_match_ek(const char *tmpl, const struct ac_vars *v, const char *s, char *ek);

#endif
