/*
 * admission_author.c: binding author records (admission.h, I7 and "Binding
 * authors"). NetBox purges change-log entries after CHANGELOG_RETENTION,
 * and with them the proof that binding_author wrote a planned device's
 * binding; the pass copies that proof into the store while the log holds it
 * (fleetd/pass/pass_authors.c), and admission reads the copy when the log
 * holds no change that set the binding.
 *
 * The pass holds a read-only store handle, so its writes come here, to be
 * made on the admission's read-write one (which, like every store handle,
 * serialises its own calls: store.h, "Threads").
 */
#include "fleetd/admission/admission_int.h"

#include <stdio.h>
#include <string.h>

enum adm_author adm_author_recorded(struct fleet_admission *a, long device_id,
				    const char *serial, const char *ek_hash,
				    const char *ek_hash_ecc, struct fleet_store_binding_author *rec,
				    struct fleet_errctx *ec)
{
	fleet_err se = fleet_store_binding_author_get(a->d.store, device_id, rec);
	if (se != FLEET_STORE_OK && se != FLEET_STORE_E_NOT_FOUND) {
		char after[48];
		snprintf(after, sizeof(after), " (%s)", fleet_err_str(se));
		fleet_store_errctx(a->d.store, se, ec);
		fleet_errctx_wrap(ec, se, "the store: ", after);
		adm_count(a->m.store_errors, NULL);
	}
	if (se == FLEET_STORE_E_NOT_FOUND)
		return ADM_AUTHOR_NONE;
	if (se != FLEET_STORE_OK)
		return ADM_AUTHOR_STORE_ERROR;
	/* A record of other values is the record of a binding that has changed
	 * since: it proves nothing about this one. */
	if (!fleet_store_binding_author_matches(rec, device_id, serial, ek_hash, ek_hash_ecc,
						a->d.config->binding_author))
		return ADM_AUTHOR_NONE;
	return ADM_AUTHOR_RECORDED;
}

void adm_author_time(int64_t t, char out[32])
{
	struct tm tm;
	time_t tt = (time_t)t;
	if (!gmtime_r(&tt, &tm) || !strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(out, 32, "%lld", (long long)t);
}

fleet_err fleet_admission_record_binding_author(struct fleet_admission *a,
						const struct fleet_store_binding_author *r,
						struct fleet_errctx *ec)
{
	/* A record of anyone else's change could never prove anything (the
	 * match requires binding_author): refuse it rather than keep it. */
	if (!r || strcmp(r->user, a->d.config->binding_author) != 0)
		return fleet_errctx_msg(ec, FLEET_STORE_E_INVALID,
					"a binding author record must be of a change by %s",
					a->d.config->binding_author);
	fleet_err se = fleet_store_binding_author_record(a->d.store, r);
	if (se != FLEET_STORE_OK) {
		fleet_store_errctx(a->d.store, se, ec);
		adm_count(a->m.store_errors, NULL);
	}
	return se;
}

fleet_err fleet_admission_forget_binding_author(struct fleet_admission *a, int64_t device_id,
						bool *forgot, struct fleet_errctx *ec)
{
	fleet_err se = fleet_store_binding_author_forget(a->d.store, device_id, forgot);
	if (se != FLEET_STORE_OK) {
		fleet_store_errctx(a->d.store, se, ec);
		adm_count(a->m.store_errors, NULL);
	}
	return se;
}
