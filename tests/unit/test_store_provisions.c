/*
 * test_store_provisions.c: the store's install runs (store.h,
 * "Provisions", schema version 4). Each rule the store holds itself: one
 * open run per device; the stage moves are compare-and-set; a code burned
 * by a drop or a delivery is refused for ever, after the store is closed
 * and opened again too; the configuration is gone (NULL in the row) once
 * consumed or dropped; one CSR per token (a different uid refused, the same
 * one accepted again); an expired code refused; delivery makes the device
 * active in the same transaction.
 */
#include "tests/testutil.h"
#include "tests/unit/store_schema_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/store/store_location.h"

#include "fleetd/store/store.h"

#define HA "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define HB "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define NOW 1000000

struct fx {
	char *dir;
	char state[512];
	char loc[1024]; /* state, or its PostgreSQL database (store_location.h) */
	struct fleet_store *st;
};

static void reopen(struct fx *f)
{
	if (f->st)
		fleet_store_close(f->st);
	struct fleet_errctx sec = {0};
	if (fleet_store_open(f->loc, FLEET_STORE_RW, &f->st, &sec) != FLEET_STORE_OK)
		fail_msg("open: %s", sec.detail);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	f->dir = make_temp_dir("prov");
	snprintf(f->state, sizeof(f->state), "%s/state", f->dir);
	store_location_new(f->state, f->loc, sizeof(f->loc));
	reopen(f);
	assert_int_equal(fleet_store_device_record_admission(f->st, "w1", "SER-1", 7, HA, HB, NOW),
			 FLEET_STORE_OK);
	assert_int_equal(fleet_store_device_record_admission(f->st, "w2", "SER-2", 8, HB, HA, NOW),
			 FLEET_STORE_OK);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	fleet_store_close(f->st);
	store_location_free(f->loc);
	rm_rf(f->dir);
	free(f->dir);
	free(f);
	return 0;
}

static long long raw_count(struct fx *f, const char *sql)
{
	struct raw *db = raw_open(f->loc);
	long long v = raw_int(db, sql);
	raw_close(db);
	return v;
}

static void hash_of(uint8_t h[32], uint8_t seed)
{
	for (int i = 0; i < 32; i++)
		h[i] = (uint8_t)(seed * 31 + i);
}

static const char config_text[] = "version: v1alpha1\nmachine:\n  type: worker\n";

static fleet_err create(struct fx *f, const char *device, const char *serial, const char *role,
			const char *token, uint8_t seed, int64_t expires, int64_t *id)
{
	uint8_t h[32];
	hash_of(h, seed);
	char wf[64];
	snprintf(wf, sizeof(wf), "install-%s-%u", device, seed);
	struct fleet_store_provision_in in = {
		.device = device, .serial = serial, .role = role, .workflow = wf,
		.token_id = token, .code_hash = h, .config = config_text,
		.config_len = sizeof(config_text) - 1, .now = NOW, .expires_at = expires,
	};
	return fleet_store_provision_create(f->st, &in, id);
}

static int64_t started(struct fx *f, const char *device, const char *serial, const char *token,
		       uint8_t seed)
{
	int64_t id = 0;
	fleet_err e = create(f, device, serial, token ? "worker" : "controlplane", token, seed,
			     NOW + 7200, &id);
	if (e)
		fail_msg("create: %s: %s", fleet_err_str(e), fleet_store_errmsg(f->st));
	assert_int_equal(fleet_store_provision_advance(f->st, id, FLEET_PROV_RENDERED,
						       FLEET_PROV_STARTED, NOW + 1),
			 FLEET_STORE_OK);
	return id;
}

static fleet_err for_code(struct fx *f, uint8_t seed, int64_t now, int64_t *id,
			  struct fleet_buf *b)
{
	uint8_t h[32];
	hash_of(h, seed);
	return fleet_store_provision_config_for_code(f->st, h, now, id, b);
}

static long long config_is_null(struct fx *f, int64_t id)
{
	char sql[128];
	snprintf(sql, sizeof(sql), "SELECT config IS NULL FROM provisions WHERE id = %lld",
		 (long long)id);
	return raw_count(f, sql);
}

