/*
 * store_devices.c: the devices fleetd has admitted, and the pending claims
 * of machines it could not.
 */
#include "fleetd/store/store_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define DEVICE_COLS                                                                           \
	"id, name, serial, inventory_id, state, ek_hash, ek_hash_ecc, first_admitted, "      \
	"last_seen, quarantined, quarantine_reason, quarantined_at"

static bool read_device(struct db_stmt *s, struct fleet_store_device *d)
{
	memset(d, 0, sizeof(*d));
	d->id = db_column_int64(s, 0);
	d->inventory_id = db_column_int64(s, 3);
	d->first_admitted = db_column_int64(s, 7);
	d->last_seen = db_column_int64(s, 8);
	d->quarantined = db_column_int64(s, 9) != 0;
	d->quarantined_at = db_column_int64(s, 11);
	return st_col_text(s, 1, d->name, sizeof(d->name)) && d->name[0] &&
	       st_col_text(s, 2, d->serial, sizeof(d->serial)) && d->serial[0] &&
	       st_col_text(s, 4, d->state, sizeof(d->state)) &&
	       st_col_text(s, 5, d->ek_hash, sizeof(d->ek_hash)) &&
	       st_col_text(s, 6, d->ek_hash_ecc, sizeof(d->ek_hash_ecc)) &&
	       st_col_text(s, 10, d->quarantine_reason, sizeof(d->quarantine_reason));
}

static fleet_err device_row(struct fleet_store *st, struct db_stmt *s, void *el, void *ctx)
{
	(void)ctx;
	if (!read_device(s, el))
		return st_fail(st, FLEET_STORE_E_CORRUPT, "a device row holds an impossible value");
	return FLEET_STORE_OK;
}

/* Run a one-text-parameter device lookup. */
static fleet_err device_get(struct fleet_store *st, const char *sql, const char *key,
				       const char *what, struct fleet_store_device *out)
{
	if (!st_text_ok(key, FLEET_STORE_NAME_MAX))
		return st_fail(st, FLEET_STORE_E_INVALID, "a %s is 1 to %d printable characters",
			       what, FLEET_STORE_NAME_MAX);
	struct db_stmt *s;
	fleet_err e = st_prepare(st, sql, &s);
	if (e)
		return e;
	db_bind_text(s, 1, key, -1);
	int rc = db_step(s);
	if (rc == DB_DONE)
		e = st_fail(st, FLEET_STORE_E_NOT_FOUND, "no device with that %s", what);
	else if (rc != DB_ROW)
		e = st_dberr(st, rc, "read device");
	else if (!read_device(s, out))
		e = st_fail(st, FLEET_STORE_E_CORRUPT, "a device row holds an impossible value");
	db_finalize(s);
	return e;
}

static fleet_err device_get_by_serial(struct fleet_store *st, const char *serial,
						 struct fleet_store_device *out)
{
	return device_get(st, "SELECT " DEVICE_COLS " FROM devices WHERE serial = ?1", serial,
			  "serial", out);
}

fleet_err fleet_store_device_get_by_serial(struct fleet_store *st, const char *serial,
						      struct fleet_store_device *out)
{
	st_lock(st);
	return st_unlock(st, device_get_by_serial(st, serial, out));
}

static fleet_err device_get_by_name(struct fleet_store *st, const char *name,
					       struct fleet_store_device *out)
{
	return device_get(st, "SELECT " DEVICE_COLS " FROM devices WHERE name = ?1", name, "name",
			  out);
}

fleet_err fleet_store_device_get_by_name(struct fleet_store *st, const char *name,
						    struct fleet_store_device *out)
{
	st_lock(st);
	return st_unlock(st, device_get_by_name(st, name, out));
}

static fleet_err device_ek_hashes(struct fleet_store *st, const char *serial,
					     char ek_hash[65], char ek_hash_ecc[65])
{
	struct fleet_store_device d;
	fleet_err e = device_get_by_serial(st, serial, &d);
	if (e)
		return e;
	memcpy(ek_hash, d.ek_hash, 65);
	memcpy(ek_hash_ecc, d.ek_hash_ecc, 65);
	return FLEET_STORE_OK;
}

fleet_err fleet_store_device_ek_hashes(struct fleet_store *st, const char *serial,
						  char ek_hash[65], char ek_hash_ecc[65])
{
	st_lock(st);
	return st_unlock(st, device_ek_hashes(st, serial, ek_hash, ek_hash_ecc));
}

