/*
 * plan.h: what the applier will do, decided from the file, the
 * configuration and the server's fleet- entries, before it does anything.
 *
 * Rules (docs/spire.md):
 *   - The applier owns entries whose ID starts with "fleet-"; no other entry
 *     is read past its ID, planned or touched.
 *   - Each eligible device gets one node entry per EK (fleet-<name>,
 *     fleet-<name>-ecc), or one per device when no selector uses {ek_hash}:
 *     parent spiffe://<td>/spire/server (what `entry create -node` sets),
 *     SPIFFE ID spiffe://<td>/node/<name>, the configured selectors.
 *   - An entry that exists but differs (SPIFFE ID, parent, selector set,
 *     admin or downstream) is updated; one that is missing is created.
 *   - A fleet- entry that is not wanted is deleted. If its device is still
 *     eligible it was a stale entry (an EK withdrawn); otherwise the device
 *     left the eligible list: that counts as one removed node, and its
 *     agents are banned first.
 *   - Each revoked device's agents are banned; that alone is no removal.
 *   - A device's agents are every agent `agent list` shows attested as it
 *     (its tpm agent by EK hash, its tpm_devid agent by LDevID fingerprint
 *     or the subject CN=<name> fleetd's LDevIDs carry, any agent holding a
 *     selector of its entries that names it), and the configured agent ID
 *     forms it can be named by. One the list shows banned is skipped; one
 *     that also attests as an eligible device is never banned (noted).
 *   - Order: bans, then deletes, then updates, then creates, so a run that
 *     stops part way has taken away before it has given.
 */
#ifndef FLEETD_APPLIER_PLAN_H
#define FLEETD_APPLIER_PLAN_H

#include <stddef.h>
#include <stdio.h>

#include "spire-server-fleet-entries/applier_config.h"
#include "lib/spire_nodes_format.h"
#include "spire-server-fleet-entries/spire_output.h"

enum plan_kind { PK_BAN, PK_DELETE, PK_UPDATE, PK_CREATE };

#define PLAN_STR 600
/* A device name as the planner holds it: an eligible name, or the name a
 * fleet- entry ID or SPIFFE ID gives a departing device (an entry ID with
 * "-ecc"). */
#define PLAN_DEVICE_MAX (FLEET_SPIRE_NAME_MAX + 16)

struct plan_action {
	enum plan_kind kind;
	char device[PLAN_DEVICE_MAX];
	char entry_id[SP_ID_MAX + 1];          /* delete, update, create */
	char spiffe_id[PLAN_STR];              /* update, create; ban: the agent ID */
	char parent_id[PLAN_STR];              /* update, create */
	char *selectors[AC_MAX_TEMPLATES]; /* malloc'd, sorted */
	size_t n_selectors;
	const char *why; /* a static phrase: "left the eligible list", ... */
};

struct plan {
	struct plan_action *a;
	size_t n, cap;
	size_t removed_nodes;           /* devices that left the eligible list */
	char notes[8][160];             /* what could not be planned, said aloud */
	size_t n_notes;
};

/* The plan, or a failure with ec (lib/fleet_err.h; may be NULL) saying why:
 * FLEET_E_TOO_LARGE for a selector that does not expand within PLAN_STR,
 * FLEET_E_NOMEM. */
fleet_err plan_build(const struct fleet_spire_nodes *f, const struct applier_config *c,
		     const struct sp_entries *server, const struct sp_agents *agents,
		     struct plan *out, struct fleet_errctx *ec);
void plan_free(struct plan *p);
size_t plan_count(const struct plan *p, enum plan_kind k);
void plan_print(const struct plan *p, FILE *to);
const char *plan_kind_name(enum plan_kind k);

#endif
