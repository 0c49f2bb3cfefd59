/*
 * store_sessions.c: HookOS admission sessions shared by the replicas of one
 * store (store.h SS1-SS4). The rows hold what the table needs to count,
 * find and end sessions; the session itself is the admission's sealed
 * blob (fleetd/admission/sessions_shared.c), which this file never opens.
 */
#include "fleetd/store/store_int.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

/* A row is ending (the reaper's) when unpublished with its lease over, or
 * superseded, past its deadline, or unproven past its answer window: the
 * same rule as the in-memory table's ending() (sessions.c). ?1 is now. */
#define ENDING                                                                       \
	"(published = 0 OR superseded = 1 OR ?1 > deadline OR "                      \
	"(proven = 0 AND answer_by > 0 AND ?1 > answer_by))"
#define COLUMNS                                                                      \
	"handle, coalesce(sid, ''), serial, peer, peer_key, ek_hash, ek_hash_ecc, "  \
	"published, proven, superseded, deadline, answer_by, busy_until, sealed"

void fleet_store_session_clear(struct fleet_store_session *r)
{
	if (r->sealed)
		OPENSSL_clear_free(r->sealed, r->sealed_len);
	memset(r, 0, sizeof(*r));
}

static bool handle_ok(const char *h)
{
	return st_hex_ok(h, 32, 32);
}

static bool peer_ok(const char *p)
{
	/* "" is a peer the HTTP layer could not name */
	return p && (!*p || st_text_ok(p, 47));
}

static bool row_ok(const struct fleet_store_session *r)
{
	return handle_ok(r->handle) && (!r->sid[0] || st_hex_ok(r->sid, 64, 64)) &&
	       st_text_ok(r->serial, 128) && peer_ok(r->peer) && peer_ok(r->peer_key) &&
	       (!r->ek_hash[0] || st_hex_ok(r->ek_hash, 64, 64)) &&
	       (!r->ek_hash_ecc[0] || st_hex_ok(r->ek_hash_ecc, 64, 64)) &&
	       r->sealed_len <= FLEET_STORE_SESSION_SEALED_MAX &&
	       (!r->published || (r->sid[0] && r->sealed && r->sealed_len));
}

/* One row of COLUMNS into r. */
static fleet_err read_row(struct fleet_store *st, struct db_stmt *s,
			  struct fleet_store_session *r)
{
	memset(r, 0, sizeof(*r));
	if (!st_col_text(s, 0, r->handle, sizeof(r->handle)) ||
	    !st_col_text(s, 1, r->sid, sizeof(r->sid)) ||
	    !st_col_text(s, 2, r->serial, sizeof(r->serial)) ||
	    !st_col_text(s, 3, r->peer, sizeof(r->peer)) ||
	    !st_col_text(s, 4, r->peer_key, sizeof(r->peer_key)) ||
	    !st_col_text(s, 5, r->ek_hash, sizeof(r->ek_hash)) ||
	    !st_col_text(s, 6, r->ek_hash_ecc, sizeof(r->ek_hash_ecc)))
		return st_fail(st, FLEET_STORE_E_CORRUPT, "an admission session row is impossible");
	r->published = db_column_int64(s, 7) != 0;
	r->proven = db_column_int64(s, 8) != 0;
	r->superseded = db_column_int64(s, 9) != 0;
	r->deadline = db_column_int64(s, 10);
	r->answer_by = db_column_int64(s, 11);
	r->busy_until = db_column_int64(s, 12);
	if (db_column_type(s, 13) != DB_NULL) {
		int len = db_column_bytes(s, 13);
		const void *b = db_column_blob(s, 13);
		if (len <= 0 || len > FLEET_STORE_SESSION_SEALED_MAX || !b)
			return st_fail(st, FLEET_STORE_E_CORRUPT,
				       "an admission session's sealed state is impossible");
		if (!(r->sealed = malloc((size_t)len)))
			return st_fail(st, FLEET_STORE_E_NOMEM, "out of memory");
		memcpy(r->sealed, b, (size_t)len);
		r->sealed_len = (size_t)len;
	}
	return FLEET_STORE_OK;
}

