/*
 * store_provisions.c: the install runs (store.h, "Provisions", schema
 * version 4), each call one transaction.
 *
 * What the table holds for the delivery's sake: the code's SHA-256 (never
 * the code), unique and kept for ever, so a code once burned (delivered or
 * dropped) is refused after any restart; the rendered configuration only
 * while the run can still serve it (rendered, started), wiped in the same
 * transaction that ends that (consume, drop), with secure_delete on so its
 * pages are zeroed rather than left free in the file.
 */
#include "fleetd/store/store_int.h"

#include <stdlib.h>
#include <string.h>

#define PROV_COLS                                                                           \
	"id, device, serial, role, stage, workflow, coalesce(token_id, ''), token_state, "  \
	"coalesce(csr_name, ''), coalesce(csr_uid, ''), csr_issued, created_at, expires_at, " \
	"coalesce(delivered_at, 0), coalesce(ended_at, 0), coalesce(stop_reason, ''), "      \
	"coalesce(started_at, 0), coalesce(csr_approved_at, 0)"

static const char *const stage_names[] = {
	[FLEET_PROV_RENDERED] = "rendered", [FLEET_PROV_STARTED] = "started",
	[FLEET_PROV_DELIVERED] = "delivered", [FLEET_PROV_DONE] = "done",
	[FLEET_PROV_DROPPED] = "dropped",
};
static const char *const token_names[] = {
	[FLEET_TOKEN_NONE] = "none", [FLEET_TOKEN_PENDING] = "pending",
	[FLEET_TOKEN_CREATED] = "created", [FLEET_TOKEN_DELETED] = "deleted",
};
#define N_STAGES (sizeof(stage_names) / sizeof(stage_names[0]))
#define N_TOKENS (sizeof(token_names) / sizeof(token_names[0]))

const char *fleet_store_provision_stage_str(enum fleet_store_provision_stage s)
{
	return (size_t)s < N_STAGES && stage_names[s] ? stage_names[s] : "unknown";
}

const char *fleet_store_token_state_str(enum fleet_store_token_state s)
{
	return (size_t)s < N_TOKENS ? token_names[s] : "unknown";
}

static bool stage_of(const char *t, enum fleet_store_provision_stage *out)
{
	for (size_t i = 1; i < N_STAGES; i++)
		if (!strcmp(t, stage_names[i]))
			return *out = (enum fleet_store_provision_stage)i, true;
	return false;
}

static bool token_of(const char *t, enum fleet_store_token_state *out)
{
	for (size_t i = 0; i < N_TOKENS; i++)
		if (!strcmp(t, token_names[i]))
			return *out = (enum fleet_store_token_state)i, true;
	return false;
}

static bool token_id_ok(const char *t)
{
	if (!t || strnlen(t, 7) != 6)
		return false;
	for (size_t i = 0; i < 6; i++)
		if (!((t[i] >= 'a' && t[i] <= 'z') || (t[i] >= '0' && t[i] <= '9')))
			return false;
	return true;
}

/* A row of PROV_COLS; false for one the schema's CHECKs forbid. */
static bool read_row(struct db_stmt *s, struct fleet_store_provision *p)
{
	char stage[16], token[16];
	memset(p, 0, sizeof(*p));
	p->id = db_column_int64(s, 0);
	p->csr_issued = db_column_int64(s, 10) != 0;
	p->created_at = db_column_int64(s, 11);
	p->expires_at = db_column_int64(s, 12);
	p->delivered_at = db_column_int64(s, 13);
	p->ended_at = db_column_int64(s, 14);
	p->started_at = db_column_int64(s, 16);
	p->csr_approved_at = db_column_int64(s, 17);
	return st_col_text(s, 1, p->device, sizeof(p->device)) && p->device[0] &&
	       st_col_text(s, 2, p->serial, sizeof(p->serial)) && p->serial[0] &&
	       st_col_text(s, 3, p->role, sizeof(p->role)) &&
	       (!strcmp(p->role, "worker") || !strcmp(p->role, "controlplane")) &&
	       st_col_text(s, 4, stage, sizeof(stage)) && stage_of(stage, &p->stage) &&
	       st_col_text(s, 5, p->workflow, sizeof(p->workflow)) && p->workflow[0] &&
	       st_col_text(s, 6, p->token_id, sizeof(p->token_id)) &&
	       st_col_text(s, 7, token, sizeof(token)) && token_of(token, &p->token_state) &&
	       st_col_text(s, 8, p->csr_name, sizeof(p->csr_name)) &&
	       st_col_text(s, 9, p->csr_uid, sizeof(p->csr_uid)) &&
	       st_col_text(s, 15, p->stop_reason, sizeof(p->stop_reason));
}

