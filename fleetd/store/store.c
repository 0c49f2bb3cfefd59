/*
 * store.c: opening the store, its schema and migrations, and the helpers
 * every table's code shares. The tables themselves: store_devices.c
 * (devices, claims), store_records.c (verdicts, certificates),
 * store_admission.c (provisional certificates), store_authors.c
 * (binding authors) and store_provisions.c (install runs).
 */
#include "fleetd/store/store_int.h"

#include <sqlite3.h>
#include <sys/file.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/hex.h"
#include "lib/sanitize.h"

/* 'fldt': file(1) and a reader can tell a fleetd store from other SQLite. */
#define FLEET_STORE_APPLICATION_ID 0x666c6474

/* How long a statement waits for another connection's lock. */
#define FLEET_STORE_BUSY_MS DB_BUSY_MS


/*
 * The migrations, in order; each runs once, in a transaction with its row
 * in schema_migrations. Never edit one that has shipped: add the next.
 * STRICT tables refuse a value of the wrong type; the CHECKs repeat the
 * rules the C code enforces, so a row that breaks them cannot exist. (The
 * JSON functions cannot appear in a CHECK while the schema is untrusted,
 * SQLITE_DBCONFIG_TRUSTED_SCHEMA off; reasons are parsed on every read.)
 */
#define HEX64(c) "(" c " IS NULL OR (length(" c ") = 64 AND " c " NOT GLOB '*[^0-9a-f]*'))"
#define HEX64_OR_EMPTY(c) "(" c " = '' OR (length(" c ") = 64 AND " c " NOT GLOB '*[^0-9a-f]*'))"

