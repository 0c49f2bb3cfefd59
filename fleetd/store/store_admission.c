/*
 * store_admission.c: an admission's writes as the spec orders them, each
 * round's in one transaction (store.h, "One admission").
 *
 * Why provisional certificates are rows at all, rather than memory: the
 * certificates leave fleetd in the answer's reply, so a crash or a client
 * that never confirms must still leave a record that they were issued and
 * are revoked. Why they are not in `certificates`: that table is the
 * devices' identity, read by the spire-nodes.json writer and by
 * re-admission; a certificate no confirmation completed must never be
 * read as anyone's.
 */
#include "fleetd/store/store_int.h"

#include <string.h>

static bool session_ok(const char *s)
{
	return st_hex_ok(s, 64, 64);
}

static fleet_err insert_provisional(struct fleet_store *st,
					       const struct fleet_store_issue_in *in,
					       const char *kind, const uint8_t *der, size_t len,
					       char sha1[41])
{
	int64_t not_after;
	if (!der || len == 0 || len > FLEET_STORE_CERT_MAX || !st_cert_facts(der, len, &not_after, sha1))
		return st_fail(st, FLEET_STORE_E_INVALID, "not one DER X.509 certificate of at most %d bytes",
			       FLEET_STORE_CERT_MAX);
	struct db_stmt *s;
	fleet_err e = st_prepare(
		st, "INSERT INTO provisional_certs (session, serial, device, kind, sha1, not_after, "
		    "issued_at, der) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)", &s);
	if (e)
		return e;
	db_bind_text(s, 1, in->session, -1);
	db_bind_text(s, 2, in->serial, -1);
	db_bind_text(s, 3, in->device, -1);
	db_bind_text(s, 4, kind, -1);
	db_bind_text(s, 5, sha1, -1);
	db_bind_int64(s, 6, not_after);
	db_bind_int64(s, 7, in->now);
	db_bind_blob(s, 8, der, (int)len);
	return st_step_done(st, s, "insert provisional certificate", NULL);
}

static fleet_err provisional_issue(struct fleet_store *st,
					      const struct fleet_store_issue_in *in,
					      char lak_sha1[41], char ldevid_sha1[41])
{
	fleet_err e = st_writable(st);
	if (e)
		return e;
	if (!session_ok(in->session) || !st_text_ok(in->serial, FLEET_STORE_NAME_MAX) ||
	    !st_text_ok(in->device, FLEET_STORE_NAME_MAX))
		return st_fail(st, FLEET_STORE_E_INVALID,
			       "a provisional certificate needs a session id, a serial and a name");
	if ((e = st_begin(st)))
		return e;
	if ((e = insert_provisional(st, in, FLEET_STORE_CERT_LAK, in->lak_der, in->lak_len,
				    lak_sha1)) ||
	    (e = insert_provisional(st, in, FLEET_STORE_CERT_LDEVID, in->ldevid_der,
				    in->ldevid_len, ldevid_sha1))) {
		st_rollback(st);
		return e;
	}
	return st_commit(st);
}

fleet_err fleet_store_provisional_issue(struct fleet_store *st,
						   const struct fleet_store_issue_in *in,
						   char lak_sha1[41], char ldevid_sha1[41])
{
	st_lock(st);
	return st_unlock(st, provisional_issue(st, in, lak_sha1, ldevid_sha1));
}

/* The session's two unrevoked provisional certificates become the device's. */
static fleet_err adopt_certs(struct fleet_store *st, const char *session,
					int64_t device_id)
{
	struct db_stmt *s;
	int moved = 0;
	fleet_err e = st_prepare(
		st, "INSERT INTO certificates (device_id, kind, sha1, not_after, issued_at, der) "
		    "SELECT ?2, kind, sha1, not_after, issued_at, der FROM provisional_certs "
		    "WHERE session = ?1 AND revoked_at IS NULL ORDER BY kind", &s);
	if (e)
		return e;
	db_bind_text(s, 1, session, -1);
	db_bind_int64(s, 2, device_id);
	if ((e = st_step_done(st, s, "adopt provisional certificates", &moved)))
		return e;
	if (moved != 2)
		return st_fail(st, FLEET_STORE_E_CONFLICT,
			       "the session holds %d unrevoked provisional certificates, not 2", moved);
	if ((e = st_prepare(st, "DELETE FROM provisional_certs WHERE session = ?1", &s)))
		return e;
	db_bind_text(s, 1, session, -1);
	return st_step_done(st, s, "drop provisional certificates", NULL);
}

static fleet_err admit(struct fleet_store *st,
				  const struct fleet_store_admit_in *in,
				  int64_t *verdict_id)
{
	fleet_err e = st_writable(st);
	if (e)
		return e;
	if (!session_ok(in->session))
		return st_fail(st, FLEET_STORE_E_INVALID, "a session id is 64 lowercase hex digits");
	if ((e = st_begin(st)))
		return e;
	struct fleet_store_device known;
	int64_t device_id = 0;
	if (!in->may_create &&
	    (e = fleet_store_device_get_by_serial(st, in->serial, &known)))
		goto fail;
	struct fleet_store_verdict_in v = {
		.time = in->now,
		.device = in->device,
		.serial = in->serial,
		.session = in->session,
		.pass = true,
		.ek_hash = in->ek_hash,
		.ek_hash_ecc = in->ek_hash_ecc,
	};
	if ((e = st_device_admit_tx(st, in->device, in->serial, in->inventory_id, in->ek_hash,
				    in->ek_hash_ecc, in->now, &device_id)) ||
	    (e = adopt_certs(st, in->session, device_id)) ||
	    (e = fleet_store_verdict_insert(st, &v, verdict_id)))
		goto fail;
	return st_commit(st);
fail:
	st_rollback(st);
	return e;
}

