/*
 * store_join_requests.c: the discovery and provisioned attestors' rows
 * (store.h D1-D8, schema version 8): a provisioned token's target node,
 * the sites' boot leases, the join requests a deferral leaves for an
 * operator, and the node listings fleetctl shows.
 *
 * The fleet_store_tx_* functions here run inside fleet_store_join_tx's
 * transaction (store_join_tx.c): the caller holds the handle's mutex and a
 * BEGIN IMMEDIATE, so they never lock, begin or commit, and judge expiry
 * by the transaction's one clock (tx->now, store.h X2).
 */
#include "fleetd/store/store_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The largest epoch a discovery assertion can carry (lib/join_evidence.h
 * JE2: 1..2^53). */
#define LEASE_EPOCH_MAX ((int64_t)1 << 53)

/* 1..max of a-z 0-9 '-' */
static bool slug_ok(const char *s, size_t max)
{
	size_t n = s ? strnlen(s, max + 1) : 0;
	if (n < 1 || n > max)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return false;
	return true;
}

static bool lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool hexdig(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* "jr_" and 26 of a-z 0-9 */
static bool request_id_ok(const char *s)
{
	if (!s || strnlen(s, FLEET_STORE_JOIN_REQUEST_ID_LEN + 1) != FLEET_STORE_JOIN_REQUEST_ID_LEN ||
	    strncmp(s, "jr_", 3) != 0)
		return false;
	for (size_t i = 3; i < FLEET_STORE_JOIN_REQUEST_ID_LEN; i++)
		if (!lower_alnum(s[i]))
			return false;
	return true;
}

/* aa:bb:cc:dd:ee:ff, lowercase */
static bool mac_ok(const char *s)
{
	if (strnlen(s, 18) != 17)
		return false;
	for (size_t i = 0; i < 17; i++)
		if (i % 3 == 2 ? s[i] != ':' : !hexdig(s[i]))
			return false;
	return true;
}

/* 8-4-4-4-12 lowercase hex */
static bool uuid_ok(const char *s)
{
	if (strnlen(s, 37) != 36)
		return false;
	for (size_t i = 0; i < 36; i++)
		if (i == 8 || i == 13 || i == 18 || i == 23 ? s[i] != '-' : !hexdig(s[i]))
			return false;
	return true;
}

static void bind_opt(struct db_stmt *s, int i, const char *v)
{
	if (v && v[0])
		db_bind_text(s, i, v, -1);
	else
		db_bind_null(s, i);
}

/* ---- D1: a provisioned token's target ------------------------------------ */

fleet_err st_token_target_check_tx(struct fleet_store *st, const char *node_id, const char *pool)
{
	struct fleet_store_node n;
	fleet_err e = st_node_get(st, node_id, &n);
	if (e)
		return e;
	if (n.retired_at)
		return st_fail(st, FLEET_STORE_E_STATE, "node %s is retired: no token re-keys it",
			       node_id);
	if (strcmp(n.pool, pool) != 0)
		return st_fail(st, FLEET_STORE_E_CONFLICT,
			       "node %s is of pool %s, not %s: a pool's token re-keys only its own nodes",
			       node_id, n.pool, pool);
	return FLEET_STORE_OK;
}

/* ---- D2: the sites' boot leases ------------------------------------------ */

/* The lease's holder and epoch; NOT_FOUND when the site has none. */
static fleet_err lease_read(struct fleet_store *st, const char *site,
			    char holder[FLEET_STORE_NODE_ID_MAX + 1], int64_t *epoch)
{
	struct db_stmt *s;
	fleet_err e;
	if (holder)
		holder[0] = '\0';
	if ((e = st_prepare(st, "SELECT holder, epoch FROM site_leases WHERE site = ?1 AND name = ?2",
			    &s)))
		return e;
	db_bind_text(s, 1, site, -1);
	db_bind_text(s, 2, FLEET_STORE_LEASE_BOOT, -1);
	int rc = db_step(s);
	if (rc == DB_ROW) {
		char h[FLEET_STORE_NODE_ID_MAX + 1];
		int64_t ep = db_column_int64(s, 1);
		if (!st_col_text(s, 0, h, sizeof(h)) || !h[0] || ep < 1 || ep > LEASE_EPOCH_MAX)
			e = st_fail(st, FLEET_STORE_E_CORRUPT, "a site_leases row holds what it cannot");
		if (!e && holder)
			memcpy(holder, h, sizeof(h));
		if (!e && epoch)
			*epoch = ep;
	} else if (rc == DB_DONE) {
		e = st_fail(st, FLEET_STORE_E_NOT_FOUND, "site %s has no boot lease", site);
	} else {
		e = st_dberr(st, rc, "read site lease");
	}
	db_finalize(s);
	return e;
}

static fleet_err lease_grant(struct fleet_store *st, const char *site, const char *holder,
			     time_t now, int64_t *epoch)
{
	struct fleet_store_node n;
	struct db_stmt *s;
	int64_t old = 0;
	fleet_err e = st_writable(st);
	if (e)
		return e;
	if (!slug_ok(site, FLEET_STORE_POOL_ID_MAX) || !st_node_id_ok(holder) || now < 0)
		return st_fail(st, FLEET_STORE_E_INVALID,
			       "a lease names a site (a-z 0-9 -) and a node (a-z 0-9 _ -)");
	if ((e = st_begin(st)))
		return e;
	if ((e = st_node_get(st, holder, &n)))
		goto out;
	if (strcmp(n.role, "site") != 0 || strcmp(n.site, site) != 0 || n.retired_at) {
		e = st_fail(st, FLEET_STORE_E_STATE,
			    "node %s (role %s, site %s%s) may not hold the boot lease of %s: only a "
			    "site node of that site, not retired",
			    holder, n.role, n.site[0] ? n.site : "none",
			    n.retired_at ? ", retired" : "", site);
		goto out;
	}
	e = lease_read(st, site, NULL, &old);
	if (e == FLEET_STORE_E_NOT_FOUND) {
		old = 0; /* the site's first grant */
		e = FLEET_STORE_OK;
	}
	if (e)
		goto out;
	if (old >= LEASE_EPOCH_MAX) {
		e = st_fail(st, FLEET_STORE_E_FULL, "the boot lease of %s is at its last epoch", site);
		goto out;
	}
	/* Every grant raises the epoch, to the same holder too: whatever was
	 * signed under the old one is fenced. */
	if ((e = st_prepare(st,
			    "INSERT INTO site_leases (site, name, holder, epoch, granted_at) "
			    "VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (site, name) DO UPDATE SET "
			    "holder = excluded.holder, epoch = excluded.epoch, "
			    "granted_at = excluded.granted_at WHERE site_leases.epoch = ?4 - 1",
			    &s)))
		goto out;
	db_bind_text(s, 1, site, -1);
	db_bind_text(s, 2, FLEET_STORE_LEASE_BOOT, -1);
	db_bind_text(s, 3, holder, -1);
	db_bind_int64(s, 4, old + 1);
	db_bind_int64(s, 5, now);
	int changes = 0;
	if (!(e = st_step_done(st, s, "grant site lease", &changes)) && changes != 1)
		e = st_fail(st, FLEET_STORE_E_CORRUPT, "the lease changed under its own lock");
	if (!e && epoch)
		*epoch = old + 1;
out:
	if (e) {
		st_rollback(st);
		return e;
	}
	return st_commit(st);
}

fleet_err fleet_store_site_lease_grant(struct fleet_store *st, const char *site,
				       const char *holder_node, time_t now, int64_t *epoch)
{
	if (!st)
		return FLEET_STORE_E_INVALID;
	st_lock(st);
	return st_unlock(st, lease_grant(st, site, holder_node, now, epoch));
}

fleet_err fleet_store_tx_site_lease(struct fleet_store_tx *tx, const char *site,
				    char holder[FLEET_STORE_NODE_ID_MAX + 1], int64_t *epoch)
{
	if (!tx || !tx->st || !holder || !epoch)
		return FLEET_STORE_E_INVALID;
	if (!slug_ok(site, FLEET_STORE_POOL_ID_MAX))
		return st_fail(tx->st, FLEET_STORE_E_INVALID, "not a site id");
	return lease_read(tx->st, site, holder, epoch);
}

/* ---- D3-D7: join requests -------------------------------------------------- */

/* The columns, with D4's view of the status at the clock NOW (an SQL
 * expression: a bound parameter, or unixepoch()). */
#define JR_COLS(NOW)                                                                         \
	"id, attestor, site, hw_key, mac, product_uuid, csr_sha256, "                          \
	"CASE WHEN status IN ('pending', 'approved', 'denied') AND expires_at <= " NOW              \
	" THEN 'expired' ELSE status END, "                                                   \
	"created_at, expires_at, decided_at, decided_by, used_at"

static fleet_err request_row(struct fleet_store *st, struct db_stmt *s, void *el, void *ctx)
{
	struct fleet_store_join_request *r = el;
	(void)ctx;
	if (!st_col_text(s, 0, r->id, sizeof(r->id)) ||
	    !st_col_text(s, 1, r->attestor, sizeof(r->attestor)) ||
	    !st_col_text(s, 2, r->site, sizeof(r->site)) ||
	    !st_col_text(s, 3, r->hw_key, sizeof(r->hw_key)) ||
	    !st_col_text(s, 4, r->mac, sizeof(r->mac)) ||
	    !st_col_text(s, 5, r->product_uuid, sizeof(r->product_uuid)) ||
	    !st_col_text(s, 6, r->csr_sha256, sizeof(r->csr_sha256)) ||
	    !st_col_text(s, 7, r->status, sizeof(r->status)) ||
	    !st_col_text(s, 11, r->decided_by, sizeof(r->decided_by)) || !request_id_ok(r->id))
		return st_fail(st, FLEET_STORE_E_CORRUPT, "a join_requests row holds what it cannot");
	r->created_at = db_column_int64(s, 8);
	r->expires_at = db_column_int64(s, 9);
	r->decided_at = db_column_int64(s, 10);
	r->used_at = db_column_int64(s, 12);
	return FLEET_STORE_OK;
}

/* One request by a prepared query (its parameters bound); NOT_FOUND when
 * none. Finalizes s. */
static fleet_err request_one(struct fleet_store *st, struct db_stmt *s,
			     struct fleet_store_join_request *out, const char *what)
{
	fleet_err e;
	memset(out, 0, sizeof(*out));
	int rc = db_step(s);
	if (rc == DB_ROW)
		e = request_row(st, s, out, NULL);
	else if (rc == DB_DONE)
		e = st_fail(st, FLEET_STORE_E_NOT_FOUND, "no such join request (%s)", what);
	else
		e = st_dberr(st, rc, "read join request");
	db_finalize(s);
	if (e)
		memset(out, 0, sizeof(*out));
	return e;
}

fleet_err fleet_store_tx_join_request(struct fleet_store_tx *tx, const char *attestor,
				      const char *hw_key, struct fleet_store_join_request *out)
{
	struct db_stmt *s;
	fleet_err e;
	if (!tx || !tx->st || !out)
		return FLEET_STORE_E_INVALID;
	struct fleet_store *st = tx->st;
	if (!slug_ok(attestor, FLEET_STORE_ATTESTOR_MAX) || !st_hex_ok(hw_key, 64, 64))
		return st_fail(st, FLEET_STORE_E_INVALID,
			       "a join request is found by its attestor and a 64-hex hardware key");
	if ((e = st_prepare(st,
			    "SELECT " JR_COLS("?3") " FROM join_requests "
			    "WHERE attestor = ?1 AND hw_key = ?2",
			    &s)))
		return e;
	db_bind_text(s, 1, attestor, -1);
	db_bind_text(s, 2, hw_key, -1);
	db_bind_int64(s, 3, tx->now);
	return request_one(st, s, out, "for that attestor and hardware key");
}

static bool request_in_ok(const struct fleet_store_join_request *in)
{
	return request_id_ok(in->id) && slug_ok(in->attestor, FLEET_STORE_ATTESTOR_MAX) &&
	       (!in->site[0] || slug_ok(in->site, FLEET_STORE_POOL_ID_MAX)) &&
	       st_hex_ok(in->hw_key, 64, 64) && (!in->mac[0] || mac_ok(in->mac)) &&
	       (!in->product_uuid[0] || uuid_ok(in->product_uuid)) &&
	       st_hex_ok(in->csr_sha256, 64, 64) && in->created_at >= 0 &&
	       in->expires_at > in->created_at;
}

fleet_err fleet_store_tx_join_request_put(struct fleet_store_tx *tx,
					  const struct fleet_store_join_request *in)
{
	struct db_stmt *s;
	fleet_err e;
	if (!tx || !tx->st || !in)
		return FLEET_STORE_E_INVALID;
	struct fleet_store *st = tx->st;
	if (!request_in_ok(in))
		return st_fail(st, FLEET_STORE_E_INVALID,
			       "a join request is an id (jr_ and 26 of a-z 0-9), an attestor, a "
			       "64-hex hardware key and CSR hash, optional site, MAC and product "
			       "UUID in lowercase, and an expiry after its creation");
	/* The id is the caller's: never one another request holds. */
	if ((e = st_prepare(st, "SELECT 1 FROM join_requests WHERE id = ?1", &s)))
		return e;
	db_bind_text(s, 1, in->id, -1);
	int rc = db_step(s);
	db_finalize(s);
	if (rc == DB_ROW)
		return st_fail(st, FLEET_STORE_E_CONFLICT, "a join request %s exists already", in->id);
	if (rc != DB_DONE)
		return st_dberr(st, rc, "read join request");
	/* The row of this (attestor, hardware key), if any, as of now. */
	struct fleet_store_join_request old;
	bool replace = false;
	e = fleet_store_tx_join_request(tx, in->attestor, in->hw_key, &old);
	if (e == FLEET_STORE_OK) {
		if (!strcmp(old.status, "pending") || !strcmp(old.status, "approved"))
			return st_fail(st, FLEET_STORE_E_CONFLICT,
				       "join request %s for that machine is %s: it is decided or "
				       "expires first",
				       old.id, old.status);
		replace = true; /* expired, denied or used */
	} else if (e != FLEET_STORE_E_NOT_FOUND) {
		return e;
	}
	int64_t live = 0;
	if ((e = st_prepare(st,
			    "SELECT count(*) FROM join_requests WHERE status = 'pending' AND "
			    "expires_at > ?1",
			    &s)))
		return e;
	db_bind_int64(s, 1, tx->now);
	if ((rc = db_step(s)) == DB_ROW)
		live = db_column_int64(s, 0);
	db_finalize(s);
	if (rc != DB_ROW)
		return st_dberr(st, rc, "count join requests");
	if (live >= FLEET_STORE_MAX_JOIN_REQUESTS)
		return st_fail(st, FLEET_STORE_E_FULL,
			       "%d join requests wait for a decision already",
			       FLEET_STORE_MAX_JOIN_REQUESTS);
	const char *sql =
		replace ? "UPDATE join_requests SET id = ?1, site = ?4, mac = ?5, product_uuid = ?6, "
			  "csr_sha256 = ?7, status = 'pending', created_at = ?8, expires_at = ?9, "
			  "decided_at = NULL, decided_by = NULL, used_at = NULL "
			  "WHERE attestor = ?2 AND hw_key = ?3"
			: "INSERT INTO join_requests (id, attestor, hw_key, site, mac, product_uuid, "
			  "csr_sha256, status, created_at, expires_at) "
			  "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'pending', ?8, ?9)";
	if ((e = st_prepare(st, sql, &s)))
		return e;
	db_bind_text(s, 1, in->id, -1);
	db_bind_text(s, 2, in->attestor, -1);
	db_bind_text(s, 3, in->hw_key, -1);
	bind_opt(s, 4, in->site);
	bind_opt(s, 5, in->mac);
	bind_opt(s, 6, in->product_uuid);
	db_bind_text(s, 7, in->csr_sha256, -1);
	db_bind_int64(s, 8, in->created_at);
	db_bind_int64(s, 9, in->expires_at);
	int changes = 0;
	if ((e = st_step_done(st, s, replace ? "renew join request" : "insert join request",
			      &changes)))
		return e;
	return changes == 1 ? FLEET_STORE_OK
			    : st_fail(st, FLEET_STORE_E_CORRUPT,
				      "the join request changed under its own lock");
}

fleet_err fleet_store_tx_join_request_used(struct fleet_store_tx *tx, const char *id, int64_t now)
{
	struct db_stmt *s;
	fleet_err e;
	if (!tx || !tx->st)
		return FLEET_STORE_E_INVALID;
	struct fleet_store *st = tx->st;
	if (now < 0)
		return st_fail(st, FLEET_STORE_E_INVALID, "a use needs a time");
	if (!request_id_ok(id))
		return st_fail(st, FLEET_STORE_E_NOT_FOUND, "not a join request id");
	if ((e = st_prepare(st,
			    "UPDATE join_requests SET status = 'used', used_at = ?2 "
			    "WHERE id = ?1 AND status = 'approved' AND expires_at > ?2",
			    &s)))
		return e;
	db_bind_text(s, 1, id, -1);
	db_bind_int64(s, 2, now);
	int changes = 0;
	if ((e = st_step_done(st, s, "use join request", &changes)))
		return e;
	if (changes == 1)
		return FLEET_STORE_OK;
	/* Nothing changed: unknown, or not approved (pending, denied, used). */
	struct fleet_store_join_request r;
	if ((e = st_prepare(st, "SELECT " JR_COLS("?2") " FROM join_requests WHERE id = ?1", &s)))
		return e;
	db_bind_text(s, 1, id, -1);
	db_bind_int64(s, 2, tx->now);
	if ((e = request_one(st, s, &r, id)))
		return e;
	return st_fail(st, FLEET_STORE_E_STATE,
		       "join request %s is %s: only an approved one admits a join (once)", id,
		       r.status);
}

static fleet_err request_decide(struct fleet_store *st, const char *id, bool approve,
				const char *by, time_t now)
{
	struct db_stmt *s;
	struct fleet_store_join_request r;
	fleet_err e = st_writable(st);
	if (e)
		return e;
	if (!st_text_ok(by, 64) || now < 0)
		return st_fail(st, FLEET_STORE_E_INVALID, "a decision names who made it (1..64 "
							  "printable) and when");
	if (!request_id_ok(id))
		return st_fail(st, FLEET_STORE_E_NOT_FOUND, "not a join request id");
	if ((e = st_begin(st)))
		return e;
	if ((e = st_prepare(st, "SELECT " JR_COLS("?2") " FROM join_requests WHERE id = ?1", &s)))
		goto out;
	db_bind_text(s, 1, id, -1);
	db_bind_int64(s, 2, now);
	if ((e = request_one(st, s, &r, id)))
		goto out;
	if (strcmp(r.status, "pending") != 0) {
		e = st_fail(st, FLEET_STORE_E_STATE, "join request %s is %s: only a pending one is "
						     "decided", id, r.status);
		goto out;
	}
	if ((e = st_prepare(st,
			    /* A decision lasts as long as the request waited for it could
			     * (its own lifetime again, from now): an approval given in the
			     * request's last minute still leaves the machine its time, and a
			     * denial ends, so the machine may ask again. */
			    "UPDATE join_requests SET status = ?2, decided_at = ?3, decided_by = ?4, "
			    "expires_at = ?3 + (expires_at - created_at) "
			    "WHERE id = ?1 AND status = 'pending' AND expires_at > ?3",
			    &s)))
		goto out;
	db_bind_text(s, 1, id, -1);
	db_bind_text(s, 2, approve ? "approved" : "denied", -1);
	db_bind_int64(s, 3, now);
	db_bind_text(s, 4, by, -1);
	int changes = 0;
	if (!(e = st_step_done(st, s, "decide join request", &changes)) && changes != 1)
		e = st_fail(st, FLEET_STORE_E_CORRUPT, "the join request changed under its own lock");
out:
	if (e) {
		st_rollback(st);
		return e;
	}
	return st_commit(st);
}

fleet_err fleet_store_join_request_decide(struct fleet_store *st, const char *id, bool approve,
					  const char *by, time_t now)
{
	if (!st)
		return FLEET_STORE_E_INVALID;
	st_lock(st);
	return st_unlock(st, request_decide(st, id, approve, by, now));
}

fleet_err fleet_store_join_request_get(struct fleet_store *st, const char *id,
				       struct fleet_store_join_request *out)
{
	struct db_stmt *s;
	if (!st || !out)
		return FLEET_STORE_E_INVALID;
	st_lock(st);
	memset(out, 0, sizeof(*out));
	if (!request_id_ok(id))
		return st_unlock(st, st_fail(st, FLEET_STORE_E_NOT_FOUND, "not a join request id"));
	fleet_err e = st_prepare(st,
				 "SELECT " JR_COLS("unixepoch()") " FROM join_requests WHERE id = ?1",
				 &s);
	if (!e) {
		db_bind_text(s, 1, id, -1);
		e = request_one(st, s, out, id);
	}
	return st_unlock(st, e);
}

fleet_err fleet_store_join_requests_list(struct fleet_store *st,
					 struct fleet_store_join_request **out, size_t *n)
{
	struct db_stmt *s;
	void *v = NULL;
	if (!st || !out || !n)
		return FLEET_STORE_E_INVALID;
	st_lock(st);
	fleet_err e = st_prepare(st,
				 "SELECT " JR_COLS("unixepoch()") " FROM join_requests "
				 "ORDER BY created_at DESC, id LIMIT ?1",
				 &s);
	if (!e) {
		db_bind_int64(s, 1, FLEET_STORE_LIST_MAX);
		e = st_collect(st, s, sizeof(struct fleet_store_join_request), FLEET_STORE_LIST_MAX,
			       "join requests", request_row, NULL, NULL, &v, n);
	} else {
		*n = 0;
	}
	*out = v;
	return st_unlock(st, e);
}

/* ---- D8: nodes and their certificates, for fleetctl ---------------------- */

static fleet_err node_row(struct fleet_store *st, struct db_stmt *s, void *el, void *ctx)
{
	struct fleet_store_node *n = el;
	(void)ctx;
	if (!st_col_text(s, 0, n->id, sizeof(n->id)) || !st_col_text(s, 1, n->pool, sizeof(n->pool)) ||
	    !st_col_text(s, 2, n->site, sizeof(n->site)) ||
	    !st_col_text(s, 3, n->role, sizeof(n->role)) ||
	    !st_col_text(s, 6, n->joined_by, sizeof(n->joined_by)) ||
	    !st_col_text(s, 7, n->token, sizeof(n->token)) ||
	    !st_col_text(s, 8, n->product_uuid, sizeof(n->product_uuid)))
		return st_fail(st, FLEET_STORE_E_CORRUPT, "a nodes row holds what it cannot");
	n->generation = db_column_int64(s, 4);
	n->joined_at = db_column_int64(s, 5);
	n->retired_at = db_column_int64(s, 9);
	return FLEET_STORE_OK;
}

fleet_err fleet_store_nodes_list(struct fleet_store *st, struct fleet_store_node **out, size_t *n)
{
	struct db_stmt *s;
	void *v = NULL;
	if (!st || !out || !n)
		return FLEET_STORE_E_INVALID;
	st_lock(st);
	fleet_err e = st_prepare(st,
				 "SELECT id, pool, site, role, generation, joined_at, joined_by, token, "
				 "product_uuid, retired_at FROM nodes ORDER BY id",
				 &s);
	if (!e)
		e = st_collect(st, s, sizeof(struct fleet_store_node), FLEET_STORE_MAX_DEVICES,
			       "nodes", node_row, NULL, NULL, &v, n);
	else
		*n = 0;
	*out = v;
	return st_unlock(st, e);
}

static fleet_err node_cert_row(struct fleet_store *st, struct db_stmt *s, void *el, void *ctx)
{
	struct fleet_store_node_cert *c = el;
	(void)ctx;
	if (!st_col_text(s, 0, c->sha256, sizeof(c->sha256)) || !st_hex_ok(c->sha256, 64, 64))
		return st_fail(st, FLEET_STORE_E_CORRUPT, "a node_certs row holds what it cannot");
	c->generation = db_column_int64(s, 1);
	c->not_after = db_column_int64(s, 2);
	c->issued_at = db_column_int64(s, 3);
	c->revoked_at = db_column_int64(s, 4);
	return FLEET_STORE_OK;
}

fleet_err fleet_store_node_certs(struct fleet_store *st, const char *node_id,
				 struct fleet_store_node_cert **out, size_t *n)
{
	struct fleet_store_node node;
	struct db_stmt *s;
	void *v = NULL;
	if (!st || !out || !n)
		return FLEET_STORE_E_INVALID;
	*out = NULL;
	*n = 0;
	st_lock(st);
	fleet_err e = st_node_get(st, node_id, &node);
	if (!e)
		e = st_prepare(st,
			       "SELECT lower(hex(sha256)), generation, not_after, issued_at, revoked_at "
			       "FROM node_certs WHERE node_id = ?1 ORDER BY issued_at DESC, id DESC "
			       "LIMIT ?2",
			       &s);
	if (!e) {
		db_bind_text(s, 1, node_id, -1);
		db_bind_int64(s, 2, FLEET_STORE_LIST_MAX);
		e = st_collect(st, s, sizeof(struct fleet_store_node_cert), FLEET_STORE_LIST_MAX,
			       "node certificates", node_cert_row, NULL, NULL, &v, n);
		*out = v;
	}
	return st_unlock(st, e);
}