static const struct st_migration migrations[] = {
	{1, "initial schema",
	 "PRAGMA application_id = 1718379636;"
	 "CREATE TABLE devices ("
	 " id INTEGER PRIMARY KEY,"
	 " name TEXT NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 127),"
	 " serial TEXT NOT NULL UNIQUE COLLATE NOCASE CHECK (length(serial) BETWEEN 1 AND 127),"
	 " inventory_id INTEGER CHECK (inventory_id IS NULL OR inventory_id > 0),"
	 " state TEXT NOT NULL DEFAULT 'admitted'"
	 "  CHECK (state IN ('admitted', 'provisioning', 'active', 'retired')),"
	 " ek_hash TEXT CHECK " HEX64("ek_hash") ","
	 " ek_hash_ecc TEXT CHECK " HEX64("ek_hash_ecc") ","
	 " first_admitted INTEGER NOT NULL,"
	 " last_seen INTEGER NOT NULL,"
	 " quarantined INTEGER NOT NULL DEFAULT 0 CHECK (quarantined IN (0, 1)),"
	 " quarantine_reason TEXT CHECK (quarantine_reason IS NULL OR"
	 "  length(quarantine_reason) BETWEEN 1 AND 255),"
	 " quarantined_at INTEGER,"
	 " CHECK (ek_hash IS NOT NULL OR ek_hash_ecc IS NOT NULL),"
	 " CHECK ((quarantined = 0 AND quarantine_reason IS NULL AND quarantined_at IS NULL) OR"
	 "  (quarantined = 1 AND quarantine_reason IS NOT NULL AND quarantined_at IS NOT NULL))"
	 ") STRICT;"
	 "CREATE TABLE certificates ("
	 " id INTEGER PRIMARY KEY,"
	 " device_id INTEGER NOT NULL REFERENCES devices(id) ON DELETE RESTRICT,"
	 " kind TEXT NOT NULL CHECK (kind IN ('lak', 'ldevid')),"
	 " sha1 TEXT NOT NULL UNIQUE CHECK (length(sha1) = 40 AND sha1 NOT GLOB '*[^0-9a-f]*'),"
	 " not_after INTEGER NOT NULL,"
	 " issued_at INTEGER NOT NULL,"
	 " der BLOB NOT NULL CHECK (length(der) BETWEEN 1 AND 16384),"
	 " revoked INTEGER NOT NULL DEFAULT 0 CHECK (revoked IN (0, 1)),"
	 " revoked_at INTEGER,"
	 " CHECK ((revoked = 0) = (revoked_at IS NULL))"
	 ") STRICT;"
	 "CREATE INDEX certificates_by_device ON certificates(device_id, issued_at);"
	 "CREATE TABLE verdicts ("
	 " id INTEGER PRIMARY KEY,"
	 " time INTEGER NOT NULL,"
	 " device TEXT CHECK (device IS NULL OR length(device) BETWEEN 1 AND 127),"
	 " serial TEXT NOT NULL CHECK (length(serial) BETWEEN 1 AND 127),"
	 " session TEXT NOT NULL CHECK (length(session) BETWEEN 2 AND 64 AND"
	 "  session NOT GLOB '*[^0-9a-f]*'),"
	 " result TEXT NOT NULL CHECK (result IN ('pass', 'fail')),"
	 " reasons TEXT NOT NULL CHECK (reasons GLOB '[[]*]'),"
	 " ek_hash TEXT CHECK " HEX64("ek_hash") ","
	 " ek_hash_ecc TEXT CHECK " HEX64("ek_hash_ecc") ","
	 " CHECK ((result = 'pass') = (reasons = '[]'))"
	 ") STRICT;"
	 "CREATE INDEX verdicts_by_device ON verdicts(device, id);"
	 "CREATE TABLE claims ("
	 " id INTEGER PRIMARY KEY,"
	 " serial TEXT NOT NULL UNIQUE COLLATE NOCASE CHECK (length(serial) BETWEEN 1 AND 127),"
	 " reason TEXT NOT NULL CHECK (reason IN ('unknown-serial', 'no-binding')),"
	 " first_seen INTEGER NOT NULL,"
	 " last_seen INTEGER NOT NULL,"
	 " count INTEGER NOT NULL CHECK (count >= 1),"
	 " eks_dropped INTEGER NOT NULL DEFAULT 0 CHECK (eks_dropped IN (0, 1))"
	 ") STRICT;"
	 "CREATE TABLE claim_eks ("
	 " claim_id INTEGER NOT NULL REFERENCES claims(id) ON DELETE CASCADE,"
	 " ek_hash TEXT NOT NULL CHECK " HEX64_OR_EMPTY("ek_hash") ","
	 " ek_hash_ecc TEXT NOT NULL CHECK " HEX64_OR_EMPTY("ek_hash_ecc") ","
	 " first_seen INTEGER NOT NULL,"
	 " last_seen INTEGER NOT NULL,"
	 " count INTEGER NOT NULL CHECK (count >= 1),"
	 " PRIMARY KEY (claim_id, ek_hash, ek_hash_ecc)"
	 ") STRICT, WITHOUT ROWID;"},
	/* Certificates issued at the answer round belong to no device until a
	 * signed confirmation admits it (store_admission.c); until then they
	 * live here, and a session that ends any other way revokes them here.
	 * Nothing reads this table to decide eligibility: SPIRE's list is made
	 * from certificates alone. */
	{2, "provisional certificates",
	 "CREATE TABLE provisional_certs ("
	 " id INTEGER PRIMARY KEY,"
	 " session TEXT NOT NULL CHECK (length(session) = 64 AND session NOT GLOB '*[^0-9a-f]*'),"
	 " serial TEXT NOT NULL CHECK (length(serial) BETWEEN 1 AND 127),"
	 " device TEXT NOT NULL CHECK (length(device) BETWEEN 1 AND 127),"
	 " kind TEXT NOT NULL CHECK (kind IN ('lak', 'ldevid')),"
	 " sha1 TEXT NOT NULL UNIQUE CHECK (length(sha1) = 40 AND sha1 NOT GLOB '*[^0-9a-f]*'),"
	 " not_after INTEGER NOT NULL,"
	 " issued_at INTEGER NOT NULL,"
	 " der BLOB NOT NULL CHECK (length(der) BETWEEN 1 AND 16384),"
	 " revoked_at INTEGER,"
	 " revoke_reason TEXT CHECK (revoke_reason IS NULL OR"
	 "  length(revoke_reason) BETWEEN 1 AND 64),"
	 " CHECK ((revoked_at IS NULL) = (revoke_reason IS NULL)),"
	 " UNIQUE (session, kind)"
	 ") STRICT;"},
	/* NetBox purges its change log (CHANGELOG_RETENTION, 90 days by
	 * default), and with it the only proof of who wrote a binding: the
	 * pass keeps its own copy while the log still holds it
	 * (store_authors.c). One row per inventory device id; a row proves
	 * nothing for any other binding values or serial. */
	{3, "binding authors",
	 "CREATE TABLE binding_authors ("
	 " device_id INTEGER PRIMARY KEY CHECK (device_id > 0),"
	 " serial TEXT NOT NULL CHECK (length(serial) BETWEEN 1 AND 127),"
	 " approved_ek_hash TEXT NOT NULL CHECK " HEX64("approved_ek_hash") ","
	 " approved_ek_hash_ecc TEXT CHECK " HEX64("approved_ek_hash_ecc") ","
	 " user TEXT NOT NULL CHECK (length(user) BETWEEN 1 AND 127),"
	 " change_id INTEGER NOT NULL CHECK (change_id > 0),"
	 " changed_at INTEGER NOT NULL CHECK (changed_at >= 0),"
	 " recorded_at INTEGER NOT NULL CHECK (recorded_at >= 0)"
	 ") STRICT;"},
	/* The install runs (store_provisions.c). Rows are never deleted: a
	 * code's hash must stay to refuse it for ever. The configuration is
	 * held only while a run can still serve it; one open run per device;
	 * a token and a CSR belong to one run. */
	{4, "provisions",
	 "CREATE TABLE provisions ("
	 " id INTEGER PRIMARY KEY,"
	 " device TEXT NOT NULL REFERENCES devices(name) ON DELETE RESTRICT"
	 "  CHECK (length(device) BETWEEN 1 AND 63),"
	 " serial TEXT NOT NULL CHECK (length(serial) BETWEEN 1 AND 127),"
	 " role TEXT NOT NULL CHECK (role IN ('worker', 'controlplane')),"
	 " stage TEXT NOT NULL"
	 "  CHECK (stage IN ('rendered', 'started', 'delivered', 'done', 'dropped')),"
	 " workflow TEXT NOT NULL CHECK (length(workflow) BETWEEN 1 AND 63),"
	 " token_id TEXT CHECK (token_id IS NULL OR"
	 "  (length(token_id) = 6 AND token_id NOT GLOB '*[^0-9a-z]*')),"
	 " token_state TEXT NOT NULL"
	 "  CHECK (token_state IN ('none', 'pending', 'created', 'deleted')),"
	 " code_hash BLOB NOT NULL UNIQUE CHECK (length(code_hash) = 32),"
	 " config BLOB CHECK (config IS NULL OR length(config) BETWEEN 1 AND 262144),"
	 " csr_name TEXT CHECK (csr_name IS NULL OR length(csr_name) BETWEEN 1 AND 253),"
	 " csr_uid TEXT CHECK (csr_uid IS NULL OR length(csr_uid) BETWEEN 1 AND 63),"
	 " csr_approved_at INTEGER,"
	 " csr_issued INTEGER NOT NULL DEFAULT 0 CHECK (csr_issued IN (0, 1)),"
	 " created_at INTEGER NOT NULL CHECK (created_at >= 0),"
	 " expires_at INTEGER NOT NULL,"
	 " started_at INTEGER,"
	 " delivered_at INTEGER,"
	 " ended_at INTEGER,"
	 " stop_reason TEXT CHECK (stop_reason IS NULL OR length(stop_reason) BETWEEN 1 AND 63),"
	 " CHECK (expires_at > created_at),"
	 " CHECK ((role = 'controlplane') = (token_id IS NULL)),"
	 " CHECK ((token_id IS NULL) = (token_state = 'none')),"
	 " CHECK ((csr_name IS NULL) = (csr_uid IS NULL)),"
	 " CHECK ((csr_name IS NULL) = (csr_approved_at IS NULL)),"
	 " CHECK (csr_issued = 0 OR csr_name IS NOT NULL),"
	 " CHECK ((stage IN ('rendered', 'started')) = (config IS NOT NULL)),"
	 " CHECK ((stage = 'dropped') = (stop_reason IS NOT NULL)),"
	 " CHECK ((stage IN ('done', 'dropped')) = (ended_at IS NOT NULL)),"
	 " CHECK (stage NOT IN ('delivered', 'done') OR delivered_at IS NOT NULL),"
	 " CHECK (delivered_at IS NULL OR stage IN ('delivered', 'done', 'dropped')),"
	 " CHECK (stage = 'rendered' OR stage = 'dropped' OR started_at IS NOT NULL)"
	 ") STRICT;"
	 "CREATE UNIQUE INDEX provisions_one_open ON provisions(device)"
	 " WHERE stage IN ('rendered', 'started', 'delivered');"
	 "CREATE UNIQUE INDEX provisions_by_token ON provisions(token_id)"
	 " WHERE token_id IS NOT NULL;"},
	/* The hourly re-check's last TPM clock per device (store_reattest.c):
	 * what resetCount and restartCount may never go back below. */
	{5, "reattest clock",
	 "CREATE TABLE reattest_clock ("
	 " device TEXT PRIMARY KEY REFERENCES devices(name) ON DELETE RESTRICT,"
	 " reset_count INTEGER NOT NULL CHECK (reset_count BETWEEN 0 AND 4294967295),"
	 " restart_count INTEGER NOT NULL CHECK (restart_count BETWEEN 0 AND 4294967295),"
	 " clock INTEGER NOT NULL CHECK (clock >= 0),"
	 " checked_at INTEGER NOT NULL CHECK (checked_at >= 0)"
	 ") STRICT;"},
	/* The join service's pools and tokens (store_join.c; issue 13,
	 * docs/join-tokens.md). A token's secret is never stored, only its
	 * SHA-256; a token row is never deleted (a revoked or spent one must
	 * stay refused), and its uses only go down. The single-use evidence
	 * an attestor accepted (attestation_uses) is kept until expires_at. */
	{6, "join tokens",
	 "CREATE TABLE pools ("
	 " id TEXT PRIMARY KEY CHECK (length(id) BETWEEN 1 AND 63 AND id NOT GLOB '*[^a-z0-9-]*'),"
	 " owner TEXT NOT NULL CHECK (length(owner) BETWEEN 1 AND 63),"
	 " join_attestors TEXT CHECK (join_attestors IS NULL OR"
	 "  (length(join_attestors) BETWEEN 1 AND 1024 AND join_attestors NOT GLOB '*[^a-z0-9,-]*')),"
	 " created_at INTEGER NOT NULL CHECK (created_at >= 0)"
	 ") STRICT;"
	 "CREATE TABLE join_tokens ("
	 " id TEXT PRIMARY KEY CHECK (length(id) = 26 AND id NOT GLOB '*[^0-9a-z]*'),"
	 " pool TEXT NOT NULL REFERENCES pools(id) ON DELETE RESTRICT,"
	 " site TEXT CHECK (site IS NULL OR (length(site) BETWEEN 1 AND 63"
	 "  AND site NOT GLOB '*[^a-z0-9-]*')),"
	 " role TEXT NOT NULL CHECK (role IN ('node', 'site', 'provisioned', 'discovery')),"
	 " secret_sha256 BLOB NOT NULL CHECK (length(secret_sha256) = 32),"
	 " uses_total INTEGER NOT NULL CHECK (uses_total BETWEEN 1 AND 10000),"
	 " uses_left INTEGER NOT NULL CHECK (uses_left BETWEEN 0 AND uses_total),"
	 " created_at INTEGER NOT NULL CHECK (created_at >= 0),"
	 " expires_at INTEGER NOT NULL CHECK (expires_at > created_at),"
	 " created_by TEXT NOT NULL CHECK (length(created_by) BETWEEN 1 AND 64),"
	 " revoked_at INTEGER,"
	 " expect_mac TEXT CHECK (expect_mac IS NULL OR"
	 "  (length(expect_mac) = 17 AND expect_mac NOT GLOB '*[^0-9a-f:]*')),"
	 " expect_product_uuid TEXT CHECK (expect_product_uuid IS NULL OR"
	 "  (length(expect_product_uuid) = 36 AND expect_product_uuid NOT GLOB '*[^0-9a-f-]*')),"
	 " allow_reclaim INTEGER NOT NULL CHECK (allow_reclaim IN (0, 1)),"
	 " last_used_at INTEGER,"
	 " CHECK ((role = 'site' OR role = 'discovery') = (site IS NOT NULL))"
	 ") STRICT;"
	 "CREATE TABLE attestation_uses ("
	 " attestor TEXT NOT NULL CHECK (length(attestor) BETWEEN 1 AND 32),"
	 " subject TEXT NOT NULL CHECK (length(subject) BETWEEN 1 AND 255),"
	 " expires_at INTEGER NOT NULL,"
	 " PRIMARY KEY (attestor, subject)"
	 ") STRICT;"
	 "CREATE INDEX attestation_uses_expiry ON attestation_uses(expires_at);"},
	/* The join service's nodes and their certificates (store_join_nodes.c).
	 * A node's identity generation only goes up; a reclaim raises it and
	 * revokes every certificate of an older one. A binding (an EK's hash,
	 * a product UUID) names one node for ever. */
	{7, "join nodes",
	 "CREATE TABLE nodes ("
	 " id TEXT PRIMARY KEY CHECK (length(id) BETWEEN 1 AND 63 AND id NOT GLOB '*[^a-z0-9_-]*'),"
	 " pool TEXT NOT NULL REFERENCES pools(id) ON DELETE RESTRICT,"
	 " site TEXT CHECK (site IS NULL OR length(site) BETWEEN 1 AND 63),"
	 " role TEXT NOT NULL CHECK (role IN ('node', 'site', 'ramdisk')),"
	 " generation INTEGER NOT NULL CHECK (generation >= 1),"
	 " joined_at INTEGER NOT NULL CHECK (joined_at >= 0),"
	 " joined_by TEXT NOT NULL CHECK (length(joined_by) BETWEEN 1 AND 31),"
	 " token TEXT REFERENCES join_tokens(id),"
	 " product_uuid TEXT CHECK (product_uuid IS NULL OR length(product_uuid) = 36),"
	 " retired_at INTEGER"
	 ") STRICT;"
	 "CREATE TABLE node_certs ("
	 " id INTEGER PRIMARY KEY,"
	 " node_id TEXT NOT NULL REFERENCES nodes(id) ON DELETE RESTRICT,"
	 " generation INTEGER NOT NULL CHECK (generation >= 1),"
	 " sha256 BLOB NOT NULL UNIQUE CHECK (length(sha256) = 32),"
	 " der BLOB NOT NULL CHECK (length(der) BETWEEN 1 AND 16384),"
	 " not_after INTEGER NOT NULL,"
	 " issued_at INTEGER NOT NULL CHECK (issued_at >= 0),"
	 " revoked_at INTEGER"
	 ") STRICT;"
	 "CREATE INDEX node_certs_by_node ON node_certs(node_id, generation);"
	 "CREATE TABLE node_bindings ("
	 " kind TEXT NOT NULL CHECK (kind IN ('ek', 'product-uuid')),"
	 " subject TEXT NOT NULL CHECK (length(subject) BETWEEN 1 AND 128),"
	 " node_id TEXT NOT NULL REFERENCES nodes(id) ON DELETE RESTRICT,"
	 " created_at INTEGER NOT NULL CHECK (created_at >= 0),"
	 " PRIMARY KEY (kind, subject)"
	 ") STRICT;"},
	/* The discovery and provisioned attestors (store_join_requests.c,
	 * store.h D1-D8): the node a provisioned token was minted for, each
	 * site's leases (the boot lease names who may vouch for a PXE-booted
	 * machine, its epoch only raised: a former holder is fenced), and the
	 * join requests a deferral leaves for an operator, one per (attestor,
	 * hardware key); the status "expired" is read, never stored. */
	{8, "join requests",
	 "ALTER TABLE join_tokens ADD COLUMN target_node TEXT REFERENCES nodes(id)"
	 " CHECK (target_node IS NULL OR role = 'provisioned');"
	 "CREATE TABLE site_leases ("
	 " site TEXT NOT NULL CHECK (length(site) BETWEEN 1 AND 63 AND site NOT GLOB '*[^a-z0-9-]*'),"
	 " name TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 31 AND name NOT GLOB '*[^a-z0-9-]*'),"
	 " holder TEXT NOT NULL REFERENCES nodes(id) ON DELETE RESTRICT,"
	 " epoch INTEGER NOT NULL CHECK (epoch >= 1),"
	 " granted_at INTEGER NOT NULL CHECK (granted_at >= 0),"
	 " PRIMARY KEY (site, name)"
	 ") STRICT;"
	 "CREATE TABLE join_requests ("
	 " id TEXT PRIMARY KEY CHECK (length(id) = 29 AND substr(id, 1, 3) = 'jr_' AND"
	 "  substr(id, 4) NOT GLOB '*[^a-z0-9]*'),"
	 " attestor TEXT NOT NULL CHECK (length(attestor) BETWEEN 1 AND 31 AND"
	 "  attestor NOT GLOB '*[^a-z0-9-]*'),"
	 " site TEXT CHECK (site IS NULL OR (length(site) BETWEEN 1 AND 63"
	 "  AND site NOT GLOB '*[^a-z0-9-]*')),"
	 " hw_key TEXT NOT NULL CHECK " HEX64("hw_key") ","
	 " mac TEXT CHECK (mac IS NULL OR (length(mac) = 17 AND mac NOT GLOB '*[^0-9a-f:]*')),"
	 " product_uuid TEXT CHECK (product_uuid IS NULL OR"
	 "  (length(product_uuid) = 36 AND product_uuid NOT GLOB '*[^0-9a-f-]*')),"
	 " csr_sha256 TEXT NOT NULL CHECK " HEX64("csr_sha256") ","
	 " status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'used')),"
	 " created_at INTEGER NOT NULL CHECK (created_at >= 0),"
	 " expires_at INTEGER NOT NULL CHECK (expires_at > created_at),"
	 " decided_at INTEGER CHECK (decided_at IS NULL OR decided_at >= 0),"
	 " decided_by TEXT CHECK (decided_by IS NULL OR length(decided_by) BETWEEN 1 AND 64),"
	 " used_at INTEGER CHECK (used_at IS NULL OR used_at >= 0),"
	 " CHECK ((status = 'pending') = (decided_at IS NULL)),"
	 " CHECK ((decided_at IS NULL) = (decided_by IS NULL)),"
	 " CHECK ((status = 'used') = (used_at IS NOT NULL)),"
	 " UNIQUE (attestor, hw_key)"
	 ") STRICT;"
	 "CREATE INDEX join_requests_by_created ON join_requests(created_at);"
	 "CREATE INDEX join_requests_by_status ON join_requests(status, expires_at);"},
	/* 9: HookOS admission sessions shared by the replicas of one store
	 * (store_sessions.c): the table's bookkeeping in columns, the
	 * session itself sealed by the admission (sessions_shared.c), so the
	 * challenge secrets are never stored in the clear. sid is the
	 * session id in hex once published, as provisional_certs.session. */
	{9, "admission sessions",
	 "CREATE TABLE admission_sessions ("
	 " handle TEXT PRIMARY KEY CHECK (length(handle) = 32 AND handle NOT GLOB '*[^0-9a-f]*'),"
	 " sid TEXT UNIQUE CHECK " HEX64("sid") ","
	 " serial TEXT NOT NULL COLLATE NOCASE CHECK (length(serial) BETWEEN 1 AND 128),"
	 " peer TEXT NOT NULL CHECK (length(peer) <= 47),"
	 " peer_key TEXT NOT NULL CHECK (length(peer_key) <= 47),"
	 " ek_hash TEXT NOT NULL DEFAULT '' CHECK (ek_hash = '' OR " HEX64("ek_hash") "),"
	 " ek_hash_ecc TEXT NOT NULL DEFAULT '' CHECK (ek_hash_ecc = '' OR " HEX64("ek_hash_ecc") "),"
	 " published INTEGER NOT NULL CHECK (published IN (0, 1)),"
	 " proven INTEGER NOT NULL CHECK (proven IN (0, 1)),"
	 " superseded INTEGER NOT NULL CHECK (superseded IN (0, 1)),"
	 " deadline INTEGER NOT NULL,"
	 " answer_by INTEGER NOT NULL,"
	 " busy_until INTEGER NOT NULL,"
	 " sealed BLOB CHECK (sealed IS NULL OR length(sealed) <= 65536),"
	 " CHECK (published = 0 OR (sid IS NOT NULL AND sealed IS NOT NULL))"
	 ") STRICT;"
	 "CREATE INDEX admission_sessions_by_serial ON admission_sessions(serial);"
	 "CREATE INDEX admission_sessions_by_peer ON admission_sessions(peer_key);"},
};
#define N_MIGRATIONS (sizeof(migrations) / sizeof(migrations[0]))
_Static_assert(N_MIGRATIONS == FLEET_STORE_SCHEMA_VERSION, "one migration per version");