static bool same_hash(const char *stored, const char *presented)
{
	return !strcmp(stored, presented ? presented : "");
}

static struct fleet_decision device_check_eks(struct fleet_store *st, const char *serial,
					      const char *ek_hash, const char *ek_hash_ecc)
{
	struct fleet_decision d = {.outcome = FLEET_FAILED};
	if (!st_hash_ok(ek_hash) || !st_hash_ok(ek_hash_ecc)) {
		d.err = st_fail(st, FLEET_STORE_E_INVALID, "an EK hash is 64 lowercase hex digits");
		return d;
	}
	char h[65], hc[65];
	fleet_err e = device_ek_hashes(st, serial, h, hc);
	if (e == FLEET_STORE_E_NOT_FOUND)
		return (struct fleet_decision){
			.outcome = FLEET_REFUSED, .reason = "ek-not-recorded", .err = e};
	if (e) {
		d.err = e;
		return d;
	}
	if (!same_hash(h, ek_hash) || !same_hash(hc, ek_hash_ecc)) {
		st_fail(st, FLEET_STORE_E_EK_MISMATCH,
			"the EKs presented are not the ones fleetd proved for this serial");
		return (struct fleet_decision){.outcome = FLEET_REFUSED,
					       .reason = "ek-mismatch",
					       .err = FLEET_STORE_E_EK_MISMATCH};
	}
	return (struct fleet_decision){.outcome = FLEET_PASSED, .err = FLEET_OK};
}

struct fleet_decision fleet_store_device_check_eks(struct fleet_store *st, const char *serial,
						   const char *ek_hash, const char *ek_hash_ecc)
{
	st_lock(st);
	struct fleet_decision d = device_check_eks(st, serial, ek_hash, ek_hash_ecc);
	st_unlock(st, d.err);
	return d;
}

/* One write statement with bound values; `changes` gets the row count. */
fleet_err st_step_done(struct fleet_store *st, struct db_stmt *s, const char *what,
				      int *changes)
{
	int rc = db_step(s);
	db_finalize(s);
	if (rc != DB_DONE)
		return st_dberr(st, rc, what);
	if (changes)
		*changes = db_changes(st->db);
	return FLEET_STORE_OK;
}

fleet_err st_device_admit_tx(struct fleet_store *st, const char *name,
				       const char *serial, int64_t inventory_id, const char *ek_hash,
				       const char *ek_hash_ecc, time_t now, int64_t *device_id)
{
	fleet_err e = st_writable(st);
	if (e)
		return e;
	if (!st_text_ok(name, FLEET_STORE_NAME_MAX) || !st_text_ok(serial, FLEET_STORE_NAME_MAX))
		return st_fail(st, FLEET_STORE_E_INVALID,
			       "name and serial are 1 to %d printable characters",
			       FLEET_STORE_NAME_MAX);
	if (!st_hash_ok(ek_hash) || !st_hash_ok(ek_hash_ecc))
		return st_fail(st, FLEET_STORE_E_INVALID, "an EK hash is 64 lowercase hex digits");
	if ((!ek_hash || !ek_hash[0]) && (!ek_hash_ecc || !ek_hash_ecc[0]))
		return st_fail(st, FLEET_STORE_E_INVALID, "an admission needs at least one EK");
	if (inventory_id < 0)
		return st_fail(st, FLEET_STORE_E_INVALID, "an inventory id is positive");
	struct fleet_store_device d;
	struct db_stmt *s;
	e = device_get_by_serial(st, serial, &d);
	if (e == FLEET_STORE_OK) {
		/* The store never rebinds: a different EK under a known serial
		 * is a different machine, or a TPM that was cleared. */
		if (!same_hash(d.ek_hash, ek_hash) || !same_hash(d.ek_hash_ecc, ek_hash_ecc)) {
			return st_fail(st, FLEET_STORE_E_EK_MISMATCH,
				       "serial is admitted with other EKs; the store keeps them");
		}
		if (strcmp(d.name, name) != 0) {
			return st_fail(st, FLEET_STORE_E_CONFLICT,
				       "serial is admitted as another device name");
		}
		if ((e = st_prepare(st, "UPDATE devices SET last_seen = ?1, "
					"inventory_id = coalesce(?2, inventory_id) WHERE id = ?3", &s)))
			return e;
		db_bind_int64(s, 1, now);
		if (inventory_id)
			db_bind_int64(s, 2, inventory_id);
		else
			db_bind_null(s, 2);
		db_bind_int64(s, 3, d.id);
		if ((e = st_step_done(st, s, "update device", NULL)))
			return e;
		*device_id = d.id;
	} else if (e == FLEET_STORE_E_NOT_FOUND) {
		if ((e = st_prepare(st, "INSERT INTO devices (name, serial, inventory_id, state, "
					"ek_hash, ek_hash_ecc, first_admitted, last_seen) "
					"VALUES (?1, ?2, ?3, 'admitted', ?4, ?5, ?6, ?6)", &s)))
			return e;
		db_bind_text(s, 1, name, -1);
		db_bind_text(s, 2, serial, -1);
		if (inventory_id)
			db_bind_int64(s, 3, inventory_id);
		else
			db_bind_null(s, 3);
		st_bind_hash(s, 4, ek_hash);
		st_bind_hash(s, 5, ek_hash_ecc);
		db_bind_int64(s, 6, now);
		if ((e = st_step_done(st, s, "insert device", NULL))) {
			if (e == FLEET_STORE_E_CONFLICT)
				st_fail(st, e, "another device already has that name");
			return e;
		}
		*device_id = db_last_insert_rowid(st->db);
	} else {
		return e;
	}
	/* Admitted: the machine's claim is answered. */
	if ((e = st_prepare(st, "DELETE FROM claims WHERE serial = ?1", &s)))
		return e;
	db_bind_text(s, 1, serial, -1);
	return st_step_done(st, s, "delete claim", NULL);
}