static void test_schema_v4(void **state)
{
	struct fx *f = *state;
	assert_true(FLEET_STORE_SCHEMA_VERSION >= 4);
	assert_int_equal(raw_count(f, "SELECT max(version) FROM schema_migrations"),
			 FLEET_STORE_SCHEMA_VERSION);
	assert_int_equal(raw_count(f, store_location_pg()
					      ? "SELECT count(*) FROM pg_indexes WHERE indexname = "
						"'provisions_one_open'"
					      : "SELECT count(*) FROM sqlite_schema WHERE name = "
						"'provisions_one_open'"), 1);
	/* The store's own connection zeroes what it frees. */
	assert_int_equal(raw_count(f, "SELECT count(*) FROM schema_migrations WHERE version = 4 "
				    "AND name = 'provisions'"), 1);
}

static void test_one_open_per_device(void **state)
{
	struct fx *f = *state;
	int64_t a, b;
	assert_int_equal(create(f, "w1", "SER-1", "worker", "abc123", 1, NOW + 7200, &a), 0);
	/* A second open run for w1: refused, at each open stage. */
	assert_int_equal(create(f, "w1", "SER-1", "worker", "abc124", 2, NOW + 7200, &b),
			 FLEET_STORE_E_CONFLICT);
	assert_int_equal(fleet_store_provision_advance(f->st, a, FLEET_PROV_RENDERED,
						       FLEET_PROV_STARTED, NOW),
			 FLEET_STORE_OK);
	assert_int_equal(create(f, "w1", "SER-1", "worker", "abc124", 2, NOW + 7200, &b),
			 FLEET_STORE_E_CONFLICT);
	assert_int_equal(fleet_store_provision_consume(f->st, a, NOW + 2), FLEET_STORE_OK);
	assert_int_equal(create(f, "w1", "SER-1", "worker", "abc124", 2, NOW + 7200, &b),
			 FLEET_STORE_E_CONFLICT); /* delivered is still open */
	/* Another device is not held back. */
	assert_int_equal(create(f, "w2", "SER-2", "worker", "abc125", 3, NOW + 7200, &b), 0);
	/* Once w1's run is done, a new one may start. */
	assert_int_equal(fleet_store_provision_advance(f->st, a, FLEET_PROV_DELIVERED,
						       FLEET_PROV_DONE, NOW + 3),
			 FLEET_STORE_OK);
	assert_int_equal(create(f, "w1", "SER-1", "worker", "abc126", 4, NOW + 7200, &b), 0);
	/* A dropped run frees the device too. */
	assert_int_equal(fleet_store_provision_drop(f->st, b, "workflow-failed", NOW + 4), 0);
	assert_int_equal(create(f, "w1", "SER-1", "worker", "abc127", 5, NOW + 7200, &b), 0);
}

static void test_input_refused(void **state)
{
	struct fx *f = *state;
	int64_t id;
	/* The device must be the store's, with its serial. */
	assert_int_equal(create(f, "w9", "SER-9", "worker", "abc123", 1, NOW + 1, &id),
			 FLEET_STORE_E_NOT_FOUND);
	assert_int_equal(create(f, "w1", "SER-2", "worker", "abc123", 1, NOW + 1, &id),
			 FLEET_STORE_E_NOT_FOUND);
	/* A worker needs a token id of its form; a control plane has none. */
	assert_int_equal(create(f, "w1", "SER-1", "worker", NULL, 1, NOW + 1, &id),
			 FLEET_STORE_E_INVALID);
	assert_int_equal(create(f, "w1", "SER-1", "worker", "ABC123", 1, NOW + 1, &id),
			 FLEET_STORE_E_INVALID);
	assert_int_equal(create(f, "w1", "SER-1", "controlplane", "abc123", 1, NOW + 1, &id),
			 FLEET_STORE_E_INVALID);
	assert_int_equal(create(f, "w1", "SER-1", "none", NULL, 1, NOW + 1, &id),
			 FLEET_STORE_E_INVALID);
	assert_int_equal(create(f, "w1", "SER-1", "worker", "abc123", 1, NOW, &id),
			 FLEET_STORE_E_INVALID); /* expires when created */
	uint8_t h[32];
	hash_of(h, 1);
	static uint8_t big[FLEET_STORE_CONFIG_MAX + 1];
	struct fleet_store_provision_in in = {
		.device = "w1", .serial = "SER-1", .role = "worker", .workflow = "wf",
		.token_id = "abc123", .code_hash = h, .config = big,
		.config_len = sizeof(big), .now = NOW, .expires_at = NOW + 1,
	};
	assert_int_equal(fleet_store_provision_create(f->st, &in, &id), FLEET_STORE_E_INVALID);
	in.config_len = FLEET_STORE_CONFIG_MAX; /* at the cap: taken */
	assert_int_equal(fleet_store_provision_create(f->st, &in, &id), FLEET_STORE_OK);
	/* The same token id for another run: refused. */
	assert_int_equal(create(f, "w2", "SER-2", "worker", "abc123", 2, NOW + 1, &id),
			 FLEET_STORE_E_CONFLICT);
}

