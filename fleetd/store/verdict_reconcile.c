/*
 * verdict_reconcile.c: verdicts.jsonl caught up with the store on start
 * (verdict_log.h, "Reconciliation"). The store commits a verdict before
 * the line is appended, so after a crash the log can only lack lines,
 * never hold one the store does not: appending what is missing, in id
 * order, makes them agree.
 */
#include "fleetd/store/verdict_log.h"

#include <stdlib.h>

#include "fleetd/store/store.h"

#define BATCH 1000

/* The store could not be read (se): its sentence, said as the log's I/O. */
static fleet_err store_failed(struct fleet_store *st, fleet_err se, struct fleet_errctx *ec)
{
	fleet_store_errctx(st, se, ec);
	return fleet_errctx_wrap(ec, FLEET_E_IO, "the store's verdicts: ", NULL);
}

static fleet_err store_newest(struct fleet_store *st, int64_t *id, struct fleet_errctx *ec)
{
	struct fleet_store_verdict *v = NULL;
	size_t n = 0;
	fleet_err se = fleet_store_verdicts_list(st, NULL, 1, &v, &n);
	if (se != FLEET_STORE_OK)
		return store_failed(st, se, ec);
	*id = n ? v[0].id : 0;
	free(v);
	return FLEET_OK;
}

fleet_err fleet_vlog_reconcile(struct fleet_vlog *log, struct fleet_store *st, size_t *appended,
			       bool *ahead, struct fleet_errctx *ec)
{
	int64_t last = 0, newest = 0;
	bool found = false;
	fleet_err e;
	*appended = 0;
	*ahead = false;
	if ((e = fleet_vlog_last_id(log, &last, &found, ec)) ||
	    (e = store_newest(st, &newest, ec)))
		return e;
	if (found && last == 0)
		return FLEET_OK; /* a log from before ids: taken as complete */
	if (last > newest) {
		*ahead = true;
		return FLEET_OK;
	}
	while (last < newest) {
		struct fleet_store_verdict *v = NULL;
		size_t n = 0;
		fleet_err se = fleet_store_verdicts_after(st, last, BATCH, &v, &n);
		if (se != FLEET_STORE_OK)
			return store_failed(st, se, ec);
		if (n == 0) {
			free(v);
			break;
		}
		for (size_t i = 0; i < n; i++) {
			const char *reasons[FLEET_STORE_MAX_REASONS];
			for (size_t k = 0; k < v[i].n_reasons; k++)
				reasons[k] = v[i].reasons[k];
			struct fleet_vlog_record r = {
				.id = v[i].id,
				.time = (time_t)v[i].time,
				.device = v[i].device[0] ? v[i].device : NULL,
				.serial = v[i].serial,
				.session = v[i].session,
				.pass = v[i].pass,
				.reasons = reasons,
				.n_reasons = v[i].n_reasons,
				.ek_hash = v[i].ek_hash,
				.ek_hash_ecc = v[i].ek_hash_ecc,
			};
			if ((e = fleet_vlog_append(log, &r, ec))) {
				free(v);
				return e;
			}
			last = v[i].id;
			(*appended)++;
		}
		free(v);
	}
	return FLEET_OK;
}
