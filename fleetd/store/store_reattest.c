/*
 * store_reattest.c: the re-check's last TPM clock per device (store.h,
 * schema version 5) and a renewal's one transaction.
 */
#include "fleetd/store/store_int.h"

#include <stdint.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

static fleet_err clock_get(struct fleet_store *st, const char *device,
			   struct fleet_store_reattest_clock *out)
{
	struct db_stmt *s;
	fleet_err e;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!st_text_ok(device, FLEET_STORE_NAME_MAX))
		return st_fail(st, FLEET_STORE_E_INVALID, "not a device name");
	if ((e = st_prepare(st,
			    "SELECT reset_count, restart_count, clock, checked_at "
			    "FROM reattest_clock WHERE device = ?1",
			    &s)))
		return e;
	db_bind_text(s, 1, device, -1);
	rc = db_step(s);
	if (rc == DB_ROW) {
		int64_t r = db_column_int64(s, 0), t = db_column_int64(s, 1),
			      c = db_column_int64(s, 2), at = db_column_int64(s, 3);
		db_finalize(s);
		/* The CHECKs hold these; anything else was not written here. */
		if (r < 0 || r > UINT32_MAX || t < 0 || t > UINT32_MAX || c < 0 || at < 0)
			return st_fail(st, FLEET_STORE_E_CORRUPT,
				       "a reattest_clock row holds an impossible value");
		out->reset_count = (uint32_t)r;
		out->restart_count = (uint32_t)t;
		out->clock = (uint64_t)c;
		out->checked_at = at;
		return FLEET_STORE_OK;
	}
	db_finalize(s);
	if (rc == DB_DONE)
		return st_fail(st, FLEET_STORE_E_NOT_FOUND, "no re-check clock for that device");
	return st_dberr(st, rc, "read reattest clock");
}

fleet_err fleet_store_reattest_clock_get(struct fleet_store *st, const char *device,
					 struct fleet_store_reattest_clock *out)
{
	if (!st || !out)
		return FLEET_STORE_E_INVALID;
	st_lock(st);
	return st_unlock(st, clock_get(st, device, out));
}

static fleet_err clock_record(struct fleet_store *st, const char *device,
			      const struct fleet_store_reattest_clock *c)
{
	struct db_stmt *s;
	int changes = 0, known = 0;
	fleet_err e = st_writable(st);

	if (e)
		return e;
	if (!st_text_ok(device, FLEET_STORE_NAME_MAX))
		return st_fail(st, FLEET_STORE_E_INVALID, "not a device name");
	if (c->clock > (uint64_t)INT64_MAX || c->checked_at < 0)
		return st_fail(st, FLEET_STORE_E_INVALID,
			       "a clock is 0..INT64_MAX and checked_at not negative");
	if ((e = st_begin(st)))
		return e;
	if ((e = st_prepare(st, "SELECT count(*) FROM devices WHERE name = ?1", &s)))
		goto out;
	db_bind_text(s, 1, device, -1);
	if (db_step(s) == DB_ROW)
		known = db_column_int64(s, 0);
	db_finalize(s);
	if (!known) {
		e = st_fail(st, FLEET_STORE_E_NOT_FOUND, "no device with that name");
		goto out;
	}
	/* Forwards only, decided by the row itself under the write lock. */
	if ((e = st_prepare(st,
			    "INSERT INTO reattest_clock (device, reset_count, restart_count, clock, "
			    "checked_at) VALUES (?1, ?2, ?3, ?4, ?5) "
			    "ON CONFLICT (device) DO UPDATE SET reset_count = excluded.reset_count, "
			    "restart_count = excluded.restart_count, clock = excluded.clock, "
			    "checked_at = excluded.checked_at "
			    "WHERE excluded.reset_count > reattest_clock.reset_count OR "
			    "(excluded.reset_count = reattest_clock.reset_count AND "
			    "excluded.restart_count >= reattest_clock.restart_count)",
			    &s)))
		goto out;
	db_bind_text(s, 1, device, -1);
	db_bind_int64(s, 2, c->reset_count);
	db_bind_int64(s, 3, c->restart_count);
	db_bind_int64(s, 4, c->clock);
	db_bind_int64(s, 5, c->checked_at);
	if ((e = st_step_done(st, s, "record reattest clock", &changes)))
		goto out;
	if (changes == 0)
		e = st_fail(st, FLEET_STORE_E_CONFLICT,
			    "resetCount/restartCount below the recorded ones");
out:
	if (e) {
		st_rollback(st);
		return e;
	}
	return st_commit(st);
}

fleet_err fleet_store_reattest_clock_record(struct fleet_store *st, const char *device,
					    const struct fleet_store_reattest_clock *c)
{
	if (!st || !c)
		return FLEET_STORE_E_INVALID;
	st_lock(st);
	return st_unlock(st, clock_record(st, device, c));
}

/* The public key of a stored certificate (NULL when it does not parse:
 * the store wrote it, so that is CORRUPT to the caller). */
static EVP_PKEY *cert_key(const struct fleet_store_cert *c)
{
	const unsigned char *p = c->der;
	X509 *x = c->der ? d2i_X509(NULL, &p, (long)c->der_len) : NULL;
	EVP_PKEY *k = x ? X509_get_pubkey(x) : NULL;
	X509_free(x);
	ERR_clear_error();
	return k;
}

static EVP_PKEY *der_key(const uint8_t *der, size_t len)
{
	struct fleet_store_cert c = {.der = (uint8_t *)der, .der_len = len};
	return cert_key(&c);
}

/* What the renewal's transaction re-reads of the certificates: the
 * presented LAK still good for the current AK, and the new key new. */