static void test_cas(void **state)
{
	struct fx *f = *state;
	int64_t id;
	assert_int_equal(create(f, "w1", "SER-1", "worker", "abc123", 1, NOW + 7200, &id), 0);
	struct fleet_store_provision p;
	assert_int_equal(fleet_store_provision_get(f->st, id, &p), 0);
	assert_int_equal(p.stage, FLEET_PROV_RENDERED);
	assert_int_equal(p.token_state, FLEET_TOKEN_PENDING);
	assert_string_equal(p.token_id, "abc123");
	assert_string_equal(p.role, "worker");
	/* From the wrong stage: CONFLICT, nothing changed. */
	assert_int_equal(fleet_store_provision_advance(f->st, id, FLEET_PROV_DELIVERED,
						       FLEET_PROV_DONE, NOW),
			 FLEET_STORE_E_CONFLICT);
	assert_int_equal(fleet_store_provision_consume(f->st, id, NOW), FLEET_STORE_E_CONFLICT);
	/* Moves the store does elsewhere are not advances. */
	assert_int_equal(fleet_store_provision_advance(f->st, id, FLEET_PROV_STARTED,
						       FLEET_PROV_DELIVERED, NOW),
			 FLEET_STORE_E_INVALID);
	assert_int_equal(fleet_store_provision_advance(f->st, 999, FLEET_PROV_RENDERED,
						       FLEET_PROV_STARTED, NOW),
			 FLEET_STORE_E_NOT_FOUND);
	bool yes = true;
	assert_int_equal(fleet_store_provision_ever_started(f->st, "w1", &yes), 0);
	assert_false(yes);
	assert_int_equal(fleet_store_provision_advance(f->st, id, FLEET_PROV_RENDERED,
						       FLEET_PROV_STARTED, NOW + 5),
			 0);
	assert_int_equal(fleet_store_provision_get(f->st, id, &p), 0);
	assert_int_equal(p.stage, FLEET_PROV_STARTED);
	assert_int_equal(p.token_state, FLEET_TOKEN_CREATED); /* was pending */
	assert_int_equal(p.started_at, NOW + 5);
	/* The second, racing start: CONFLICT. */
	assert_int_equal(fleet_store_provision_advance(f->st, id, FLEET_PROV_RENDERED,
						       FLEET_PROV_STARTED, NOW + 5),
			 FLEET_STORE_E_CONFLICT);
	assert_int_equal(fleet_store_provision_ever_started(f->st, "w1", &yes), 0);
	assert_true(yes);
	/* Dropped after it started: it still ran a Workflow. */
	assert_int_equal(fleet_store_provision_drop(f->st, id, "workflow-deleted", NOW + 6), 0);
	assert_int_equal(fleet_store_provision_drop(f->st, id, "workflow-deleted", NOW + 6),
			 FLEET_STORE_E_CONFLICT);
	assert_int_equal(fleet_store_provision_drop(f->st, 999, "x", NOW), FLEET_STORE_E_NOT_FOUND);
	assert_int_equal(fleet_store_provision_ever_started(f->st, "w1", &yes), 0);
	assert_true(yes);
	assert_int_equal(fleet_store_provision_ever_started(f->st, "w2", &yes), 0);
	assert_false(yes);
	assert_int_equal(fleet_store_provision_get(f->st, id, &p), 0);
	assert_int_equal(p.stage, FLEET_PROV_DROPPED);
	assert_string_equal(p.stop_reason, "workflow-deleted");
	assert_int_equal(p.ended_at, NOW + 6);
}

