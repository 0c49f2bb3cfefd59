/*
 * store_records.c: verdicts (one row per TPM-authenticated result, the
 * source of truth verdicts.jsonl mirrors) and issued certificates.
 */
#include "fleetd/store/store_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

static fleet_err verdict_insert(struct fleet_store *st,
					   const struct fleet_store_verdict_in *v,
					   int64_t *id_out)
{
	fleet_err e = st_writable(st);
	if (e)
		return e;
	bool has_device = v->device && v->device[0];
	if ((has_device && !st_text_ok(v->device, FLEET_STORE_NAME_MAX)) ||
	    !st_text_ok(v->serial, FLEET_STORE_NAME_MAX))
		return st_fail(st, FLEET_STORE_E_INVALID,
			       "device and serial are 1 to %d printable characters",
			       FLEET_STORE_NAME_MAX);
	if (!st_hex_ok(v->session, 2, FLEET_STORE_SESSION_MAX) || strlen(v->session) % 2)
		return st_fail(st, FLEET_STORE_E_INVALID,
			       "a session id is 2 to %d lowercase hex digits", FLEET_STORE_SESSION_MAX);
	if (!st_hash_ok(v->ek_hash) || !st_hash_ok(v->ek_hash_ecc))
		return st_fail(st, FLEET_STORE_E_INVALID, "an EK hash is 64 lowercase hex digits");
	if (v->n_reasons > FLEET_STORE_MAX_REASONS || (v->n_reasons && !v->reasons))
		return st_fail(st, FLEET_STORE_E_INVALID, "at most %d reasons",
			       FLEET_STORE_MAX_REASONS);
	if (v->pass != (v->n_reasons == 0))
		return st_fail(st, FLEET_STORE_E_INVALID,
			       "a pass carries no reasons and a fail at least one");
	json_t *arr = json_array();
	if (!arr)
		return st_fail(st, FLEET_STORE_E_NOMEM, "out of memory");
	for (size_t i = 0; i < v->n_reasons; i++) {
		if (!st_text_ok(v->reasons[i], FLEET_STORE_REASON_MAX)) {
			json_decref(arr);
			return st_fail(st, FLEET_STORE_E_INVALID,
				       "a reason is 1 to %d printable characters",
				       FLEET_STORE_REASON_MAX);
		}
		json_array_append_new(arr, json_string(v->reasons[i]));
	}
	char *reasons = json_dumps(arr, JSON_COMPACT | JSON_ENSURE_ASCII);
	json_decref(arr);
	if (!reasons)
		return st_fail(st, FLEET_STORE_E_NOMEM, "out of memory");
	struct db_stmt *s;
	if ((e = st_prepare(st, "INSERT INTO verdicts (time, device, serial, session, result, "
				"reasons, ek_hash, ek_hash_ecc) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
			    &s))) {
		free(reasons);
		return e;
	}
	db_bind_int64(s, 1, v->time);
	if (has_device)
		db_bind_text(s, 2, v->device, -1);
	else
		db_bind_null(s, 2);
	db_bind_text(s, 3, v->serial, -1);
	db_bind_text(s, 4, v->session, -1);
	db_bind_text(s, 5, v->pass ? "pass" : "fail", -1);
	db_bind_text(s, 6, reasons, -1);
	st_bind_hash(s, 7, v->ek_hash);
	st_bind_hash(s, 8, v->ek_hash_ecc);
	int rc = db_step(s);
	db_finalize(s);
	free(reasons);
	if (rc != DB_DONE)
		return st_dberr(st, rc, "insert verdict");
	if (id_out)
		*id_out = db_last_insert_rowid(st->db);
	return FLEET_STORE_OK;
}

fleet_err fleet_store_verdict_insert(struct fleet_store *st,
						const struct fleet_store_verdict_in *v,
						int64_t *id_out)
{
	st_lock(st);
	return st_unlock(st, verdict_insert(st, v, id_out));
}

/* The reasons column back into fixed fields; false if it is not a JSON
 * array of short printable strings. */