static bool is_pg(const struct fleet_store *st)
{
	return db_engine(st->db) == DB_POSTGRES;
}

bool fleet_store_is_shared(const struct fleet_store *st)
{
	return st && is_pg(st);
}

/* The engine's migrations: one list per engine, the same versions. */
static const struct st_migration *engine_migrations(const struct fleet_store *st, size_t *n)
{
	*n = is_pg(st) ? st_pg_n_migrations : N_MIGRATIONS;
	return is_pg(st) ? st_pg_migrations : migrations;
}

/* The calling thread's last failure: which handle, and its sentence. Per
 * thread rather than per handle, so that the message a caller reads after
 * a failed call is that call's, whatever other threads do with the handle
 * meanwhile (fleet_store_errmsg). */
static _Thread_local struct {
	const struct fleet_store *st;
	struct fleet_errctx ec;
} last_failure;

__attribute__((format(printf, 4, 0))) static fleet_err
failv(struct fleet_store *st, fleet_err e, int errnum, const char *fmt, va_list ap)
{
	char msg[sizeof(last_failure.ec.detail)];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	fleet_errctx_errno(&last_failure.ec, e, errnum, "%s", msg);
	last_failure.st = st;
	return e;
}

fleet_err st_fail(struct fleet_store *st, fleet_err e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	failv(st, e, 0, fmt, ap);
	va_end(ap);
	return e;
}