/* Delivery: served while started; consumed once, in one transaction with
 * the device's state; then burned, after a reopen too. */
static void test_consume_burns(void **state)
{
	struct fx *f = *state;
	int64_t id = started(f, "w1", "SER-1", "abc123", 1), got = 0;
	struct fleet_buf b;
	fb_init_secret(&b, FLEET_STORE_CONFIG_MAX);
	assert_int_equal(for_code(f, 1, NOW + 10, &got, &b), FLEET_STORE_OK);
	assert_int_equal(got, id);
	assert_int_equal(b.len, sizeof(config_text) - 1);
	assert_memory_equal(b.data, config_text, b.len);
	assert_int_equal(for_code(f, 99, NOW + 10, &got, &b), FLEET_STORE_E_NOT_FOUND);
	assert_int_equal(b.len, 0);

	struct fleet_store_device dev;
	assert_int_equal(fleet_store_device_get_by_name(f->st, "w1", &dev), 0);
	assert_string_equal(dev.state, "admitted");
	assert_int_equal(fleet_store_provision_consume(f->st, id, NOW + 11), FLEET_STORE_OK);
	assert_int_equal(fleet_store_device_get_by_name(f->st, "w1", &dev), 0);
	assert_string_equal(dev.state, "active");
	assert_int_equal(config_is_null(f, id), 1);
	struct fleet_store_provision p;
	assert_int_equal(fleet_store_provision_get(f->st, id, &p), 0);
	assert_int_equal(p.stage, FLEET_PROV_DELIVERED);
	assert_int_equal(p.delivered_at, NOW + 11);
	assert_int_equal(p.ended_at, 0);
	/* Exactly once. */
	assert_int_equal(fleet_store_provision_consume(f->st, id, NOW + 12), FLEET_STORE_E_CONFLICT);
	assert_int_equal(for_code(f, 1, NOW + 12, &got, &b), FLEET_STORE_E_STATE);
	assert_int_equal(got, id);
	assert_int_equal(b.len, 0);
	/* A code hash once used is never taken again (no new run with it). */
	assert_int_equal(create(f, "w2", "SER-2", "worker", "abc124", 1, NOW + 7200, &got),
			 FLEET_STORE_E_CONFLICT);
	/* Across restarts. */
	reopen(f);
	assert_int_equal(for_code(f, 1, NOW + 13, &got, &b), FLEET_STORE_E_STATE);
	assert_int_equal(fleet_store_provision_consume(f->st, id, NOW + 13), FLEET_STORE_E_CONFLICT);
	/* Done keeps it burned. */
	assert_int_equal(fleet_store_provision_advance(f->st, id, FLEET_PROV_DELIVERED,
						       FLEET_PROV_DONE, NOW + 14), 0);
	assert_int_equal(for_code(f, 1, NOW + 15, &got, &b), FLEET_STORE_E_STATE);
	fb_free(&b);
}

static void test_control_plane_done_at_delivery(void **state)
{
	struct fx *f = *state;
	int64_t id = started(f, "w2", "SER-2", NULL, 2);
	struct fleet_store_provision p;
	assert_int_equal(fleet_store_provision_get(f->st, id, &p), 0);
	assert_int_equal(p.token_state, FLEET_TOKEN_NONE);
	assert_string_equal(p.token_id, "");
	assert_int_equal(fleet_store_provision_token_set(f->st, id, FLEET_TOKEN_CREATED),
			 FLEET_STORE_E_INVALID);
	assert_int_equal(fleet_store_provision_consume(f->st, id, NOW + 20), 0);
	assert_int_equal(fleet_store_provision_get(f->st, id, &p), 0);
	assert_int_equal(p.stage, FLEET_PROV_DONE);
	assert_int_equal(p.delivered_at, NOW + 20);
	assert_int_equal(p.ended_at, NOW + 20);
	assert_int_equal(config_is_null(f, id), 1);
}