static fleet_err prov_row(struct fleet_store *st, struct db_stmt *s, void *el, void *ctx)
{
	(void)ctx;
	if (!read_row(s, el))
		return st_fail(st, FLEET_STORE_E_CORRUPT, "a provision row holds an impossible value");
	return FLEET_STORE_OK;
}

/* One row of a prepared PROV_COLS query into *out; finalizes s. */
static fleet_err read_one(struct fleet_store *st, struct db_stmt *s, struct fleet_store_provision *out,
			  const char *what)
{
	int rc = db_step(s);
	fleet_err e = FLEET_STORE_OK;
	if (rc == DB_ROW)
		e = prov_row(st, s, out, NULL);
	else if (rc == DB_DONE)
		e = st_fail(st, FLEET_STORE_E_NOT_FOUND, "no such provision");
	else
		e = st_dberr(st, rc, what);
	db_finalize(s);
	return e;
}

static fleet_err get_tx(struct fleet_store *st, int64_t id, struct fleet_store_provision *out)
{
	struct db_stmt *s;
	fleet_err e = st_prepare(st, "SELECT " PROV_COLS " FROM provisions WHERE id = ?1", &s);
	if (e)
		return e;
	db_bind_int64(s, 1, id);
	return read_one(st, s, out, "read provision");
}

/* ---- create -------------------------------------------------------------- */

static fleet_err check_in(struct fleet_store *st, const struct fleet_store_provision_in *in,
			  bool *worker)
{
	if (!in || !st_text_ok(in->device, 63) || !st_text_ok(in->serial, FLEET_STORE_NAME_MAX) ||
	    !st_text_ok(in->workflow, 63) || !in->role)
		return st_fail(st, FLEET_STORE_E_INVALID,
			       "a provision needs a device name (1..63), a serial and a Workflow "
			       "name (1..63)");
	*worker = !strcmp(in->role, "worker");
	bool has_token = in->token_id && in->token_id[0];
	if (*worker ? !token_id_ok(in->token_id) : (strcmp(in->role, "controlplane") || has_token))
		return st_fail(st, FLEET_STORE_E_INVALID,
			       "a worker's provision needs a token id of 6 [a-z0-9], a control "
			       "plane's none");
	if (!in->code_hash)
		return st_fail(st, FLEET_STORE_E_INVALID, "a provision needs its code's hash");
	if (!in->config || in->config_len == 0 || in->config_len > FLEET_STORE_CONFIG_MAX)
		return st_fail(st, FLEET_STORE_E_INVALID,
			       "a provision's configuration is 1..%zu bytes", FLEET_STORE_CONFIG_MAX);
	if (in->now < 0 || in->expires_at <= in->now)
		return st_fail(st, FLEET_STORE_E_INVALID, "a provision expires after it is created");
	return FLEET_STORE_OK;
}

