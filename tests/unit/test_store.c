/*
 * test_store.c: fleetd's SQLite store. The schema and its safety settings,
 * each API, the rules the store enforces itself (it never rebinds a serial
 * to other EKs; re-admission is judged against its own hashes; claims are
 * counted and capped), and a read-only handle that cannot write.
 */
#include "tests/testutil.h"
#include "tests/unit/store_schema_test.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "fleetd/store/store.h"
#include "fleetd/store/store_int.h" /* the join transaction's handle (D tests) */
#include "lib/tpm_alg.h"
#include "lib/hex.h"
#include "tests/unit/x509_mint.h"
#include "tests/store/store_location.h"

#include <sqlite3.h>

#define HA "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define HB "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define HC "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
#define HD "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"

struct fx {
	char *dir;
	char state[512];
	char loc[1024]; /* state, or its PostgreSQL database (store_location.h) */
	struct fleet_store *st;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	f->dir = make_temp_dir("store");
	snprintf(f->state, sizeof(f->state), "%s/state", f->dir);
	store_location_new(f->state, f->loc, sizeof(f->loc));
	struct fleet_errctx sec = {0};
	char err[sizeof(sec.detail) + 80];
	if (fleet_store_open(f->loc, FLEET_STORE_RW, &f->st, &sec) != FLEET_STORE_OK)
		fail_msg("open: %s", fleet_errctx_text(&sec, err, sizeof(err)));
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

/* A raw connection, to look behind the API or damage the store. */
static struct raw *raw(struct fx *f)
{
	return raw_open(f->loc);
}

static void admit(struct fx *f, const char *name, const char *serial, const char *ek,
		  const char *ecc, time_t now)
{
	fleet_err e =
		fleet_store_device_record_admission(f->st, name, serial, 7, ek, ecc, now);
	if (e)
		fail_msg("admit %s: %s: %s", name, fleet_err_str(e), fleet_store_errmsg(f->st));
}

static void test_schema_and_settings(void **state)
{
	struct fx *f = *state;
	struct raw *db = raw(f);
	if (store_location_pg()) {
		/* PostgreSQL: the server's files are its own; the identity row */
		assert_int_equal(raw_int(db, "SELECT application_id FROM store_identity"),
				 0x666c6474);
		assert_int_equal(raw_int(db, "SELECT count(*) FROM store_identity"), 1);
	} else {
		struct stat sb;
		char p[600];
		snprintf(p, sizeof(p), "%s/fleetd.db", f->state);
		assert_int_equal(stat(p, &sb), 0);
		assert_int_equal(sb.st_mode & 0777, 0600);
		assert_int_equal(stat(f->state, &sb), 0);
		assert_int_equal(sb.st_mode & 0777, 0700);
		assert_int_equal(raw_int(db, "SELECT journal_mode = 'wal' FROM pragma_journal_mode"),
				 1);
		assert_int_equal(raw_int(db, "PRAGMA application_id"), 0x666c6474);
	}
	assert_int_equal(raw_int(db, "SELECT max(version) FROM schema_migrations"),
			 FLEET_STORE_SCHEMA_VERSION);
	raw_close(db);
	/* Opening again applies nothing twice. */
	fleet_store_close(f->st);
	assert_int_equal(fleet_store_open(f->loc, FLEET_STORE_RW, &f->st, NULL), 0);
	db = raw(f);
	assert_int_equal(raw_int(db, "SELECT count(*) FROM schema_migrations"),
			 FLEET_STORE_SCHEMA_VERSION);
	raw_close(db);
}

static void test_err_strings(void **state)
{
	(void)state;
	assert_string_equal(fleet_err_str(FLEET_STORE_E_EK_MISMATCH), "ek-mismatch");
	assert_string_equal(fleet_err_str(FLEET_STORE_E_READONLY), "read-only");
	assert_string_equal(fleet_err_str(FLEET_STORE_E_UNSAFE), "unsafe-permissions");
	/* One error space: the store's failures carry the store's layer, and
	 * every code has a string in it. */
	assert_int_equal(fleet_err_layer(FLEET_STORE_E_BUSY), FLEET_LAYER_STORE);
	assert_string_equal(fleet_err_layer_str(FLEET_STORE_E_BUSY), "store");
	for (unsigned c = 1; c < FLEET_CODE__COUNT; c++)
		assert_string_not_equal(fleet_err_str(FLEET_ERR(FLEET_LAYER_STORE, c)),
					"unknown-error");
	assert_string_equal(fleet_err_str(FLEET_ERR(FLEET_LAYER_STORE, FLEET_CODE__COUNT)),
			    "unknown-error");
}

static void test_unsafe_modes_refused(void **state)
{
	struct fx *f = *state;
	SKIP_ON_PG("the modes of a state directory and its file (PostgreSQL's roles decide)");
	fleet_store_close(f->st);
	f->st = NULL;
	struct fleet_store *st;
	struct fleet_errctx sec = {0};
	char p[600];
	assert_int_equal(chmod(f->state, 0770), 0);
	assert_int_equal(fleet_store_open(f->loc, FLEET_STORE_RW, &st, &sec),
			 FLEET_STORE_E_UNSAFE);
	assert_non_null(strstr(sec.detail, "not writable by group or others"));
	assert_int_equal(chmod(f->state, 0700), 0);
	snprintf(p, sizeof(p), "%s/fleetd.db", f->state);
	assert_int_equal(chmod(p, 0640), 0);
	assert_int_equal(fleet_store_open(f->loc, FLEET_STORE_RW, &st, &sec),
			 FLEET_STORE_E_UNSAFE);
	assert_non_null(strstr(sec.detail, "mode 0600"));
	assert_int_equal(chmod(p, 0600), 0);
	assert_int_equal(chown(p, 65534, 65534), 0);
	assert_int_equal(fleet_store_open(f->loc, FLEET_STORE_RW, &st, &sec),
			 FLEET_STORE_E_UNSAFE);
	assert_int_equal(chown(p, 0, 0), 0);
	assert_int_equal(fleet_store_open("relative/dir", FLEET_STORE_RW, &st, &sec),
			 FLEET_STORE_E_INVALID);
	assert_int_equal(fleet_store_open(f->loc, FLEET_STORE_RW, &f->st, &sec), 0);
}

static void test_newer_schema_refused(void **state)
{
	struct fx *f = *state;
	struct raw *db = raw(f);
	assert_int_equal(raw_exec(db, "INSERT INTO schema_migrations VALUES (99, 0, 'future')"), RAW_OK);
	raw_close(db);
	fleet_store_close(f->st);
	f->st = NULL;
	struct fleet_store *st;
	struct fleet_errctx sec = {0};
	assert_int_equal(fleet_store_open(f->loc, FLEET_STORE_RW, &st, &sec),
			 FLEET_STORE_E_SCHEMA);
	assert_non_null(strstr(sec.detail, "newer fleetd"));
	assert_int_equal(fleet_store_open(f->loc, FLEET_STORE_READONLY, &st, &sec),
			 FLEET_STORE_E_SCHEMA);
	db = raw(f);
	raw_exec(db, "DELETE FROM schema_migrations WHERE version = 99");
	raw_close(db);
	assert_int_equal(fleet_store_open(f->loc, FLEET_STORE_RW, &f->st, &sec), 0);
}

static void test_admission_and_lookup(void **state)
{
	struct fx *f = *state;
	admit(f, "w1", "SER-1", HA, HB, 1000);
	struct fleet_store_device d;
	assert_int_equal(fleet_store_device_get_by_serial(f->st, "SER-1", &d), 0);
	assert_string_equal(d.name, "w1");
	assert_string_equal(d.state, FLEET_STORE_STATE_ADMITTED);
	assert_string_equal(d.ek_hash, HA);
	assert_string_equal(d.ek_hash_ecc, HB);
	assert_int_equal(d.first_admitted, 1000);
	assert_int_equal(d.inventory_id, 7);
	assert_false(d.quarantined);
	/* SMBIOS case aside, a serial is one machine. */
	assert_int_equal(fleet_store_device_get_by_serial(f->st, "ser-1", &d), 0);
	assert_int_equal(fleet_store_device_get_by_name(f->st, "w1", &d), 0);
	assert_int_equal(fleet_store_device_get_by_name(f->st, "w2", &d), FLEET_STORE_E_NOT_FOUND);
	/* Again with the same EKs: last_seen moves, first_admitted stays. */
	admit(f, "w1", "SER-1", HA, HB, 2000);
	assert_int_equal(fleet_store_device_get_by_serial(f->st, "SER-1", &d), 0);
	assert_int_equal(d.first_admitted, 1000);
	assert_int_equal(d.last_seen, 2000);
	/* Without an inventory id, the recorded one stays. */
	assert_int_equal(fleet_store_device_record_admission(f->st, "w1", "SER-1", 0, HA, HB, 3000),
			 0);
	assert_int_equal(fleet_store_device_get_by_serial(f->st, "SER-1", &d), 0);
	assert_int_equal(d.inventory_id, 7);
	/* An ECC-only TPM is a device too; ek_hash reads back empty. */
	admit(f, "w3", "SER-3", NULL, HC, 1000);
	assert_int_equal(fleet_store_device_get_by_name(f->st, "w3", &d), 0);
	assert_string_equal(d.ek_hash, "");
	assert_string_equal(d.ek_hash_ecc, HC);
}

static void test_admission_never_rebinds(void **state)
{
	struct fx *f = *state;
	admit(f, "w1", "SER-1", HA, HB, 1000);
	assert_int_equal(fleet_store_device_record_admission(f->st, "w1", "SER-1", 7, HC, HB, 2000),
			 FLEET_STORE_E_EK_MISMATCH);
	assert_int_equal(fleet_store_device_record_admission(f->st, "w1", "SER-1", 7, HA, NULL,
							     2000),
			 FLEET_STORE_E_EK_MISMATCH);
	char h[65], hc[65];
	assert_int_equal(fleet_store_device_ek_hashes(f->st, "SER-1", h, hc), 0);
	assert_string_equal(h, HA);
	assert_string_equal(hc, HB);
	/* The same serial under another name, another serial under this name. */
	assert_int_equal(fleet_store_device_record_admission(f->st, "w9", "SER-1", 7, HA, HB, 2000),
			 FLEET_STORE_E_CONFLICT);
	assert_int_equal(fleet_store_device_record_admission(f->st, "w1", "SER-2", 7, HC, HD, 2000),
			 FLEET_STORE_E_CONFLICT);
	struct fleet_store_device d;
	assert_int_equal(fleet_store_device_get_by_serial(f->st, "SER-2", &d),
			 FLEET_STORE_E_NOT_FOUND);
	assert_int_equal(fleet_store_device_get_by_serial(f->st, "SER-1", &d), 0);
	assert_int_equal(d.last_seen, 1000);
}

static void test_admission_input_refused(void **state)
{
	struct fx *f = *state;
	const char *upper = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
	assert_int_equal(fleet_store_device_record_admission(f->st, "w1", "S", 0, upper, NULL, 1),
			 FLEET_STORE_E_INVALID);
	assert_int_equal(fleet_store_device_record_admission(f->st, "w1", "S", 0, "abc", NULL, 1),
			 FLEET_STORE_E_INVALID);
	assert_int_equal(fleet_store_device_record_admission(f->st, "w1", "S", 0, "", "", 1),
			 FLEET_STORE_E_INVALID);
	assert_int_equal(fleet_store_device_record_admission(f->st, "w\n1", "S", 0, HA, NULL, 1),
			 FLEET_STORE_E_INVALID);
	assert_int_equal(fleet_store_device_record_admission(f->st, "w1", "", 0, HA, NULL, 1),
			 FLEET_STORE_E_INVALID);
	char longname[200];
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_int_equal(fleet_store_device_record_admission(f->st, longname, "S", 0, HA, NULL, 1),
			 FLEET_STORE_E_INVALID);
	/* SQL in a value is a value: bound, never spliced. */
	admit(f, "x'); DROP TABLE devices; --", "S'--", HA, NULL, 1);
	struct fleet_store_device d;
	assert_int_equal(fleet_store_device_get_by_serial(f->st, "S'--", &d), 0);
	assert_string_equal(d.name, "x'); DROP TABLE devices; --");
}

/* check_eks is a decision: its outcome, its reason, and the error that
 * goes with each (EK_MISMATCH, NOT_FOUND, INVALID for a failure). */
static void expect_eks(struct fx *f, const char *serial, const char *h, const char *hc,
		       enum fleet_outcome want, const char *reason)
{
	struct fleet_decision d = fleet_store_device_check_eks(f->st, serial, h, hc);
	assert_int_equal(d.outcome, want);
	if (reason)
		assert_string_equal(d.reason, reason);
	else
		assert_null(d.reason);
	if (want == FLEET_PASSED)
		assert_int_equal(d.err, FLEET_OK);
	else if (want == FLEET_FAILED)
		assert_int_equal(d.err, FLEET_STORE_E_INVALID);
	else
		assert_int_equal(d.err, !strcmp(reason, "ek-mismatch") ? FLEET_STORE_E_EK_MISMATCH
									: FLEET_STORE_E_NOT_FOUND);
}

static void test_readmission_uses_store_hashes(void **state)
{
	struct fx *f = *state;
	admit(f, "w1", "SER-1", HA, HB, 1000);
	admit(f, "w2", "SER-2", HC, NULL, 1000);
	expect_eks(f, "SER-1", HA, HB, FLEET_PASSED, NULL);
	expect_eks(f, "SER-1", HA, HD, FLEET_REFUSED, "ek-mismatch");
	expect_eks(f, "SER-1", HA, NULL, FLEET_REFUSED, "ek-mismatch");
	expect_eks(f, "SER-1", HB, HA, FLEET_REFUSED, "ek-mismatch");
	expect_eks(f, "SER-2", HC, "", FLEET_PASSED, NULL);
	/* An EK the store never proved is a change, not an extra. */
	expect_eks(f, "SER-2", HC, HD, FLEET_REFUSED, "ek-mismatch");
	expect_eks(f, "SER-9", HA, HB, FLEET_REFUSED, "ek-not-recorded");
	/* A value no EK hash can be: the store cannot decide, it refuses nothing. */
	expect_eks(f, "SER-1", "NOT-HEX", HB, FLEET_FAILED, NULL);
}

static void test_state_touch_quarantine(void **state)
{
	struct fx *f = *state;
	admit(f, "w1", "SER-1", HA, HB, 1000);
	struct fleet_store_device d;
	assert_int_equal(fleet_store_device_set_state(f->st, "w1", FLEET_STORE_STATE_ACTIVE), 0);
	assert_int_equal(fleet_store_device_set_state(f->st, "w1", "bogus"), FLEET_STORE_E_INVALID);
	assert_int_equal(fleet_store_device_set_state(f->st, "nope", FLEET_STORE_STATE_ACTIVE),
			 FLEET_STORE_E_NOT_FOUND);
	assert_int_equal(fleet_store_device_touch(f->st, "w1", 5000), 0);
	assert_int_equal(fleet_store_device_set_quarantine(f->st, "w1", true, NULL, 6000),
			 FLEET_STORE_E_INVALID);
	assert_int_equal(fleet_store_device_set_quarantine(f->st, "w1", true, "pcr7-authority",
							   6000), 0);
	assert_int_equal(fleet_store_device_get_by_name(f->st, "w1", &d), 0);
	assert_string_equal(d.state, "active");
	assert_int_equal(d.last_seen, 5000);
	assert_true(d.quarantined);
	assert_string_equal(d.quarantine_reason, "pcr7-authority");
	assert_int_equal(d.quarantined_at, 6000);
	assert_int_equal(fleet_store_device_set_quarantine(f->st, "w1", false, NULL, 7000), 0);
	assert_int_equal(fleet_store_device_get_by_name(f->st, "w1", &d), 0);
	assert_false(d.quarantined);
	assert_string_equal(d.quarantine_reason, "");
	assert_int_equal(d.quarantined_at, 0);
	struct fleet_store_device *all;
	size_t n;
	admit(f, "a0", "SER-0", HC, NULL, 1000);
	assert_int_equal(fleet_store_devices_list(f->st, &all, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(all[0].name, "a0");
	assert_string_equal(all[1].name, "w1");
	free(all);
}

/* The list is never cut short: past the 10,000 rows one LIMIT used to
 * return, the devices behind it (in name order) are still listed, so the
 * pass never takes them for gone. */
static void test_devices_list_whole(void **state)
{
	struct fx *f = *state;
	static const char rows[] =
		"WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 25000) "
		"INSERT INTO devices (name, serial, ek_hash, first_admitted, last_seen) "
		"SELECT printf('d%05d', i), printf('SER-%05d', i), printf('%064d', i), 1, 1 FROM k";
	struct raw *db = raw(f);
	assert_int_equal(raw_exec(db, rows), RAW_OK);
	raw_close(db);
	admit(f, "zz-last", "SER-LAST", HA, NULL, 1000);
	struct fleet_store_device *all;
	size_t n;
	assert_int_equal(fleet_store_devices_list(f->st, &all, &n), FLEET_STORE_OK);
	assert_int_equal(n, 25001);
	for (size_t i = 0; i < 25000; i++) {
		char want[16];
		snprintf(want, sizeof(want), "d%05zu", i + 1);
		assert_string_equal(all[i].name, want);
	}
	assert_string_equal(all[25000].name, "zz-last");
	assert_string_equal(all[25000].ek_hash, HA);
	free(all);
}

static void verdict_for(struct fx *f, const char *device, int64_t time, bool pass)
{
	static const char *const reasons[] = {"pcr7-authority"};
	struct fleet_store_verdict_in v = {.time = time, .device = device, .serial = "SER-V",
					   .session = "0a1b", .pass = pass,
					   .reasons = pass ? NULL : reasons, .n_reasons = pass ? 0 : 1};
	if (fleet_store_verdict_insert(f->st, &v, NULL))
		fail_msg("verdict: %s", fleet_store_errmsg(f->st));
}

static unsigned char *make_cert(size_t *len, time_t not_after);

static void cert_for_dev(struct fx *f, const char *device, const char *kind, time_t not_after,
			 time_t issued_at, bool revoke)
{
	size_t len;
	unsigned char *der = make_cert(&len, not_after);
	char sha1[41];
	if (fleet_store_cert_insert(f->st, device, kind, der, len, issued_at, sha1))
		fail_msg("cert: %s", fleet_store_errmsg(f->st));
	if (revoke)
		assert_int_equal(fleet_store_cert_revoke(f->st, sha1, issued_at + 10), 0);
	free(der);
}

/* A store of several devices: several verdicts and certificates each
 * (interleaved, so neither ids nor times follow the devices), two issued
 * at the same time (the id decides), revoked ones, and devices with
 * neither, with verdicts only, with certificates only; verdicts of no
 * device and of a name no device has. */
static void bulk_store(struct fx *f)
{
	admit(f, "w3", "SER-3", HC, NULL, 1000);
	admit(f, "w1", "SER-1", HA, HB, 1000);
	admit(f, "w2", "SER-2", HB, NULL, 1000);
	admit(f, "w4", "SER-4", HD, NULL, 1000);
	admit(f, "w5", "SER-5", HA, NULL, 1000);
	assert_int_equal(fleet_store_device_set_quarantine(f->st, "w5", true, "pcr4-app", 2000), 0);
	assert_int_equal(fleet_store_device_set_state(f->st, "w2", FLEET_STORE_STATE_RETIRED), 0);
	verdict_for(f, "w1", 100, true);
	verdict_for(f, "w5", 110, true);
	verdict_for(f, "w1", 120, false);
	verdict_for(f, NULL, 125, false);
	verdict_for(f, "w2", 130, false);
	verdict_for(f, "ghost", 135, true);
	verdict_for(f, "w5", 90, false); /* the latest by id, though older in time */
	verdict_for(f, "w1", 140, true);
	cert_for_dev(f, "w1", "ldevid", 1900000000, 1500, false);
	cert_for_dev(f, "w3", "ldevid", 1900000000, 1400, true);
	cert_for_dev(f, "w1", "lak", 1900000000, 1500, false); /* same time: by id */
	cert_for_dev(f, "w1", "ldevid", 1800000000, 1600, true);
	cert_for_dev(f, "w5", "ldevid", 1900000000, 1300, false);
	cert_for_dev(f, "w3", "lak", 1900000000, 1200, false);
	cert_for_dev(f, "w1", "ldevid", 1850000000, 1100, false);
}

/* The bulk reads give exactly what the per-device calls give. */
static void assert_bulk_matches(struct fx *f, struct fleet_store *st)
{
	struct fleet_store_device *all;
	size_t n;
	assert_int_equal(fleet_store_devices_list(st, &all, &n), FLEET_STORE_OK);
	struct fleet_store_device_briefs br;
	assert_int_equal(fleet_store_devices_brief(st, &br), FLEET_STORE_OK);
	assert_int_equal(br.n, n);
	for (size_t i = 0; i < n; i++) {
		const struct fleet_store_device_brief *b = &br.v[i];
		assert_int_equal(b->id, all[i].id);
		assert_int_equal(b->inventory_id, all[i].inventory_id);
		assert_string_equal(b->name, all[i].name);
		assert_string_equal(b->serial, all[i].serial);
		assert_string_equal(b->state, all[i].state);
		assert_int_equal(b->quarantined, all[i].quarantined);
		assert_string_equal(b->ek_hash, all[i].ek_hash);
		assert_string_equal(b->ek_hash_ecc, all[i].ek_hash_ecc);
	}
	struct fleet_store_latest_verdict *lv;
	size_t nlv;
	assert_int_equal(fleet_store_latest_verdicts(st, &lv, &nlv), FLEET_STORE_OK);
	struct fleet_store_cert_brief *cb;
	size_t ncb;
	assert_int_equal(fleet_store_certs_all(st, &cb, &ncb), FLEET_STORE_OK);
	for (size_t i = 1; i < nlv; i++)
		assert_true(lv[i - 1].device_id < lv[i].device_id);
	for (size_t i = 1; i < ncb; i++)
		assert_true(cb[i - 1].device_id <= cb[i].device_id);
	size_t seen_v = 0, seen_c = 0, with_v = 0, with_c = 0, none = 0;
	for (size_t i = 0; i < n; i++) {
		struct fleet_store_verdict *v;
		size_t nv;
		assert_int_equal(fleet_store_verdicts_list(st, all[i].name, 1, &v, &nv), 0);
		const struct fleet_store_latest_verdict *got = NULL;
		for (size_t k = 0; k < nlv; k++)
			if (lv[k].device_id == all[i].id)
				got = &lv[k];
		if (nv == 0) {
			assert_null(got);
		} else {
			assert_non_null(got);
			assert_int_equal(got->id, v[0].id);
			assert_int_equal(got->time, v[0].time);
			assert_int_equal(got->pass, v[0].pass);
			seen_v++;
		}
		free(v);
		struct fleet_store_cert *c;
		size_t nc;
		assert_int_equal(fleet_store_certs_for_device(st, all[i].name, &c, &nc), 0);
		size_t k = 0;
		while (k < ncb && cb[k].device_id != all[i].id)
			k++;
		for (size_t j = 0; j < nc; j++, k++) {
			assert_true(k < ncb);
			assert_int_equal(cb[k].device_id, all[i].id);
			assert_string_equal(cb[k].kind, c[j].kind);
			assert_string_equal(cb[k].sha1, c[j].sha1);
			assert_int_equal(cb[k].not_after, c[j].not_after);
			assert_int_equal(cb[k].issued_at, c[j].issued_at);
			assert_int_equal(cb[k].revoked, c[j].revoked);
			assert_int_equal(cb[k].revoked_at, c[j].revoked_at);
		}
		assert_true(k >= ncb || cb[k].device_id != all[i].id);
		seen_c += nc;
		with_v += nv > 0;
		with_c += nc > 0;
		none += nv == 0 && nc == 0;
		fleet_store_certs_free(c, nc);
	}
	assert_int_equal(seen_v, nlv); /* no row of no device, none of "ghost" */
	assert_int_equal(seen_c, ncb);
	assert_int_equal(with_v, 3);
	assert_int_equal(with_c, 3);
	assert_int_equal(none, 1);
	(void)f;
	free(all);
	fleet_store_device_briefs_free(&br);
	free(lv);
	free(cb);
}

static void test_bulk_reads(void **state)
{
	struct fx *f = *state;
	/* An empty store: empty lists. */
	struct fleet_store_device_briefs br;
	assert_int_equal(fleet_store_devices_brief(f->st, &br), FLEET_STORE_OK);
	assert_int_equal(br.n, 0);
	fleet_store_device_briefs_free(&br);
	struct fleet_store_latest_verdict *lv;
	struct fleet_store_cert_brief *cb;
	size_t n;
	assert_int_equal(fleet_store_latest_verdicts(f->st, &lv, &n), FLEET_STORE_OK);
	assert_int_equal(n, 0);
	free(lv);
	assert_int_equal(fleet_store_certs_all(f->st, &cb, &n), FLEET_STORE_OK);
	assert_int_equal(n, 0);
	free(cb);

	bulk_store(f);
	assert_bulk_matches(f, f->st);
	/* The exact rows, beyond agreeing with the per-device calls. */
	assert_int_equal(fleet_store_latest_verdicts(f->st, &lv, &n), FLEET_STORE_OK);
	assert_int_equal(n, 3);
	struct fleet_store_device d;
	assert_int_equal(fleet_store_device_get_by_name(f->st, "w1", &d), 0);
	assert_int_equal(lv[0].device_id, d.id); /* w3 (id 1) has none: w1, w2, w5 */
	assert_int_equal(lv[0].time, 140);
	assert_true(lv[0].pass);
	assert_false(lv[1].pass); /* w2 */
	assert_int_equal(lv[2].time, 90); /* w5: the highest id, not the latest time */
	free(lv);
	assert_int_equal(fleet_store_certs_all(f->st, &cb, &n), FLEET_STORE_OK);
	assert_int_equal(n, 7);
	/* w1's four: 1600, then the two of 1500 by id (lak inserted after),
	 * then 1100. */
	size_t k = 0;
	while (cb[k].device_id != d.id)
		k++;
	assert_int_equal(cb[k].issued_at, 1600);
	assert_true(cb[k].revoked);
	assert_string_equal(cb[k + 1].kind, "lak");
	assert_string_equal(cb[k + 2].kind, "ldevid");
	assert_int_equal(cb[k + 2].issued_at, 1500);
	assert_int_equal(cb[k + 3].issued_at, 1100);
	free(cb);

	/* In a snapshot, one state: what the other handle commits meanwhile is
	 * not seen by the bulk reads either. */
	struct fleet_store *ro;
	struct fleet_errctx sec = {0};
	assert_int_equal(fleet_store_open(f->loc, FLEET_STORE_READONLY, &ro, &sec), 0);
	assert_int_equal(fleet_store_snapshot_begin(ro), FLEET_STORE_OK);
	assert_int_equal(fleet_store_latest_verdicts(ro, &lv, &n), FLEET_STORE_OK);
	free(lv);
	admit(f, "w6", "SER-6", HB, NULL, 1000);
	verdict_for(f, "w6", 150, true);
	verdict_for(f, "w3", 150, true);
	cert_for_dev(f, "w4", "ldevid", 1900000000, 1700, false);
	assert_int_equal(fleet_store_devices_brief(ro, &br), FLEET_STORE_OK);
	assert_int_equal(br.n, 5);
	fleet_store_device_briefs_free(&br);
	assert_int_equal(fleet_store_latest_verdicts(ro, &lv, &n), FLEET_STORE_OK);
	assert_int_equal(n, 3);
	free(lv);
	assert_int_equal(fleet_store_certs_all(ro, &cb, &n), FLEET_STORE_OK);
	assert_int_equal(n, 7);
	free(cb);
	fleet_store_snapshot_end(ro);
	assert_int_equal(fleet_store_latest_verdicts(ro, &lv, &n), FLEET_STORE_OK);
	assert_int_equal(n, 5);
	free(lv);
	fleet_store_close(ro);
}

/* fleet_store_certs_all keeps certs_for_device's cap a device
 * (FLEET_STORE_LIST_MAX, the newest), and devices after a capped one keep
 * all of theirs. */
static void test_bulk_certs_cap(void **state)
{
	struct fx *f = *state;
	admit(f, "cap1", "SER-C1", HA, NULL, 1000);
	admit(f, "cap2", "SER-C2", HB, NULL, 1000);
	cert_for_dev(f, "cap2", "ldevid", 1900000000, 5, false);
	char sql[768];
	snprintf(sql, sizeof(sql),
		 "WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < %d) "
		 "INSERT INTO certificates (device_id, kind, sha1, not_after, issued_at, der) "
		 "SELECT (SELECT id FROM devices WHERE name = 'cap1'), 'ldevid', "
		 "printf('%%040x', i), 1900000000, i, %s FROM k",
		 FLEET_STORE_LIST_MAX + 1, store_location_pg() ? "decode('30', 'hex')" : "X'30'");
	struct raw *db = raw(f);
	if (raw_exec(db, sql) != RAW_OK)
		fail_msg("insert: %s", raw_errmsg(db));
	raw_close(db);
	struct fleet_store_cert_brief *cb;
	size_t n;
	assert_int_equal(fleet_store_certs_all(f->st, &cb, &n), FLEET_STORE_OK);
	assert_int_equal(n, FLEET_STORE_LIST_MAX + 1); /* cap1's newest 10,000, cap2's one */
	assert_int_equal(cb[0].issued_at, FLEET_STORE_LIST_MAX + 1);
	assert_int_equal(cb[FLEET_STORE_LIST_MAX - 1].issued_at, 2);
	assert_int_equal(cb[FLEET_STORE_LIST_MAX].issued_at, 5);
	struct fleet_store_device d;
	assert_int_equal(fleet_store_device_get_by_name(f->st, "cap2", &d), 0);
	assert_int_equal(cb[FLEET_STORE_LIST_MAX].device_id, d.id);
	struct fleet_store_cert *c;
	size_t nc;
	assert_int_equal(fleet_store_certs_for_device(f->st, "cap1", &c, &nc), 0);
	assert_int_equal(nc, FLEET_STORE_LIST_MAX);
	for (size_t i = 0; i < nc; i++)
		assert_string_equal(c[i].sha1, cb[i].sha1);
	fleet_store_certs_free(c, nc);
	free(cb);
}

static void test_claims(void **state)
{
	struct fx *f = *state;
	assert_int_equal(fleet_store_claim_upsert(f->st, "NEW-1", "unknown-serial", HA, HB, 100), 0);
	assert_int_equal(fleet_store_claim_upsert(f->st, "new-1", "no-binding", HA, HB, 200), 0);
	assert_int_equal(fleet_store_claim_upsert(f->st, "NEW-1", "no-binding", HC, NULL, 300), 0);
	assert_int_equal(fleet_store_claim_upsert(f->st, "NEW-2", "unknown-serial", NULL, NULL, 150),
			 0);
	assert_int_equal(fleet_store_claim_upsert(f->st, "NEW-3", "maybe", HA, HB, 1),
			 FLEET_STORE_E_INVALID);
	struct fleet_store_claim *c;
	size_t n;
	assert_int_equal(fleet_store_claims_list(f->st, &c, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(c[0].serial, "NEW-1"); /* newest first */
	assert_string_equal(c[0].reason, "no-binding");
	assert_int_equal(c[0].count, 3);
	assert_int_equal(c[0].first_seen, 100);
	assert_int_equal(c[0].last_seen, 300);
	assert_int_equal(c[0].n_eks, 2);
	assert_string_equal(c[0].eks[0].ek_hash, HA);
	assert_int_equal(c[0].eks[0].count, 2);
	assert_string_equal(c[0].eks[1].ek_hash, HC);
	assert_string_equal(c[0].eks[1].ek_hash_ecc, "");
	assert_false(c[0].eks_dropped);
	assert_int_equal(c[1].n_eks, 0);
	free(c);
	/* Admission answers the claim, in the same transaction. */
	admit(f, "w1", "NEW-1", HA, HB, 400);
	assert_int_equal(fleet_store_claims_list(f->st, &c, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(c[0].serial, "NEW-2");
	free(c);
}

static void test_claim_caps(void **state)
{
	struct fx *f = *state;
	/* Distinct EK pairs per claim are capped; the claim says so. */
	for (int i = 0; i < FLEET_STORE_CLAIM_EKS + 3; i++) {
		uint8_t b[32];
		char h[65];
		memset(b, i + 1, sizeof(b));
		fleet_hex_encode(b, sizeof(b), h);
		assert_int_equal(fleet_store_claim_upsert(f->st, "X", "unknown-serial", h, NULL, i), 0);
	}
	struct fleet_store_claim *c;
	size_t n;
	assert_int_equal(fleet_store_claims_list(f->st, &c, &n), 0);
	assert_int_equal(c[0].n_eks, FLEET_STORE_CLAIM_EKS);
	assert_int_equal(c[0].count, FLEET_STORE_CLAIM_EKS + 3);
	assert_true(c[0].eks_dropped);
	free(c);
	/* One TPM may claim a few serials, not the table. */
	char serial[16];
	for (int i = 0; i < FLEET_STORE_CLAIMS_PER_EK; i++) {
		snprintf(serial, sizeof(serial), "P%d", i);
		assert_int_equal(fleet_store_claim_upsert(f->st, serial, "unknown-serial", HD, HC, 9),
				 0);
	}
	assert_int_equal(fleet_store_claim_upsert(f->st, "P-more", "unknown-serial", HD, HC, 9),
			 FLEET_STORE_E_FULL);
	assert_int_equal(fleet_store_claim_upsert(f->st, "P0", "unknown-serial", HD, HC, 10), 0);
	assert_int_equal(fleet_store_claim_upsert(f->st, "P-more", "unknown-serial", HD, NULL, 9),
			 0); /* another EK pair */
	/* The number of claims is capped: fill the table behind the API. */
	struct raw *db = raw(f);
	assert_int_equal(
		raw_exec(db,
			     "WITH RECURSIVE n(i) AS (SELECT 2 UNION ALL SELECT i + 1 FROM n "
			     "WHERE i < 10000) INSERT INTO claims (serial, reason, first_seen, "
			     "last_seen, count) SELECT 'F' || i, 'unknown-serial', 1, 1, 1 FROM n"),
		RAW_OK);
	raw_close(db);
	assert_int_equal(fleet_store_claim_upsert(f->st, "ONE-MORE", "unknown-serial", HA, NULL, 5),
			 FLEET_STORE_E_FULL);
	/* A known claim still counts. */
	assert_int_equal(fleet_store_claim_upsert(f->st, "F77", "no-binding", HA, NULL, 5), 0);
}

static void test_verdicts(void **state)
{
	struct fx *f = *state;
	const char *reasons[] = {"pcr7-authority", "pcr4-app"};
	struct fleet_store_verdict_in v = {.time = 100, .device = "w1", .serial = "SER-1",
					   .session = "0a1b", .pass = true, .ek_hash = HA};
	int64_t id;
	assert_int_equal(fleet_store_verdict_insert(f->st, &v, &id), 0);
	v.time = 200;
	v.pass = false;
	v.reasons = reasons;
	v.n_reasons = 2;
	v.ek_hash_ecc = HB;
	assert_int_equal(fleet_store_verdict_insert(f->st, &v, NULL), 0);
	struct fleet_store_verdict_in other = {.time = 300, .serial = "SER-9", .session = "ff",
					       .pass = false, .reasons = reasons, .n_reasons = 1};
	assert_int_equal(fleet_store_verdict_insert(f->st, &other, NULL), 0);
	struct fleet_store_verdict *out;
	size_t n;
	assert_int_equal(fleet_store_verdicts_list(f->st, NULL, 10, &out, &n), 0);
	assert_int_equal(n, 3);
	assert_string_equal(out[0].serial, "SER-9");
	assert_string_equal(out[0].device, "");
	assert_int_equal(out[2].id, id);
	assert_true(out[2].pass);
	assert_int_equal(out[2].n_reasons, 0);
	free(out);
	assert_int_equal(fleet_store_verdicts_list(f->st, "w1", 1, &out, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(out[0].time, 200);
	assert_false(out[0].pass);
	assert_int_equal(out[0].n_reasons, 2);
	assert_string_equal(out[0].reasons[1], "pcr4-app");
	assert_string_equal(out[0].ek_hash_ecc, HB);
	free(out);
	assert_int_equal(fleet_store_verdicts_list(f->st, NULL, 0, &out, &n), FLEET_STORE_E_INVALID);
	/* What a verdict cannot be. */
	struct fleet_store_verdict_in bad = v;
	bad.pass = true;
	assert_int_equal(fleet_store_verdict_insert(f->st, &bad, NULL), FLEET_STORE_E_INVALID);
	bad = v;
	bad.n_reasons = 0;
	assert_int_equal(fleet_store_verdict_insert(f->st, &bad, NULL), FLEET_STORE_E_INVALID);
	bad = v;
	bad.session = "XYZ";
	assert_int_equal(fleet_store_verdict_insert(f->st, &bad, NULL), FLEET_STORE_E_INVALID);
	const char *ctl[] = {"bad\x1b[31m"};
	bad = v;
	bad.reasons = ctl;
	bad.n_reasons = 1;
	assert_int_equal(fleet_store_verdict_insert(f->st, &bad, NULL), FLEET_STORE_E_INVALID);
	bad = v;
	bad.n_reasons = FLEET_STORE_MAX_REASONS + 1;
	assert_int_equal(fleet_store_verdict_insert(f->st, &bad, NULL), FLEET_STORE_E_INVALID);
}

static unsigned char *make_cert(size_t *len, time_t not_after)
{
	EVP_PKEY *k = mint_key_ec();
	struct mint m = {.key = k, .cn = "w1", .not_before = 1000, .not_after = not_after};
	X509 *x = mint_cert(&m);
	unsigned char *der = mint_der(x, len);
	X509_free(x);
	EVP_PKEY_free(k);
	return der;
}

static void test_certificates(void **state)
{
	struct fx *f = *state;
	admit(f, "w1", "SER-1", HA, HB, 1000);
	size_t len;
	unsigned char *der = make_cert(&len, 1900000000);
	char sha1[41], want[41];
	unsigned char md[20];
	unsigned int mdlen;
	EVP_Digest(der, len, md, &mdlen, EVP_sha1(), NULL);
	fleet_hex_encode(md, 20, want);
	assert_int_equal(fleet_store_cert_insert(f->st, "w1", "ldevid", der, len, 1500, sha1), 0);
	assert_string_equal(sha1, want);
	assert_int_equal(fleet_store_cert_insert(f->st, "w1", "ldevid", der, len, 1500, NULL),
			 FLEET_STORE_E_CONFLICT);
	assert_int_equal(fleet_store_cert_insert(f->st, "nobody", "lak", der, len, 1500, NULL),
			 FLEET_STORE_E_NOT_FOUND);
	assert_int_equal(fleet_store_cert_insert(f->st, "w1", "tls", der, len, 1500, NULL),
			 FLEET_STORE_E_INVALID);
	/* The store reads the DER itself: not a certificate, or one with
	 * bytes after it, is refused. */
	unsigned char junk[64] = {0x30, 0x03, 1, 2, 3};
	assert_int_equal(fleet_store_cert_insert(f->st, "w1", "lak", junk, sizeof(junk), 1, NULL),
			 FLEET_STORE_E_INVALID);
	unsigned char *longer = malloc(len + 1);
	memcpy(longer, der, len);
	longer[len] = 0;
	assert_int_equal(fleet_store_cert_insert(f->st, "w1", "lak", longer, len + 1, 1, NULL),
			 FLEET_STORE_E_INVALID);
	free(longer);
	struct fleet_store_cert *c;
	size_t n;
	assert_int_equal(fleet_store_certs_for_device(f->st, "w1", &c, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(c[0].kind, "ldevid");
	assert_string_equal(c[0].sha1, want);
	assert_int_equal(c[0].not_after, 1900000000);
	assert_int_equal(c[0].issued_at, 1500);
	assert_int_equal(c[0].der_len, len);
	assert_memory_equal(c[0].der, der, len);
	assert_false(c[0].revoked);
	fleet_store_certs_free(c, n);
	assert_int_equal(fleet_store_cert_revoke(f->st, want, 1600), 0);
	assert_int_equal(fleet_store_cert_revoke(f->st, want, 1700), FLEET_STORE_E_NOT_FOUND);
	assert_int_equal(fleet_store_certs_for_device(f->st, "w1", &c, &n), 0);
	assert_true(c[0].revoked);
	assert_int_equal(c[0].revoked_at, 1600);
	fleet_store_certs_free(c, n);
	free(der);
}

static void test_readonly(void **state)
{
	struct fx *f = *state;
	admit(f, "w1", "SER-1", HA, HB, 1000);
	struct fleet_store *ro;
	struct fleet_errctx sec = {0};
	/* Beside the daemon's open handle: WAL lets both be open. */
	assert_int_equal(fleet_store_open(f->loc, FLEET_STORE_READONLY, &ro, &sec), 0);
	struct fleet_store_device d;
	assert_int_equal(fleet_store_device_get_by_serial(ro, "SER-1", &d), 0);
	assert_int_equal(fleet_store_device_record_admission(ro, "w2", "SER-2", 0, HC, NULL, 1),
			 FLEET_STORE_E_READONLY);
	assert_int_equal(fleet_store_claim_upsert(ro, "Z", "unknown-serial", NULL, NULL, 1),
			 FLEET_STORE_E_READONLY);
	assert_int_equal(fleet_store_device_set_quarantine(ro, "w1", true, "x", 1),
			 FLEET_STORE_E_READONLY);
	struct fleet_store_verdict_in v = {.time = 1, .serial = "S", .session = "00", .pass = true};
	assert_int_equal(fleet_store_verdict_insert(ro, &v, NULL), FLEET_STORE_E_READONLY);
	/* A write the daemon makes now is visible to the reader. */
	admit(f, "w2", "SER-2", HC, NULL, 1000);
	assert_int_equal(fleet_store_device_get_by_serial(ro, "SER-2", &d), 0);
	fleet_store_close(ro);
	char missing[600];
	snprintf(missing, sizeof(missing), "%s/nothing-here", f->dir);
	assert_int_equal(fleet_store_open(missing, FLEET_STORE_READONLY, &ro, &sec),
			 FLEET_STORE_E_NOT_FOUND);
	/* errno beside the sentence, the code passed on in the context. */
	assert_int_equal(sec.err, FLEET_STORE_E_NOT_FOUND);
	assert_int_equal(sec.sys_errno, ENOENT);
	assert_non_null(strstr(sec.detail, "no store at "));
	assert_null(strstr(sec.detail, "No such file"));
}

/* The owner's lift (fleetctl quarantine lift) on an operator handle beside
 * the daemon's: one compare-and-clear that hands back the quarantine it
 * replaced; refused for an unknown device, one not quarantined, and on a
 * read-only handle. The operator handle never creates or migrates. */
static void test_lift_quarantine(void **state)
{
	struct fx *f = *state;
	admit(f, "w1", "SER-1", HA, HB, 1000);
	admit(f, "w2", "SER-2", HC, NULL, 1000);
	assert_int_equal(fleet_store_device_set_quarantine(f->st, "w1", true, "pcr4-app", 6000), 0);
	struct fleet_store *op, *ro;
	struct fleet_errctx sec = {0};
	char err[sizeof(sec.detail) + 80];
	if (fleet_store_open(f->loc, FLEET_STORE_OPERATOR, &op, &sec))
		fail_msg("operator open: %s", fleet_errctx_text(&sec, err, sizeof(err)));
	char prev[FLEET_STORE_QREASON_MAX + 1] = "unchanged";
	int64_t at = -1;
	assert_int_equal(fleet_store_device_lift_quarantine(op, "nope", prev, &at),
			 FLEET_STORE_E_NOT_FOUND);
	assert_int_equal(fleet_store_device_lift_quarantine(op, "w2", prev, &at),
			 FLEET_STORE_E_STATE);
	assert_non_null(strstr(fleet_store_errmsg(op), "not quarantined"));
	assert_string_equal(prev, "unchanged");
	assert_int_equal(at, -1);
	assert_int_equal(fleet_store_device_lift_quarantine(op, "", prev, &at),
			 FLEET_STORE_E_INVALID);
	assert_int_equal(fleet_store_open(f->loc, FLEET_STORE_READONLY, &ro, &sec), 0);
	assert_int_equal(fleet_store_device_lift_quarantine(ro, "w1", prev, &at),
			 FLEET_STORE_E_READONLY);
	fleet_store_close(ro);
	assert_int_equal(fleet_store_device_lift_quarantine(op, "w1", prev, &at), 0);
	assert_string_equal(prev, "pcr4-app");
	assert_int_equal(at, 6000);
	/* the daemon's handle sees it at once, and a second lift has nothing to do */
	struct fleet_store_device d;
	assert_int_equal(fleet_store_device_get_by_name(f->st, "w1", &d), 0);
	assert_false(d.quarantined);
	assert_string_equal(d.quarantine_reason, "");
	assert_int_equal(d.quarantined_at, 0);
	assert_int_equal(fleet_store_device_lift_quarantine(op, "w1", NULL, NULL),
			 FLEET_STORE_E_STATE);
	fleet_store_close(op);
	/* never created: an operator handle on a directory with no store */
	char missing[600];
	snprintf(missing, sizeof(missing), "%s/nothing-here", f->dir);
	assert_int_equal(fleet_store_open(missing, FLEET_STORE_OPERATOR, &op, &sec),
			 FLEET_STORE_E_NOT_FOUND);
	struct stat sb;
	assert_int_equal(stat(missing, &sb), -1);
	/* never migrated: a store at another version is refused, not upgraded */
	struct raw *db = raw(f);
	assert_int_equal(raw_exec(db,
				      "DELETE FROM schema_migrations WHERE version = "
				      "(SELECT max(version) FROM schema_migrations)"),
			 RAW_OK);
	raw_close(db);
	assert_int_equal(fleet_store_open(f->loc, FLEET_STORE_OPERATOR, &op, &sec),
			 FLEET_STORE_E_SCHEMA);
	db = raw(f);
	assert_int_equal(raw_int(db, "SELECT max(version) FROM schema_migrations"),
			 FLEET_STORE_SCHEMA_VERSION - 1);
	raw_close(db);
}

static void test_damaged_row_is_corrupt(void **state)
{
	struct fx *f = *state;
	admit(f, "w1", "SER-1", HA, HB, 1000);
	struct raw *db = raw(f);
	assert_int_equal(raw_exec(db, store_location_pg() ? "UPDATE devices SET name = 'w' || chr(27) || '1'"
							 : "UPDATE devices SET name = 'w' || char(27) || '1'"), RAW_OK);
	raw_close(db);
	struct fleet_store_device d;
	assert_int_equal(fleet_store_device_get_by_serial(f->st, "SER-1", &d),
			 FLEET_STORE_E_CORRUPT);
}

#define SESS1 "1111111111111111111111111111111111111111111111111111111111111111"
#define SESS2 "2222222222222222222222222222222222222222222222222222222222222222"

static void issue(struct fx *f, const char *session, const char *serial, const char *name,
		  char lak[41], char ldevid[41])
{
	size_t l1, l2;
	unsigned char *d1 = make_cert(&l1, 1900000000), *d2 = make_cert(&l2, 1900000000);
	struct fleet_store_issue_in in = {.session = session, .serial = serial, .device = name,
					  .lak_der = d1, .lak_len = l1, .ldevid_der = d2,
					  .ldevid_len = l2, .now = 1500};
	assert_int_equal(fleet_store_provisional_issue(f->st, &in, lak, ldevid), FLEET_STORE_OK);
	free(d1);
	free(d2);
}

static size_t raw_count(struct fx *f, const char *sql)
{
	struct raw *db = raw(f);
	size_t n = (size_t)raw_int(db, sql);
	raw_close(db);
	return n;
}

/* The answer's certificates belong to no device, and nothing else of the
 * admission exists, until fleet_store_admit; which does all of it at once. */
static void test_provisional_then_admit(void **state)
{
	struct fx *f = *state;
	char lak[41], ldevid[41];
	struct fleet_store_device d;
	issue(f, SESS1, "SER-1", "w1", lak, ldevid);
	assert_int_equal(fleet_store_device_get_by_serial(f->st, "SER-1", &d),
			 FLEET_STORE_E_NOT_FOUND);
	assert_int_equal(raw_count(f, "SELECT count(*) FROM certificates"), 0);
	assert_int_equal(raw_count(f, "SELECT count(*) FROM verdicts"), 0);
	assert_int_equal(fleet_store_claim_upsert(f->st, "SER-1", "no-binding", HA, HB, 1400), 0);
	struct fleet_store_admit_in in = {.session = SESS1, .device = "w1", .serial = "SER-1",
					  .inventory_id = 7, .ek_hash = HA, .ek_hash_ecc = HB,
					  .may_create = true, .now = 1600};
	int64_t vid = 0;
	assert_int_equal(fleet_store_admit(f->st, &in, &vid), FLEET_STORE_OK);
	assert_true(vid > 0);
	assert_int_equal(fleet_store_device_get_by_serial(f->st, "SER-1", &d), FLEET_STORE_OK);
	assert_string_equal(d.ek_hash, HA);
	struct fleet_store_cert *c = NULL;
	size_t nc = 0;
	assert_int_equal(fleet_store_certs_for_device(f->st, "w1", &c, &nc), 0);
	assert_int_equal(nc, 2);
	assert_true(!strcmp(c[0].sha1, lak) || !strcmp(c[1].sha1, lak));
	fleet_store_certs_free(c, nc);
	assert_int_equal(raw_count(f, "SELECT count(*) FROM provisional_certs"), 0);
	assert_int_equal(raw_count(f, "SELECT count(*) FROM claims"), 0);
	struct fleet_store_verdict *v = NULL;
	size_t nv = 0;
	assert_int_equal(fleet_store_verdicts_after(f->st, 0, 10, &v, &nv), 0);
	assert_int_equal(nv, 1);
	assert_true(v[0].pass);
	assert_int_equal(v[0].id, vid);
	assert_string_equal(v[0].session, SESS1);
	free(v);
	/* the same session cannot admit twice: its certificates are spent */
	assert_int_equal(fleet_store_admit(f->st, &in, NULL), FLEET_STORE_E_CONFLICT);
}

/* A failure anywhere in the admission leaves nothing of it. */
static void test_admit_is_one_transaction(void **state)
{
	struct fx *f = *state;
	char lak[41], ldevid[41], sha1s[FLEET_STORE_REVOKE_SHA1S][41];
	size_t n;
	admit(f, "w1", "SER-1", HA, HB, 1000); /* a device the store knows with other EKs */
	issue(f, SESS1, "SER-1", "w1", lak, ldevid);
	struct fleet_store_admit_in in = {.session = SESS1, .device = "w1", .serial = "SER-1",
					  .ek_hash = HC, .ek_hash_ecc = HD, .now = 1600};
	assert_int_equal(fleet_store_admit(f->st, &in, NULL), FLEET_STORE_E_EK_MISMATCH);
	assert_int_equal(raw_count(f, "SELECT count(*) FROM certificates"), 0);
	assert_int_equal(raw_count(f, "SELECT count(*) FROM verdicts"), 0);
	assert_int_equal(raw_count(f, "SELECT count(*) FROM provisional_certs"), 2);
	/* past planned: the row must exist */
	in.serial = "SER-9";
	in.device = "w9";
	in.ek_hash = HA;
	in.ek_hash_ecc = HB;
	assert_int_equal(fleet_store_admit(f->st, &in, NULL), FLEET_STORE_E_NOT_FOUND);
	assert_int_equal(raw_count(f, "SELECT count(*) FROM devices"), 1);
	/* revoked first (the reaper won): the confirm admits nothing */
	assert_int_equal(fleet_store_provisional_revoke(f->st, SESS1, "session-expired", 1700,
							sha1s, &n), 0);
	assert_int_equal(n, 2);
	assert_true(!strcmp(sha1s[0], lak) && !strcmp(sha1s[1], ldevid));
	in.serial = "SER-1";
	in.device = "w1";
	assert_int_equal(fleet_store_admit(f->st, &in, NULL), FLEET_STORE_E_CONFLICT);
	assert_int_equal(raw_count(f, "SELECT count(*) FROM verdicts"), 0);
	assert_int_equal(raw_count(f, "SELECT count(*) FROM certificates"), 0);
}

static void test_provisional_revoke_and_prune(void **state)
{
	struct fx *f = *state;
	char a1[41], b1[41], a2[41], b2[41];
	size_t n;
	issue(f, SESS1, "SER-1", "w1", a1, b1);
	issue(f, SESS2, "SER-2", "w2", a2, b2);
	/* one session's only */
	assert_int_equal(fleet_store_provisional_revoke(f->st, SESS2, "binding-changed", 1700,
							NULL, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(raw_count(f, "SELECT count(*) FROM provisional_certs WHERE "
				      "revoked_at IS NULL"), 2);
	/* start-up: all that is left */
	assert_int_equal(fleet_store_provisional_revoke(f->st, NULL, "fleetd-restart", 1800, NULL,
							&n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(fleet_store_provisional_revoke(f->st, NULL, "fleetd-restart", 1800, NULL,
							&n), 0);
	assert_int_equal(n, 0);
	struct fleet_store_cert *c = NULL;
	size_t nc = 0;
	assert_int_equal(fleet_store_provisional_list(f->st, &c, &nc), 0);
	assert_int_equal(nc, 4);
	for (size_t i = 0; i < nc; i++)
		assert_true(c[i].revoked);
	fleet_store_certs_free(c, nc);
	assert_int_equal(fleet_store_provisional_prune(f->st, 1899999999, &n), 0);
	assert_int_equal(n, 0); /* still valid: kept */
	assert_int_equal(fleet_store_provisional_prune(f->st, 1900000001, &n), 0);
	assert_int_equal(n, 4);
}

/* SS4: on a shared store, start-up revokes only the certificates of
 * sessions no replica holds any more (a row gone with its replica, or
 * reaped before the revoke ran); a session that still has its row keeps
 * them, whichever replica holds it. Run on both engines (the twin). */
static void publish_session(struct fx *f, const char *handle, const char *sid,
			    const char *serial)
{
	struct fleet_store_session r = {.busy_until = 2000};
	enum fleet_store_session_cap cap;
	snprintf(r.handle, sizeof(r.handle), "%s", handle);
	snprintf(r.serial, sizeof(r.serial), "%s", serial);
	snprintf(r.peer, sizeof(r.peer), "192.0.2.7");
	snprintf(r.peer_key, sizeof(r.peer_key), "192.0.2.7");
	assert_int_equal(fleet_store_session_reserve(f->st, &r, 1500, 4, 4, 16, &cap),
			 FLEET_STORE_OK);
	assert_int_equal(cap, FLEET_STORE_SESSION_RESERVED);
	snprintf(r.sid, sizeof(r.sid), "%s", sid);
	uint8_t sealed[16] = {1}; /* opaque to the store (SS: never read here) */
	r.published = true;
	r.sealed = sealed;
	r.sealed_len = sizeof(sealed);
	r.deadline = 9000;
	r.answer_by = 9000;
	assert_int_equal(fleet_store_session_put(f->st, &r), FLEET_STORE_OK);
}

static void test_provisional_revoke_orphans(void **state)
{
	struct fx *f = *state;
	char a1[41], b1[41], a2[41], b2[41], sha1s[FLEET_STORE_REVOKE_SHA1S][41];
	size_t n = 99;
	issue(f, SESS1, "SER-1", "w1", a1, b1);
	issue(f, SESS2, "SER-2", "w2", a2, b2);
	publish_session(f, "0123456789abcdef0123456789abcdef", SESS1, "SER-1");
	/* SESS2 has no row: its two are the orphans, and only they */
	assert_int_equal(fleet_store_provisional_revoke_orphans(f->st, "fleetd-restart", 1800,
								sha1s, &n), FLEET_STORE_OK);
	assert_int_equal(n, 2);
	assert_true(!strcmp(sha1s[0], a2) && !strcmp(sha1s[1], b2));
	assert_int_equal(raw_count(f, "SELECT count(*) FROM provisional_certs WHERE "
				      "revoked_at IS NULL AND session = '" SESS1 "'"), 2);
	assert_int_equal(raw_count(f, "SELECT count(*) FROM provisional_certs WHERE "
				      "revoked_at IS NOT NULL AND revoke_reason = 'fleetd-restart'"),
			 2);
	/* nothing new: nothing revoked, and SESS1's still stand */
	assert_int_equal(fleet_store_provisional_revoke_orphans(f->st, "fleetd-restart", 1900,
								NULL, &n), FLEET_STORE_OK);
	assert_int_equal(n, 0);
	/* its row gone (a replica died after reaping it): now SESS1's too */
	assert_int_equal(fleet_store_session_delete(f->st, "0123456789abcdef0123456789abcdef"),
			 FLEET_STORE_OK);
	assert_int_equal(fleet_store_provisional_revoke_orphans(f->st, "fleetd-restart", 2000,
								sha1s, &n), FLEET_STORE_OK);
	assert_int_equal(n, 2);
	assert_true(!strcmp(sha1s[0], a1) && !strcmp(sha1s[1], b1));
	assert_int_equal(raw_count(f, "SELECT count(*) FROM provisional_certs WHERE "
				      "revoked_at IS NULL"), 0);
}

/* A version-1 store (the tables before provisional certificates) is
 * migrated in place. */
static void test_migrates_v1(void **state)
{
	struct fx *f = *state;
	admit(f, "w1", "SER-1", HA, HB, 1000);
	fleet_store_close(f->st);
	f->st = NULL;
	struct raw *db = raw(f);
	assert_int_equal(raw_exec(db, "DROP TABLE provisional_certs; DROP TABLE "
					  "binding_authors; DROP TABLE provisions; DROP TABLE reattest_clock; "
					  DROP_JOIN_TABLES
					  "DELETE FROM "
					  "schema_migrations WHERE version >= 2"),
			 RAW_OK);
	raw_close(db);
	assert_int_equal(fleet_store_open(f->loc, FLEET_STORE_RW, &f->st, NULL), 0);
	assert_int_equal(raw_count(f, "SELECT max(version) FROM schema_migrations"),
			 FLEET_STORE_SCHEMA_VERSION);
	assert_int_equal(raw_count(f, "SELECT count(*) FROM devices"), 1);
	char lak[41], ldevid[41];
	issue(f, SESS1, "SER-1", "w1", lak, ldevid);
}

/* ---- binding authors (schema version 3) ---------------------------------- */

static struct fleet_store_binding_author author(int64_t id, const char *serial, const char *ek,
						const char *ek_ecc, const char *user,
						int64_t change)
{
	struct fleet_store_binding_author r;
	memset(&r, 0, sizeof(r));
	r.device_id = id;
	snprintf(r.serial, sizeof(r.serial), "%s", serial);
	snprintf(r.approved_ek_hash, sizeof(r.approved_ek_hash), "%s", ek);
	snprintf(r.approved_ek_hash_ecc, sizeof(r.approved_ek_hash_ecc), "%s", ek_ecc);
	snprintf(r.user, sizeof(r.user), "%s", user);
	r.change_id = change;
	r.changed_at = 1000 + change;
	r.recorded_at = 5000;
	return r;
}

/* Record, read, replace, list and forget, each one call; a read-only
 * handle (the pass's) reads them and writes none. */
static void test_binding_authors(void **state)
{
	struct fx *f = *state;
	struct fleet_store_binding_author r = author(42, "SER-42", HA, HB, "terraform", 7), got;
	assert_int_equal(fleet_store_binding_author_get(f->st, 42, &got), FLEET_STORE_E_NOT_FOUND);
	assert_int_equal(fleet_store_binding_author_record(f->st, &r), FLEET_STORE_OK);
	assert_int_equal(fleet_store_binding_author_get(f->st, 42, &got), FLEET_STORE_OK);
	assert_int_equal(got.device_id, 42);
	assert_string_equal(got.serial, "SER-42");
	assert_string_equal(got.approved_ek_hash, HA);
	assert_string_equal(got.approved_ek_hash_ecc, HB);
	assert_string_equal(got.user, "terraform");
	assert_int_equal(got.change_id, 7);
	assert_int_equal(got.changed_at, 1007);
	assert_int_equal(got.recorded_at, 5000);
	assert_int_equal(raw_count(f, "SELECT count(*) FROM binding_authors"), 1);

	/* One row per device: a later proof replaces the earlier one. */
	r = author(42, "SER-42", HC, "", "terraform", 9);
	assert_int_equal(fleet_store_binding_author_record(f->st, &r), FLEET_STORE_OK);
	assert_int_equal(fleet_store_binding_author_get(f->st, 42, &got), FLEET_STORE_OK);
	assert_string_equal(got.approved_ek_hash, HC);
	assert_string_equal(got.approved_ek_hash_ecc, ""); /* NULL in the row */
	assert_int_equal(got.change_id, 9);
	assert_int_equal(raw_count(f, "SELECT count(*) FROM binding_authors WHERE "
				      "approved_ek_hash_ecc IS NULL"), 1);

	r = author(7, "SER-7", HD, "", "terraform", 3);
	assert_int_equal(fleet_store_binding_author_record(f->st, &r), FLEET_STORE_OK);
	struct fleet_store_binding_author *v;
	size_t n;
	assert_int_equal(fleet_store_binding_authors_after(f->st, 0, 10, &v, &n), FLEET_STORE_OK);
	assert_int_equal(n, 2);
	assert_int_equal(v[0].device_id, 7); /* by device id */
	assert_int_equal(v[1].device_id, 42);
	free(v);
	assert_int_equal(fleet_store_binding_authors_after(f->st, 7, 1, &v, &n), FLEET_STORE_OK);
	assert_int_equal(n, 1);
	assert_int_equal(v[0].device_id, 42);
	free(v);
	assert_int_equal(fleet_store_binding_authors_after(f->st, 0, 0, &v, &n),
			 FLEET_STORE_E_INVALID);

	struct fleet_store *ro;
	assert_int_equal(fleet_store_open(f->loc, FLEET_STORE_READONLY, &ro, NULL), 0);
	assert_int_equal(fleet_store_binding_author_get(ro, 7, &got), FLEET_STORE_OK);
	assert_int_equal(fleet_store_binding_author_record(ro, &r), FLEET_STORE_E_READONLY);
	assert_int_equal(fleet_store_binding_author_forget(ro, 7, NULL), FLEET_STORE_E_READONLY);
	fleet_store_close(ro);

	bool forgot = false;
	assert_int_equal(fleet_store_binding_author_forget(f->st, 42, &forgot), FLEET_STORE_OK);
	assert_true(forgot);
	assert_int_equal(fleet_store_binding_author_get(f->st, 42, &got), FLEET_STORE_E_NOT_FOUND);
	/* forgetting what is not there is no error, and says so */
	assert_int_equal(fleet_store_binding_author_forget(f->st, 42, &forgot), FLEET_STORE_OK);
	assert_false(forgot);
	assert_int_equal(fleet_store_binding_author_get(f->st, 7, &got), FLEET_STORE_OK);
}

/* What a record proves: exactly its device id, serial, both values and a
 * change by the author named; nothing else. */
static void test_binding_author_matches(void **state)
{
	(void)state;
	struct fleet_store_binding_author r = author(42, "SER-42", HA, HB, "terraform", 7);
	assert_true(fleet_store_binding_author_matches(&r, 42, "SER-42", HA, HB, "terraform"));
	assert_false(fleet_store_binding_author_matches(NULL, 42, "SER-42", HA, HB, "terraform"));
	assert_false(fleet_store_binding_author_matches(&r, 43, "SER-42", HA, HB, "terraform"));
	assert_false(fleet_store_binding_author_matches(&r, 42, "SER-43", HA, HB, "terraform"));
	assert_false(fleet_store_binding_author_matches(&r, 42, "ser-42", HA, HB, "terraform"));
	assert_false(fleet_store_binding_author_matches(&r, 42, "SER-42", HC, HB, "terraform"));
	assert_false(fleet_store_binding_author_matches(&r, 42, "SER-42", HA, HC, "terraform"));
	assert_false(fleet_store_binding_author_matches(&r, 42, "SER-42", HA, "", "terraform"));
	assert_false(fleet_store_binding_author_matches(&r, 42, "SER-42", HA, NULL, "terraform"));
	assert_false(fleet_store_binding_author_matches(&r, 42, "SER-42", HA, HB, "alice"));
	assert_false(fleet_store_binding_author_matches(&r, 42, "SER-42", HA, HB, ""));
	r = author(42, "SER-42", HA, "", "terraform", 7);
	assert_true(fleet_store_binding_author_matches(&r, 42, "SER-42", HA, NULL, "terraform"));
	assert_true(fleet_store_binding_author_matches(&r, 42, "SER-42", HA, "", "terraform"));
	assert_false(fleet_store_binding_author_matches(&r, 42, "SER-42", HA, HB, "terraform"));
	assert_false(fleet_store_binding_author_matches(&r, 42, "SER-42", "", "", "terraform"));
}

/* A record is a copy of an inventory answer: every field is checked on the
 * way in, so an answer fleetd could not have read as a proof (no hash, a
 * hash that is not one, no change id, no user) is never stored as one;
 * and a row that breaks the rules reads as corrupt, never as a proof. */
static void test_binding_author_input_refused(void **state)
{
	struct fx *f = *state;
	struct fleet_store_binding_author bad[] = {
		author(0, "S", HA, "", "terraform", 1),
		author(-3, "S", HA, "", "terraform", 1),
		author(1, "S", HA, "", "terraform", 0),
		author(1, "", HA, "", "terraform", 1),
		author(1, "S\x1b", HA, "", "terraform", 1),
		author(1, "S", "", HB, "terraform", 1),
		author(1, "S", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "",
		       "terraform", 1),
		author(1, "S", HA, "abc", "terraform", 1),
		author(1, "S", HA, "", "", 1),
		author(1, "S", HA, "", "terra\nform", 1),
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(fleet_store_binding_author_record(f->st, &bad[i]),
				 FLEET_STORE_E_INVALID);
	struct fleet_store_binding_author r = author(1, "S", HA, "", "terraform", 1);
	r.changed_at = -1;
	assert_int_equal(fleet_store_binding_author_record(f->st, &r), FLEET_STORE_E_INVALID);
	assert_int_equal(raw_count(f, "SELECT count(*) FROM binding_authors"), 0);

	/* The schema holds the same rules against another writer. */
	struct raw *db = raw(f);
	assert_int_not_equal(raw_exec(db, "INSERT INTO binding_authors VALUES (1, 'S', "
					      "'xyz', NULL, 'terraform', 1, 1, 1)"),
			     RAW_OK);
	assert_int_not_equal(raw_exec(db, "INSERT INTO binding_authors VALUES (1, 'S', "
					      "'" HA "', NULL, 'terraform', 0, 1, 1)"),
			     RAW_OK);
	/* A row damaged past the CHECKs (a control character in its user). */
	assert_int_equal(raw_exec(db, store_location_pg()
					      ? "INSERT INTO binding_authors VALUES (5, 'S', "
						"'" HA "', NULL, 'terra' || chr(27), 1, 1, 1)"
					      : "INSERT INTO binding_authors VALUES (5, 'S', "
						"'" HA "', NULL, 'terra' || char(27), 1, 1, 1)"),
			 RAW_OK);
	raw_close(db);
	struct fleet_store_binding_author got;
	assert_int_equal(fleet_store_binding_author_get(f->st, 5, &got), FLEET_STORE_E_CORRUPT);
	assert_string_equal(got.user, ""); /* nothing of it handed out */
	struct fleet_store_binding_author *v = NULL;
	size_t n = 9;
	assert_int_equal(fleet_store_binding_authors_after(f->st, 0, 10, &v, &n),
			 FLEET_STORE_E_CORRUPT);
	assert_null(v);
	assert_int_equal(n, 0);
}

/* At most FLEET_STORE_MAX_BINDING_AUTHORS rows: a new device past it is
 * FULL, a known one is still replaced. */
static void test_binding_author_cap(void **state)
{
	struct fx *f = *state;
	struct raw *db = raw(f);
	assert_int_equal(raw_exec(db,
				      "WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM "
				      "k WHERE i < 100000) INSERT INTO binding_authors SELECT i, "
				      "'S', '" HA "', NULL, 'terraform', 1, 1, 1 FROM k"),
			 RAW_OK);
	raw_close(db);
	struct fleet_store_binding_author r = author(100001, "S", HA, "", "terraform", 2);
	assert_int_equal(fleet_store_binding_author_record(f->st, &r), FLEET_STORE_E_FULL);
	r.device_id = 5000;
	assert_int_equal(fleet_store_binding_author_record(f->st, &r), FLEET_STORE_OK);
	assert_int_equal(raw_count(f, "SELECT change_id FROM binding_authors WHERE "
				      "device_id = 5000"), 2);
}

/* A version-2 store (before binding authors) is migrated in place, its
 * rows kept; until then fleetctl (read-only) refuses it. */
static void test_migrates_v2(void **state)
{
	struct fx *f = *state;
	admit(f, "w1", "SER-1", HA, HB, 1000);
	char lak[41], ldevid[41];
	issue(f, SESS1, "SER-1", "w1", lak, ldevid);
	fleet_store_close(f->st);
	f->st = NULL;
	struct raw *db = raw(f);
	assert_int_equal(raw_exec(db, "DROP TABLE binding_authors; DROP TABLE provisions; "
					  "DROP TABLE reattest_clock; " DROP_JOIN_TABLES
					  "DELETE FROM schema_migrations WHERE version >= 3"),
			 RAW_OK);
	raw_close(db);
	struct fleet_store *ro;
	struct fleet_errctx sec = {0};
	assert_int_equal(fleet_store_open(f->loc, FLEET_STORE_READONLY, &ro, &sec),
			 FLEET_STORE_E_SCHEMA);
	assert_non_null(strstr(sec.detail, "start fleetd to migrate it"));
	assert_int_equal(fleet_store_open(f->loc, FLEET_STORE_RW, &f->st, NULL), 0);
	assert_int_equal(raw_count(f, "SELECT max(version) FROM schema_migrations"),
			 FLEET_STORE_SCHEMA_VERSION);
	assert_int_equal(raw_count(f, "SELECT count(*) FROM schema_migrations"),
			 FLEET_STORE_SCHEMA_VERSION);
	assert_int_equal(raw_count(f, "SELECT count(*) FROM devices"), 1);
	assert_int_equal(raw_count(f, "SELECT count(*) FROM provisional_certs"), 2);
	struct fleet_store_binding_author r = author(1, "SER-1", HA, HB, "terraform", 4), got;
	assert_int_equal(fleet_store_binding_author_record(f->st, &r), FLEET_STORE_OK);
	assert_int_equal(fleet_store_binding_author_get(f->st, 1, &got), FLEET_STORE_OK);
	assert_int_equal(fleet_store_open(f->loc, FLEET_STORE_READONLY, &ro, NULL), 0);
	fleet_store_close(ro);
}

/* A snapshot (store.h) reads one state of the store across calls, whatever
 * another handle commits meanwhile; the holder cannot write inside it, and
 * once it ends the reads see the store as it is. */
static void test_snapshot(void **state)
{
	struct fx *f = *state;
	admit(f, "w1", "SER-1", HA, HB, 1000);
	struct fleet_store *ro;
	struct fleet_errctx sec = {0};
	assert_int_equal(fleet_store_open(f->loc, FLEET_STORE_READONLY, &ro, &sec), 0);
	struct fleet_store_device *v = NULL;
	struct fleet_store_device d;
	size_t n = 0;
	assert_int_equal(fleet_store_snapshot_begin(ro), FLEET_STORE_OK);
	assert_int_equal(fleet_store_snapshot_begin(ro), FLEET_STORE_E_INVALID); /* one at a time */
	assert_int_equal(fleet_store_devices_list(ro, &v, &n), FLEET_STORE_OK);
	assert_int_equal(n, 1);
	free(v);
	admit(f, "w2", "SER-2", HC, NULL, 1000); /* the daemon's handle commits */
	assert_int_equal(fleet_store_device_get_by_serial(ro, "SER-2", &d),
			 FLEET_STORE_E_NOT_FOUND);
	assert_int_equal(fleet_store_devices_list(ro, &v, &n), FLEET_STORE_OK);
	assert_int_equal(n, 1);
	free(v);
	fleet_store_snapshot_end(ro);
	assert_int_equal(fleet_store_device_get_by_serial(ro, "SER-2", &d), FLEET_STORE_OK);
	fleet_store_close(ro);

	/* On the read-write handle, a write inside its own snapshot is refused
	 * and changes nothing; after the end it is made. */
	assert_int_equal(fleet_store_snapshot_begin(f->st), FLEET_STORE_OK);
	assert_int_equal(fleet_store_device_touch(f->st, "w1", 5000), FLEET_STORE_E_INVALID);
	assert_string_equal(fleet_store_errmsg(f->st),
			    "no writes on a handle while its read snapshot is open");
	fleet_store_snapshot_end(f->st);
	fleet_store_snapshot_end(f->st); /* no snapshot: nothing to end */
	assert_int_equal(fleet_store_device_get_by_name(f->st, "w1", &d), FLEET_STORE_OK);
	assert_int_equal(d.last_seen, 1000);
	assert_int_equal(fleet_store_device_touch(f->st, "w1", 5000), FLEET_STORE_OK);
	assert_int_equal(fleet_store_device_get_by_name(f->st, "w1", &d), FLEET_STORE_OK);
	assert_int_equal(d.last_seen, 5000);
}

static size_t cert_count(struct fx *f, const char *device)
{
	struct fleet_store_cert *c;
	size_t n;
	assert_int_equal(fleet_store_certs_for_device(f->st, device, &c, &n), 0);
	fleet_store_certs_free(c, n);
	return n;
}

static unsigned char *cert_for(EVP_PKEY *k, size_t *len, time_t not_after)
{
	struct mint m = {.key = k, .cn = "w1", .not_before = 1000, .not_after = not_after};
	X509 *x = mint_cert(&m);
	unsigned char *der = mint_der(x, len);
	X509_free(x);
	return der;
}

static void sha1_of(const unsigned char *der, size_t len, char out[41])
{
	unsigned char md[20];
	unsigned int mdlen;
	EVP_Digest(der, len, md, &mdlen, EVP_sha1(), NULL);
	fleet_hex_encode(md, 20, out);
}

/* A renewal's one transaction (store.h fleet_store_renewal_issue): it reads
 * the device and its certificates again, and refuses a quarantined,
 * retired or unbound device, another serial, a presented LAK that is
 * revoked or not for the current AK (CONFLICT), a key that already has a
 * certificate (STATE), and a device at its cap of current LDevIDs (FULL);
 * each refusal writes nothing, and a pass writes both. */
static void test_renewal_issue(void **state)
{
	struct fx *f = *state;
	EVP_PKEY *ak = mint_key_ec(), *other_ak = mint_key_ec(), *k1 = mint_key_ec(),
		 *k2 = mint_key_ec();
	size_t l0, l1, l2, l3, l4;
	unsigned char *lak0 = cert_for(ak, &l0, 1900000000), *lak = cert_for(ak, &l1, 1900000000),
		      *ld = cert_for(k1, &l2, 1900000000), *lak2 = cert_for(ak, &l3, 1900000000),
		      *ld2 = cert_for(k2, &l4, 1900000000);
	char s0[41], s1[41], s2[41];
	admit(f, "w1", "SER-1", HA, HB, 1000);
	assert_int_equal(fleet_store_cert_insert(f->st, "w1", "lak", lak0, l0, 1000, s0), 0);
	struct fleet_store_renew_in in = {
		.device = "w1", .serial = "SER-1", .presented_lak_sha1 = s0, .lak_der = lak,
		.lak_len = l1, .ldevid_der = ld, .ldevid_len = l2, .max_current = 2, .now = 1500,
	};
	assert_int_equal(fleet_store_device_set_quarantine(f->st, "w1", true, "reattest: x", 1400),
			 0);
	assert_int_equal(fleet_store_renewal_issue(f->st, &in, s1, s2), FLEET_STORE_E_CONFLICT);
	assert_int_equal(cert_count(f, "w1"), 1);
	assert_int_equal(fleet_store_device_set_quarantine(f->st, "w1", false, NULL, 1400), 0);
	in.serial = "SER-2";
	assert_int_equal(fleet_store_renewal_issue(f->st, &in, s1, s2), FLEET_STORE_E_CONFLICT);
	in.serial = "SER-1";
	in.device = "nobody";
	assert_int_equal(fleet_store_renewal_issue(f->st, &in, s1, s2), FLEET_STORE_E_NOT_FOUND);
	in.device = "w1";
	/* A LAK nobody recorded, presented. */
	char unknown[41];
	memset(unknown, 'a', 40);
	unknown[40] = '\0';
	in.presented_lak_sha1 = unknown;
	assert_int_equal(fleet_store_renewal_issue(f->st, &in, s1, s2), FLEET_STORE_E_CONFLICT);
	in.presented_lak_sha1 = s0;
	assert_int_equal(fleet_store_renewal_issue(f->st, &in, s1, s2), 0);
	assert_int_equal(cert_count(f, "w1"), 3);
	struct fleet_store_cert *c;
	size_t n;
	assert_int_equal(fleet_store_certs_for_device(f->st, "w1", &c, &n), 0);
	assert_string_equal(c[0].sha1, strcmp(c[0].kind, "lak") == 0 ? s1 : s2);
	fleet_store_certs_free(c, n);
	/* The same key again (a concurrent renewal that lost): STATE. */
	in.lak_der = lak2;
	in.lak_len = l3;
	assert_int_equal(fleet_store_renewal_issue(f->st, &in, s1, s2), FLEET_STORE_E_STATE);
	assert_int_equal(cert_count(f, "w1"), 3);
	/* At the cap (1 current LDevID already). */
	in.ldevid_der = ld2;
	in.ldevid_len = l4;
	in.max_current = 1;
	assert_int_equal(fleet_store_renewal_issue(f->st, &in, s1, s2), FLEET_STORE_E_FULL);
	assert_int_equal(cert_count(f, "w1"), 3);
	/* The device re-admitted with another AK meanwhile: the presented LAK
	 * is not for its current AK. */
	size_t lo;
	char so[41];
	unsigned char *lak_other = cert_for(other_ak, &lo, 1900000000);
	assert_int_equal(fleet_store_cert_insert(f->st, "w1", "lak", lak_other, lo, 1600, so), 0);
	in.max_current = 10;
	assert_int_equal(fleet_store_renewal_issue(f->st, &in, s1, s2), FLEET_STORE_E_CONFLICT);
	/* Revoked: refused. */
	assert_int_equal(fleet_store_cert_revoke(f->st, so, 1700), 0);
	assert_int_equal(fleet_store_cert_revoke(f->st, s0, 1700), 0);
	assert_int_equal(fleet_store_renewal_issue(f->st, &in, s1, s2), FLEET_STORE_E_CONFLICT);
	/* An expired LDevID does not count toward the cap; a retired device
	 * renews nothing. */
	char s_new[41];
	sha1_of(lak, l1, s_new);
	in.presented_lak_sha1 = s_new; /* the renewal's LAK: unrevoked, the newest */
	in.max_current = 1;
	in.now = 1900000001;
	assert_int_equal(fleet_store_renewal_issue(f->st, &in, s1, s2), 0);
	assert_int_equal(cert_count(f, "w1"), 6);
	assert_int_equal(fleet_store_device_set_state(f->st, "w1", FLEET_STORE_STATE_RETIRED), 0);
	assert_int_equal(fleet_store_renewal_issue(f->st, &in, s1, s2), FLEET_STORE_E_CONFLICT);
	/* Nothing named: refused as input, before any transaction. */
	assert_int_equal(fleet_store_renewal_issue(f->st, &(struct fleet_store_renew_in){0}, s1, s2),
			 FLEET_STORE_E_INVALID);
	free(lak0);
	free(lak);
	free(ld);
	free(lak2);
	free(ld2);
	free(lak_other);
	EVP_PKEY_free(ak);
	EVP_PKEY_free(other_ak);
	EVP_PKEY_free(k1);
	EVP_PKEY_free(k2);
}

/* ---- the join service's pools and tokens (store.h J1-J5) ----------------- */

#define TOK1 "0123456789abcdefghijklmnop"
#define TOK2 "zyxwvutsrqponmlkjihgfedcba"

static void join_pool(struct fx *f)
{
	struct fleet_store_pool p = {.id = "pool-a", .owner = "root", .created_at = 100};
	assert_int_equal(fleet_store_pool_create(f->st, &p), 0);
}

static void join_token(struct fx *f, const char *id, const char *role, unsigned uses,
		       time_t expires_at, const uint8_t secret[32])
{
	uint8_t h[32];
	assert_int_equal(fleet_hash(FLEET_ALG_SHA256, secret, 32, h), FLEET_OK);
	struct fleet_store_token_in in = {
		.id = id, .pool = "pool-a", .role = role, .secret_sha256 = h, .uses = uses,
		.created_at = 100, .expires_at = expires_at, .created_by = "root",
		.site = (!strcmp(role, "site") || !strcmp(role, "discovery")) ? "site-1" : NULL,
	};
	assert_int_equal(fleet_store_token_create(f->st, &in), 0);
}

/* J1: pools are created once, their attestor lists validated and read
 * back; J2: a token needs its pool and well-formed fields. */
static void test_join_pools_and_tokens(void **state)
{
	struct fx *f = *state;
	struct fleet_store_pool p = {.id = "pool-a", .owner = "root", .n_attestors = 2,
				     .attestors = {"join-token", "tpm"}, .created_at = 100},
				got;
	assert_int_equal(fleet_store_pool_create(f->st, &p), 0);
	assert_int_equal(fleet_store_pool_create(f->st, &p), FLEET_STORE_E_CONFLICT);
	assert_int_equal(fleet_store_pool_get(f->st, "pool-a", &got), 0);
	assert_int_equal(got.n_attestors, 2);
	assert_string_equal(got.attestors[1], "tpm");
	struct fleet_store_pool bad = p;
	snprintf(bad.id, sizeof(bad.id), "Pool A");
	assert_int_equal(fleet_store_pool_create(f->st, &bad), FLEET_STORE_E_INVALID);
	bad = p;
	snprintf(bad.id, sizeof(bad.id), "pool-b");
	snprintf(bad.attestors[1], sizeof(bad.attestors[1]), "join-token");
	assert_int_equal(fleet_store_pool_create(f->st, &bad), FLEET_STORE_E_INVALID); /* twice */
	assert_int_equal(fleet_store_pool_get(f->st, "nope", &got), FLEET_STORE_E_NOT_FOUND);

	uint8_t secret[32] = {1}, h[32];
	assert_int_equal(fleet_hash(FLEET_ALG_SHA256, secret, 32, h), FLEET_OK);
	struct fleet_store_token_in in = {
		.id = TOK1, .pool = "pool-a", .role = "node", .secret_sha256 = h, .uses = 3,
		.created_at = 100, .expires_at = 200, .created_by = "root",
		.expect_mac = "52:54:00:00:00:21", .allow_reclaim = true,
	};
	struct fleet_store_token_in b = in;
	b.pool = "pool-x";
	assert_int_equal(fleet_store_token_create(f->st, &b), FLEET_STORE_E_NOT_FOUND);
	b = in;
	b.expires_at = 100;
	assert_int_equal(fleet_store_token_create(f->st, &b), FLEET_STORE_E_INVALID);
	b = in;
	b.role = "site"; /* without a site */
	assert_int_equal(fleet_store_token_create(f->st, &b), FLEET_STORE_E_INVALID);
	b = in;
	b.expect_mac = "52:54:00:00:00:2G";
	assert_int_equal(fleet_store_token_create(f->st, &b), FLEET_STORE_E_INVALID);
	b = in;
	b.uses = FLEET_STORE_TOKEN_MAX_USES + 1;
	assert_int_equal(fleet_store_token_create(f->st, &b), FLEET_STORE_E_INVALID);
	assert_int_equal(fleet_store_token_create(f->st, &in), 0);
	assert_int_equal(fleet_store_token_create(f->st, &in), FLEET_STORE_E_CONFLICT);
	struct fleet_store_token t;
	assert_int_equal(fleet_store_token_get(f->st, TOK1, &t), 0);
	assert_int_equal(t.uses_left, 3);
	assert_string_equal(t.expect_mac, "52:54:00:00:00:21");
	assert_true(t.allow_reclaim);
	/* The secret is nowhere in the file, only its hash. */
	struct raw *db = raw(f);
	assert_int_equal(raw_int(db, "SELECT count(*) FROM join_tokens WHERE length(secret_sha256) = 32"),
			 1);
	raw_close(db);
}

/* J3, J4: each refusal by name, writing nothing; a use is taken only by
 * a consume that passed every rule; revocation is for ever. */
static void test_join_token_consume(void **state)
{
	struct fx *f = *state;
	uint8_t secret[32], wrong[32];
	const char *why = NULL;
	struct fleet_store_token t;
	memset(secret, 0x5a, sizeof(secret));
	memset(wrong, 0x5a, sizeof(wrong));
	wrong[31] ^= 1;
	join_pool(f);
	time_t later = time(NULL) + 3600;
	join_token(f, TOK1, "node", 2, later, secret);
	assert_int_equal(fleet_store_token_consume(f->st, TOK2, secret, "node", NULL, &why),
			 FLEET_STORE_E_STATE);
	assert_string_equal(why, "token-unknown");
	assert_int_equal(fleet_store_token_consume(f->st, TOK1, wrong, "node", NULL, &why),
			 FLEET_STORE_E_STATE);
	assert_string_equal(why, "token-secret");
	assert_int_equal(fleet_store_token_consume(f->st, TOK1, secret, "site", NULL, &why),
			 FLEET_STORE_E_STATE);
	assert_string_equal(why, "token-role");
	assert_int_equal(fleet_store_token_get(f->st, TOK1, &t), 0);
	assert_int_equal(t.uses_left, 2); /* no refusal took a use */
	assert_int_equal(fleet_store_token_consume(f->st, TOK1, secret, "node", &t, &why), 0);
	assert_null(why);
	assert_int_equal(t.uses_left, 1);
	assert_true(t.last_used_at > 0);
	assert_int_equal(fleet_store_token_consume(f->st, TOK1, secret, "node", &t, &why), 0);
	assert_int_equal(fleet_store_token_consume(f->st, TOK1, secret, "node", NULL, &why),
			 FLEET_STORE_E_STATE);
	assert_string_equal(why, "token-used-up");
	/* Expired at the store's clock (its unixepoch(), not the caller's). */
	join_token(f, TOK2, "node", 5, 101, secret);
	assert_int_equal(fleet_store_token_consume(f->st, TOK2, secret, "node", NULL, &why),
			 FLEET_STORE_E_STATE);
	assert_string_equal(why, "token-expired");
	/* Revoked: refused, and revoking again is STATE. */
	char tok3[] = "aaaaaaaaaaaaaaaaaaaaaaaaaa";
	join_token(f, tok3, "site", 5, later, secret);
	assert_int_equal(fleet_store_token_revoke(f->st, tok3, time(NULL)), 0);
	assert_int_equal(fleet_store_token_revoke(f->st, tok3, time(NULL)), FLEET_STORE_E_STATE);
	assert_int_equal(fleet_store_token_consume(f->st, tok3, secret, "site", NULL, &why),
			 FLEET_STORE_E_STATE);
	assert_string_equal(why, "token-revoked");
	struct fleet_store_token *list;
	size_t n;
	assert_int_equal(fleet_store_tokens_list(f->st, &list, &n), 0);
	assert_int_equal(n, 3);
	free(list);
}

struct racer_arg {
	const char *state;
	const uint8_t *secret;
	fleet_err e;
	pthread_barrier_t *go;
};

static void *consume_racer(void *p)
{
	struct racer_arg *a = p;
	struct fleet_store *st;
	struct fleet_errctx ec = {0};
	const char *why;
	if (fleet_store_open(a->state, FLEET_STORE_RW, &st, &ec) != FLEET_STORE_OK) {
		a->e = FLEET_STORE_E_IO;
		return NULL;
	}
	pthread_barrier_wait(a->go);
	a->e = fleet_store_token_consume(st, TOK1, a->secret, "node", NULL, &why);
	fleet_store_close(st);
	return NULL;
}

/* J3: two joins at once with a one-use token, each on its own connection
 * (as two fleetd replicas would be): exactly one takes it. */
static void test_join_token_race(void **state)
{
	struct fx *f = *state;
	uint8_t secret[32];
	memset(secret, 7, sizeof(secret));
	join_pool(f);
	join_token(f, TOK1, "node", 1, time(NULL) + 3600, secret);
	for (int round = 0; round < 5; round++) {
		pthread_t th[2];
		pthread_barrier_t go;
		struct racer_arg a[2];
		pthread_barrier_init(&go, NULL, 2);
		for (int i = 0; i < 2; i++) {
			a[i] = (struct racer_arg){.state = f->loc, .secret = secret, .go = &go};
			pthread_create(&th[i], NULL, consume_racer, &a[i]);
		}
		for (int i = 0; i < 2; i++)
			pthread_join(th[i], NULL);
		pthread_barrier_destroy(&go);
		int won = (a[0].e == 0) + (a[1].e == 0);
		assert_int_equal(won, round == 0 ? 1 : 0);
		for (int i = 0; i < 2; i++)
			assert_true(a[i].e == 0 || a[i].e == FLEET_STORE_E_STATE);
	}
	struct fleet_store_token t;
	assert_int_equal(fleet_store_token_get(f->st, TOK1, &t), 0);
	assert_int_equal(t.uses_left, 0);
}

/* J5: one use of a piece of evidence, ever (until it expires and is
 * pruned); the prune takes only expired rows, a batch at a time. */
static void test_join_attestation_uses(void **state)
{
	struct fx *f = *state;
	char subj[64];
	assert_int_equal(fleet_store_attestation_use(f->st, "cloud-iid", "gcp/p/i-1", 1000), 0);
	assert_int_equal(fleet_store_attestation_use(f->st, "cloud-iid", "gcp/p/i-1", 5000),
			 FLEET_STORE_E_CONFLICT);
	assert_int_equal(fleet_store_attestation_use(f->st, "discovery", "gcp/p/i-1", 1000), 0);
	for (int i = 0; i < 7; i++) {
		snprintf(subj, sizeof(subj), "old-%d", i);
		assert_int_equal(fleet_store_attestation_use(f->st, "discovery", subj, 500 + i), 0);
	}
	assert_int_equal(fleet_store_attestation_use(f->st, "discovery", "new", 9000), 0);
	size_t gone = 0;
	assert_int_equal(fleet_store_attestation_uses_prune(f->st, 2000, 0, &gone),
			 FLEET_STORE_E_INVALID);
	assert_int_equal(fleet_store_attestation_uses_prune(f->st, 2000, 5, &gone), 0);
	assert_int_equal(gone, 5);
	assert_int_equal(fleet_store_attestation_uses_prune(f->st, 2000, 5, &gone), 0);
	assert_int_equal(gone, 4); /* the two old ones left and both at 1000 */
	assert_int_equal(fleet_store_attestation_uses_prune(f->st, 2000, 5, &gone), 0);
	assert_int_equal(gone, 0);
	/* The unexpired one stays, and still refuses a second use. */
	assert_int_equal(fleet_store_attestation_use(f->st, "discovery", "new", 9000),
			 FLEET_STORE_E_CONFLICT);
	/* A pruned one was used before it expired; after, it is free again. */
	assert_int_equal(fleet_store_attestation_use(f->st, "cloud-iid", "gcp/p/i-1", 9000), 0);
}

/* ---- nodes (store.h N1-N4) ------------------------------------------------ */

static unsigned char *node_cert(size_t *len)
{
	return make_cert(len, 1900000000);
}

/* N1: a token join is one transaction: a refused token writes no node and
 * no certificate; a good one writes both and takes its use; the token's
 * last use cannot make a second node. */
static void test_join_nodes_commit(void **state)
{
	struct fx *f = *state;
	uint8_t secret[32], wrong[32];
	const char *why = NULL;
	size_t l1, l2;
	unsigned char *c1 = node_cert(&l1), *c2 = node_cert(&l2);
	memset(secret, 3, sizeof(secret));
	memcpy(wrong, secret, sizeof(wrong));
	wrong[0] ^= 1;
	join_pool(f);
	join_token(f, TOK1, "node", 1, time(NULL) + 3600, secret);
	struct fleet_store_join_in in = {
		.token_id = TOK1, .token_secret = wrong, .token_role = "node", .node_id = "node_a",
		.node_role = "node", .attestor = "join-token", .cert_der = c1, .cert_len = l1,
		.now = time(NULL),
	};
	assert_int_equal(fleet_store_join_commit(f->st, &in, NULL, &why), FLEET_STORE_E_STATE);
	assert_string_equal(why, "token-secret");
	struct fleet_store_node n;
	assert_int_equal(fleet_store_node_get(f->st, "node_a", &n), FLEET_STORE_E_NOT_FOUND);
	assert_int_equal(fleet_store_node_cert_current(f->st, c1, l1, &n), FLEET_STORE_E_NOT_FOUND);
	in.token_secret = secret;
	struct fleet_store_token t;
	assert_int_equal(fleet_store_join_commit(f->st, &in, &t, &why), 0);
	assert_int_equal(t.uses_left, 0);
	assert_int_equal(fleet_store_node_get(f->st, "node_a", &n), 0);
	assert_int_equal(n.generation, 1);
	assert_string_equal(n.pool, "pool-a");
	assert_string_equal(n.token, TOK1);
	assert_int_equal(fleet_store_node_cert_current(f->st, c1, l1, &n), 0);
	/* The token is spent: no second node, and that node's certificate
	 * was never recorded. */
	in.node_id = "node_b";
	in.cert_der = c2;
	in.cert_len = l2;
	assert_int_equal(fleet_store_join_commit(f->st, &in, NULL, &why), FLEET_STORE_E_STATE);
	assert_string_equal(why, "token-used-up");
	assert_int_equal(fleet_store_node_get(f->st, "node_b", &n), FLEET_STORE_E_NOT_FOUND);
	assert_int_equal(fleet_store_node_cert_current(f->st, c2, l2, &n), FLEET_STORE_E_NOT_FOUND);
	free(c1);
	free(c2);
}

/* N2, N3: a reclaim raises the generation and revokes the older
 * certificates; only the current one is current; a certificate never
 * recorded, or one byte different, is not. */
static void test_join_nodes_reclaim(void **state)
{
	struct fx *f = *state;
	uint8_t secret[32];
	size_t l1, l2;
	unsigned char *c1 = node_cert(&l1), *c2 = node_cert(&l2);
	memset(secret, 4, sizeof(secret));
	join_pool(f);
	join_token(f, TOK1, "node", 1, time(NULL) + 3600, secret);
	struct fleet_store_join_in in = {
		.token_id = TOK1, .token_secret = secret, .token_role = "node", .node_id = "node_a",
		.node_role = "node", .attestor = "join-token", .cert_der = c1, .cert_len = l1,
		.now = time(NULL),
	};
	assert_int_equal(fleet_store_join_commit(f->st, &in, NULL, NULL), 0);
	struct fleet_store_node n;
	int64_t g = 0;
	assert_int_equal(fleet_store_node_reclaim(f->st, "node_a", c2, l2, time(NULL), &g), 0);
	assert_int_equal(g, 2);
	assert_int_equal(fleet_store_node_cert_current(f->st, c1, l1, &n), FLEET_STORE_E_STATE);
	assert_int_equal(fleet_store_node_cert_current(f->st, c2, l2, &n), 0);
	assert_int_equal(n.generation, 2);
	c2[l2 - 1] ^= 1; /* the signature's last byte: another certificate */
	assert_int_equal(fleet_store_node_cert_current(f->st, c2, l2, &n), FLEET_STORE_E_NOT_FOUND);
	assert_int_equal(fleet_store_node_reclaim(f->st, "nobody", c1, l1, time(NULL), &g),
			 FLEET_STORE_E_NOT_FOUND);
	free(c1);
	free(c2);
}

/* N4: a binding names one node for ever. */
static void test_join_nodes_bind(void **state)
{
	struct fx *f = *state;
	uint8_t secret[32];
	size_t l1, l2;
	unsigned char *c1 = node_cert(&l1), *c2 = node_cert(&l2);
	char tok2[] = TOK2;
	memset(secret, 5, sizeof(secret));
	join_pool(f);
	join_token(f, TOK1, "node", 1, time(NULL) + 3600, secret);
	join_token(f, tok2, "node", 1, time(NULL) + 3600, secret);
	struct fleet_store_join_in in = {
		.token_id = TOK1, .token_secret = secret, .token_role = "node", .node_id = "node_a",
		.node_role = "node", .attestor = "join-token", .cert_der = c1, .cert_len = l1,
		.now = time(NULL),
	};
	assert_int_equal(fleet_store_join_commit(f->st, &in, NULL, NULL), 0);
	in.token_id = tok2;
	in.node_id = "node_b";
	in.cert_der = c2;
	in.cert_len = l2;
	assert_int_equal(fleet_store_join_commit(f->st, &in, NULL, NULL), 0);
	const char *ek = "ekekekekekekekekekekekekekekekekekekekekekekekekekekekekekekekek";
	assert_int_equal(fleet_store_node_bind(f->st, "ek", ek, "node_a", 1), 0);
	assert_int_equal(fleet_store_node_bind(f->st, "ek", ek, "node_a", 2), 0);
	assert_int_equal(fleet_store_node_bind(f->st, "ek", ek, "node_b", 3), FLEET_STORE_E_CONFLICT);
	assert_non_null(strstr(fleet_store_errmsg(f->st), "bound-elsewhere"));
	assert_int_equal(fleet_store_node_bind(f->st, "mac", ek, "node_a", 1), FLEET_STORE_E_INVALID);
	free(c1);
	free(c2);
}

/* ---- discovery and provisioned (store.h D1-D8) ---------------------------- */

/* The join transaction's handle, opened here as fleet_store_join_tx
 * (store_join_tx.c) opens it: the handle locked, BEGIN IMMEDIATE, one clock
 * for the whole transaction (here the test's, to judge expiry at will). */
static void tx_open(struct fx *f, struct fleet_store_tx *tx, int64_t now)
{
	tx->st = f->st;
	tx->now = now;
	st_lock(f->st);
	assert_int_equal(st_begin(f->st), FLEET_STORE_OK);
}

/* Commit when e is FLEET_OK, else roll back; e (or the commit's failure). */
static fleet_err tx_close(struct fleet_store_tx *tx, fleet_err e)
{
	if (e)
		st_rollback(tx->st);
	else
		e = st_commit(tx->st);
	return st_unlock(tx->st, e);
}

static void raw_expect(struct fx *f, const char *sql, int want)
{
	struct raw *db = raw(f);
	int rc = raw_exec(db, sql);
	if (rc != want)
		fail_msg("%s: %d (%s), want %d", sql, rc, raw_errmsg(db), want);
	raw_close(db);
}

/* A node joined with a fresh one-use token: role node | site, site for a
 * site node. */
static void join_node(struct fx *f, const char *pool, const char *node_id, const char *role,
		      const char *site)
{
	static unsigned serial;
	char tok[FLEET_STORE_TOKEN_ID_LEN + 1];
	uint8_t secret[32], h[32];
	size_t len;
	unsigned char *der = node_cert(&len);
	snprintf(tok, sizeof(tok), "%026u", ++serial);
	memset(secret, (int)serial, sizeof(secret));
	assert_int_equal(fleet_hash(FLEET_ALG_SHA256, secret, 32, h), FLEET_OK);
	struct fleet_store_token_in t = {
		.id = tok, .pool = pool, .role = role, .site = site, .secret_sha256 = h, .uses = 1,
		.created_at = 100, .expires_at = time(NULL) + 3600, .created_by = "root",
	};
	assert_int_equal(fleet_store_token_create(f->st, &t), 0);
	struct fleet_store_join_in in = {
		.token_id = tok, .token_secret = secret, .token_role = role, .node_id = node_id,
		.node_role = role, .attestor = "join-token", .cert_der = der, .cert_len = len,
		.now = time(NULL),
	};
	assert_int_equal(fleet_store_join_commit(f->st, &in, NULL, NULL), 0);
	free(der);
}

static void join_pool_named(struct fx *f, const char *id)
{
	struct fleet_store_pool p = {.owner = "root", .created_at = 100};
	snprintf(p.id, sizeof(p.id), "%s", id);
	assert_int_equal(fleet_store_pool_create(f->st, &p), 0);
}

/* D1: a provisioned token may name the node it was minted for: an existing
 * node of its pool, not retired; no other role names one. */
static void test_token_target_provisioned(void **state)
{
	struct fx *f = *state;
	uint8_t h[32] = {1};
	join_pool(f);
	join_pool_named(f, "pool-b");
	join_node(f, "pool-a", "node_a", "node", NULL);
	join_node(f, "pool-b", "node_b", "node", NULL);
	struct fleet_store_token_in in = {
		.id = TOK1, .pool = "pool-a", .role = "provisioned", .secret_sha256 = h, .uses = 1,
		.created_at = 100, .expires_at = 200, .created_by = "root", .target_node = "node_a",
	};
	struct fleet_store_token_in b = in;
	b.role = "node";
	assert_int_equal(fleet_store_token_create(f->st, &b), FLEET_STORE_E_INVALID);
	b = in;
	b.target_node = "Node A";
	assert_int_equal(fleet_store_token_create(f->st, &b), FLEET_STORE_E_INVALID);
	b = in;
	b.target_node = "nobody";
	assert_int_equal(fleet_store_token_create(f->st, &b), FLEET_STORE_E_NOT_FOUND);
	b = in;
	b.target_node = "node_b"; /* pool-b's */
	assert_int_equal(fleet_store_token_create(f->st, &b), FLEET_STORE_E_CONFLICT);
	raw_expect(f, "UPDATE nodes SET retired_at = 150 WHERE id = 'node_b'", RAW_OK);
	b.pool = "pool-b";
	assert_int_equal(fleet_store_token_create(f->st, &b), FLEET_STORE_E_STATE);
	assert_int_equal(raw_count(f, "SELECT count(*) FROM join_tokens WHERE role = 'provisioned'"),
			 0);
	assert_int_equal(fleet_store_token_create(f->st, &in), 0);
	struct fleet_store_token t;
	assert_int_equal(fleet_store_token_get(f->st, TOK1, &t), 0);
	assert_string_equal(t.target_node, "node_a");
	/* "" is none, as NULL */
	b = in;
	b.id = TOK2;
	b.target_node = "";
	assert_int_equal(fleet_store_token_create(f->st, &b), 0);
	assert_int_equal(fleet_store_token_get(f->st, TOK2, &t), 0);
	assert_string_equal(t.target_node, "");
	struct fleet_store_token *list;
	size_t n;
	assert_int_equal(fleet_store_tokens_list(f->st, &list, &n), 0);
	size_t named = 0;
	for (size_t i = 0; i < n; i++)
		named += !strcmp(list[i].target_node, "node_a");
	assert_int_equal(named, 1);
	free(list);
	/* The schema holds the rule too: no other role's row names a node. */
	raw_expect(f, "UPDATE join_tokens SET target_node = 'node_a' WHERE role = 'node'",
		 RAW_CONSTRAINT);
	/* The token's checks (X3's) still read the row. */
	assert_int_equal(fleet_store_token_get(f->st, TOK1, &t), 0);
}

/* D2: the boot lease goes only to a site node of that site, not retired;
 * every grant raises the epoch, so a former holder's epoch is fenced. */
static void test_site_lease_grant_and_fence(void **state)
{
	struct fx *f = *state;
	struct fleet_store_tx tx;
	char holder[FLEET_STORE_NODE_ID_MAX + 1];
	int64_t epoch = 0;
	join_pool(f);
	join_node(f, "pool-a", "site_a", "site", "site-1");
	join_node(f, "pool-a", "site_b", "site", "site-1");
	join_node(f, "pool-a", "site_c", "site", "site-2");
	join_node(f, "pool-a", "node_n", "node", NULL);
	tx_open(f, &tx, time(NULL));
	assert_int_equal(tx_close(&tx, fleet_store_tx_site_lease(&tx, "site-1", holder, &epoch)),
			 FLEET_STORE_E_NOT_FOUND);
	assert_int_equal(fleet_store_site_lease_grant(f->st, "site-1", "site_a", 1000, &epoch), 0);
	assert_int_equal(epoch, 1);
	tx_open(f, &tx, time(NULL));
	assert_int_equal(tx_close(&tx, fleet_store_tx_site_lease(&tx, "site-1", holder, &epoch)), 0);
	assert_string_equal(holder, "site_a");
	assert_int_equal(epoch, 1);
	/* Moved: the new holder at epoch 2; site_a's epoch 1 no longer matches. */
	assert_int_equal(fleet_store_site_lease_grant(f->st, "site-1", "site_b", 1001, &epoch), 0);
	assert_int_equal(epoch, 2);
	/* Granted again to the same holder: raised again. */
	assert_int_equal(fleet_store_site_lease_grant(f->st, "site-1", "site_b", 1002, &epoch), 0);
	assert_int_equal(epoch, 3);
	/* Refused, nothing written: not a site node, another site's, unknown,
	 * retired, not ids. */
	assert_int_equal(fleet_store_site_lease_grant(f->st, "site-1", "node_n", 1003, &epoch),
			 FLEET_STORE_E_STATE);
	/* Of the site, but no site node (a ramdisk the site booted). */
	raw_expect(f, "UPDATE nodes SET role = 'ramdisk', site = 'site-1' WHERE id = 'node_n'",
		 RAW_OK);
	assert_int_equal(fleet_store_site_lease_grant(f->st, "site-1", "node_n", 1003, &epoch),
			 FLEET_STORE_E_STATE);
	assert_int_equal(fleet_store_site_lease_grant(f->st, "site-1", "site_c", 1003, &epoch),
			 FLEET_STORE_E_STATE);
	assert_int_equal(fleet_store_site_lease_grant(f->st, "site-1", "nobody", 1003, &epoch),
			 FLEET_STORE_E_NOT_FOUND);
	raw_expect(f, "UPDATE nodes SET retired_at = 900 WHERE id = 'site_a'", RAW_OK);
	assert_int_equal(fleet_store_site_lease_grant(f->st, "site-1", "site_a", 1003, &epoch),
			 FLEET_STORE_E_STATE);
	assert_int_equal(fleet_store_site_lease_grant(f->st, "Site 1", "site_b", 1003, &epoch),
			 FLEET_STORE_E_INVALID);
	tx_open(f, &tx, time(NULL));
	assert_int_equal(tx_close(&tx, fleet_store_tx_site_lease(&tx, "site-1", holder, &epoch)), 0);
	assert_string_equal(holder, "site_b");
	assert_int_equal(epoch, 3);
	/* Each site has its own lease. */
	assert_int_equal(fleet_store_site_lease_grant(f->st, "site-2", "site_c", 1004, &epoch), 0);
	assert_int_equal(epoch, 1);
	assert_int_equal(raw_count(f, "SELECT count(*) FROM site_leases"), 2);
	/* The schema refuses an epoch below 1. */
	raw_expect(f, "UPDATE site_leases SET epoch = 0", RAW_CONSTRAINT);
}

static struct fleet_store_join_request request(const char *id, const char *hw_key,
					       int64_t created_at, int64_t expires_at)
{
	struct fleet_store_join_request r;
	memset(&r, 0, sizeof(r));
	snprintf(r.id, sizeof(r.id), "%s", id);
	snprintf(r.attestor, sizeof(r.attestor), "discovery");
	snprintf(r.site, sizeof(r.site), "site-1");
	snprintf(r.hw_key, sizeof(r.hw_key), "%s", hw_key);
	snprintf(r.mac, sizeof(r.mac), "52:54:00:00:00:21");
	snprintf(r.csr_sha256, sizeof(r.csr_sha256), "%s", HC);
	r.created_at = created_at;
	r.expires_at = expires_at;
	return r;
}

#define JR1 "jr_0123456789abcdefghijklmnop"
#define JR2 "jr_zyxwvutsrqponmlkjihgfedcba"
#define JR3 "jr_aaaaaaaaaaaaaaaaaaaaaaaaaa"
#define JR4 "jr_bbbbbbbbbbbbbbbbbbbbbbbbbb"

static fleet_err put(struct fx *f, int64_t now, const struct fleet_store_join_request *r)
{
	struct fleet_store_tx tx;
	tx_open(f, &tx, now);
	return tx_close(&tx, fleet_store_tx_join_request_put(&tx, r));
}

static fleet_err read_req(struct fx *f, int64_t now, const char *attestor, const char *hw_key,
			  struct fleet_store_join_request *out)
{
	struct fleet_store_tx tx;
	tx_open(f, &tx, now);
	return tx_close(&tx, fleet_store_tx_join_request(&tx, attestor, hw_key, out));
}

static fleet_err use_req(struct fx *f, const char *id)
{
	struct fleet_store_tx tx;
	tx_open(f, &tx, 1500);
	return tx_close(&tx, fleet_store_tx_join_request_used(&tx, id, 1500));
}

/* D3, D4: one request per (attestor, hardware key); a live one is never
 * replaced; an expired one reads "expired" (never written) and is replaced
 * by the next put. */
static void test_join_requests_put_and_expiry(void **state)
{
	struct fx *f = *state;
	struct fleet_store_join_request r = request(JR1, HA, 1000, 2000), got, b;
	assert_int_equal(read_req(f, 1000, "discovery", HA, &got), FLEET_STORE_E_NOT_FOUND);
	snprintf(r.status, sizeof(r.status), "approved"); /* ignored: a put is pending */
	r.decided_at = 5;
	assert_int_equal(put(f, 1000, &r), 0);
	assert_int_equal(read_req(f, 1999, "discovery", HA, &got), 0);
	assert_string_equal(got.id, JR1);
	assert_string_equal(got.status, "pending");
	assert_string_equal(got.site, "site-1");
	assert_string_equal(got.mac, "52:54:00:00:00:21");
	assert_string_equal(got.product_uuid, "");
	assert_string_equal(got.csr_sha256, HC);
	assert_int_equal(got.created_at, 1000);
	assert_int_equal(got.expires_at, 2000);
	assert_int_equal(got.decided_at, 0);
	/* Live: a second put for the machine is refused, nothing written. */
	b = request(JR2, HA, 1500, 2500);
	assert_int_equal(put(f, 1500, &b), FLEET_STORE_E_CONFLICT);
	/* An id in use is refused too, whatever the machine. */
	b = request(JR1, HB, 1500, 2500);
	assert_int_equal(put(f, 1500, &b), FLEET_STORE_E_CONFLICT);
	assert_int_equal(raw_count(f, "SELECT count(*) FROM join_requests"), 1);
	/* Refused values. */
	const char *bad_ids[] = {"jx_0123456789abcdefghijklmnop", "jr_0123456789ABCDEFGHIJKLMNOP",
				 "jr_0123"};
	for (size_t i = 0; i < sizeof(bad_ids) / sizeof(bad_ids[0]); i++) {
		b = request(bad_ids[i], HB, 1000, 2000);
		assert_int_equal(put(f, 1000, &b), FLEET_STORE_E_INVALID);
	}
	b = request(JR2, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 1000, 2000);
	assert_int_equal(put(f, 1000, &b), FLEET_STORE_E_INVALID);
	b = request(JR2, HB, 1000, 2000);
	snprintf(b.mac, sizeof(b.mac), "52-54-00-00-00-21");
	assert_int_equal(put(f, 1000, &b), FLEET_STORE_E_INVALID);
	b = request(JR2, HB, 1000, 2000);
	snprintf(b.product_uuid, sizeof(b.product_uuid), "0000000000000000000000000000000000ab");
	assert_int_equal(put(f, 1000, &b), FLEET_STORE_E_INVALID);
	b = request(JR2, HB, 1000, 1000);
	assert_int_equal(put(f, 1000, &b), FLEET_STORE_E_INVALID);
	b = request(JR2, HB, 1000, 2000);
	snprintf(b.attestor, sizeof(b.attestor), "Discovery");
	assert_int_equal(put(f, 1000, &b), FLEET_STORE_E_INVALID);
	/* Expired at the transaction's clock: read as such, stored as pending. */
	assert_int_equal(read_req(f, 2000, "discovery", HA, &got), 0);
	assert_string_equal(got.status, "expired");
	assert_int_equal(raw_count(f, "SELECT count(*) FROM join_requests WHERE status = 'pending'"),
			 1);
	/* ... and replaced by the machine's next request. */
	b = request(JR2, HA, 2100, 3000);
	snprintf(b.product_uuid, sizeof(b.product_uuid), "00000000-0000-0000-0000-0000000000ab");
	assert_int_equal(put(f, 2100, &b), 0);
	assert_int_equal(read_req(f, 2100, "discovery", HA, &got), 0);
	assert_string_equal(got.id, JR2);
	assert_string_equal(got.status, "pending");
	assert_string_equal(got.product_uuid, "00000000-0000-0000-0000-0000000000ab");
	assert_int_equal(got.created_at, 2100);
	assert_int_equal(raw_count(f, "SELECT count(*) FROM join_requests"), 1);
	/* Another attestor's request for the same key is its own. */
	b = request(JR3, HA, 2100, 3000);
	snprintf(b.attestor, sizeof(b.attestor), "tpm");
	b.site[0] = b.mac[0] = '\0';
	assert_int_equal(put(f, 2100, &b), 0);
	assert_int_equal(read_req(f, 2100, "tpm", HA, &got), 0);
	assert_string_equal(got.site, "");
	assert_string_equal(got.mac, "");
	/* A failed transaction keeps nothing of its put. */
	struct fleet_store_tx tx;
	b = request(JR4, HB, 2100, 3000);
	tx_open(f, &tx, 2100);
	assert_int_equal(fleet_store_tx_join_request_put(&tx, &b), 0);
	assert_int_equal(tx_close(&tx, FLEET_STORE_E_STATE), FLEET_STORE_E_STATE);
	assert_int_equal(read_req(f, 2100, "discovery", HB, &got), FLEET_STORE_E_NOT_FOUND);
}

/* D5, D3, D4: only a pending, unexpired request is decided, for its own
 * lifetime again; a denied one is replaced by the machine's next request,
 * an approved one not before its decision ends. */
static void test_join_requests_decide(void **state)
{
	struct fx *f = *state;
	struct fleet_store_join_request r = request(JR1, HA, 1000, 2000), got;
	assert_int_equal(put(f, 1000, &r), 0);
	assert_int_equal(fleet_store_join_request_decide(f->st, JR2, true, "root", 1100),
			 FLEET_STORE_E_NOT_FOUND);
	assert_int_equal(fleet_store_join_request_decide(f->st, "jr_x", true, "root", 1100),
			 FLEET_STORE_E_NOT_FOUND);
	assert_int_equal(fleet_store_join_request_decide(f->st, JR1, true, "", 1100),
			 FLEET_STORE_E_INVALID);
	/* Expired: not decided, nothing written. */
	assert_int_equal(fleet_store_join_request_decide(f->st, JR1, true, "root", 2000),
			 FLEET_STORE_E_STATE);
	assert_int_equal(raw_count(f, "SELECT count(*) FROM join_requests WHERE status = 'pending' "
				      "AND decided_at IS NULL"),
			 1);
	assert_int_equal(fleet_store_join_request_decide(f->st, JR1, false, "alice", 1100), 0);
	assert_int_equal(read_req(f, 1150, "discovery", HA, &got), 0);
	assert_string_equal(got.status, "denied");
	assert_string_equal(got.decided_by, "alice");
	assert_int_equal(got.decided_at, 1100);
	/* The decision lasts the request's own lifetime again, from when it
	 * was made, and then ends (D4, D5). */
	assert_int_equal(got.expires_at, 2100);
	assert_int_equal(read_req(f, 2100, "discovery", HA, &got), 0);
	assert_string_equal(got.status, "expired");
	/* Decided once. */
	assert_int_equal(fleet_store_join_request_decide(f->st, JR1, true, "root", 1200),
			 FLEET_STORE_E_STATE);
	/* Denied: the machine may ask again (a fresh pending request). */
	r = request(JR2, HA, 1300, 2300);
	assert_int_equal(put(f, 1300, &r), 0);
	assert_int_equal(read_req(f, 1300, "discovery", HA, &got), 0);
	assert_string_equal(got.id, JR2);
	assert_string_equal(got.status, "pending");
	assert_int_equal(got.decided_at, 0);
	assert_string_equal(got.decided_by, "");
	assert_int_equal(fleet_store_join_request_decide(f->st, JR2, true, "bob", 1400), 0);
	/* Approved is live: no put replaces it. */
	r = request(JR3, HA, 1500, 2500);
	assert_int_equal(put(f, 1500, &r), FLEET_STORE_E_CONFLICT);
	assert_int_equal(read_req(f, 1500, "discovery", HA, &got), 0);
	assert_string_equal(got.status, "approved");
	assert_string_equal(got.decided_by, "bob");
	/* ... until its decision ends (1400 + 1000): an approval unused does
	 * not lock the machine out, it expires and is replaced. */
	assert_int_equal(read_req(f, 2400, "discovery", HA, &got), 0);
	assert_string_equal(got.status, "expired");
	r = request(JR3, HA, 2400, 3400);
	assert_int_equal(put(f, 2400, &r), 0);
}

/* D6: an approval admits one join: approved -> used, nothing else. */
static void test_join_requests_used_once(void **state)
{
	struct fx *f = *state;
	struct fleet_store_join_request r = request(JR1, HA, 1000, 2000), got;
	assert_int_equal(put(f, 1000, &r), 0);
	assert_int_equal(use_req(f, JR1), FLEET_STORE_E_STATE); /* pending */
	assert_int_equal(use_req(f, JR2), FLEET_STORE_E_NOT_FOUND);
	assert_int_equal(fleet_store_join_request_decide(f->st, JR1, true, "root", 1100), 0);
	assert_int_equal(use_req(f, JR1), 0);
	assert_int_equal(fleet_store_join_request_get(f->st, JR1, &got), 0);
	assert_string_equal(got.status, "used");
	assert_int_equal(got.used_at, 1500);
	assert_string_equal(got.decided_by, "root");
	assert_int_equal(use_req(f, JR1), FLEET_STORE_E_STATE); /* once */
	/* Denied: never used. */
	r = request(JR3, HB, 1000, 2000);
	assert_int_equal(put(f, 1000, &r), 0);
	assert_int_equal(fleet_store_join_request_decide(f->st, JR3, false, "root", 1100), 0);
	assert_int_equal(use_req(f, JR3), FLEET_STORE_E_STATE);
	/* Used: the machine's next commissioning asks again. */
	r = request(JR2, HA, 1600, 2600);
	assert_int_equal(put(f, 1600, &r), 0);
	assert_int_equal(read_req(f, 1600, "discovery", HA, &got), 0);
	assert_string_equal(got.status, "pending");
	assert_int_equal(got.used_at, 0);
}

/* D7: newest first, expired by the store's clock; the schema holds the
 * statuses' shapes; D3's cap counts only live pending requests. */
static void test_join_requests_list_and_cap(void **state)
{
	struct fx *f = *state;
	int64_t now = time(NULL);
	struct fleet_store_join_request r = request(JR1, HA, now - 300, now - 100), *list;
	size_t n;
	assert_int_equal(put(f, now - 300, &r), 0);
	r = request(JR2, HB, now - 200, now + 3600);
	assert_int_equal(put(f, now - 200, &r), 0);
	r = request(JR3, HD, now - 250, now + 3600);
	assert_int_equal(put(f, now - 250, &r), 0);
	assert_int_equal(fleet_store_join_request_decide(f->st, JR3, true, "root", now), 0);
	assert_int_equal(fleet_store_join_requests_list(f->st, &list, &n), 0);
	assert_int_equal(n, 3);
	assert_string_equal(list[0].id, JR2);
	assert_string_equal(list[0].status, "pending");
	assert_string_equal(list[1].id, JR3);
	assert_string_equal(list[1].status, "approved");
	assert_string_equal(list[2].id, JR1);
	assert_string_equal(list[2].status, "expired");
	free(list);
	struct fleet_store_join_request got;
	assert_int_equal(fleet_store_join_request_get(f->st, JR1, &got), 0);
	assert_string_equal(got.status, "expired");
	/* The statuses' shapes, in the schema. */
	raw_expect(f, "UPDATE join_requests SET status = 'expired' WHERE id = '" JR2 "'",
		 RAW_CONSTRAINT);
	raw_expect(f, "UPDATE join_requests SET decided_at = 5 WHERE id = '" JR2 "'",
		 RAW_CONSTRAINT);
	raw_expect(f, "UPDATE join_requests SET status = 'used' WHERE id = '" JR3 "'",
		 RAW_CONSTRAINT);
	/* The cap: JR2 live and 9998 more make one short of it (JR1 expired,
	 * JR3 approved do not count). */
	char sql[1024];
	snprintf(sql, sizeof(sql),
		 "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < %d) "
		 "INSERT INTO join_requests (id, attestor, hw_key, csr_sha256, status, created_at, "
		 "expires_at) SELECT 'jr_' || printf('%%026d', i), 'tpm', printf('%%064x', i), "
		 "'%s', 'pending', %lld, %lld FROM c",
		 FLEET_STORE_MAX_JOIN_REQUESTS - 2, HC, (long long)now - 10, (long long)now + 3600);
	raw_expect(f, sql, RAW_OK);
	r = request(JR4, HA, now, now + 3600); /* replaces the expired JR1 */
	assert_int_equal(put(f, now, &r), 0);
	r = request("jr_cccccccccccccccccccccccccc", HC, now, now + 3600);
	assert_int_equal(put(f, now, &r), FLEET_STORE_E_FULL);
	/* Deciding one frees its place. */
	assert_int_equal(fleet_store_join_request_decide(f->st, JR4, false, "root", now), 0);
	assert_int_equal(put(f, now, &r), 0);
	assert_int_equal(fleet_store_join_requests_list(f->st, &list, &n), 0);
	assert_int_equal(n, FLEET_STORE_LIST_MAX);
	free(list);
}

/* D8: the nodes by id; a node's certificates newest first, an older
 * generation's revoked by the reclaim; SHA-256 of the DER. */
static void test_join_nodes_list(void **state)
{
	struct fx *f = *state;
	struct fleet_store_node *nodes;
	struct fleet_store_node_cert *c;
	size_t n, nc, len;
	join_pool(f);
	join_node(f, "pool-a", "node_b", "node", NULL);
	join_node(f, "pool-a", "node_a", "site", "site-1");
	assert_int_equal(fleet_store_nodes_list(f->st, &nodes, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(nodes[0].id, "node_a");
	assert_string_equal(nodes[0].role, "site");
	assert_string_equal(nodes[0].site, "site-1");
	assert_string_equal(nodes[1].id, "node_b");
	assert_int_equal(nodes[1].generation, 1);
	free(nodes);
	unsigned char *der = node_cert(&len);
	int64_t g;
	assert_int_equal(fleet_store_node_reclaim(f->st, "node_a", der, len, time(NULL) + 10, &g), 0);
	assert_int_equal(fleet_store_node_certs(f->st, "node_a", &c, &nc), 0);
	assert_int_equal(nc, 2);
	assert_int_equal(c[0].generation, 2);
	assert_int_equal(c[0].revoked_at, 0);
	assert_int_equal(c[0].not_after, 1900000000);
	assert_int_equal(c[1].generation, 1);
	assert_true(c[1].revoked_at > 0);
	uint8_t sha[32];
	char hex[65];
	assert_int_equal(fleet_hash(FLEET_ALG_SHA256, der, len, sha), FLEET_OK);
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", sha[i]);
	assert_string_equal(c[0].sha256, hex);
	free(c);
	free(der);
	assert_int_equal(fleet_store_node_certs(f->st, "nobody", &c, &nc), FLEET_STORE_E_NOT_FOUND);
	assert_null(c);
}

static long long sqlite_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *s;
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(s), SQLITE_ROW);
	long long v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return v;
}

/* Rebuild join_tokens as schema version 7 made it (SQLite cannot drop a
 * column with a foreign key). */
static void migrate_v7_sqlite(struct fx *f)
{
	sqlite3 *db;
	char p[600];
	snprintf(p, sizeof(p), "%s/fleetd.db", f->state);
	assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
	sqlite3_stmt *s;
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT sql FROM sqlite_schema WHERE name = "
						"'join_tokens'", -1, &s, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_step(s), SQLITE_ROW);
	char v7[4096];
	snprintf(v7, sizeof(v7), "%s", (const char *)sqlite3_column_text(s, 0));
	sqlite3_finalize(s);
	const char *col = "target_node TEXT REFERENCES nodes(id) CHECK (target_node IS NULL OR "
			  "role = 'provisioned'), ";
	char *at = strstr(v7, col);
	assert_non_null(at);
	memmove(at, at + strlen(col), strlen(at + strlen(col)) + 1);
	const char *head = "CREATE TABLE join_tokens (";
	assert_memory_equal(v7, head, strlen(head));
	char create[4200];
	snprintf(create, sizeof(create), "CREATE TABLE join_tokens_v7 (%s", v7 + strlen(head));
	assert_int_equal(sqlite3_exec(db, "BEGIN; DROP TABLE join_requests; DROP TABLE site_leases", NULL, NULL, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, create, NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(
		sqlite3_exec(db,
			     "INSERT INTO join_tokens_v7 SELECT id, pool, site, role, secret_sha256, "
			     "uses_total, uses_left, created_at, expires_at, created_by, revoked_at, "
			     "expect_mac, expect_product_uuid, allow_reclaim, last_used_at FROM "
			     "join_tokens; DROP TABLE join_tokens; ALTER TABLE join_tokens_v7 RENAME "
			     "TO join_tokens; DROP TABLE admission_sessions; DELETE FROM schema_migrations "
			     "WHERE version >= 8; COMMIT", NULL, NULL, NULL),
		SQLITE_OK);
	assert_int_equal(sqlite_int(db, "SELECT count(*) FROM pragma_table_info('join_tokens') WHERE "
				     "name = 'target_node'"),
			 0);
	sqlite3_close(db);
}

/* Migration 8 on a version-7 store with a token and a node: its rows kept
 * (no token names a target), the new tables there and working. The test
 * makes the version-7 store by rebuilding join_tokens without the column
 * (SQLite cannot drop a column with a foreign key). */
static void test_join_requests_migrates_v7(void **state)
{
	struct fx *f = *state;
	join_pool(f);
	join_node(f, "pool-a", "site_a", "site", "site-1");
	fleet_store_close(f->st);
	f->st = NULL;
	struct raw *db = raw(f);
	if (store_location_pg()) {
		/* PostgreSQL drops the column itself */
		assert_int_equal(raw_exec(db, "BEGIN; DROP TABLE admission_sessions; DROP TABLE join_requests; DROP TABLE site_leases;"
					      " ALTER TABLE join_tokens DROP COLUMN target_node;"
					      " DELETE FROM schema_migrations WHERE version >= 8; COMMIT"),
				 RAW_OK);
		assert_int_equal(raw_int(db, "SELECT count(*) FROM information_schema.columns WHERE "
					     "table_name = 'join_tokens' AND column_name = 'target_node'"),
				 0);
	} else {
		raw_close(db);
		migrate_v7_sqlite(f);
		db = raw(f);
	}
	raw_close(db);
	struct fleet_store *ro;
	assert_int_equal(fleet_store_open(f->loc, FLEET_STORE_READONLY, &ro, NULL),
			 FLEET_STORE_E_SCHEMA);
	assert_int_equal(fleet_store_open(f->loc, FLEET_STORE_RW, &f->st, NULL), 0);
	assert_int_equal(raw_count(f, "SELECT max(version) FROM schema_migrations"),
			 FLEET_STORE_SCHEMA_VERSION);
	assert_int_equal(raw_count(f, "SELECT count(*) FROM join_tokens WHERE target_node IS NULL"),
			 1);
	struct fleet_store_token *t;
	size_t n;
	assert_int_equal(fleet_store_tokens_list(f->st, &t, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(t[0].target_node, "");
	free(t);
	struct fleet_store_node node;
	assert_int_equal(fleet_store_node_get(f->st, "site_a", &node), 0);
	int64_t epoch;
	assert_int_equal(fleet_store_site_lease_grant(f->st, "site-1", "site_a", 1000, &epoch), 0);
	assert_int_equal(epoch, 1);
	struct fleet_store_join_request r = request(JR1, HA, 1000, 2000);
	assert_int_equal(put(f, 1000, &r), 0);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_schema_and_settings),   T(test_err_strings),
		T(test_unsafe_modes_refused),  T(test_newer_schema_refused),
		T(test_admission_and_lookup),  T(test_admission_never_rebinds),
		T(test_admission_input_refused), T(test_readmission_uses_store_hashes),
		T(test_state_touch_quarantine), T(test_claims),
		T(test_claim_caps),            T(test_verdicts),
		T(test_certificates),          T(test_readonly),
		T(test_lift_quarantine),
		T(test_damaged_row_is_corrupt), T(test_provisional_then_admit),
		T(test_admit_is_one_transaction), T(test_provisional_revoke_and_prune),
		T(test_provisional_revoke_orphans),
		T(test_migrates_v1),           T(test_binding_authors),
		T(test_binding_author_matches),
		T(test_binding_author_input_refused), T(test_binding_author_cap),
		T(test_migrates_v2),           T(test_snapshot),
		T(test_devices_list_whole),    T(test_bulk_reads),
		T(test_bulk_certs_cap),
		T(test_renewal_issue),
		T(test_join_pools_and_tokens), T(test_join_token_consume),
		T(test_join_token_race),       T(test_join_attestation_uses),
		T(test_join_nodes_commit),     T(test_join_nodes_reclaim),
		T(test_join_nodes_bind),       T(test_token_target_provisioned),
		T(test_site_lease_grant_and_fence), T(test_join_requests_put_and_expiry),
		T(test_join_requests_decide),  T(test_join_requests_used_once),
		T(test_join_requests_list_and_cap), T(test_join_nodes_list),
		T(test_join_requests_migrates_v7),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