static void test_drop_burns(void **state)
{
	struct fx *f = *state;
	int64_t id = started(f, "w1", "SER-1", "abc123", 3), got;
	struct fleet_buf b;
	fb_init_secret(&b, FLEET_STORE_CONFIG_MAX);
	assert_int_equal(config_is_null(f, id), 0);
	assert_int_equal(fleet_store_provision_drop(f->st, id, "expired", NOW + 30), 0);
	assert_int_equal(config_is_null(f, id), 1);
	assert_int_equal(for_code(f, 3, NOW + 31, &got, &b), FLEET_STORE_E_STATE);
	/* A drop and a delivery race: whichever is second changes nothing. */
	assert_int_equal(fleet_store_provision_consume(f->st, id, NOW + 31), FLEET_STORE_E_CONFLICT);
	struct fleet_store_device dev;
	assert_int_equal(fleet_store_device_get_by_name(f->st, "w1", &dev), 0);
	assert_string_equal(dev.state, "admitted");
	reopen(f);
	assert_int_equal(for_code(f, 3, NOW + 32, &got, &b), FLEET_STORE_E_STATE);
	/* A rendered run that never started is dropped too (a failed start). */
	int64_t id2;
	assert_int_equal(create(f, "w1", "SER-1", "worker", "abc124", 4, NOW + 7200, &id2), 0);
	assert_int_equal(for_code(f, 4, NOW + 33, &got, &b), FLEET_STORE_E_CONFLICT);
	assert_int_equal(fleet_store_provision_drop(f->st, id2, "start-failed", NOW + 33), 0);
	assert_int_equal(config_is_null(f, id2), 1);
	assert_int_equal(for_code(f, 4, NOW + 34, &got, &b), FLEET_STORE_E_STATE);
	fb_free(&b);
}

static void test_expired_refused(void **state)
{
	struct fx *f = *state;
	int64_t id, got;
	assert_int_equal(create(f, "w1", "SER-1", "worker", "abc123", 5, NOW + 100, &id), 0);
	assert_int_equal(fleet_store_provision_advance(f->st, id, FLEET_PROV_RENDERED,
						       FLEET_PROV_STARTED, NOW + 1), 0);
	struct fleet_buf b;
	fb_init_secret(&b, FLEET_STORE_CONFIG_MAX);
	assert_int_equal(for_code(f, 5, NOW + 99, &got, &b), FLEET_STORE_OK);
	assert_int_equal(for_code(f, 5, NOW + 100, &got, &b), FLEET_STORE_E_STATE);
	assert_int_equal(b.len, 0);
	assert_int_equal(got, id);
	fb_free(&b);
}