static fleet_err provision_create(struct fleet_store *st, const struct fleet_store_provision_in *in,
				  int64_t *id)
{
	bool worker = false;
	fleet_err e = st_writable(st);
	if (e || (e = check_in(st, in, &worker)))
		return e;
	if ((e = st_begin(st)))
		return e;
	struct db_stmt *s;
	int rc;
	/* The device must be the store's, with this serial: delivery makes
	 * that row active in the same transaction. */
	if ((e = st_prepare(st, "SELECT 1 FROM devices WHERE name = ?1 AND serial = ?2", &s)))
		goto fail;
	db_bind_text(s, 1, in->device, -1);
	db_bind_text(s, 2, in->serial, -1);
	rc = db_step(s);
	db_finalize(s);
	if (rc != DB_ROW) {
		e = rc == DB_DONE ? st_fail(st, FLEET_STORE_E_NOT_FOUND,
						"no device %s with that serial in the store",
						in->device)
				      : st_dberr(st, rc, "find the device");
		goto fail;
	}
	if ((e = st_prepare(st,
			    "INSERT INTO provisions (device, serial, role, stage, workflow, token_id, "
			    "token_state, code_hash, config, created_at, expires_at) VALUES "
			    "(?1, ?2, ?3, 'rendered', ?4, ?5, ?6, ?7, ?8, ?9, ?10)", &s)))
		goto fail;
	db_bind_text(s, 1, in->device, -1);
	db_bind_text(s, 2, in->serial, -1);
	db_bind_text(s, 3, worker ? "worker" : "controlplane", -1);
	db_bind_text(s, 4, in->workflow, -1);
	if (worker)
		db_bind_text(s, 5, in->token_id, -1);
	else
		db_bind_null(s, 5);
	db_bind_text(s, 6, worker ? "pending" : "none", -1);
	db_bind_blob(s, 7, in->code_hash, FLEET_STORE_CODE_HASH_LEN);
	db_bind_blob(s, 8, in->config, (int)in->config_len);
	db_bind_int64(s, 9, in->now);
	db_bind_int64(s, 10, in->expires_at);
	/* The unique indexes say CONFLICT: an open run for the device, a
	 * code hash ever used, a token id another run holds. */
	if ((e = st_step_done(st, s, "insert provision", NULL)))
		goto fail;
	int64_t rowid = db_last_insert_rowid(st->db);
	if ((e = st_commit(st)))
		return e;
	if (id)
		*id = rowid;
	return FLEET_STORE_OK;
fail:
	st_rollback(st);
	return e;
}

fleet_err fleet_store_provision_create(struct fleet_store *st,
				       const struct fleet_store_provision_in *in, int64_t *id)
{
	st_lock(st);
	return st_unlock(st, provision_create(st, in, id));
}

/* ---- stage moves --------------------------------------------------------- */

/* Run a one-row UPDATE (bound by the caller) whose WHERE holds the state
 * it moves from: 0 rows is CONFLICT when the row exists, NOT_FOUND when
 * not. Inside the caller's transaction. */
static fleet_err update_cas(struct fleet_store *st, struct db_stmt *s, int64_t id, const char *what,
			    const char *conflict)
{
	int changes = 0;
	fleet_err e = st_step_done(st, s, what, &changes);
	if (e || changes == 1)
		return e;
	struct fleet_store_provision p;
	if ((e = get_tx(st, id, &p)))
		return e;
	return st_fail(st, FLEET_STORE_E_CONFLICT, "provision %lld is %s: %s", (long long)id,
		       fleet_store_provision_stage_str(p.stage), conflict);
}

