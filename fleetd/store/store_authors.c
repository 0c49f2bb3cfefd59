/*
 * store_authors.c: binding author records (store.h, schema version 3): the
 * pass's copy of who wrote a planned device's binding, for when NetBox has
 * purged the change that said so.
 */
#include "fleetd/store/store_int.h"

#include <stdlib.h>
#include <string.h>

#define AUTHOR_COLS                                                                           \
	"device_id, serial, approved_ek_hash, approved_ek_hash_ecc, \"user\", change_id, "       \
	"changed_at, recorded_at"

static bool read_author(struct db_stmt *s, struct fleet_store_binding_author *r)
{
	memset(r, 0, sizeof(*r));
	r->device_id = db_column_int64(s, 0);
	r->change_id = db_column_int64(s, 5);
	r->changed_at = db_column_int64(s, 6);
	r->recorded_at = db_column_int64(s, 7);
	/* The schema's CHECKs hold these; a row that breaks them was written
	 * by something other than this code, and is read as corrupt rather
	 * than as a proof. */
	return r->device_id > 0 && r->change_id > 0 &&
	       st_col_text(s, 1, r->serial, sizeof(r->serial)) && r->serial[0] &&
	       st_col_text(s, 2, r->approved_ek_hash, sizeof(r->approved_ek_hash)) &&
	       st_col_text(s, 3, r->approved_ek_hash_ecc, sizeof(r->approved_ek_hash_ecc)) &&
	       st_col_text(s, 4, r->user, sizeof(r->user)) && r->user[0] &&
	       strlen(r->approved_ek_hash) == 64 && st_hash_ok(r->approved_ek_hash) &&
	       st_hash_ok(r->approved_ek_hash_ecc);
}

static fleet_err author_row(struct fleet_store *st, struct db_stmt *s, void *el, void *ctx)
{
	(void)ctx;
	if (!read_author(s, el))
		return st_fail(st, FLEET_STORE_E_CORRUPT,
			       "a binding author row holds an impossible value");
	return FLEET_STORE_OK;
}

bool fleet_store_binding_author_matches(const struct fleet_store_binding_author *r,
					int64_t device_id, const char *serial, const char *ek_hash,
					const char *ek_hash_ecc, const char *author)
{
	return r && device_id > 0 && r->device_id == device_id && serial && author && ek_hash &&
	       ek_hash[0] && strcmp(r->serial, serial) == 0 &&
	       strcmp(r->approved_ek_hash, ek_hash) == 0 &&
	       strcmp(r->approved_ek_hash_ecc, ek_hash_ecc ? ek_hash_ecc : "") == 0 &&
	       author[0] && strcmp(r->user, author) == 0;
}

static fleet_err check_in(struct fleet_store *st,
				     const struct fleet_store_binding_author *r)
{
	if (!r || r->device_id <= 0 || r->change_id <= 0)
		return st_fail(st, FLEET_STORE_E_INVALID,
			       "a binding author record needs a device id and a change id");
	if (!st_text_ok(r->serial, FLEET_STORE_NAME_MAX) ||
	    !st_text_ok(r->user, FLEET_STORE_NAME_MAX))
		return st_fail(st, FLEET_STORE_E_INVALID,
			       "serial and user are 1 to %d printable characters",
			       FLEET_STORE_NAME_MAX);
	if (strnlen(r->approved_ek_hash, 65) != 64 || !st_hash_ok(r->approved_ek_hash) ||
	    !st_hash_ok(r->approved_ek_hash_ecc))
		return st_fail(st, FLEET_STORE_E_INVALID,
			       "approved_ek_hash is 64 lowercase hex digits, approved_ek_hash_ecc "
			       "the same or empty");
	if (r->changed_at < 0 || r->recorded_at < 0)
		return st_fail(st, FLEET_STORE_E_INVALID, "a time is not negative");
	return FLEET_STORE_OK;
}

/* Inside the caller's transaction: room for device_id (known, or below the cap). */
static fleet_err room_for(struct fleet_store *st, int64_t device_id)
{
	struct db_stmt *s;
	fleet_err e = st_prepare(
		st, "SELECT (SELECT count(*) FROM binding_authors), "
		    "EXISTS (SELECT 1 FROM binding_authors WHERE device_id = ?1)", &s);
	if (e)
		return e;
	db_bind_int64(s, 1, device_id);
	int rc = db_step(s);
	if (rc != DB_ROW)
		e = st_dberr(st, rc, "count binding authors");
	else if (!db_column_int64(s, 1) &&
		 db_column_int64(s, 0) >= FLEET_STORE_MAX_BINDING_AUTHORS)
		e = st_fail(st, FLEET_STORE_E_FULL, "the store holds %d binding author records",
			    FLEET_STORE_MAX_BINDING_AUTHORS);
	db_finalize(s);
	return e;
}