static fleet_err device_record_admission(struct fleet_store *st, const char *name,
						    const char *serial, int64_t inventory_id,
						    const char *ek_hash,
						    const char *ek_hash_ecc, time_t now)
{
	int64_t id;
	fleet_err e = st_writable(st);
	if (e || (e = st_begin(st)))
		return e;
	if ((e = st_device_admit_tx(st, name, serial, inventory_id, ek_hash, ek_hash_ecc, now, &id))) {
		st_rollback(st);
		return e;
	}
	return st_commit(st);
}

fleet_err fleet_store_device_record_admission(struct fleet_store *st, const char *name,
							 const char *serial, int64_t inventory_id,
							 const char *ek_hash,
							 const char *ek_hash_ecc, time_t now)
{
	st_lock(st);
	return st_unlock(st, device_record_admission(st, name, serial, inventory_id, ek_hash, ek_hash_ecc, now));
}

static fleet_err update_one(struct fleet_store *st, struct db_stmt *s, const char *what)
{
	int changes = 0;
	fleet_err e = st_step_done(st, s, what, &changes);
	if (!e && changes == 0)
		e = st_fail(st, FLEET_STORE_E_NOT_FOUND, "no device with that name");
	return e;
}

static fleet_err device_set_state(struct fleet_store *st, const char *name,
					     const char *state)
{
	static const char *const states[] = {FLEET_STORE_STATE_ADMITTED,
					     FLEET_STORE_STATE_PROVISIONING,
					     FLEET_STORE_STATE_ACTIVE, FLEET_STORE_STATE_RETIRED};
	fleet_err e = st_writable(st);
	if (e)
		return e;
	size_t i;
	for (i = 0; state && i < sizeof(states) / sizeof(states[0]); i++)
		if (!strcmp(state, states[i]))
			break;
	if (!state || i == sizeof(states) / sizeof(states[0]))
		return st_fail(st, FLEET_STORE_E_INVALID,
			       "a state is admitted, provisioning, active or retired");
	if (!st_text_ok(name, FLEET_STORE_NAME_MAX))
		return st_fail(st, FLEET_STORE_E_INVALID, "not a device name");
	struct db_stmt *s;
	if ((e = st_prepare(st, "UPDATE devices SET state = ?1 WHERE name = ?2", &s)))
		return e;
	db_bind_text(s, 1, states[i], -1);
	db_bind_text(s, 2, name, -1);
	return update_one(st, s, "set state");
}

fleet_err fleet_store_device_set_state(struct fleet_store *st, const char *name,
						  const char *state)
{
	st_lock(st);
	return st_unlock(st, device_set_state(st, name, state));
}

static fleet_err device_touch(struct fleet_store *st, const char *name, time_t now)
{
	fleet_err e = st_writable(st);
	if (e)
		return e;
	if (!st_text_ok(name, FLEET_STORE_NAME_MAX))
		return st_fail(st, FLEET_STORE_E_INVALID, "not a device name");
	struct db_stmt *s;
	if ((e = st_prepare(st, "UPDATE devices SET last_seen = ?1 WHERE name = ?2", &s)))
		return e;
	db_bind_int64(s, 1, now);
	db_bind_text(s, 2, name, -1);
	return update_one(st, s, "touch device");
}