static fleet_err count_where(struct fleet_store *st, const char *sql, int64_t now,
			     const char *a, size_t *n)
{
	struct db_stmt *s;
	fleet_err e = st_prepare(st, sql, &s);
	if (e)
		return e;
	db_bind_int64(s, 1, now);
	if (a)
		db_bind_text(s, 2, a, -1);
	int rc = db_step(s);
	if (rc == DB_ROW)
		*n = (size_t)db_column_int64(s, 0);
	db_finalize(s);
	return rc == DB_ROW ? FLEET_STORE_OK : st_dberr(st, rc, "count admission sessions");
}

static fleet_err reserve_tx(struct fleet_store *st, const struct fleet_store_session *r,
			    int64_t now, size_t per_serial, size_t per_peer, size_t cap,
			    enum fleet_store_session_cap *result)
{
	struct db_stmt *s;
	size_t of_serial = 0, of_peer = 0, all = 0;
	fleet_err e;
	/* The exact address's own idle unproven try for this serial: replaced
	 * (never a neighbour in its /64: peer, not peer_key). Unproven, so it
	 * was issued nothing; idle, so no round holds it. */
	if ((e = st_prepare(st, "DELETE FROM admission_sessions WHERE serial = ?2 AND peer = ?3 "
				"AND published = 1 AND proven = 0 AND busy_until < ?1 AND NOT " ENDING,
			    &s)))
		return e;
	db_bind_int64(s, 1, now);
	db_bind_text(s, 2, r->serial, -1);
	db_bind_text(s, 3, r->peer, -1);
	if ((e = st_step_done(st, s, "replace an admission session", NULL)))
		return e;
	if ((e = count_where(st, "SELECT count(*) FROM admission_sessions WHERE serial = ?2 AND "
				 "NOT " ENDING, now, r->serial, &of_serial)) ||
	    (e = count_where(st, "SELECT count(*) FROM admission_sessions WHERE peer_key = ?2 AND "
				 "proven = 0 AND NOT " ENDING, now, r->peer_key, &of_peer)) ||
	    (e = count_where(st, "SELECT count(*) FROM admission_sessions WHERE ?1 = ?1", now,
			     NULL, &all)))
		return e;
	if (of_serial >= per_serial) {
		*result = FLEET_STORE_SESSION_CAP_SERIAL;
		return FLEET_STORE_OK;
	}
	if (of_peer >= per_peer) {
		*result = FLEET_STORE_SESSION_CAP_PEER;
		return FLEET_STORE_OK;
	}
	if (all >= cap) {
		*result = FLEET_STORE_SESSION_CAP_ALL;
		return FLEET_STORE_OK;
	}
	if ((e = st_prepare(st, "INSERT INTO admission_sessions (handle, sid, serial, peer, "
				"peer_key, published, proven, superseded, deadline, answer_by, "
				"busy_until, sealed) VALUES (?1, NULL, ?2, ?3, ?4, 0, 0, 0, 0, 0, ?5, "
				"NULL)", &s)))
		return e;
	db_bind_text(s, 1, r->handle, -1);
	db_bind_text(s, 2, r->serial, -1);
	db_bind_text(s, 3, r->peer, -1);
	db_bind_text(s, 4, r->peer_key, -1);
	db_bind_int64(s, 5, r->busy_until);
	if ((e = st_step_done(st, s, "reserve an admission session", NULL)))
		return e;
	*result = FLEET_STORE_SESSION_RESERVED;
	return FLEET_STORE_OK;
}

fleet_err fleet_store_session_reserve(struct fleet_store *st, const struct fleet_store_session *r,
				      int64_t now, size_t per_serial, size_t per_peer, size_t cap,
				      enum fleet_store_session_cap *result)
{
	st_lock(st);
	fleet_err e = st_writable(st);
	if (!e && (!row_ok(r) || r->published))
		e = st_fail(st, FLEET_STORE_E_INVALID, "an admission session to reserve is malformed");
	if (!e && !(e = st_begin(st))) {
		if ((e = reserve_tx(st, r, now, per_serial, per_peer, cap, result)) ||
		    *result != FLEET_STORE_SESSION_RESERVED)
			st_rollback(st);
		else
			e = st_commit(st);
	}
	return st_unlock(st, e);
}