static fleet_err provision_advance(struct fleet_store *st, int64_t id,
				   enum fleet_store_provision_stage from,
				   enum fleet_store_provision_stage to, int64_t now)
{
	fleet_err e = st_writable(st);
	if (e)
		return e;
	const char *sql;
	if (from == FLEET_PROV_RENDERED && to == FLEET_PROV_STARTED)
		sql = "UPDATE provisions SET stage = 'started', started_at = ?2, token_state = "
		      "CASE token_state WHEN 'pending' THEN 'created' ELSE token_state END "
		      "WHERE id = ?1 AND stage = 'rendered'";
	else if (from == FLEET_PROV_DELIVERED && to == FLEET_PROV_DONE)
		sql = "UPDATE provisions SET stage = 'done', ended_at = ?2 "
		      "WHERE id = ?1 AND stage = 'delivered'";
	else
		return st_fail(st, FLEET_STORE_E_INVALID,
			       "a provision moves rendered -> started or delivered -> done here "
			       "(not %s -> %s): delivery and drops have calls of their own",
			       fleet_store_provision_stage_str(from),
			       fleet_store_provision_stage_str(to));
	if ((e = st_begin(st)))
		return e;
	struct db_stmt *s;
	if ((e = st_prepare(st, sql, &s)))
		goto fail;
	db_bind_int64(s, 1, id);
	db_bind_int64(s, 2, now);
	if ((e = update_cas(st, s, id, "advance provision", "not where the move starts")))
		goto fail;
	return st_commit(st);
fail:
	st_rollback(st);
	return e;
}

fleet_err fleet_store_provision_advance(struct fleet_store *st, int64_t id,
					enum fleet_store_provision_stage from,
					enum fleet_store_provision_stage to, int64_t now)
{
	st_lock(st);
	return st_unlock(st, provision_advance(st, id, from, to, now));
}

static fleet_err provision_drop(struct fleet_store *st, int64_t id, const char *reason,
				int64_t now)
{
	fleet_err e = st_writable(st);
	if (e)
		return e;
	if (!st_text_ok(reason, 63))
		return st_fail(st, FLEET_STORE_E_INVALID, "a drop needs a reason (1..63 printable)");
	if ((e = st_begin(st)))
		return e;
	struct db_stmt *s;
	if ((e = st_prepare(st, "UPDATE provisions SET stage = 'dropped', config = NULL, "
				"stop_reason = ?2, ended_at = ?3 WHERE id = ?1 AND "
				"stage IN ('rendered', 'started', 'delivered')", &s)))
		goto fail;
	db_bind_int64(s, 1, id);
	db_bind_text(s, 2, reason, -1);
	db_bind_int64(s, 3, now);
	if ((e = update_cas(st, s, id, "drop provision", "not open")))
		goto fail;
	return st_commit(st);
fail:
	st_rollback(st);
	return e;
}

fleet_err fleet_store_provision_drop(struct fleet_store *st, int64_t id, const char *reason,
				     int64_t now)
{
	st_lock(st);
	return st_unlock(st, provision_drop(st, id, reason, now));
}

/* ---- reads --------------------------------------------------------------- */

fleet_err fleet_store_provision_get(struct fleet_store *st, int64_t id,
				    struct fleet_store_provision *out)
{
	st_lock(st);
	return st_unlock(st, get_tx(st, id, out));
}

static void prov_free_el(void *el)
{
	(void)el;
}

static fleet_err provisions_list(struct fleet_store *st, bool open_only,
				 struct fleet_store_provision **out, size_t *n)
{
	struct db_stmt *s;
	*out = NULL;
	*n = 0;
	fleet_err e = st_prepare(
		st, "SELECT " PROV_COLS " FROM provisions WHERE ?1 = 0 OR "
		    "stage IN ('rendered', 'started', 'delivered') OR token_state = 'created' OR "
		    "(csr_name IS NOT NULL AND csr_issued = 0) ORDER BY id", &s);
	if (e)
		return e;
	db_bind_int64(s, 1, open_only ? 1 : 0);
	return st_collect(st, s, sizeof(**out), FLEET_STORE_MAX_PROVISIONS, "provisions", prov_row,
			  NULL, prov_free_el, (void **)out, n);
}

fleet_err fleet_store_provisions_list(struct fleet_store *st, bool open_only,
				      struct fleet_store_provision **out, size_t *n)
{
	st_lock(st);
	return st_unlock(st, provisions_list(st, open_only, out, n));
}