static bool read_reasons(struct db_stmt *s, int col, struct fleet_store_verdict *v)
{
	const char *text = (const char *)db_column_text(s, col);
	int len = db_column_bytes(s, col);
	if (!text || len <= 0)
		return false;
	json_t *arr = json_loadb(text, (size_t)len, JSON_REJECT_DUPLICATES, NULL);
	bool ok = arr && json_is_array(arr) && json_array_size(arr) <= FLEET_STORE_MAX_REASONS;
	for (size_t i = 0; ok && i < json_array_size(arr); i++) {
		const char *r = json_string_value(json_array_get(arr, i));
		ok = st_text_ok(r, FLEET_STORE_REASON_MAX);
		if (ok)
			strcpy(v->reasons[v->n_reasons++], r);
	}
	json_decref(arr);
	return ok;
}

/* Step a prepared verdict query (its columns as VERDICT_COLS) into at most
 * limit rows; finalizes s. */
#define VERDICT_COLS "id, time, device, serial, session, result, reasons, ek_hash, ek_hash_ecc"
static fleet_err read_verdicts(struct fleet_store *st, struct db_stmt *s, size_t limit,
					  struct fleet_store_verdict **out, size_t *n)
{
	fleet_err e = FLEET_STORE_OK;
	struct fleet_store_verdict *v = calloc(limit, sizeof(*v));
	if (!v) {
		db_finalize(s);
		return st_fail(st, FLEET_STORE_E_NOMEM, "out of memory");
	}
	size_t cnt = 0;
	int rc = DB_DONE;
	while (cnt < limit && (rc = db_step(s)) == DB_ROW) {
		struct fleet_store_verdict *r = &v[cnt++];
		char result[8];
		r->id = db_column_int64(s, 0);
		r->time = db_column_int64(s, 1);
		if (!st_col_text(s, 2, r->device, sizeof(r->device)) ||
		    !st_col_text(s, 3, r->serial, sizeof(r->serial)) ||
		    !st_col_text(s, 4, r->session, sizeof(r->session)) ||
		    !st_col_text(s, 5, result, sizeof(result)) || !read_reasons(s, 6, r) ||
		    !st_col_text(s, 7, r->ek_hash, sizeof(r->ek_hash)) ||
		    !st_col_text(s, 8, r->ek_hash_ecc, sizeof(r->ek_hash_ecc))) {
			e = st_fail(st, FLEET_STORE_E_CORRUPT, "a verdict row holds an impossible value");
			goto out;
		}
		r->pass = !strcmp(result, "pass");
	}
	if (cnt < limit && rc != DB_DONE)
		e = st_dberr(st, rc, "list verdicts");
out:
	db_finalize(s);
	if (e) {
		free(v);
		return e;
	}
	*out = v;
	*n = cnt;
	return FLEET_STORE_OK;
}

static fleet_err verdicts_list(struct fleet_store *st, const char *device,
					  size_t limit, struct fleet_store_verdict **out,
					  size_t *n)
{
	*out = NULL;
	*n = 0;
	if (limit < 1 || limit > FLEET_STORE_LIST_MAX)
		return st_fail(st, FLEET_STORE_E_INVALID, "a limit is 1 to %d",
			       FLEET_STORE_LIST_MAX);
	if (device && !st_text_ok(device, FLEET_STORE_NAME_MAX))
		return st_fail(st, FLEET_STORE_E_INVALID, "not a device name");
	struct db_stmt *s;
	/* A device's verdicts through verdicts_by_device: "?1 IS NULL OR
	 * device = ?1" scanned the whole table newest first for each device,
	 * which made the SPIRE pass quadratic in the fleet (3 minutes at
	 * 50,000 devices). */
	fleet_err e = st_prepare(
		st, device ? "SELECT " VERDICT_COLS " FROM verdicts WHERE device = ?1 "
			     "ORDER BY id DESC LIMIT ?2"
			   : "SELECT " VERDICT_COLS " FROM verdicts ORDER BY id DESC LIMIT ?2",
		&s);
	if (e)
		return e;
	if (device)
		db_bind_text(s, 1, device, -1);
	else
		db_bind_null(s, 1);
	db_bind_int64(s, 2, limit);
	return read_verdicts(st, s, limit, out, n);
}

fleet_err fleet_store_verdicts_list(struct fleet_store *st, const char *device,
					       size_t limit, struct fleet_store_verdict **out,
					       size_t *n)
{
	st_lock(st);
	return st_unlock(st, verdicts_list(st, device, limit, out, n));
}