fleet_err fleet_store_admit(struct fleet_store *st,
				       const struct fleet_store_admit_in *in,
				       int64_t *verdict_id)
{
	st_lock(st);
	return st_unlock(st, admit(st, in, verdict_id));
}

static fleet_err provisional_revoke_where(struct fleet_store *st, const char *session, bool orphans,
					       const char *reason, time_t now,
					       char sha1s[][41], size_t *n)
{
	*n = 0;
	fleet_err e = st_writable(st);
	if (e)
		return e;
	if ((session && !session_ok(session)) || !st_text_ok(reason, FLEET_STORE_REASON_MAX))
		return st_fail(st, FLEET_STORE_E_INVALID, "a revocation needs a session id and a reason");
	if ((e = st_begin(st)))
		return e;
	struct db_stmt *s;
	/* Which ones, for the journal: read inside the transaction that
	 * revokes them, so the list is exactly what was revoked. */
	if ((e = st_prepare(st, "SELECT sha1 FROM provisional_certs WHERE revoked_at IS NULL AND "
				"(CAST(?1 AS TEXT) IS NULL OR session = ?1) AND (?4 = 0 OR session NOT IN "
				"(SELECT sid FROM admission_sessions WHERE sid IS NOT NULL)) ORDER BY id", &s)))
		goto fail;
	if (session)
		db_bind_text(s, 1, session, -1);
	else
		db_bind_null(s, 1);
	db_bind_int64(s, 4, orphans);
	int rc;
	size_t found = 0;
	while ((rc = db_step(s)) == DB_ROW) {
		if (sha1s && found < FLEET_STORE_REVOKE_SHA1S &&
		    !st_col_text(s, 0, sha1s[found], 41)) {
			db_finalize(s);
			e = st_fail(st, FLEET_STORE_E_CORRUPT, "a provisional certificate row is impossible");
			goto fail;
		}
		found++;
	}
	db_finalize(s);
	if (rc != DB_DONE) {
		e = st_dberr(st, rc, "read provisional certificates");
		goto fail;
	}
	if ((e = st_prepare(st, "UPDATE provisional_certs SET revoked_at = ?2, revoke_reason = ?3 "
				"WHERE revoked_at IS NULL AND (CAST(?1 AS TEXT) IS NULL OR session = ?1) AND "
				"(?4 = 0 OR session NOT IN (SELECT sid FROM admission_sessions WHERE sid IS NOT "
				"NULL))", &s)))
		goto fail;
	if (session)
		db_bind_text(s, 1, session, -1);
	else
		db_bind_null(s, 1);
	db_bind_int64(s, 2, now);
	db_bind_text(s, 3, reason, -1);
	db_bind_int64(s, 4, orphans);
	if ((e = st_step_done(st, s, "revoke provisional certificates", NULL)))
		goto fail;
	if ((e = st_commit(st)))
		return e;
	*n = found;
	return FLEET_STORE_OK;
fail:
	st_rollback(st);
	return e;
}

fleet_err fleet_store_provisional_revoke(struct fleet_store *st, const char *session,
						    const char *reason, time_t now,
						    char sha1s[][41], size_t *n)
{
	st_lock(st);
	return st_unlock(st, provisional_revoke_where(st, session, false, reason, now, sha1s, n));
}

fleet_err fleet_store_provisional_revoke_orphans(struct fleet_store *st, const char *reason,
						 time_t now, char sha1s[][41], size_t *n)
{
	st_lock(st);
	return st_unlock(st, provisional_revoke_where(st, NULL, true, reason, now, sha1s, n));
}

static fleet_err provisional_prune(struct fleet_store *st, time_t now, size_t *n)
{
	*n = 0;
	fleet_err e = st_writable(st);
	if (e)
		return e;
	struct db_stmt *s;
	int changes = 0;
	if ((e = st_prepare(st, "DELETE FROM provisional_certs WHERE revoked_at IS NOT NULL AND "
				"not_after < ?1", &s)))
		return e;
	db_bind_int64(s, 1, now);
	if ((e = st_step_done(st, s, "prune provisional certificates", &changes)))
		return e;
	*n = (size_t)changes;
	return FLEET_STORE_OK;
}

fleet_err fleet_store_provisional_prune(struct fleet_store *st, time_t now, size_t *n)
{
	st_lock(st);
	return st_unlock(st, provisional_prune(st, now, n));
}

static fleet_err provisional_list(struct fleet_store *st,
					     struct fleet_store_cert **out, size_t *n)
{
	struct db_stmt *s;
	fleet_err e = st_prepare(
		st, "SELECT kind, sha1, not_after, issued_at, revoked_at IS NOT NULL, "
		    "coalesce(revoked_at, 0), der, device FROM provisional_certs "
		    "ORDER BY id DESC LIMIT ?1", &s);
	*out = NULL;
	*n = 0;
	if (e)
		return e;
	db_bind_int64(s, 1, FLEET_STORE_LIST_MAX);
	return st_read_certs(st, s, NULL, out, n);
}

fleet_err fleet_store_provisional_list(struct fleet_store *st,
						  struct fleet_store_cert **out, size_t *n)
{
	st_lock(st);
	return st_unlock(st, provisional_list(st, out, n));
}