void fleet_store_provisions_free(struct fleet_store_provision *p, size_t n)
{
	(void)n; /* nothing secret or allocated inside an element */
	free(p);
}

static fleet_err ever_started(struct fleet_store *st, const char *device, bool *yes)
{
	*yes = false;
	if (!st_text_ok(device, 63))
		return st_fail(st, FLEET_STORE_E_INVALID, "not a device name");
	struct db_stmt *s;
	fleet_err e = st_prepare(st, "SELECT EXISTS (SELECT 1 FROM provisions WHERE device = ?1 "
				     "AND started_at IS NOT NULL)", &s);
	if (e)
		return e;
	db_bind_text(s, 1, device, -1);
	int rc = db_step(s);
	if (rc == DB_ROW)
		*yes = db_column_int64(s, 0) != 0;
	else
		e = st_dberr(st, rc, "find started provisions");
	db_finalize(s);
	return e;
}

fleet_err fleet_store_provision_ever_started(struct fleet_store *st, const char *device,
					     bool *yes)
{
	st_lock(st);
	return st_unlock(st, ever_started(st, device, yes));
}

static fleet_err by_token(struct fleet_store *st, const char *token_id,
			  struct fleet_store_provision *out)
{
	if (!token_id_ok(token_id))
		return st_fail(st, FLEET_STORE_E_INVALID, "a token id is 6 [a-z0-9]");
	struct db_stmt *s;
	fleet_err e = st_prepare(st, "SELECT " PROV_COLS " FROM provisions WHERE token_id = ?1",
				 &s);
	if (e)
		return e;
	db_bind_text(s, 1, token_id, -1);
	return read_one(st, s, out, "read provision by token");
}

fleet_err fleet_store_provision_by_token(struct fleet_store *st, const char *token_id,
					 struct fleet_store_provision *out)
{
	st_lock(st);
	return st_unlock(st, by_token(st, token_id, out));
}

/* ---- the token and its CSR ---------------------------------------------- */

static fleet_err token_set(struct fleet_store *st, int64_t id, enum fleet_store_token_state ts)
{
	fleet_err e = st_writable(st);
	if (e)
		return e;
	if (ts == FLEET_TOKEN_NONE || (size_t)ts >= N_TOKENS)
		return st_fail(st, FLEET_STORE_E_INVALID,
			       "a worker's token is pending, created or deleted");
	if ((e = st_begin(st)))
		return e;
	struct db_stmt *s;
	if ((e = st_prepare(st, "UPDATE provisions SET token_state = ?2 WHERE id = ?1 AND "
				"token_id IS NOT NULL", &s)))
		goto fail;
	db_bind_int64(s, 1, id);
	db_bind_text(s, 2, token_names[ts], -1);
	int changes = 0;
	if ((e = st_step_done(st, s, "set token state", &changes)))
		goto fail;
	if (changes != 1) {
		struct fleet_store_provision p;
		e = get_tx(st, id, &p);
		if (!e)
			e = st_fail(st, FLEET_STORE_E_INVALID,
				    "provision %lld is a control plane's: it has no token",
				    (long long)id);
		goto fail;
	}
	return st_commit(st);
fail:
	st_rollback(st);
	return e;
}

fleet_err fleet_store_provision_token_set(struct fleet_store *st, int64_t id,
					  enum fleet_store_token_state s)
{
	st_lock(st);
	return st_unlock(st, token_set(st, id, s));
}

