/*
 * spire_output.h: what `spire-server ... -output json` prints, read with
 * caps. The shapes are SPIRE's protojson (UseProtoNames, EmitUnpopulated)
 * of the spire-api-sdk messages (docs/spire.md lists the sources):
 *
 *   entry show    ListEntriesResponse {"entries": [Entry], "next_page_token"}
 *   entry create  BatchCreateEntryResponse {"results": [{"status": {"code",
 *                 "message"}, "entry"}]}
 *   entry update  BatchUpdateEntryResponse, the same shape
 *   entry delete  BatchDeleteEntryResponse {"results": [{"status", "id"}]}
 *   agent list    ListAgentsResponse {"agents": [Agent], "next_page_token"}:
 *                 Agent {"id": {"trust_domain", "path"}, "attestation_type",
 *                 "x509svid_serial_number", "x509svid_expires_at" (int64, a
 *                 string), "selectors": [{"type", "value"}], "banned",
 *                 "can_reattest", "agent_version"}; the CLI follows the
 *                 server's pages itself and prints one response
 *
 * The CLI exits 0 from create, update and delete even when the server
 * refused the entry: the per-result status code is the answer.
 *
 * A refusal is FLEET_E_MALFORMED with ec (lib/fleet_err.h; may be NULL)
 * saying what was wrong; FLEET_E_NOMEM when out of memory.
 */
#ifndef FLEETD_APPLIER_SPIRE_OUTPUT_H
#define FLEETD_APPLIER_SPIRE_OUTPUT_H

#include <stddef.h>
#include <stdint.h>

#include "lib/fleet_err.h"

#define SP_MAX_OUTPUT (64u * 1024 * 1024) /* bytes of entry show */
#define SP_MAX_ENTRIES 200000
#define SP_MAX_SELECTORS 64
#define SP_ID_MAX 1024

/* A registration entry whose ID starts with "fleet-"; the applier keeps
 * no other (it never changes them, so it needs nothing of them). */
struct sp_entry {
	char *id;
	char *spiffe_id; /* "spiffe://<trust_domain><path>" */
	char *parent_id;
	char **selectors; /* "type:value", sorted */
	size_t n_selectors;
	int admin, downstream;
};

struct sp_entries {
	struct sp_entry *e; /* fleet- entries only */
	size_t n;
	size_t n_total; /* all entries the server listed */
};

#define SP_FLEET_PREFIX "fleet-"

/* Parse `entry show -output json`. A next_page_token that is not empty is
 * refused: it means the list is not the whole list. */
fleet_err sp_parse_entries(const uint8_t *buf, size_t len, struct sp_entries *out,
			   struct fleet_errctx *ec);
void sp_entries_free(struct sp_entries *l);

/* An attested agent, as `agent list` prints it. */
struct sp_agent {
	char *id;               /* "spiffe://<trust_domain>/spire/agent/..." */
	char *attestation_type; /* "tpm", "tpm_devid", ... (may be "") */
	char **selectors;       /* "type:value", sorted */
	size_t n_selectors;
	int banned;
};

struct sp_agents {
	struct sp_agent *a;
	size_t n;
};

#define SP_MAX_AGENTS 200000
#define SP_MAX_AGENT_SELECTORS 1024 /* other attestors (k8s_psat, aws_iid) emit many */

/* Parse `agent list -output json`. Every agent is kept (the applier bans
 * only those that attested as a departing device, plan.h). Refused: a
 * next_page_token that is not empty, an agent without a well-formed ID
 * under /spire/agent/, without attestation_type, selectors or banned, a
 * selector without type or value, and an ID listed twice. */
fleet_err sp_parse_agents(const uint8_t *buf, size_t len, struct sp_agents *out,
			  struct fleet_errctx *ec);
void sp_agents_free(struct sp_agents *l);
/* Has this agent a selector equal to sel ("type:value")? */
int sp_agent_has_selector(const struct sp_agent *a, const char *sel);

/* Parse a Batch{Create,Update,Delete}EntryResponse that must hold exactly
 * one result; *code is its gRPC status code (0 = OK), msg its message
 * (printable, truncated). */
fleet_err sp_parse_batch_result(const uint8_t *buf, size_t len, int *code, char *msg, size_t msglen,
				struct fleet_errctx *ec);

/* gRPC code names for messages ("NotFound", ...). */
const char *sp_code_name(int code);

/* Does stderr of a failed `agent ban` say the server has no such agent
 * ("rpc error: code = NotFound desc = agent not found")? */
int sp_ban_said_not_found(const uint8_t *err, size_t len);

#endif