fleet_err fleet_store_device_touch(struct fleet_store *st, const char *name, time_t now)
{
	st_lock(st);
	return st_unlock(st, device_touch(st, name, now));
}

static fleet_err device_set_quarantine(struct fleet_store *st, const char *name,
						  bool on, const char *reason, time_t now)
{
	fleet_err e = st_writable(st);
	if (e)
		return e;
	if (!st_text_ok(name, FLEET_STORE_NAME_MAX))
		return st_fail(st, FLEET_STORE_E_INVALID, "not a device name");
	if (on && !st_text_ok(reason, FLEET_STORE_QREASON_MAX))
		return st_fail(st, FLEET_STORE_E_INVALID,
			       "a quarantine needs a reason of 1 to %d printable characters",
			       FLEET_STORE_QREASON_MAX);
	struct db_stmt *s;
	if ((e = st_prepare(st, on ? "UPDATE devices SET quarantined = 1, quarantine_reason = ?1, "
				     "quarantined_at = ?2 WHERE name = ?3"
				   : "UPDATE devices SET quarantined = 0, quarantine_reason = NULL, "
				     "quarantined_at = NULL WHERE name = ?3",
			    &s)))
		return e;
	if (on) {
		db_bind_text(s, 1, reason, -1);
		db_bind_int64(s, 2, now);
	}
	db_bind_text(s, 3, name, -1);
	return update_one(st, s, "set quarantine");
}

fleet_err fleet_store_device_set_quarantine(struct fleet_store *st, const char *name,
						       bool on, const char *reason, time_t now)
{
	st_lock(st);
	return st_unlock(st, device_set_quarantine(st, name, on, reason, now));
}

static fleet_err device_lift_quarantine(struct fleet_store *st, const char *name,
					char *prev_reason, int64_t *prev_at)
{
	fleet_err e = st_writable(st);
	if (e)
		return e;
	if (!st_text_ok(name, FLEET_STORE_NAME_MAX))
		return st_fail(st, FLEET_STORE_E_INVALID, "not a device name");
	if ((e = st_begin(st)))
		return e;
	struct fleet_store_device d;
	struct db_stmt *s;
	if ((e = device_get(st, "SELECT " DEVICE_COLS " FROM devices WHERE name = ?1", name,
			    "name", &d)))
		goto fail;
	if (!d.quarantined) {
		e = st_fail(st, FLEET_STORE_E_STATE, "the device is not quarantined");
		goto fail;
	}
	/* quarantined = 1 again in the WHERE: the read and the write are one
	 * transaction (IMMEDIATE), so this only restates the rule. */
	if ((e = st_prepare(st, "UPDATE devices SET quarantined = 0, quarantine_reason = NULL, "
				"quarantined_at = NULL WHERE name = ?1 AND quarantined = 1",
			    &s)))
		goto fail;
	db_bind_text(s, 1, name, -1);
	int changes = 0;
	if ((e = st_step_done(st, s, "lift quarantine", &changes)))
		goto fail;
	if (changes != 1) {
		e = st_fail(st, FLEET_STORE_E_STATE, "the device is not quarantined");
		goto fail;
	}
	if ((e = st_commit(st)))
		goto fail;
	if (prev_reason)
		memcpy(prev_reason, d.quarantine_reason, sizeof(d.quarantine_reason));
	if (prev_at)
		*prev_at = d.quarantined_at;
	return FLEET_STORE_OK;
fail:
	st_rollback(st);
	return e;
}

fleet_err fleet_store_device_lift_quarantine(struct fleet_store *st, const char *name,
					     char *prev_reason, int64_t *prev_at)
{
	st_lock(st);
	return st_unlock(st, device_lift_quarantine(st, name, prev_reason, prev_at));
}

/* Every device by name, for devices_list and devices_brief alike. No LIMIT
 * that could cut the list short: the pass would take the devices past it
 * for gone, revoked ones included. One more than the cap is read only to
 * say so. */
static fleet_err prepare_all_devices(struct fleet_store *st, struct db_stmt **s)
{
	fleet_err e = st_prepare(
		st, "SELECT " DEVICE_COLS " FROM devices ORDER BY name LIMIT ?1", s);
	if (!e)
		db_bind_int64(*s, 1, FLEET_STORE_MAX_DEVICES + 1);
	return e;
}