static fleet_err csr_approve(struct fleet_store *st, int64_t id, const char *name, const char *uid,
			     int64_t now)
{
	fleet_err e = st_writable(st);
	if (e)
		return e;
	if (!st_text_ok(name, 253) || !st_text_ok(uid, 63))
		return st_fail(st, FLEET_STORE_E_INVALID,
			       "a CSR approval needs its name (1..253) and uid (1..63)");
	if ((e = st_begin(st)))
		return e;
	struct fleet_store_provision p;
	if ((e = get_tx(st, id, &p)))
		goto fail;
	if (p.csr_uid[0]) {
		/* Once per token: the same CSR again is a retry, any other a
		 * second certificate for one token. */
		if (strcmp(p.csr_uid, uid) != 0 || strcmp(p.csr_name, name) != 0)
			e = st_fail(st, FLEET_STORE_E_CONFLICT,
				    "provision %lld's token already has its approved CSR",
				    (long long)id);
		goto fail; /* nothing to write either way */
	}
	if (p.token_state != FLEET_TOKEN_CREATED || p.stage == FLEET_PROV_DROPPED) {
		e = st_fail(st, FLEET_STORE_E_STATE,
			    "provision %lld is %s with its token %s: no CSR is approved for it",
			    (long long)id, fleet_store_provision_stage_str(p.stage),
			    fleet_store_token_state_str(p.token_state));
		goto fail;
	}
	struct db_stmt *s;
	if ((e = st_prepare(st, "UPDATE provisions SET csr_name = ?2, csr_uid = ?3, "
				"csr_approved_at = ?4 WHERE id = ?1 AND csr_uid IS NULL", &s)))
		goto fail;
	db_bind_int64(s, 1, id);
	db_bind_text(s, 2, name, -1);
	db_bind_text(s, 3, uid, -1);
	db_bind_int64(s, 4, now);
	if ((e = update_cas(st, s, id, "approve CSR", "its CSR was recorded meanwhile")))
		goto fail;
	return st_commit(st);
fail:
	st_rollback(st);
	return e;
}

fleet_err fleet_store_provision_csr_approve(struct fleet_store *st, int64_t id,
					    const char *csr_name, const char *csr_uid,
					    int64_t now)
{
	st_lock(st);
	return st_unlock(st, csr_approve(st, id, csr_name, csr_uid, now));
}

static fleet_err csr_issued(struct fleet_store *st, int64_t id)
{
	fleet_err e = st_writable(st);
	if (e || (e = st_begin(st)))
		return e;
	struct db_stmt *s;
	int changes = 0;
	if ((e = st_prepare(st, "UPDATE provisions SET csr_issued = 1 WHERE id = ?1 AND "
				"csr_uid IS NOT NULL", &s)))
		goto fail;
	db_bind_int64(s, 1, id);
	if ((e = st_step_done(st, s, "mark CSR issued", &changes)))
		goto fail;
	if (changes != 1) {
		struct fleet_store_provision p;
		if (!(e = get_tx(st, id, &p)))
			e = st_fail(st, FLEET_STORE_E_STATE,
				    "provision %lld has no approved CSR", (long long)id);
		goto fail;
	}
	return st_commit(st);
fail:
	st_rollback(st);
	return e;
}

fleet_err fleet_store_provision_csr_issued(struct fleet_store *st, int64_t id)
{
	st_lock(st);
	return st_unlock(st, csr_issued(st, id));
}

/* ---- delivery ------------------------------------------------------------ */

