#include "fleetd/pass/pass.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "fleetd/obs/journal.h"
#include "fleetd/spire/spire_nodes.h"

struct fleet_pass {
	struct fleet_pass_deps d;
	struct fleet_metric *runs; /* fleetd_pass_total{result} */
	struct fleet_metric *eligible;
	struct fleet_metric *revoked;
};

fleet_err fleet_pass_new(const struct fleet_pass_deps *deps, struct fleet_pass **out)
{
	struct fleet_pass *p = calloc(1, sizeof(*p));
	if (!p)
		return FLEET_E_NOMEM;
	p->d = *deps;
	if (deps->metrics) {
		static const char *const results[] = {"ok", "inventory-error", "store-error",
						      "write-error", NULL};
		fleet_err e = fleet_metrics_register(deps->metrics, FLEET_METRIC_COUNTER,
						     "fleetd_pass_total", "Reconcile passes, by result.",
						     "result", results, &p->runs, NULL);
		if (e == FLEET_OK)
			e = fleet_metrics_register(deps->metrics, FLEET_METRIC_GAUGE,
						   "fleetd_spire_eligible_nodes",
						   "Devices eligible in the last spire-nodes.json.",
						   NULL, NULL, &p->eligible, NULL);
		if (e == FLEET_OK)
			e = fleet_metrics_register(deps->metrics, FLEET_METRIC_GAUGE,
						   "fleetd_spire_revoked_nodes",
						   "Devices revoked in the last spire-nodes.json.", NULL,
						   NULL, &p->revoked, NULL);
		if (e != FLEET_OK) {
			free(p);
			return e;
		}
	}
	*out = p;
	return FLEET_OK;
}

void fleet_pass_free(struct fleet_pass *p) { free(p); }

static const char *count(struct fleet_pass *p, const char *result)
{
	if (p->runs)
		fleet_metric_inc_label(p->runs, result);
	return result;
}

static const char *spire_result(enum fleet_spire_err e)
{
	switch (e) {
	case FLEET_SPIRE_OK:
		return "ok";
	case FLEET_SPIRE_E_INVENTORY:
		return "inventory-error";
	case FLEET_SPIRE_E_STORE:
		return "store-error";
	default:
		return "write-error";
	}
}

const char *fleet_pass_run(struct fleet_pass *p, time_t now)
{
	if (p->d.reap_sessions)
		p->d.reap_sessions(p->d.reap_ctx);
	const struct fleet_config *c = p->d.config;
	if (!c->spire_trust_domain[0])
		return count(p, "ok");

	struct fleet_spire_doc doc;
	char err[512] = "", serial_s[24];
	bool changed = false;
	int64_t serial = 0;
	memset(&doc, 0, sizeof(doc));
	enum fleet_spire_err e =
		fleet_spire_nodes_pass(p->d.inventory, p->d.store, c->spire_trust_domain,
				       c->state_dir, now, &doc, &changed, &serial, err, sizeof(err));
	const char *result = spire_result(e);
	if (e != FLEET_SPIRE_OK) {
		/* The previous file stands: a pass that could not see the
		 * inventory must not make anyone eligible or ineligible. */
		fleet_log(LOG_ERR, "pass-failed",
			  FLEET_LOG_FIELDS({"FLEET_REASON", fleet_spire_err_str(e)}),
			  "pass: spire-nodes.json not written (%s): %s", fleet_spire_err_str(e), err);
		fleet_spire_doc_free(&doc);
		return count(p, result);
	}
	for (size_t i = 0; i < doc.n_excluded; i++)
		fleet_log(LOG_INFO, "spire-excluded",
			  FLEET_LOG_FIELDS({"FLEET_DEVICE", doc.excluded[i].name},
					   {"FLEET_REASON", doc.excluded[i].reason},
					   {"FLEET_STATUS", doc.excluded[i].status}),
			  "not eligible for SPIRE: %s", doc.excluded[i].reason);
	if (changed) {
		snprintf(serial_s, sizeof(serial_s), "%" PRId64, serial);
		fleet_log(LOG_NOTICE, "spire-nodes-written",
			  FLEET_LOG_FIELDS({"FLEET_SERIAL_NUMBER", serial_s}),
			  "spire-nodes.json serial %" PRId64 ": %zu eligible, %zu revoked", serial,
			  doc.n_eligible, doc.n_revoked);
	}
	if (p->eligible)
		fleet_metric_set(p->eligible, (int64_t)doc.n_eligible);
	if (p->revoked)
		fleet_metric_set(p->revoked, (int64_t)doc.n_revoked);
	fleet_spire_doc_free(&doc);
	return count(p, result);
}