static fleet_err verdicts_after(struct fleet_store *st, int64_t after_id,
					   size_t limit, struct fleet_store_verdict **out,
					   size_t *n)
{
	*out = NULL;
	*n = 0;
	if (limit < 1 || limit > FLEET_STORE_LIST_MAX)
		return st_fail(st, FLEET_STORE_E_INVALID, "a limit is 1 to %d",
			       FLEET_STORE_LIST_MAX);
	struct db_stmt *s;
	fleet_err e = st_prepare(
		st, "SELECT " VERDICT_COLS " FROM verdicts WHERE id > ?1 ORDER BY id LIMIT ?2", &s);
	if (e)
		return e;
	db_bind_int64(s, 1, after_id);
	db_bind_int64(s, 2, limit);
	return read_verdicts(st, s, limit, out, n);
}

fleet_err fleet_store_verdicts_after(struct fleet_store *st, int64_t after_id,
						size_t limit, struct fleet_store_verdict **out,
						size_t *n)
{
	st_lock(st);
	return st_unlock(st, verdicts_after(st, after_id, limit, out, n));
}

/* A device's certificate, checked by the store first (st_cert_facts). */
fleet_err st_cert_insert(struct fleet_store *st, const char *device,
					const char *kind, const uint8_t *der, size_t der_len,
					time_t issued_at, char *sha1_out)
{
	fleet_err e = st_writable(st);
	if (e)
		return e;
	if (!kind || (strcmp(kind, FLEET_STORE_CERT_LAK) && strcmp(kind, FLEET_STORE_CERT_LDEVID)))
		return st_fail(st, FLEET_STORE_E_INVALID, "a certificate kind is lak or ldevid");
	if (!der || der_len == 0 || der_len > FLEET_STORE_CERT_MAX)
		return st_fail(st, FLEET_STORE_E_INVALID, "a certificate is 1 to %d bytes of DER",
			       FLEET_STORE_CERT_MAX);
	int64_t not_after;
	char sha1[41];
	if (!st_cert_facts(der, der_len, &not_after, sha1))
		return st_fail(st, FLEET_STORE_E_INVALID, "not one DER X.509 certificate");
	struct fleet_store_device d;
	if ((e = fleet_store_device_get_by_name(st, device, &d)))
		return e;
	struct db_stmt *s;
	if ((e = st_prepare(st, "INSERT INTO certificates (device_id, kind, sha1, not_after, "
				"issued_at, der) VALUES (?1, ?2, ?3, ?4, ?5, ?6)", &s)))
		return e;
	db_bind_int64(s, 1, d.id);
	db_bind_text(s, 2, kind, -1);
	db_bind_text(s, 3, sha1, -1);
	db_bind_int64(s, 4, not_after);
	db_bind_int64(s, 5, issued_at);
	db_bind_blob(s, 6, der, (int)der_len);
	int rc = db_step(s);
	db_finalize(s);
	if (rc != DB_DONE)
		return st_dberr(st, rc, "insert certificate");
	if (sha1_out)
		memcpy(sha1_out, sha1, sizeof(sha1));
	return FLEET_STORE_OK;
}

fleet_err fleet_store_cert_insert(struct fleet_store *st, const char *device,
					     const char *kind, const uint8_t *der, size_t der_len,
					     time_t issued_at, char *sha1_out)
{
	st_lock(st);
	return st_unlock(st, st_cert_insert(st, device, kind, der, der_len, issued_at, sha1_out));
}

static fleet_err cert_revoke(struct fleet_store *st, const char *sha1,
					time_t now)
{
	fleet_err e = st_writable(st);
	if (e)
		return e;
	if (!st_hex_ok(sha1, 40, 40))
		return st_fail(st, FLEET_STORE_E_INVALID, "a fingerprint is 40 lowercase hex digits");
	struct db_stmt *s;
	if ((e = st_prepare(st, "UPDATE certificates SET revoked = 1, revoked_at = ?2 "
				"WHERE sha1 = ?1 AND revoked = 0", &s)))
		return e;
	db_bind_text(s, 1, sha1, -1);
	db_bind_int64(s, 2, now);
	int rc = db_step(s);
	db_finalize(s);
	if (rc != DB_DONE)
		return st_dberr(st, rc, "revoke certificate");
	if (db_changes(st->db) == 0)
		return st_fail(st, FLEET_STORE_E_NOT_FOUND, "no unrevoked certificate with that "
							    "fingerprint");
	return FLEET_STORE_OK;
}