static void test_csr_once_per_token(void **state)
{
	struct fx *f = *state;
	int64_t id;
	assert_int_equal(create(f, "w1", "SER-1", "worker", "abc123", 6, NOW + 7200, &id), 0);
	/* No Secret yet: nothing to approve for. */
	assert_int_equal(fleet_store_provision_csr_approve(f->st, id, "csr-1", "uid-1", NOW),
			 FLEET_STORE_E_STATE);
	assert_int_equal(fleet_store_provision_csr_issued(f->st, id), FLEET_STORE_E_STATE);
	assert_int_equal(fleet_store_provision_advance(f->st, id, FLEET_PROV_RENDERED,
						       FLEET_PROV_STARTED, NOW), 0);
	assert_int_equal(fleet_store_provision_csr_approve(f->st, id, "csr-1", "uid-1", NOW + 1), 0);
	/* The same CSR again (a retry after a crash): OK. */
	assert_int_equal(fleet_store_provision_csr_approve(f->st, id, "csr-1", "uid-1", NOW + 2), 0);
	/* Another CSR for the same token: refused, whatever its name. */
	assert_int_equal(fleet_store_provision_csr_approve(f->st, id, "csr-2", "uid-2", NOW + 3),
			 FLEET_STORE_E_CONFLICT);
	assert_int_equal(fleet_store_provision_csr_approve(f->st, id, "csr-1", "uid-2", NOW + 3),
			 FLEET_STORE_E_CONFLICT);
	struct fleet_store_provision p;
	assert_int_equal(fleet_store_provision_get(f->st, id, &p), 0);
	assert_string_equal(p.csr_name, "csr-1");
	assert_string_equal(p.csr_uid, "uid-1");
	assert_int_equal(p.csr_approved_at, NOW + 1);
	assert_false(p.csr_issued);
	assert_int_equal(fleet_store_provision_by_token(f->st, "abc123", &p), 0);
	assert_int_equal(p.id, id);
	assert_int_equal(fleet_store_provision_by_token(f->st, "zzz999", &p),
			 FLEET_STORE_E_NOT_FOUND);
	/* Open while the approved CSR has no certificate or the token lives. */
	assert_int_equal(fleet_store_provision_consume(f->st, id, NOW + 4), 0);
	assert_int_equal(fleet_store_provision_advance(f->st, id, FLEET_PROV_DELIVERED,
						       FLEET_PROV_DONE, NOW + 5), 0);
	struct fleet_store_provision *v;
	size_t n;
	assert_int_equal(fleet_store_provisions_list(f->st, true, &v, &n), 0);
	assert_int_equal(n, 1);
	fleet_store_provisions_free(v, n);
	if (fleet_store_provision_csr_issued(f->st, id) != 0)
		fail_msg("csr issued: %s", fleet_store_errmsg(f->st));
	assert_int_equal(fleet_store_provisions_list(f->st, true, &v, &n), 0);
	assert_int_equal(n, 1); /* the token is still created */
	fleet_store_provisions_free(v, n);
	assert_int_equal(fleet_store_provision_token_set(f->st, id, FLEET_TOKEN_DELETED), 0);
	assert_int_equal(fleet_store_provisions_list(f->st, true, &v, &n), 0);
	assert_int_equal(n, 0);
	fleet_store_provisions_free(v, n);
	assert_int_equal(fleet_store_provisions_list(f->st, false, &v, &n), 0);
	assert_int_equal(n, 1);
	assert_true(v[0].csr_issued);
	assert_int_equal(v[0].token_state, FLEET_TOKEN_DELETED);
	fleet_store_provisions_free(v, n);
	/* The retry after the token is gone still finds its own approval. */
	assert_int_equal(fleet_store_provision_csr_approve(f->st, id, "csr-1", "uid-1", NOW + 6), 0);
	assert_int_equal(fleet_store_provision_csr_approve(f->st, id, "csr-3", "uid-3", NOW + 6),
			 FLEET_STORE_E_CONFLICT);
	/* A dropped run's token approves nothing. */
	int64_t id2 = started(f, "w2", "SER-2", "abc124", 7);
	assert_int_equal(fleet_store_provision_drop(f->st, id2, "expired", NOW + 7), 0);
	assert_int_equal(fleet_store_provision_csr_approve(f->st, id2, "csr-4", "uid-4", NOW + 8),
			 FLEET_STORE_E_STATE);
}

/* The schema holds the rules even against a writer that is not this code. */
static void test_schema_checks(void **state)
{
	struct fx *f = *state;
	int64_t id = started(f, "w1", "SER-1", "abc123", 8);
	(void)id;
	struct raw *db = raw_open(f->loc);
	/* delivered with its config still there; a second open run; a CP with a token */
	assert_int_not_equal(raw_exec(db, "UPDATE provisions SET stage = 'delivered', "
					      "delivered_at = 1"), RAW_OK);
	char second[512];
	snprintf(second, sizeof(second),
		 "INSERT INTO provisions (device, serial, role, stage, workflow, token_id, "
		 "token_state, code_hash, config, created_at, expires_at) SELECT device, serial, "
		 "role, 'rendered', 'x', 'zzz000', 'pending', %s, config, 1, 2 FROM provisions",
		 store_location_pg() ? "decode(md5('a') || md5('b'), 'hex')" : "randomblob(32)");
	assert_int_not_equal(raw_exec(db, second), RAW_OK);
	assert_int_not_equal(raw_exec(db, "UPDATE provisions SET role = 'controlplane'"), RAW_OK);
	assert_int_equal(raw_exec(db, "UPDATE provisions SET stage = 'dropped', config = NULL, "
					  "stop_reason = 'x', ended_at = 1"),
			 RAW_OK);
	raw_close(db);
}

/* The wiped configuration leaves no bytes in the file (secure_delete):
 * a 100 KiB config spans overflow pages, which are freed, not rewritten. */