fleet_err fleet_store_session_put(struct fleet_store *st, const struct fleet_store_session *r)
{
	struct db_stmt *s;
	int changes = 0;
	st_lock(st);
	fleet_err e = st_writable(st);
	if (!e && !row_ok(r))
		e = st_fail(st, FLEET_STORE_E_INVALID, "an admission session to write is malformed");
	if (!e && !(e = st_prepare(st, "UPDATE admission_sessions SET sid = ?2, ek_hash = ?3, "
				       "ek_hash_ecc = ?4, published = ?5, proven = ?6, deadline = ?7, "
				       "answer_by = ?8, sealed = ?9, busy_until = 0 WHERE handle = ?1",
				   &s))) {
		db_bind_text(s, 1, r->handle, -1);
		if (r->sid[0])
			db_bind_text(s, 2, r->sid, -1);
		else
			db_bind_null(s, 2);
		db_bind_text(s, 3, r->ek_hash, -1);
		db_bind_text(s, 4, r->ek_hash_ecc, -1);
		db_bind_int64(s, 5, r->published);
		db_bind_int64(s, 6, r->proven);
		db_bind_int64(s, 7, r->deadline);
		db_bind_int64(s, 8, r->answer_by);
		if (r->sealed)
			db_bind_blob(s, 9, r->sealed, (int)r->sealed_len);
		else
			db_bind_null(s, 9);
		e = st_step_done(st, s, "write an admission session", &changes);
		if (!e && changes == 0)
			e = st_fail(st, FLEET_STORE_E_NOT_FOUND, "the admission session is gone");
	}
	return st_unlock(st, e);
}

static fleet_err acquire_tx(struct fleet_store *st, const char *sid, int64_t now,
			    int64_t lease_until, struct fleet_store_session *out, bool *found,
			    bool *took)
{
	struct db_stmt *s;
	fleet_err e = st_prepare(st, "SELECT " COLUMNS ", " ENDING " FROM admission_sessions "
				     "WHERE sid = ?2 AND published = 1", &s);
	if (e)
		return e;
	db_bind_int64(s, 1, now);
	db_bind_text(s, 2, sid, -1);
	int rc = db_step(s);
	bool ending = false;
	if (rc == DB_ROW) {
		*found = true;
		e = read_row(st, s, out);
		ending = db_column_int64(s, 14) != 0;
	}
	db_finalize(s);
	if (e)
		return e;
	if (rc != DB_ROW && rc != DB_DONE)
		return st_dberr(st, rc, "read an admission session");
	if (!*found || ending || out->busy_until >= now)
		return FLEET_STORE_OK;
	if ((e = st_prepare(st, "UPDATE admission_sessions SET busy_until = ?2 WHERE handle = ?1",
			    &s)))
		return e;
	db_bind_text(s, 1, out->handle, -1);
	db_bind_int64(s, 2, lease_until);
	if ((e = st_step_done(st, s, "check out an admission session", NULL)))
		return e;
	*took = true;
	return FLEET_STORE_OK;
}

fleet_err fleet_store_session_acquire(struct fleet_store *st, const char *sid, int64_t now,
				      int64_t lease_until, struct fleet_store_session *out,
				      bool *found, bool *took)
{
	*found = *took = false;
	memset(out, 0, sizeof(*out));
	st_lock(st);
	fleet_err e = st_writable(st);
	if (!e && !st_hex_ok(sid, 64, 64))
		e = st_fail(st, FLEET_STORE_E_INVALID, "a session id is 64 lowercase hex");
	if (!e && !(e = st_begin(st))) {
		if ((e = acquire_tx(st, sid, now, lease_until, out, found, took)) ||
		    !*took)
			st_rollback(st);
		else
			e = st_commit(st);
	}
	if (e) {
		fleet_store_session_clear(out);
		*found = *took = false;
	}
	return st_unlock(st, e);
}