static fleet_err config_for_code(struct fleet_store *st, const uint8_t code_hash[32], int64_t now,
				 int64_t *id, struct fleet_buf *config)
{
	*id = 0;
	fb_reset(config);
	if (!code_hash)
		return st_fail(st, FLEET_STORE_E_INVALID, "no code hash");
	struct db_stmt *s;
	fleet_err e = st_prepare(st, "SELECT id, stage, expires_at, config FROM provisions "
				     "WHERE code_hash = ?1", &s);
	if (e)
		return e;
	db_bind_blob(s, 1, code_hash, FLEET_STORE_CODE_HASH_LEN);
	int rc = db_step(s);
	if (rc != DB_ROW) {
		e = rc == DB_DONE ? st_fail(st, FLEET_STORE_E_NOT_FOUND, "no such code")
				      : st_dberr(st, rc, "find code");
		goto out;
	}
	*id = db_column_int64(s, 0);
	char stage_t[16];
	enum fleet_store_provision_stage stage;
	if (!st_col_text(s, 1, stage_t, sizeof(stage_t)) || !stage_of(stage_t, &stage)) {
		e = st_fail(st, FLEET_STORE_E_CORRUPT, "a provision row holds an impossible stage");
		goto out;
	}
	if (stage == FLEET_PROV_RENDERED) {
		e = st_fail(st, FLEET_STORE_E_CONFLICT, "the run for this code has not started");
		goto out;
	}
	if (stage != FLEET_PROV_STARTED) {
		e = st_fail(st, FLEET_STORE_E_STATE, "the code is burned (the run is %s)", stage_t);
		goto out;
	}
	if (now >= db_column_int64(s, 2)) {
		e = st_fail(st, FLEET_STORE_E_STATE, "the code has expired");
		goto out;
	}
	const void *b = db_column_blob(s, 3);
	int len = db_column_bytes(s, 3);
	if (!b || len <= 0 || (size_t)len > FLEET_STORE_CONFIG_MAX) {
		e = st_fail(st, FLEET_STORE_E_CORRUPT, "a started provision holds no configuration");
		goto out;
	}
	if ((e = fb_put(config, b, (size_t)len)) != FLEET_OK) {
		fb_reset(config);
		e = st_fail(st, fleet_err_code(e) == FLEET_CODE_NOMEM ? FLEET_STORE_E_NOMEM
								      : FLEET_STORE_E_INVALID,
			    "the configuration does not fit the caller's buffer");
	}
out:
	db_finalize(s);
	return e;
}

fleet_err fleet_store_provision_config_for_code(struct fleet_store *st,
						const uint8_t code_hash[32], int64_t now,
						int64_t *id, struct fleet_buf *config)
{
	st_lock(st);
	return st_unlock(st, config_for_code(st, code_hash, now, id, config));
}

static fleet_err consume(struct fleet_store *st, int64_t id, int64_t now)
{
	fleet_err e = st_writable(st);
	if (e || (e = st_begin(st)))
		return e;
	struct fleet_store_provision p;
	struct db_stmt *s;
	if ((e = get_tx(st, id, &p)))
		goto fail;
	/* A control plane has no token to follow: its run is done at
	 * delivery. The stage in the WHERE is the compare-and-set: a
	 * second consumer, or a drop that came first, changes no row. */
	if ((e = st_prepare(st, "UPDATE provisions SET stage = CASE token_state WHEN 'none' THEN "
				"'done' ELSE 'delivered' END, ended_at = CASE token_state WHEN "
				"'none' THEN ?2 ELSE NULL END, config = NULL, delivered_at = ?2 "
				"WHERE id = ?1 AND stage = 'started'", &s)))
		goto fail;
	db_bind_int64(s, 1, id);
	db_bind_int64(s, 2, now);
	if ((e = update_cas(st, s, id, "consume provision", "not started: not delivered now")))
		goto fail;
	int changes = 0;
	if ((e = st_prepare(st, "UPDATE devices SET state = 'active' WHERE name = ?1", &s)))
		goto fail;
	db_bind_text(s, 1, p.device, -1);
	if ((e = st_step_done(st, s, "set the device active", &changes)))
		goto fail;
	if (changes != 1) {
		e = st_fail(st, FLEET_STORE_E_CORRUPT, "provision %lld's device %s has no row",
			    (long long)id, p.device);
		goto fail;
	}
	return st_commit(st);
fail:
	st_rollback(st);
	return e;
}

fleet_err fleet_store_provision_consume(struct fleet_store *st, int64_t id, int64_t now)
{
	st_lock(st);
	return st_unlock(st, consume(st, id, now));
}