static bool file_has(const char *path, const char *needle)
{
	struct fleet_buf b;
	fb_init(&b);
	FILE *fp = fopen(path, "rb");
	if (!fp)
		return false;
	char chunk[65536];
	size_t k;
	while ((k = fread(chunk, 1, sizeof(chunk), fp)) > 0)
		fb_put(&b, chunk, k);
	fclose(fp);
	bool found = b.len && memmem(b.data, b.len, needle, strlen(needle)) != NULL;
	fb_free(&b);
	return found;
}

static void test_wiped_pages_zeroed(void **state)
{
	struct fx *f = *state;
	SKIP_ON_PG("SQLite's secure_delete on its own file (PostgreSQL's files are the server's)");
	static char big[100 * 1024];
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = "SECRETCONFIG-"[i % 13];
	uint8_t h1[32], h2[32];
	hash_of(h1, 40);
	hash_of(h2, 41);
	struct fleet_store_provision_in in = {
		.device = "w1", .serial = "SER-1", .role = "worker", .workflow = "wf1",
		.token_id = "abc123", .code_hash = h1, .config = big, .config_len = sizeof(big),
		.now = NOW, .expires_at = NOW + 100,
	};
	int64_t a, b;
	assert_int_equal(fleet_store_provision_create(f->st, &in, &a), 0);
	in.device = "w2", in.serial = "SER-2", in.workflow = "wf2", in.token_id = "abc124";
	in.code_hash = h2;
	assert_int_equal(fleet_store_provision_create(f->st, &in, &b), 0);
	assert_int_equal(fleet_store_provision_advance(f->st, b, FLEET_PROV_RENDERED,
						       FLEET_PROV_STARTED, NOW), 0);
	char db[600];
	snprintf(db, sizeof(db), "%s/fleetd.db", f->state);
	fleet_store_close(f->st); /* the last connection: checkpointed into the file */
	f->st = NULL;
	assert_true(file_has(db, "SECRETCONFIG-SECRETCONFIG-"));
	reopen(f);
	assert_int_equal(fleet_store_provision_drop(f->st, a, "start-failed", NOW + 1), 0);
	assert_int_equal(fleet_store_provision_consume(f->st, b, NOW + 1), 0);
	fleet_store_close(f->st);
	f->st = NULL;
	assert_false(file_has(db, "SECRETCONFIG-SECRETCONFIG-"));
	reopen(f);
}

/* A version-3 store (before provisions) is migrated in place. */
static void test_migrates_v3(void **state)
{
	struct fx *f = *state;
	fleet_store_close(f->st);
	f->st = NULL;
	struct raw *db = raw_open(f->loc);
	assert_int_equal(raw_exec(db, "DROP TABLE provisions; DROP TABLE reattest_clock; "
					  DROP_JOIN_TABLES
					  "DELETE FROM schema_migrations WHERE version >= 4"), RAW_OK);
	raw_close(db);
	reopen(f);
	assert_int_equal(raw_count(f, "SELECT max(version) FROM schema_migrations"),
			 FLEET_STORE_SCHEMA_VERSION);
	assert_int_equal(raw_count(f, store_location_pg()
					      ? "SELECT count(*) FROM information_schema.tables WHERE "
						"table_name = 'reattest_clock'"
					      : "SELECT count(*) FROM sqlite_schema WHERE name = "
						"'reattest_clock'"), 1);
	assert_int_equal(raw_count(f, "SELECT count(*) FROM devices"), 2);
	started(f, "w1", "SER-1", "abc123", 9);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_schema_v4, setup, teardown),
		cmocka_unit_test_setup_teardown(test_one_open_per_device, setup, teardown),
		cmocka_unit_test_setup_teardown(test_input_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cas, setup, teardown),
		cmocka_unit_test_setup_teardown(test_consume_burns, setup, teardown),
		cmocka_unit_test_setup_teardown(test_control_plane_done_at_delivery, setup, teardown),
		cmocka_unit_test_setup_teardown(test_drop_burns, setup, teardown),
		cmocka_unit_test_setup_teardown(test_expired_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_csr_once_per_token, setup, teardown),
		cmocka_unit_test_setup_teardown(test_schema_checks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wiped_pages_zeroed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_migrates_v3, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