static fleet_err binding_author_record(struct fleet_store *st,
						  const struct fleet_store_binding_author *r)
{
	fleet_err e = st_writable(st);
	if (e || (e = check_in(st, r)) || (e = st_begin(st)))
		return e;
	struct db_stmt *s;
	if ((e = room_for(st, r->device_id)) ||
	    (e = st_prepare(st, "INSERT INTO binding_authors (" AUTHOR_COLS ") VALUES "
				"(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT (device_id) DO UPDATE "
				"SET serial = excluded.serial, "
				"approved_ek_hash = excluded.approved_ek_hash, "
				"approved_ek_hash_ecc = excluded.approved_ek_hash_ecc, "
				"\"user\" = excluded.\"user\", change_id = excluded.change_id, "
				"changed_at = excluded.changed_at, "
				"recorded_at = excluded.recorded_at", &s)))
		goto fail;
	db_bind_int64(s, 1, r->device_id);
	db_bind_text(s, 2, r->serial, -1);
	db_bind_text(s, 3, r->approved_ek_hash, -1);
	st_bind_hash(s, 4, r->approved_ek_hash_ecc);
	db_bind_text(s, 5, r->user, -1);
	db_bind_int64(s, 6, r->change_id);
	db_bind_int64(s, 7, r->changed_at);
	db_bind_int64(s, 8, r->recorded_at);
	if ((e = st_step_done(st, s, "record binding author", NULL)))
		goto fail;
	return st_commit(st);
fail:
	st_rollback(st);
	return e;
}

fleet_err fleet_store_binding_author_record(struct fleet_store *st,
						       const struct fleet_store_binding_author *r)
{
	st_lock(st);
	return st_unlock(st, binding_author_record(st, r));
}

static fleet_err binding_author_get(struct fleet_store *st, int64_t device_id,
					       struct fleet_store_binding_author *out)
{
	memset(out, 0, sizeof(*out));
	if (device_id <= 0)
		return st_fail(st, FLEET_STORE_E_NOT_FOUND, "no record for device id %lld",
			       (long long)device_id);
	struct db_stmt *s;
	fleet_err e = st_prepare(
		st, "SELECT " AUTHOR_COLS " FROM binding_authors WHERE device_id = ?1", &s);
	if (e)
		return e;
	db_bind_int64(s, 1, device_id);
	int rc = db_step(s);
	if (rc == DB_DONE)
		e = st_fail(st, FLEET_STORE_E_NOT_FOUND, "no binding author record for device %lld",
			    (long long)device_id);
	else if (rc != DB_ROW)
		e = st_dberr(st, rc, "read binding author");
	else if (!read_author(s, out))
		e = st_fail(st, FLEET_STORE_E_CORRUPT,
			    "a binding author row holds an impossible value");
	if (e)
		memset(out, 0, sizeof(*out));
	db_finalize(s);
	return e;
}

fleet_err fleet_store_binding_author_get(struct fleet_store *st, int64_t device_id,
						    struct fleet_store_binding_author *out)
{
	st_lock(st);
	return st_unlock(st, binding_author_get(st, device_id, out));
}

static fleet_err binding_author_forget(struct fleet_store *st, int64_t device_id,
						  bool *forgot)
{
	if (forgot)
		*forgot = false;
	fleet_err e = st_writable(st);
	if (e || (e = st_begin(st)))
		return e;
	struct db_stmt *s;
	int changes = 0;
	if ((e = st_prepare(st, "DELETE FROM binding_authors WHERE device_id = ?1", &s)))
		goto fail;
	db_bind_int64(s, 1, device_id);
	if ((e = st_step_done(st, s, "forget binding author", &changes)) || (e = st_commit(st)))
		goto fail;
	if (forgot)
		*forgot = changes > 0;
	return FLEET_STORE_OK;
fail:
	st_rollback(st);
	return e;
}

fleet_err fleet_store_binding_author_forget(struct fleet_store *st, int64_t device_id,
						       bool *forgot)
{
	st_lock(st);
	return st_unlock(st, binding_author_forget(st, device_id, forgot));
}

static fleet_err binding_authors_after(struct fleet_store *st, int64_t after_id,
						  size_t limit,
						  struct fleet_store_binding_author **out,
						  size_t *n)
{
	*out = NULL;
	*n = 0;
	if (limit < 1 || limit > FLEET_STORE_LIST_MAX)
		return st_fail(st, FLEET_STORE_E_INVALID, "a limit is 1 to %d",
			       FLEET_STORE_LIST_MAX);
	struct db_stmt *s;
	fleet_err e = st_prepare(st, "SELECT " AUTHOR_COLS " FROM binding_authors "
						"WHERE device_id > ?1 ORDER BY device_id LIMIT ?2",
					    &s);
	if (e)
		return e;
	db_bind_int64(s, 1, after_id);
	db_bind_int64(s, 2, limit);
	void *v;
	e = st_collect(st, s, sizeof(struct fleet_store_binding_author), 0, "binding authors",
		       author_row, NULL, NULL, &v, n);
	*out = v;
	return e;
}

fleet_err fleet_store_binding_authors_after(struct fleet_store *st, int64_t after_id,
						       size_t limit,
						       struct fleet_store_binding_author **out,
						       size_t *n)
{
	st_lock(st);
	return st_unlock(st, binding_authors_after(st, after_id, limit, out, n));
}
