/*
 * fuzz_spire_cli_output.c: the readers of `spire-server ... -output json`
 * (entry show, agent list, the batch results, agent ban's stderr). Whatever
 * the listing reader accepts holds only fleet- entries with terminated IDs,
 * SPIFFE IDs and sorted "type:value" selectors; whatever the agent list
 * reader accepts holds agents under /spire/agent/, sorted by ID and each
 * once, with sorted selectors that sp_agent_has_selector finds; a result
 * code is a gRPC code; refusals come with a reason and leave nothing to
 * free.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "spire-server-fleet-entries/spire_output.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sp_entries l;
	char msg[64];
	struct fleet_errctx ec;
	ec.detail[0] = '\0';
	if (sp_parse_entries(data, size, &l, &ec) == FLEET_OK) {
		if (l.n > l.n_total)
			abort();
		for (size_t i = 0; i < l.n; i++) {
			const struct sp_entry *e = &l.e[i];
			if (strncmp(e->id, SP_FLEET_PREFIX, strlen(SP_FLEET_PREFIX)) ||
			    strncmp(e->spiffe_id, "spiffe://", 9) ||
			    strncmp(e->parent_id, "spiffe://", 9) || e->n_selectors > SP_MAX_SELECTORS)
				abort();
			for (size_t j = 0; j < e->n_selectors; j++) {
				if (!strchr(e->selectors[j], ':'))
					abort();
				if (j && strcmp(e->selectors[j - 1], e->selectors[j]) > 0)
					abort();
			}
			for (size_t j = 0; j < i; j++)
				if (!strcmp(l.e[j].id, e->id))
					abort();
		}
		sp_entries_free(&l);
	} else if (l.e || !ec.detail[0]) {
		abort();
	}
	struct sp_agents ag;
	ec.detail[0] = '\0';
	if (sp_parse_agents(data, size, &ag, &ec) == FLEET_OK) {
		if (ag.n > SP_MAX_AGENTS)
			abort();
		for (size_t i = 0; i < ag.n; i++) {
			const struct sp_agent *a = &ag.a[i];
			const char *p = strstr(a->id, "/spire/agent/");
			if (strncmp(a->id, "spiffe://", 9) || !p || !p[13] || !a->attestation_type ||
			    a->n_selectors > SP_MAX_AGENT_SELECTORS || (a->banned & ~1))
				abort();
			if (i && strcmp(ag.a[i - 1].id, a->id) >= 0)
				abort();
			for (size_t j = 0; j < a->n_selectors; j++) {
				if (!strchr(a->selectors[j], ':') ||
				    !sp_agent_has_selector(a, a->selectors[j]))
					abort();
				if (j && strcmp(a->selectors[j - 1], a->selectors[j]) > 0)
					abort();
			}
		}
		sp_agents_free(&ag);
	} else if (ag.a || !ec.detail[0]) {
		abort();
	}
	int code = -1;
	if (sp_parse_batch_result(data, size, &code, msg, sizeof(msg), &ec) == FLEET_OK) {
		if (code < 0 || code > 16 || strnlen(msg, sizeof(msg)) == sizeof(msg))
			abort();
	}
	(void)sp_ban_said_not_found(data, size);
	return 0;
}