fleet_err st_fail_errno(struct fleet_store *st, fleet_err e, int errnum, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	failv(st, e, errnum, fmt, ap);
	va_end(ap);
	return e;
}

void st_lock(struct fleet_store *st)
{
	pthread_mutex_lock(&st->mu);
}

fleet_err st_unlock(struct fleet_store *st, fleet_err e)
{
	pthread_mutex_unlock(&st->mu);
	return e;
}

fleet_err st_dberr(struct fleet_store *st, int rc, const char *what)
{
	fleet_err e;
	switch (rc) {
	case DB_BUSY:
		e = FLEET_STORE_E_BUSY;
		break;
	case DB_READONLY:
		e = FLEET_STORE_E_READONLY;
		break;
	case DB_CONSTRAINT:
		e = FLEET_STORE_E_CONFLICT;
		break;
	case DB_NOMEM:
		e = FLEET_STORE_E_NOMEM;
		break;
	case DB_CORRUPT:
		e = FLEET_STORE_E_CORRUPT;
		break;
	default:
		e = FLEET_STORE_E_IO;
	}
	return st_fail(st, e, "%s: %s", what, st->db ? db_errmsg(st->db) : "no connection");
}

fleet_err st_prepare(struct fleet_store *st, const char *sql, struct db_stmt **out)
{
	int rc = db_prepare(st->db, sql, out);
	return rc == DB_OK ? FLEET_STORE_OK : st_dberr(st, rc, "prepare");
}