static fleet_err prove_tx(struct fleet_store *st, const char *handle, size_t *n)
{
	struct db_stmt *s;
	int changes = 0;
	fleet_err e = st_prepare(st, "UPDATE admission_sessions SET proven = 1 WHERE handle = ?1",
				 &s);
	if (e)
		return e;
	db_bind_text(s, 1, handle, -1);
	if ((e = st_step_done(st, s, "prove an admission session", &changes)))
		return e;
	if (changes == 0)
		return st_fail(st, FLEET_STORE_E_NOT_FOUND, "the admission session is gone");
	/* Only the same serial's sessions for the same EKs (sessions.h). */
	if ((e = st_prepare(st, "UPDATE admission_sessions SET superseded = 1 WHERE handle <> ?1 "
				"AND superseded = 0 AND EXISTS (SELECT 1 FROM admission_sessions p "
				"WHERE p.handle = ?1 AND p.serial = admission_sessions.serial AND "
				"p.ek_hash = admission_sessions.ek_hash AND "
				"p.ek_hash_ecc = admission_sessions.ek_hash_ecc)", &s)))
		return e;
	db_bind_text(s, 1, handle, -1);
	if ((e = st_step_done(st, s, "supersede admission sessions", &changes)))
		return e;
	*n = (size_t)changes;
	return FLEET_STORE_OK;
}

fleet_err fleet_store_session_prove(struct fleet_store *st, const char *handle, size_t *n)
{
	*n = 0;
	st_lock(st);
	fleet_err e = st_writable(st);
	if (!e && !handle_ok(handle))
		e = st_fail(st, FLEET_STORE_E_INVALID, "a session handle is 32 lowercase hex");
	if (!e && !(e = st_begin(st))) {
		if ((e = prove_tx(st, handle, n)))
			st_rollback(st);
		else
			e = st_commit(st);
	}
	if (e)
		*n = 0;
	return st_unlock(st, e);
}

fleet_err fleet_store_session_delete(struct fleet_store *st, const char *handle)
{
	struct db_stmt *s;
	st_lock(st);
	fleet_err e = st_writable(st);
	if (!e && !handle_ok(handle))
		e = st_fail(st, FLEET_STORE_E_INVALID, "a session handle is 32 lowercase hex");
	if (!e && !(e = st_prepare(st, "DELETE FROM admission_sessions WHERE handle = ?1", &s))) {
		db_bind_text(s, 1, handle, -1);
		e = st_step_done(st, s, "delete an admission session", NULL);
	}
	return st_unlock(st, e);
}

static fleet_err reap_tx(struct fleet_store *st, int64_t now, size_t max,
			 struct fleet_store_session *v, size_t *n)
{
	struct db_stmt *s;
	fleet_err e = st_prepare(st, "SELECT " COLUMNS " FROM admission_sessions WHERE "
				     "busy_until < ?1 AND " ENDING " ORDER BY handle LIMIT ?2", &s);
	if (e)
		return e;
	db_bind_int64(s, 1, now);
	db_bind_int64(s, 2, (int64_t)max);
	int rc;
	while ((rc = db_step(s)) == DB_ROW && *n < max) {
		if ((e = read_row(st, s, &v[*n])))
			break;
		(*n)++;
	}
	db_finalize(s);
	if (e)
		return e;
	if (rc != DB_ROW && rc != DB_DONE)
		return st_dberr(st, rc, "read admission sessions to end");
	for (size_t i = 0; i < *n; i++) {
		if ((e = st_prepare(st, "DELETE FROM admission_sessions WHERE handle = ?1", &s)))
			return e;
		db_bind_text(s, 1, v[i].handle, -1);
		if ((e = st_step_done(st, s, "end an admission session", NULL)))
			return e;
	}
	return FLEET_STORE_OK;
}

fleet_err fleet_store_session_reap(struct fleet_store *st, int64_t now, size_t max,
				   struct fleet_store_session **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	if (max == 0)
		return FLEET_STORE_OK;
	struct fleet_store_session *v = calloc(max, sizeof(*v));
	if (!v)
		return FLEET_STORE_E_NOMEM;
	st_lock(st);
	fleet_err e = st_writable(st);
	if (!e && !(e = st_begin(st))) {
		if ((e = reap_tx(st, now, max, v, n)))
			st_rollback(st);
		else
			e = st_commit(st);
	}
	if (e || *n == 0) {
		for (size_t i = 0; i < *n; i++)
			fleet_store_session_clear(&v[i]);
		free(v);
		*n = 0;
	} else {
		*out = v;
	}
	return st_unlock(st, e);
}

fleet_err fleet_store_session_count(struct fleet_store *st, size_t *n)
{
	*n = 0;
	st_lock(st);
	fleet_err e = count_where(st, "SELECT count(*) FROM admission_sessions WHERE ?1 = ?1", 0,
				  NULL, n);
	return st_unlock(st, e);
}