static fleet_err renewal_certs_ok(struct fleet_store *st, const struct fleet_store_renew_in *in)
{
	struct fleet_store_cert *c = NULL;
	const struct fleet_store_cert *mine = NULL, *newest = NULL;
	EVP_PKEY *want = der_key(in->ldevid_der, in->ldevid_len), *a = NULL, *b = NULL;
	size_t n = 0;
	fleet_err e;

	if (!want)
		return st_fail(st, FLEET_STORE_E_INVALID, "the LDevID certificate does not parse");
	if ((e = fleet_store_certs_for_device(st, in->device, &c, &n)))
		goto out;
	for (size_t i = 0; i < n && !e; i++) {
		if (strcmp(c[i].kind, FLEET_STORE_CERT_LAK) == 0) {
			if (!newest && !c[i].revoked)
				newest = &c[i];
			if (strcmp(c[i].sha1, in->presented_lak_sha1) == 0)
				mine = &c[i];
		} else if (strcmp(c[i].kind, FLEET_STORE_CERT_LDEVID) == 0) {
			EVP_PKEY *k = cert_key(&c[i]);
			if (k && EVP_PKEY_eq(k, want) == 1)
				e = st_fail(st, FLEET_STORE_E_STATE,
					    "the device has a certificate for that key already");
			EVP_PKEY_free(k);
		}
	}
	if (e)
		goto out;
	if (!mine || mine->revoked || !newest) {
		e = st_fail(st, FLEET_STORE_E_CONFLICT,
			    "the presented LAK certificate is unknown or revoked");
		goto out;
	}
	a = cert_key(mine);
	b = cert_key(newest);
	if (!a || !b || EVP_PKEY_eq(a, b) != 1)
		e = st_fail(st, FLEET_STORE_E_CONFLICT,
			    "the presented LAK certificate is not for the device's current AK");
out:
	EVP_PKEY_free(want);
	EVP_PKEY_free(a);
	EVP_PKEY_free(b);
	ERR_clear_error();
	fleet_store_certs_free(c, n);
	return e;
}

static fleet_err renewal_issue(struct fleet_store *st, const struct fleet_store_renew_in *in,
			       char lak_sha1[41], char ldevid_sha1[41])
{
	struct fleet_store_device d;
	struct db_stmt *s;
	int current = -1;
	fleet_err e = st_writable(st);

	if (e)
		return e;
	if (!st_text_ok(in->device, FLEET_STORE_NAME_MAX) ||
	    !st_text_ok(in->serial, FLEET_STORE_NAME_MAX) ||
	    !st_hex_ok(in->presented_lak_sha1, 40, 40) || in->max_current < 1 ||
	    in->max_current > FLEET_STORE_LIST_MAX)
		return st_fail(st, FLEET_STORE_E_INVALID,
			       "a renewal names a device, its serial and a cap of 1..%d",
			       FLEET_STORE_LIST_MAX);
	if ((e = st_begin(st)))
		return e;
	/* Read again inside the write transaction: what the caller checked
	 * before may have changed since (a quarantine, a lift, a retirement). */
	if ((e = fleet_store_device_get_by_name(st, in->device, &d)))
		goto out;
	if (strcmp(d.serial, in->serial) != 0) {
		e = st_fail(st, FLEET_STORE_E_CONFLICT, "the device has another serial");
		goto out;
	}
	if (d.quarantined) {
		e = st_fail(st, FLEET_STORE_E_CONFLICT, "the device is quarantined");
		goto out;
	}
	if (strcmp(d.state, FLEET_STORE_STATE_ADMITTED) != 0 &&
	    strcmp(d.state, FLEET_STORE_STATE_PROVISIONING) != 0 &&
	    strcmp(d.state, FLEET_STORE_STATE_ACTIVE) != 0) {
		e = st_fail(st, FLEET_STORE_E_CONFLICT, "the device's state forbids a renewal");
		goto out;
	}
	if (!d.ek_hash[0] && !d.ek_hash_ecc[0]) {
		e = st_fail(st, FLEET_STORE_E_CONFLICT, "the device has no EK recorded");
		goto out;
	}
	if ((e = renewal_certs_ok(st, in)))
		goto out;
	if ((e = st_prepare(st,
			    "SELECT count(*) FROM certificates WHERE device_id = ?1 AND "
			    "kind = 'ldevid' AND revoked = 0 AND not_after > ?2",
			    &s)))
		goto out;
	db_bind_int64(s, 1, d.id);
	db_bind_int64(s, 2, in->now);
	if (db_step(s) == DB_ROW)
		current = db_column_int64(s, 0);
	db_finalize(s);
	if (current < 0) {
		e = st_fail(st, FLEET_STORE_E_IO, "count the device's certificates");
		goto out;
	}
	if ((size_t)current >= in->max_current) {
		e = st_fail(st, FLEET_STORE_E_FULL,
			    "the device holds %d current LDevID certificates already", current);
		goto out;
	}
	if ((e = st_cert_insert(st, in->device, FLEET_STORE_CERT_LAK, in->lak_der, in->lak_len,
				in->now, lak_sha1)) ||
	    (e = st_cert_insert(st, in->device, FLEET_STORE_CERT_LDEVID, in->ldevid_der,
				in->ldevid_len, in->now, ldevid_sha1)))
		goto out;
out:
	if (e) {
		st_rollback(st);
		return e;
	}
	return st_commit(st);
}

fleet_err fleet_store_renewal_issue(struct fleet_store *st, const struct fleet_store_renew_in *in,
				    char lak_sha1[41], char ldevid_sha1[41])
{
	if (!st || !in || !in->device || !in->serial || !in->presented_lak_sha1)
		return FLEET_STORE_E_INVALID;
	st_lock(st);
	return st_unlock(st, renewal_issue(st, in, lak_sha1, ldevid_sha1));
}