fleet_err fleet_store_cert_revoke(struct fleet_store *st, const char *sha1,
					     time_t now)
{
	st_lock(st);
	return st_unlock(st, cert_revoke(st, sha1, now));
}

void fleet_store_certs_free(struct fleet_store_cert *c, size_t n)
{
	for (size_t i = 0; c && i < n; i++)
		free(c[i].der);
	free(c);
}

/* Step a prepared certificate query (kind, sha1, not_after, issued_at,
 * revoked, revoked_at, der[, device]) into *out; finalizes s. device NULL:
 * each row's name is its eighth column. */
static fleet_err cert_row(struct fleet_store *st, struct db_stmt *s, void *el, void *ctx)
{
	struct fleet_store_cert *c = el;
	const char *device = ctx;
	if (device)
		snprintf(c->device, sizeof(c->device), "%s", device);
	c->not_after = db_column_int64(s, 2);
	c->issued_at = db_column_int64(s, 3);
	c->revoked = db_column_int64(s, 4) != 0;
	c->revoked_at = db_column_int64(s, 5);
	const void *blob = db_column_blob(s, 6);
	int blen = db_column_bytes(s, 6);
	if (!st_col_text(s, 0, c->kind, sizeof(c->kind)) ||
	    !st_col_text(s, 1, c->sha1, sizeof(c->sha1)) || !blob || blen <= 0 ||
	    blen > FLEET_STORE_CERT_MAX ||
	    (!device && (!st_col_text(s, 7, c->device, sizeof(c->device)) || !c->device[0])))
		return st_fail(st, FLEET_STORE_E_CORRUPT, "a certificate row is impossible");
	if (!(c->der = malloc((size_t)blen)))
		return st_fail(st, FLEET_STORE_E_NOMEM, "out of memory");
	memcpy(c->der, blob, (size_t)blen);
	c->der_len = (size_t)blen;
	return FLEET_STORE_OK;
}

static void cert_free(void *el)
{
	free(((struct fleet_store_cert *)el)->der);
}

fleet_err st_read_certs(struct fleet_store *st, struct db_stmt *s, const char *device,
			struct fleet_store_cert **out, size_t *n)
{
	void *v;
	fleet_err e = st_collect(st, s, sizeof(struct fleet_store_cert), 0, "certificates",
				 cert_row, (void *)device, cert_free, &v, n);
	*out = v;
	return e;
}

static fleet_err certs_for_device(struct fleet_store *st, const char *device,
					     struct fleet_store_cert **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	struct fleet_store_device d;
	fleet_err e = fleet_store_device_get_by_name(st, device, &d);
	if (e)
		return e;
	struct db_stmt *s;
	if ((e = st_prepare(st, "SELECT kind, sha1, not_after, issued_at, revoked, revoked_at, der "
				"FROM certificates WHERE device_id = ?1 ORDER BY issued_at DESC, "
				"id DESC LIMIT ?2", &s)))
		return e;
	db_bind_int64(s, 1, d.id);
	db_bind_int64(s, 2, FLEET_STORE_LIST_MAX);
	return st_read_certs(st, s, d.name, out, n);
}

fleet_err fleet_store_certs_for_device(struct fleet_store *st, const char *device,
						  struct fleet_store_cert **out, size_t *n)
{
	st_lock(st);
	return st_unlock(st, certs_for_device(st, device, out, n));
}

static fleet_err latest_verdict_row(struct fleet_store *st, struct db_stmt *s, void *el,
				    void *ctx)
{
	(void)ctx;
	struct fleet_store_latest_verdict *v = el;
	char result[8];
	v->device_id = db_column_int64(s, 0);
	v->id = db_column_int64(s, 1);
	v->time = db_column_int64(s, 2);
	/* The one column judged, checked as read_verdicts checks it. */
	if (!st_col_text(s, 3, result, sizeof(result)))
		return st_fail(st, FLEET_STORE_E_CORRUPT, "a verdict row holds an impossible value");
	v->pass = !strcmp(result, "pass");
	return FLEET_STORE_OK;
}