fleet_err st_writable(struct fleet_store *st)
{
	if (st->readonly)
		return st_fail(st, FLEET_STORE_E_READONLY, "this store handle is read-only");
	/* A write would join the snapshot's transaction and end its view. */
	if (st->snapshot)
		return st_fail(st, FLEET_STORE_E_INVALID,
			       "no writes on a handle while its read snapshot is open");
	return FLEET_STORE_OK;
}

fleet_err st_begin(struct fleet_store *st)
{
	/* The write lock now, on either engine (db.h DB3), so a transaction
	 * never fails half-way on a lock upgrade or a concurrent writer. */
	int rc = db_begin_write(st->db);
	return rc == DB_OK ? FLEET_STORE_OK : st_dberr(st, rc, "begin");
}

fleet_err st_commit(struct fleet_store *st)
{
	int rc = db_commit(st->db);
	if (rc == DB_OK)
		return FLEET_STORE_OK;
	fleet_err e = st_dberr(st, rc, "commit");
	st_rollback(st);
	return e;
}

void st_rollback(struct fleet_store *st)
{
	db_rollback(st->db);
}

bool st_text_ok(const char *s, size_t max)
{
	if (!s)
		return false;
	size_t len = strnlen(s, max + 1);
	if (len == 0 || len > max)
		return false;
	return fleet_ascii_printable(s, len, FLEET_ASCII_SPACE);
}

bool st_hex_ok(const char *s, size_t min, size_t max)
{
	if (!s)
		return false;
	size_t len = strnlen(s, max + 1);
	return len >= min && len <= max && fleet_hex_is_lower(s, len);
}

bool st_hash_ok(const char *s)
{
	return !s || !s[0] || (strnlen(s, 65) == 64 && fleet_hex_is_lower(s, 64));
}

int st_bind_hash(struct db_stmt *s, int i, const char *h)
{
	if (!h || !h[0])
		return db_bind_null(s, i);
	return db_bind_text(s, i, h, -1);
}

bool st_col_text(struct db_stmt *s, int col, char *out, size_t cap)
{
	const unsigned char *t = db_column_text(s, col);
	int len = db_column_bytes(s, col);
	out[0] = '\0';
	if (!t)
		return db_column_type(s, col) == DB_NULL;
	if (len < 0 || (size_t)len >= cap)
		return false;
	if (!fleet_ascii_printable(t, (size_t)len, FLEET_ASCII_SPACE))
		return false;
	memcpy(out, t, (size_t)len);
	out[len] = '\0';
	return true;
}

static fleet_err exec_const(struct fleet_store *st, const char *sql, const char *what)
{
	int rc = db_exec(st->db, sql);
	return rc == DB_OK ? FLEET_STORE_OK : st_dberr(st, rc, what);
}

/* A one-row, one-column integer query (a pragma or a count). */
static fleet_err query_int(struct fleet_store *st, const char *sql, int64_t *out)
{
	struct db_stmt *s;
	fleet_err e = st_prepare(st, sql, &s);
	if (e)
		return e;
	int rc = db_step(s);
	if (rc == DB_ROW)
		*out = db_column_int64(s, 0);
	else
		e = rc == DB_DONE ? st_fail(st, FLEET_STORE_E_CORRUPT, "%s: no row", sql)
				      : st_dberr(st, rc, sql);
	db_finalize(s);
	return e;
}

static fleet_err query_text(struct fleet_store *st, const char *sql, char *out,
				       size_t cap)
{
	struct db_stmt *s;
	fleet_err e = st_prepare(st, sql, &s);
	if (e)
		return e;
	int rc = db_step(s);
	if (rc != DB_ROW)
		e = st_dberr(st, rc, sql);
	else if (!st_col_text(s, 0, out, cap))
		e = st_fail(st, FLEET_STORE_E_CORRUPT, "%s: unexpected answer", sql);
	db_finalize(s);
	return e;
}

static fleet_err schema_version(struct fleet_store *st, int64_t *v)
{
	int64_t n = 0;
	fleet_err e = query_int(
		st, is_pg(st) ? "SELECT count(*) FROM information_schema.tables WHERE "
				"table_schema = current_schema() AND table_name = 'schema_migrations'"
			      : "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND "
				"name = 'schema_migrations'", &n);
	if (e)
		return e;
	if (!n) {
		*v = 0;
		return FLEET_STORE_OK;
	}
	return query_int(st, "SELECT coalesce(max(version), 0) FROM schema_migrations", v);
}