static fleet_err devices_list(struct fleet_store *st,
					 struct fleet_store_device **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	struct db_stmt *s;
	fleet_err e = prepare_all_devices(st, &s);
	if (e)
		return e;
	void *v;
	e = st_collect(st, s, sizeof(struct fleet_store_device), FLEET_STORE_MAX_DEVICES,
		       "devices", device_row, NULL, NULL, &v, n);
	*out = v;
	return e;
}

fleet_err fleet_store_devices_list(struct fleet_store *st,
					      struct fleet_store_device **out, size_t *n)
{
	st_lock(st);
	return st_unlock(st, devices_list(st, out, n));
}

/* The compact listing's strings: one growing buffer; each row keeps its
 * strings' offsets until the list is complete, since the buffer moves as
 * it grows. */
struct brief_arena {
	char *p;
	size_t len, cap;
};

static bool arena_put(struct brief_arena *a, const char *s, size_t *off)
{
	size_t n = strlen(s) + 1;
	if (a->cap - a->len < n) {
		size_t ncap = a->cap ? a->cap : 4096;
		while (ncap - a->len < n)
			ncap *= 2;
		char *np = realloc(a->p, ncap);
		if (!np)
			return false;
		a->p = np;
		a->cap = ncap;
	}
	memcpy(a->p + a->len, s, n);
	*off = a->len;
	a->len += n;
	return true;
}

/* DEVICE_COLS' row, checked as read_device checks it, kept compact; name
 * and serial hold their offsets in the arena until the list is complete. */
static fleet_err brief_row(struct fleet_store *st, struct db_stmt *s, void *el, void *ctx)
{
	struct fleet_store_device_brief *b = el;
	struct brief_arena *a = ctx;
	char name[FLEET_STORE_NAME_MAX + 1], serial[FLEET_STORE_NAME_MAX + 1];
	char qreason[FLEET_STORE_QREASON_MAX + 1];
	b->id = db_column_int64(s, 0);
	b->inventory_id = db_column_int64(s, 3);
	b->quarantined = db_column_int64(s, 9) != 0;
	/* The quarantine reason is read only to be checked, so that a row
	 * read_device refuses is refused here too. */
	if (!st_col_text(s, 1, name, sizeof(name)) || !name[0] ||
	    !st_col_text(s, 2, serial, sizeof(serial)) || !serial[0] ||
	    !st_col_text(s, 4, b->state, sizeof(b->state)) ||
	    !st_col_text(s, 5, b->ek_hash, sizeof(b->ek_hash)) ||
	    !st_col_text(s, 6, b->ek_hash_ecc, sizeof(b->ek_hash_ecc)) ||
	    !st_col_text(s, 10, qreason, sizeof(qreason)))
		return st_fail(st, FLEET_STORE_E_CORRUPT, "a device row holds an impossible value");
	size_t on, os;
	if (!arena_put(a, name, &on) || !arena_put(a, serial, &os))
		return st_fail(st, FLEET_STORE_E_NOMEM, "out of memory");
	b->name = (const char *)(uintptr_t)on;
	b->serial = (const char *)(uintptr_t)os;
	return FLEET_STORE_OK;
}

static fleet_err devices_brief(struct fleet_store *st, struct fleet_store_device_briefs *out)
{
	memset(out, 0, sizeof(*out));
	struct db_stmt *s;
	/* devices_list's statement: the same order, the same cap, said the
	 * same way. */
	fleet_err e = prepare_all_devices(st, &s);
	if (e)
		return e;
	struct brief_arena a = {0};
	void *v;
	size_t n;
	e = st_collect(st, s, sizeof(struct fleet_store_device_brief), FLEET_STORE_MAX_DEVICES,
		       "devices", brief_row, &a, NULL, &v, &n);
	if (e) {
		free(a.p);
		return e;
	}
	struct fleet_store_device_brief *b = v;
	for (size_t i = 0; i < n; i++) {
		b[i].name = a.p + (uintptr_t)b[i].name;
		b[i].serial = a.p + (uintptr_t)b[i].serial;
	}
	out->v = b;
	out->n = n;
	out->arena = a.p;
	return FLEET_STORE_OK;
}

fleet_err fleet_store_devices_brief(struct fleet_store *st, struct fleet_store_device_briefs *out)
{
	st_lock(st);
	return st_unlock(st, devices_brief(st, out));
}

void fleet_store_device_briefs_free(struct fleet_store_device_briefs *l)
{
	if (!l)
		return;
	free(l->v);
	free(l->arena);
	memset(l, 0, sizeof(*l));
}