static fleet_err latest_verdicts(struct fleet_store *st, struct fleet_store_latest_verdict **out,
				 size_t *n)
{
	*out = NULL;
	*n = 0;
	struct db_stmt *s;
	/* verdicts_list's "WHERE device = ?1 ORDER BY id DESC LIMIT 1" for
	 * every device at once: the highest id under each device's name, one
	 * index probe a device (verdicts_by_device is (device, id)); ordered
	 * by the integer id, which both engines order alike. At most one row
	 * a device, so the devices' cap bounds it. */
	fleet_err e = st_prepare(
		st, "SELECT d.id, v.id, v.time, v.result FROM devices d "
		    "JOIN verdicts v ON v.id = (SELECT MAX(w.id) FROM verdicts w "
		    "WHERE w.device = d.name) ORDER BY d.id LIMIT ?1", &s);
	if (e)
		return e;
	db_bind_int64(s, 1, FLEET_STORE_MAX_DEVICES + 1);
	void *v;
	e = st_collect(st, s, sizeof(struct fleet_store_latest_verdict), FLEET_STORE_MAX_DEVICES,
		       "latest verdicts", latest_verdict_row, NULL, NULL, &v, n);
	*out = v;
	return e;
}

fleet_err fleet_store_latest_verdicts(struct fleet_store *st,
				      struct fleet_store_latest_verdict **out, size_t *n)
{
	st_lock(st);
	return st_unlock(st, latest_verdicts(st, out, n));
}

static fleet_err cert_brief_row(struct fleet_store *st, struct db_stmt *s, void *el, void *ctx)
{
	(void)ctx;
	struct fleet_store_cert_brief *c = el;
	c->device_id = db_column_int64(s, 0);
	c->not_after = db_column_int64(s, 3);
	c->issued_at = db_column_int64(s, 4);
	c->revoked = db_column_int64(s, 5) != 0;
	c->revoked_at = db_column_int64(s, 6);
	/* cert_row's checks but the DER's, which is not read. */
	if (!st_col_text(s, 1, c->kind, sizeof(c->kind)) ||
	    !st_col_text(s, 2, c->sha1, sizeof(c->sha1)))
		return st_fail(st, FLEET_STORE_E_CORRUPT, "a certificate row is impossible");
	return FLEET_STORE_OK;
}

static fleet_err certs_all(struct fleet_store *st, struct fleet_store_cert_brief **out,
			   size_t *n)
{
	*out = NULL;
	*n = 0;
	struct db_stmt *s;
	/* certs_for_device's rows for every device, in its order within a
	 * device. Every certificate belongs to a device (device_id REFERENCES
	 * devices, ON DELETE RESTRICT). Its LIMIT is counted here while
	 * stepping, a device at a time: a window function for it cost a
	 * second sort of the whole table. */
	fleet_err e = st_prepare(
		st, "SELECT device_id, kind, sha1, not_after, issued_at, revoked, revoked_at "
		    "FROM certificates ORDER BY device_id, issued_at DESC, id DESC",
		&s);
	if (e)
		return e;
	struct fleet_store_cert_brief *v = NULL;
	size_t cnt = 0, cap = 0, in_device = 0;
	int rc;
	while ((rc = db_step(s)) == DB_ROW) {
		int64_t dev = db_column_int64(s, 0);
		if (cnt && v[cnt - 1].device_id == dev) {
			if (++in_device > FLEET_STORE_LIST_MAX)
				continue; /* past certs_for_device's LIMIT */
		} else {
			in_device = 1;
		}
		if (cnt == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			void *nv = ncap < cap ? NULL : reallocarray(v, ncap, sizeof(*v));
			if (!nv) {
				e = st_fail(st, FLEET_STORE_E_NOMEM, "out of memory");
				break;
			}
			v = nv;
			cap = ncap;
		}
		memset(&v[cnt], 0, sizeof(v[cnt]));
		if ((e = cert_brief_row(st, s, &v[cnt], NULL)))
			break;
		cnt++;
	}
	if (!e && rc != DB_DONE)
		e = st_dberr(st, rc, "list certificates");
	db_finalize(s);
	if (e) {
		free(v);
		return e;
	}
	*out = v;
	*n = cnt;
	return FLEET_STORE_OK;
}

fleet_err fleet_store_certs_all(struct fleet_store *st, struct fleet_store_cert_brief **out,
				size_t *n)
{
	st_lock(st);
	return st_unlock(st, certs_all(st, out, n));
}