/* SQLite's application id; on PostgreSQL store_identity's one row, which
 * exists once migration 1 ran (have > 0). */
static fleet_err application_id(struct fleet_store *st, int64_t have, int64_t *app)
{
	if (!is_pg(st))
		return query_int(st, "PRAGMA application_id", app);
	*app = 0;
	return have > 0 ? query_int(st, "SELECT application_id FROM store_identity", app)
			: FLEET_STORE_OK;
}

static fleet_err migrate(struct fleet_store *st)
{
	fleet_err e = st_begin(st);
	if (e)
		return e;
	int64_t have = 0, app = 0;
	/* After st_begin: on PostgreSQL, a replica starting beside another
	 * waits for the write lock, then sees the migrations that one ran. */
	if ((e = exec_const(st,
			    is_pg(st) ? "CREATE TABLE IF NOT EXISTS schema_migrations ("
					" version BIGINT PRIMARY KEY,"
					" applied_at BIGINT NOT NULL,"
					" name TEXT NOT NULL)"
				      : "CREATE TABLE IF NOT EXISTS schema_migrations ("
					" version INTEGER PRIMARY KEY,"
					" applied_at INTEGER NOT NULL,"
					" name TEXT NOT NULL) STRICT",
			    "create schema_migrations")) ||
	    (e = schema_version(st, &have)) || (e = application_id(st, have, &app)))
		goto fail;
	if (have > FLEET_STORE_SCHEMA_VERSION) {
		e = st_fail(st, FLEET_STORE_E_SCHEMA,
			    "the store is at schema version %lld, written by a newer fleetd; this "
			    "one reads version %d", (long long)have, FLEET_STORE_SCHEMA_VERSION);
		goto fail;
	}
	if (have > 0 && app != FLEET_STORE_APPLICATION_ID) {
		e = st_fail(st, FLEET_STORE_E_SCHEMA, "not a fleetd store (application id %lld)",
			    (long long)app);
		goto fail;
	}
	size_t n_mig;
	const struct st_migration *mig = engine_migrations(st, &n_mig);
	for (size_t i = (size_t)have; i < n_mig; i++) {
		struct db_stmt *s;
		if ((e = exec_const(st, mig[i].sql, mig[i].name)) ||
		    (e = st_prepare(st, "INSERT INTO schema_migrations (version, applied_at, name) "
					"VALUES (?1, ?2, ?3)", &s)))
			goto fail;
		db_bind_int64(s, 1, mig[i].version);
		db_bind_int64(s, 2, (int64_t)time(NULL));
		db_bind_text(s, 3, mig[i].name, -1);
		int rc = db_step(s);
		db_finalize(s);
		if (rc != DB_DONE) {
			e = st_dberr(st, rc, "record migration");
			goto fail;
		}
	}
	return st_commit(st);
fail:
	st_rollback(st);
	return e;
}

/* The daemon's directory: ours, closed to writers other than us. */
static fleet_err check_dir(struct fleet_store *st, const char *dir, int *dfd_out)
{
	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		return st_fail_errno(st, FLEET_STORE_E_IO, errno,
				     "cannot create the state directory %s", dir);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return st_fail_errno(st, FLEET_STORE_E_IO, errno,
				     "cannot open the state directory %s", dir);
	struct stat sb;
	if (fstat(dfd, &sb) != 0 || sb.st_uid != geteuid() || (sb.st_mode & (S_IWGRP | S_IWOTH))) {
		close(dfd);
		return st_fail(st, FLEET_STORE_E_UNSAFE,
			       "the state directory %s must be owned by uid %u and not writable by "
			       "group or others", dir, (unsigned)geteuid());
	}
	*dfd_out = dfd;
	return FLEET_STORE_OK;
}

/* Create the database file 0600 (or check the one there) before SQLite
 * opens it, so it is never, even briefly, readable by others. */
static fleet_err check_db_file(struct fleet_store *st, int dfd, const char *path)
{
	int fd = openat(dfd, FLEET_STORE_FILE, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return st_fail_errno(st, FLEET_STORE_E_IO, errno, "cannot open %s", path);
	struct stat sb;
	fleet_err e = FLEET_STORE_OK;
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))
		e = st_fail(st, FLEET_STORE_E_UNSAFE, "%s is not a regular file", path);
	else if (sb.st_uid != geteuid() || (sb.st_mode & 077))
		e = st_fail(st, FLEET_STORE_E_UNSAFE,
			    "%s must be owned by uid %u with mode 0600 (it is %03o)", path,
			    (unsigned)geteuid(), (unsigned)(sb.st_mode & 0777));
	close(fd);
	return e;
}

/* FLEET_STORE_OPERATOR (store.h): the daemon's directory and file, opened
 * by root (or their owner) to write beside the daemon. The same closure to
 * others as check_dir and check_db_file, with the directory's owner in
 * place of our own uid; nothing is created. */
static fleet_err check_operator(struct fleet_store *st, const char *dir, const char *path)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return st_fail_errno(st, errno == ENOENT ? FLEET_STORE_E_NOT_FOUND : FLEET_STORE_E_IO,
				     errno, "cannot open the state directory %s", dir);
	struct stat ds, fs;
	fleet_err e = FLEET_STORE_OK;
	int fd = -1;
	if (fstat(dfd, &ds) != 0 || (ds.st_mode & (S_IWGRP | S_IWOTH))) {
		e = st_fail(st, FLEET_STORE_E_UNSAFE,
			    "the state directory %s must not be writable by group or others", dir);
	} else if (geteuid() != 0 && geteuid() != ds.st_uid) {
		e = st_fail(st, FLEET_STORE_E_UNSAFE,
			    "writing the store needs root or its owner, uid %u", (unsigned)ds.st_uid);
	} else if ((fd = openat(dfd, FLEET_STORE_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		int err = errno;
		e = st_fail_errno(st, err == ENOENT ? FLEET_STORE_E_NOT_FOUND : FLEET_STORE_E_IO, err,
				  "no store at %s", path);
	} else if (fstat(fd, &fs) != 0 || !S_ISREG(fs.st_mode)) {
		e = st_fail(st, FLEET_STORE_E_UNSAFE, "%s is not a regular file", path);
	} else if (fs.st_uid != ds.st_uid || (fs.st_mode & 077)) {
		e = st_fail(st, FLEET_STORE_E_UNSAFE,
			    "%s must be owned by its directory's owner, uid %u, with mode 0600 (it is "
			    "uid %u, %03o)", path, (unsigned)ds.st_uid, (unsigned)fs.st_uid,
			    (unsigned)(fs.st_mode & 0777));
	}
	if (fd >= 0)
		close(fd);
	close(dfd);
	return e;
}

/* SQLite's settings (PostgreSQL's are its opener's, db_pg.c). */
static fleet_err configure(struct fleet_store *st)
{
	int on = 0;
	sqlite3 *h = db_sqlite_handle(st->db);
	/* Defensive: no writable_schema, no shadow-table writes, no
	 * double-quoted strings as identifiers; nothing in the file can run
	 * as a trusted function. */
	sqlite3_db_config(h, SQLITE_DBCONFIG_DEFENSIVE, 1, &on);
	sqlite3_db_config(h, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, &on);
	sqlite3_db_config(h, SQLITE_DBCONFIG_DQS_DDL, 0, &on);
	sqlite3_db_config(h, SQLITE_DBCONFIG_DQS_DML, 0, &on);
	sqlite3_busy_timeout(h, FLEET_STORE_BUSY_MS);
	fleet_err e;
	int64_t fk;
	if ((e = exec_const(st, "PRAGMA foreign_keys = ON", "foreign_keys")) ||
	    (e = query_int(st, "PRAGMA foreign_keys", &fk)))
		return e;
	if (fk != 1)
		return st_fail(st, FLEET_STORE_E_IO, "this SQLite does not enforce foreign keys");
	if (st->readonly)
		return exec_const(st, "PRAGMA query_only = ON", "query_only");
	char mode[16];
	/* WAL: readers (fleetctl) never block the daemon. synchronous FULL: a
	 * committed verdict or admission survives a power cut. */
	if ((e = query_text(st, "PRAGMA journal_mode = WAL", mode, sizeof(mode))))
		return e;
	if (strcmp(mode, "wal") != 0)
		return st_fail(st, FLEET_STORE_E_IO, "the store could not enter WAL mode (%s)",
			       mode);
	/* secure_delete: the pages a wiped configuration leaves (store.h,
	 * "Provisions") are zeroed, not left in the file's free list. */
	if ((e = exec_const(st, "PRAGMA secure_delete = ON", "secure_delete")))
		return e;
	return exec_const(st, "PRAGMA synchronous = FULL", "synchronous");
}

static fleet_err check_readonly_schema(struct fleet_store *st)
{
	int64_t have = 0, app = 0;
	fleet_err e = schema_version(st, &have);
	if (e || (e = application_id(st, have, &app)))
		return e;
	if (have == 0 || app != FLEET_STORE_APPLICATION_ID)
		return st_fail(st, FLEET_STORE_E_SCHEMA, "not a fleetd store");
	if (have != FLEET_STORE_SCHEMA_VERSION)
		return st_fail(st, FLEET_STORE_E_SCHEMA,
			       "the store is at schema version %lld and this program reads %d; %s",
			       (long long)have, FLEET_STORE_SCHEMA_VERSION,
			       have < FLEET_STORE_SCHEMA_VERSION ? "start fleetd to migrate it"
								 : "use the matching fleetctl");
	return FLEET_STORE_OK;
}

bool fleet_store_location_is_postgres(const char *location)
{
	return location && (!strncmp(location, "postgres://", 11) ||
			    !strncmp(location, "postgresql://", 13));
}

/* The PostgreSQL store (db_pg.c): no file to check; the server's roles
 * decide who may read and write. A read-only handle's transactions are
 * all read-only (the server refuses its writes, as query_only does on
 * SQLite); the operator's and readers' handles never migrate. */
static fleet_err open_pg(struct fleet_store *st, const char *conninfo, bool operator_mode)
{
	int rc = db_pg_open(conninfo, st->readonly, &st->db);
	if (rc != DB_OK)
		return st_dberr(st, rc, "open the PostgreSQL store");
	return st->readonly || operator_mode ? check_readonly_schema(st) : migrate(st);
}

fleet_err fleet_store_open(const char *state_dir, enum fleet_store_mode mode,
			   struct fleet_store **out, struct fleet_errctx *ec)
{
	*out = NULL;
	struct fleet_store *st = calloc(1, sizeof(*st));
	pthread_mutexattr_t ma;
	bool have_mu = false;
	if (st && pthread_mutexattr_init(&ma) == 0) {
		have_mu = pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE) == 0 &&
			  pthread_mutex_init(&st->mu, &ma) == 0;
		pthread_mutexattr_destroy(&ma);
	}
	if (!have_mu) {
		free(st);
		return fleet_errctx_msg(ec, FLEET_STORE_E_NOMEM, "out of memory");
	}
	st->readonly = mode == FLEET_STORE_READONLY;
	st->pass_lock_fd = -1;
	bool operator_mode = mode == FLEET_STORE_OPERATOR;
	char path[PATH_MAX];
	fleet_err e = FLEET_STORE_OK;
	int dfd = -1;
	if (fleet_store_location_is_postgres(state_dir)) {
		e = open_pg(st, state_dir, operator_mode);
		goto out;
	}
	if (!state_dir || state_dir[0] != '/' ||
	    snprintf(path, sizeof(path), "%s/%s", state_dir, FLEET_STORE_FILE) >= (int)sizeof(path)) {
		e = st_fail(st, FLEET_STORE_E_INVALID, "the state directory must be an absolute path");
		goto out;
	}
	/* Handles on other threads share SQLite's process-wide state (its
	 * allocator, its file locks): only a thread-safe SQLite guards it.
	 * FULLMUTEX keeps SQLite's own lock on the connection too, under the
	 * handle's: a second guard, not the one the contract rests on. */
	if (!sqlite3_threadsafe()) {
		e = st_fail(st, FLEET_STORE_E_IO, "this SQLite is built without thread safety");
		goto out;
	}
	int flags = SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_EXRESCODE | SQLITE_OPEN_FULLMUTEX;
	if (st->readonly) {
		struct stat sb;
		if (stat(path, &sb) != 0) {
			int err = errno;
			e = st_fail_errno(st, err == ENOENT ? FLEET_STORE_E_NOT_FOUND : FLEET_STORE_E_IO,
					  err, "no store at %s", path);
			goto out;
		}
		flags |= SQLITE_OPEN_READONLY;
	} else if (operator_mode) {
		if ((e = check_operator(st, state_dir, path)))
			goto out;
		flags |= SQLITE_OPEN_READWRITE; /* never CREATE */
	} else {
		if ((e = check_dir(st, state_dir, &dfd)) || (e = check_db_file(st, dfd, path)))
			goto out;
		flags |= SQLITE_OPEN_READWRITE;
	}
	int rc = db_sqlite_open(path, flags, &st->db);
	if (rc != DB_OK) {
		e = st_dberr(st, rc, path);
		goto out;
	}
	memcpy(st->dir, state_dir, strlen(state_dir) + 1); /* fits: path held it */
	if ((e = configure(st)))
		goto out;
	/* The operator's handle never migrates: that is the daemon's, at its
	 * start; a fleetctl of another version is refused like a reader. */
	e = st->readonly || operator_mode ? check_readonly_schema(st) : migrate(st);
out:
	if (dfd >= 0)
		close(dfd);
	if (e) {
		fleet_store_errctx(st, e, ec);
		fleet_store_close(st);
		return e;
	}
	*out = st;
	return FLEET_STORE_OK;
}

void fleet_store_close(struct fleet_store *st)
{
	if (!st)
		return;
	fleet_store_snapshot_end(st); /* one left open by its thread */
	fleet_store_pass_unlock(st);
	db_close(st->db);
	pthread_mutex_destroy(&st->mu);
	free(st);
}

const char *fleet_store_errmsg(const struct fleet_store *st)
{
	return st && last_failure.st == st ? last_failure.ec.detail : "";
}

fleet_err fleet_store_errctx(const struct fleet_store *st, fleet_err e, struct fleet_errctx *ec)
{
	if (!ec)
		return e;
	if (st && last_failure.st == st)
		*ec = last_failure.ec;
	else
		memset(ec, 0, sizeof(*ec));
	ec->err = e;
	return e;
}

/*
 * P1: one pass at a time across every fleetd on the store. PostgreSQL: a
 * session advisory lock, released by the server when the holder's
 * connection ends, a killed replica's included. SQLite: flock(2) on
 * pass.lock beside the database, released by the kernel when the holder
 * dies. Never waits: a replica that does not get it skips this pass.
 */
fleet_err fleet_store_pass_lock(struct fleet_store *st, bool *held)
{
	*held = false;
	st_lock(st);
	if (st->pass_lock_held) {
		*held = true;
		return st_unlock(st, FLEET_STORE_OK);
	}
	if (is_pg(st)) {
		int rc = db_pg_try_lock(st->db, DB_PG_PASS_LOCK, held);
		if (rc != DB_OK)
			return st_unlock(st, st_dberr(st, rc, "take the pass lock"));
		st->pass_lock_held = *held;
		return st_unlock(st, FLEET_STORE_OK);
	}
	char path[PATH_MAX];
	if (snprintf(path, sizeof(path), "%s/pass.lock", st->dir) >= (int)sizeof(path))
		return st_unlock(st, st_fail(st, FLEET_STORE_E_INVALID, "state directory too long"));
	int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return st_unlock(st, st_fail_errno(st, FLEET_STORE_E_IO, errno, "cannot open %s",
						   path));
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		int err = errno;
		close(fd);
		if (err == EWOULDBLOCK)
			return st_unlock(st, FLEET_STORE_OK); /* another fleetd's pass runs */
		return st_unlock(st, st_fail_errno(st, FLEET_STORE_E_IO, err, "cannot lock %s",
						   path));
	}
	st->pass_lock_fd = fd;
	st->pass_lock_held = *held = true;
	return st_unlock(st, FLEET_STORE_OK);
}

void fleet_store_pass_unlock(struct fleet_store *st)
{
	if (!st)
		return;
	st_lock(st);
	if (st->pass_lock_held && st->db && is_pg(st))
		db_pg_unlock(st->db, DB_PG_PASS_LOCK);
	if (st->pass_lock_fd >= 0)
		close(st->pass_lock_fd); /* the flock goes with it */
	st->pass_lock_fd = -1;
	st->pass_lock_held = false;
	st_unlock(st, FLEET_STORE_OK);
}

fleet_err fleet_store_snapshot_begin(struct fleet_store *st)
{
	st_lock(st);
	if (st->snapshot)
		return st_unlock(st, st_fail(st, FLEET_STORE_E_INVALID,
					     "a snapshot is already open on this handle"));
	/* DEFERRED: the read transaction starts at the first read and keeps
	 * that state of the file (WAL) until the end; it takes no write lock,
	 * so the daemon's writers never wait for it. */
	int rc = db_begin_snapshot(st->db);
	if (rc != DB_OK)
		return st_unlock(st, st_dberr(st, rc, "begin a snapshot"));
	st->snapshot = true;
	return FLEET_STORE_OK; /* mu stays held: fleet_store_snapshot_end lets it go */
}

void fleet_store_snapshot_end(struct fleet_store *st)
{
	st_lock(st);
	if (st->snapshot) {
		st_rollback(st); /* nothing was written: the snapshot only ends */
		st->snapshot = false;
		pthread_mutex_unlock(&st->mu); /* the begin's */
	}
	pthread_mutex_unlock(&st->mu);
}

fleet_err st_collect(struct fleet_store *st, struct db_stmt *s, size_t elem, size_t max,
		     const char *what,
		     fleet_err (*row)(struct fleet_store *st, struct db_stmt *s, void *el, void *ctx),
		     void *ctx, void (*free_el)(void *el), void **out, size_t *n)
{
	fleet_err e = FLEET_STORE_OK;
	unsigned char *v = NULL;
	size_t cnt = 0, cap = 0;
	int rc;
	*out = NULL;
	*n = 0;
	while ((rc = db_step(s)) == DB_ROW) {
		if (max && cnt == max) {
			e = st_fail(st, FLEET_STORE_E_FULL,
				    "more than %zu %s: too many to list at once", max, what);
			break;
		}
		if (cnt == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			void *nv;
			if (ncap < cap || ncap > SIZE_MAX / elem) {
				e = st_fail(st, FLEET_STORE_E_NOMEM, "result too large");
				break;
			}
			if (!(nv = realloc(v, ncap * elem))) {
				e = st_fail(st, FLEET_STORE_E_NOMEM, "out of memory");
				break;
			}
			v = nv;
			cap = ncap;
		}
		void *el = v + cnt * elem;
		memset(el, 0, elem);
		cnt++; /* counted before it is filled: free_el sees a half-filled one */
		if ((e = row(st, s, el, ctx)) != FLEET_STORE_OK)
			break;
	}
	if (!e && rc != DB_DONE) {
		char w[80];
		snprintf(w, sizeof(w), "list %s", what);
		e = st_dberr(st, rc, w);
	}
	db_finalize(s);
	if (e) {
		for (size_t i = 0; free_el && i < cnt; i++)
			free_el(v + i * elem);
		free(v);
		return e;
	}
	*out = v;
	*n = cnt;
	return FLEET_STORE_OK;
}
