/*
 * test_pass_netbox.c: the reconcile pass (fleetd/pass/) against the NetBox
 * contract fake (tests/fakes/netbox_fake.py) over TLS, with the real store
 * read through its own read-only handle, as fleetd runs it.
 *
 *   - one malformed device among good ones does not freeze the fleet: the
 *     file is written, the good ones eligible, a decommissioned one revoked,
 *     the malformed ones in neither list, each journaled once while it stays
 *     malformed, and counted;
 *   - the pass writes the store's proven ek_hash/ek_hash_ecc to NetBox where
 *     NetBox holds other values, and nothing where they already match; a
 *     failed write is journaled and the pass goes on;
 *   - a NetBox that does not answer still leaves the previous file;
 *   - an active device fleetd never admitted is journaled once while it
 *     stays so, each pass says how many there are, and a gauge counts them.
 *
 * Skips (77) without python3 or openssl.
 */
#include "tests/testutil.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "fleetd/config/config.h"
#include "fleetd/inventory/netbox.h"
#include "fleetd/obs/journal.h"
#include "fleetd/obs/metrics.h"
#include "fleetd/pass/pass.h"
#include "fleetd/store/store.h"
#include "tests/e2e/netbox_harness.h"
#include "tests/unit/x509_mint.h"

#define V1 "0123456789abcdef0123456789abcdef01234567"
#define EK1 "1111111111111111111111111111111111111111111111111111111111111111"
#define EK2 "2222222222222222222222222222222222222222222222222222222222222222"
#define EK3 "3333333333333333333333333333333333333333333333333333333333333333"
#define EK4 "4444444444444444444444444444444444444444444444444444444444444444"
#define EK6 "6666666666666666666666666666666666666666666666666666666666666666"
#define EK6E "6666666666666666666666666666666666666666666666666666666666666eee"
#define OTHER "9999999999999999999999999999999999999999999999999999999999999999"
#define DAY 86400

static void write_seed(const char *path)
{
	char longv[201];
	memset(longv, 'x', 200);
	longv[200] = '\0';
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f,
		"{\"paginate_count\": 2, \"max_page_size\": 2,\n"
		" \"tokens\": {\"" V1 "\": {\"user\": \"fleetd\"}},\n"
		" \"custom_fields\": [\"class\", \"install_disk\", \"install_disk_serial\", \"bmc_type\",\n"
		"   \"tpm_version\", \"amt\", \"secure_boot_expected\", \"expected_port\",\n"
		"   \"approved_ek_hash\", \"approved_ek_hash_ecc\", \"ek_hash\", \"ek_hash_ecc\",\n"
		"   \"desired_action\"],\n"
		" \"devices\": [\n"
		/* admitted, NetBox's ek_hash never written (the admission's PATCH failed) */
		"  {\"id\": 1, \"name\": \"w1\", \"serial\": \"SN-1\", \"status\": \"active\",\n"
		"   \"custom_fields\": {\"approved_ek_hash\": \"" EK1 "\", \"ek_hash\": null}},\n"
		/* admitted, NetBox already holds the store's values */
		"  {\"id\": 2, \"name\": \"w2\", \"serial\": \"SN-2\", \"status\": \"active\",\n"
		"   \"custom_fields\": {\"approved_ek_hash\": \"" EK2 "\", \"ek_hash\": \"" EK2 "\"}},\n"
		/* admitted, being decommissioned: revoked */
		"  {\"id\": 3, \"name\": \"w3\", \"serial\": \"SN-3\", \"status\": \"decommissioning\",\n"
		"   \"custom_fields\": {\"ek_hash\": \"" EK3 "\"}},\n"
		/* admitted, then someone pasted 200 characters into class */
		"  {\"id\": 4, \"name\": \"w4\", \"serial\": \"SN-4\", \"status\": \"active\",\n"
		"   \"custom_fields\": {\"class\": \"%s\", \"ek_hash\": \"" EK4 "\"}},\n"
		/* a switch fleetd never admitted, with a bad approved_ek_hash */
		"  {\"id\": 5, \"name\": \"sw5\", \"serial\": \"SN-5\", \"status\": \"active\",\n"
		"   \"custom_fields\": {\"approved_ek_hash\": \"not-a-hash\"}},\n"
		/* admitted, NetBox holds other values than the store proved */
		"  {\"id\": 6, \"name\": \"w6\", \"serial\": \"SN-6\", \"status\": \"active\",\n"
		"   \"custom_fields\": {\"ek_hash\": \"" OTHER "\", \"ek_hash_ecc\": null}},\n"
		/* an unnamed spare: a null name */
		"  {\"id\": 7, \"name\": null, \"serial\": \"SN-7\", \"status\": \"inventory\"},\n"
		/* a switch, active, that fleetd never admitted (nor will) */
		"  {\"id\": 8, \"name\": \"sw8\", \"serial\": \"SN-8\", \"status\": \"active\"}\n"
		" ]}\n",
		longv);
	fclose(f);
}

static int setup(void **st)
{
	(void)st;
	nbf_setup(write_seed);
	return 0;
}

static int teardown(void **st)
{
	(void)st;
	nbf_teardown();
	return 0;
}

struct fx {
	char *dir;
	char file[512], log[512];
	struct fleet_store *rw, *ro;
	struct fleet_inventory *inv;
	struct fleet_metrics *metrics;
	struct fleet_config c;
	struct fleet_pass *p;
	atomic_bool cancel; /* fleetd's stop */
	EVP_PKEY *key;
	time_t now;
};

static void admit(struct fx *f, const char *name, const char *serial, long inv_id,
		  const char *ek, const char *ek_ecc, bool pass)
{
	fleet_err e = fleet_store_device_record_admission(
		f->rw, name, serial, inv_id, ek, ek_ecc, f->now - 30 * DAY);
	if (e)
		fail_msg("admit %s: %s: %s", name, fleet_err_str(e), fleet_store_errmsg(f->rw));
	struct fleet_store_verdict_in v = {.time = f->now - DAY, .device = name, .serial = serial,
					   .session = "0a", .pass = pass, .ek_hash = ek};
	assert_int_equal(fleet_store_verdict_insert(f->rw, &v, NULL), FLEET_STORE_OK);
	struct mint m = {.key = f->key, .cn = name, .not_before = f->now - 60 * DAY,
			 .not_after = f->now + 300 * DAY};
	X509 *x = mint_cert(&m);
	size_t len;
	unsigned char *der = mint_der(x, &len);
	char sha1[41];
	assert_int_equal(fleet_store_cert_insert(f->rw, name, FLEET_STORE_CERT_LDEVID, der, len,
						 f->now - DAY, sha1),
			 FLEET_STORE_OK);
	free(der);
	X509_free(x);
}

static void fx_open(struct fx *f)
{
	struct fleet_errctx sec = {0};
	char err[sizeof(sec.detail) + 80] = "";
	memset(f, 0, sizeof(*f));
	f->now = time(NULL);
	f->dir = make_temp_dir("passnb");
	snprintf(f->file, sizeof(f->file), "%s/spire-nodes.json", f->dir);
	snprintf(f->log, sizeof(f->log), "%s/journal.txt", f->dir);
	if (fleet_store_open(f->dir, FLEET_STORE_RW, &f->rw, &sec) != FLEET_STORE_OK)
		fail_msg("store: %s", fleet_errctx_text(&sec, err, sizeof(err)));
	f->key = mint_key_ec();
	admit(f, "w1", "SN-1", 1, EK1, "", true);
	admit(f, "w2", "SN-2", 2, EK2, "", true);
	admit(f, "w3", "SN-3", 3, EK3, "", true);
	admit(f, "w4", "SN-4", 4, EK4, "", true);
	admit(f, "w6", "SN-6", 6, EK6, EK6E, true);
	/* The pass reads through its own read-only handle, as in fleetd. */
	if (fleet_store_open(f->dir, FLEET_STORE_READONLY, &f->ro, &sec) !=
	    FLEET_STORE_OK)
		fail_msg("store (read-only): %s", fleet_errctx_text(&sec, err, sizeof(err)));
	struct fleet_netbox_config nc = {.base_url = E.base, .token = V1, .ca_file = E.ca,
					 .timeout_ms = 5000, .page_size = 2};
	struct fleet_errctx ec;
	f->inv = fleet_netbox_open(&nc, &ec);
	if (!f->inv)
		fail_msg("netbox: %s", fleet_errctx_text(&ec, err, sizeof(err)));
	f->metrics = fleet_metrics_new();
	assert_non_null(f->metrics);
	fleet_config_defaults(&f->c);
	snprintf(f->c.state_dir, sizeof(f->c.state_dir), "%s", f->dir);
	snprintf(f->c.spire_trust_domain, sizeof(f->c.spire_trust_domain), "fleet.example");
	struct fleet_pass_deps d = {.config = &f->c, .inventory = f->inv, .store = f->ro,
				    .metrics = f->metrics, .cancel = &f->cancel};
	assert_int_equal(fleet_pass_new(&d, &f->p), FLEET_OK);
}

static void fx_close(struct fx *f)
{
	fleet_pass_free(f->p);
	fleet_metrics_free(f->metrics);
	f->inv->ops->close(f->inv);
	fleet_store_close(f->ro);
	fleet_store_close(f->rw);
	EVP_PKEY_free(f->key);
	free(f->dir);
}

/* Run one pass with the journal going to f->log (stderr). */
static const char *run(struct fx *f, time_t now)
{
	fflush(stderr);
	int saved = dup(STDERR_FILENO);
	int fd = open(f->log, O_WRONLY | O_CREAT | O_APPEND, 0600);
	assert_true(saved >= 0 && fd >= 0);
	assert_true(dup2(fd, STDERR_FILENO) >= 0);
	close(fd);
	fleet_log_set_target(FLEET_LOG_STDERR);
	const char *r = fleet_pass_run(f->p, now);
	fflush(stderr);
	assert_true(dup2(saved, STDERR_FILENO) >= 0);
	close(saved);
	return r;
}

/* Occurrences of needle in the journal so far. */
static size_t journaled(struct fx *f, const char *needle)
{
	struct fleet_buf b;
	read_file_or_fail(f->log, &b);
	size_t n = 0;
	char *text = calloc(1, b.len + 1);
	assert_non_null(text);
	memcpy(text, b.data, b.len);
	for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	free(text);
	fb_free(&b);
	return n;
}

static json_t *read_doc(struct fx *f)
{
	struct fleet_buf b;
	json_error_t je;
	read_file_or_fail(f->file, &b);
	json_t *j = json_loadb((const char *)b.data, b.len, 0, &je);
	fb_free(&b);
	if (!j)
		fail_msg("spire-nodes.json: %s", je.text);
	return j;
}

/* The names of list, comma-joined. */
static void names(json_t *doc, const char *list, char *out, size_t cap)
{
	size_t i;
	json_t *e;
	out[0] = '\0';
	json_array_foreach(json_object_get(doc, list), i, e) {
		size_t len = strlen(out);
		snprintf(out + len, cap - len, "%s%s", len ? "," : "",
			 json_string_value(json_object_get(e, "name")));
	}
}

static size_t patches_since(size_t before)
{
	json_t *s = nbf_state(), *req;
	size_t i, n = 0;
	json_array_foreach(json_object_get(s, "log"), i, req)
		if (i >= before &&
		    strcmp(json_string_value(json_object_get(req, "method")), "PATCH") == 0)
			n++;
	json_decref(s);
	return n;
}

static const char *nb_cf(json_t *state, long id, const char *key)
{
	json_t *d = nbf_device(state, id);
	assert_non_null(d);
	json_t *cf = json_object_get(d, "custom_fields");
	if (!cf)
		cf = json_object_get(d, "custom_field_data");
	json_t *v = json_object_get(cf, key);
	return json_is_string(v) ? json_string_value(v) : "";
}

static int64_t metric(struct fx *f, const char *line)
{
	struct fleet_buf b;
	fb_init(&b);
	assert_int_equal(fleet_metrics_render(f->metrics, &b), FLEET_OK);
	char *text = calloc(1, b.len + 1);
	assert_non_null(text);
	memcpy(text, b.data, b.len);
	fb_free(&b);
	int64_t v = -1;
	for (char *p = text; (p = strstr(p, line)); p++)
		if ((p == text || p[-1] == '\n') && p[strlen(line)] == ' ') {
			v = strtoll(p + strlen(line) + 1, NULL, 10);
			break;
		}
	free(text);
	return v;
}

static void test_malformed_devices_do_not_freeze_the_fleet(void **st)
{
	(void)st;
	struct fx f;
	char got[256];
	fx_open(&f);
	size_t before = nbf_log_len();

	assert_string_equal(run(&f, f.now), "ok");
	json_t *doc = read_doc(&f);
	names(doc, "eligible", got, sizeof(got));
	assert_string_equal(got, "w1,w2,w6"); /* w4 is malformed: neither list */
	names(doc, "revoked", got, sizeof(got));
	assert_string_equal(got, "w3"); /* still revoked, not frozen */
	json_decref(doc);
	/* each malformed device journaled once, the admitted one said excluded */
	assert_int_equal(journaled(&f, "inventory device 4 is malformed "
				       "(custom_fields.class:too-long): w4, admitted by fleetd, "
				       "is excluded"),
			 1);
	assert_int_equal(journaled(&f, "inventory device 5 is malformed "
				       "(custom_fields.approved_ek_hash:not-ek-hash)"),
			 1);
	assert_int_equal(journaled(&f, "inventory device 7 is malformed (name:null)"), 1);
	assert_int_equal(journaled(&f, "is malformed ("), 3);
	assert_int_equal(metric(&f, "fleetd_inventory_malformed_devices"), 3);
	assert_int_equal(metric(&f, "fleetd_inventory_malformed_total"), 3);
	assert_int_equal(metric(&f, "fleetd_pass_total{result=\"ok\"}"), 1);

	/* item 2: the store's EK hashes reach NetBox where they differ (w1, w6),
	 * and w2, which already matches, is not written */
	assert_int_equal(patches_since(before), 2);
	json_t *s = nbf_state();
	assert_string_equal(nb_cf(s, 1, "ek_hash"), EK1);
	assert_string_equal(nb_cf(s, 1, "ek_hash_ecc"), "");
	assert_string_equal(nb_cf(s, 6, "ek_hash"), EK6);
	assert_string_equal(nb_cf(s, 6, "ek_hash_ecc"), EK6E);
	assert_string_equal(nb_cf(s, 2, "ek_hash"), EK2);
	assert_string_equal(nb_cf(s, 4, "ek_hash"), EK4); /* malformed: left alone */
	json_decref(s);
	assert_int_equal(metric(&f, "fleetd_pass_ek_hash_writes_total{result=\"ok\"}"), 2);

	/* a second pass: nothing new to journal, nothing to write */
	before = nbf_log_len();
	assert_string_equal(run(&f, f.now + 60), "ok");
	assert_int_equal(journaled(&f, "is malformed ("), 3);
	assert_int_equal(metric(&f, "fleetd_inventory_malformed_total"), 3);
	assert_int_equal(metric(&f, "fleetd_inventory_malformed_devices"), 3);
	assert_int_equal(patches_since(before), 0);

	/* w4 fixed, then broken another way: journaled again, for the new reason */
	nbf_ctl("/_fake/change", "{\"device\": 4, \"user\": \"admin\", "
				 "\"custom_fields\": {\"class\": \"worker\"}}");
	assert_string_equal(run(&f, f.now + 120), "ok");
	doc = read_doc(&f);
	names(doc, "eligible", got, sizeof(got));
	assert_string_equal(got, "w1,w2,w4,w6");
	json_decref(doc);
	assert_int_equal(metric(&f, "fleetd_inventory_malformed_devices"), 2);
	nbf_ctl("/_fake/change", "{\"device\": 4, \"user\": \"admin\", "
				 "\"custom_fields\": {\"amt\": \"yes\"}}");
	assert_string_equal(run(&f, f.now + 180), "ok");
	assert_int_equal(journaled(&f, "inventory device 4 is malformed "
				       "(custom_fields.amt:not-boolean)"),
			 1);
	assert_int_equal(journaled(&f, "is malformed ("), 4);
	assert_int_equal(metric(&f, "fleetd_inventory_malformed_total"), 4);

	/* a NetBox that does not answer still fails the pass and keeps the file */
	struct fleet_buf keep, after;
	read_file_or_fail(f.file, &keep);
	nbf_ctl("/_fake/fail", "{\"status\": 503, \"count\": 1}");
	assert_string_equal(run(&f, f.now + 240), "inventory-error");
	read_file_or_fail(f.file, &after);
	assert_int_equal(keep.len, after.len);
	assert_memory_equal(keep.data, after.data, keep.len);
	fb_free(&keep);
	fb_free(&after);
	fx_close(&f);
}

static void test_failed_ek_write_is_journaled_and_the_pass_goes_on(void **st)
{
	(void)st;
	struct fx f;
	fx_open(&f);
	/* NetBox loses w2's ek_hash; the listing (4 pages of 2) answers, the
	 * PATCH after it fails */
	nbf_ctl("/_fake/change", "{\"device\": 2, \"user\": \"admin\", "
				 "\"custom_fields\": {\"ek_hash\": \"" OTHER "\", \"class\": null, "
				 "\"amt\": null}}");
	nbf_ctl("/_fake/change", "{\"device\": 4, \"user\": \"admin\", "
				 "\"custom_fields\": {\"class\": null, \"amt\": null}}");
	nbf_ctl("/_fake/fail", "{\"status\": 503, \"count\": 1, \"after\": 4}");
	assert_string_equal(run(&f, f.now), "ok");
	assert_int_equal(journaled(&f, "pass: writing the ek_hash of w2 to the inventory failed"),
			 1);
	assert_int_equal(metric(&f, "fleetd_pass_ek_hash_writes_total{result=\"failed\"}"), 1);
	json_t *doc = read_doc(&f); /* the file was written all the same */
	char got[256];
	names(doc, "eligible", got, sizeof(got));
	assert_string_equal(got, "w1,w2,w4,w6");
	json_decref(doc);
	json_t *s = nbf_state();
	assert_string_equal(nb_cf(s, 2, "ek_hash"), OTHER);
	json_decref(s);
	/* the next pass writes it */
	size_t before = nbf_log_len();
	assert_string_equal(run(&f, f.now + 60), "ok");
	assert_int_equal(patches_since(before), 1);
	s = nbf_state();
	assert_string_equal(nb_cf(s, 2, "ek_hash"), EK2);
	json_decref(s);
	fx_close(&f);
}

/* Bounded: past pass.deadline_seconds the pass makes no more inventory
 * requests (its ek_hash writes wait for the next pass) and still writes the
 * file from its whole listing; cancelled (fleetd stopping), it writes
 * nothing at all. Without the checks both writes happen in the slow pass,
 * and the cancelled one rewrites the file. */
static void test_pass_deadline_and_cancel(void **st)
{
	(void)st;
	struct fx f;
	fx_open(&f);
	nbf_ctl("/_fake/change", "{\"device\": 1, \"user\": \"admin\", "
				 "\"custom_fields\": {\"ek_hash\": \"" OTHER "\"}}");
	nbf_ctl("/_fake/change", "{\"device\": 2, \"user\": \"admin\", "
				 "\"custom_fields\": {\"ek_hash\": \"" OTHER "\"}}");
	f.c.pass_deadline_seconds = 1;
	/* the listing's 4 pages take 1.2 s */
	nbf_ctl("/_fake/delay", "{\"ms\": 300, \"count\": 4}");
	size_t before = nbf_log_len();
	assert_string_equal(run(&f, f.now), "ok");
	assert_int_equal(patches_since(before), 0);
	assert_int_equal(journaled(&f, "event=pass-deadline"), 1);
	assert_int_equal(journaled(&f, "past pass.deadline_seconds; 2 ek_hash writes left for "
				       "the next pass"),
			 1);
	json_t *doc = read_doc(&f); /* written from the whole listing */
	char got[256];
	names(doc, "eligible", got, sizeof(got));
	assert_string_equal(got, "w1,w2,w4,w6");
	json_decref(doc);
	/* the next pass, in time, writes both */
	before = nbf_log_len();
	assert_string_equal(run(&f, f.now + 60), "ok");
	assert_int_equal(patches_since(before), 2);

	/* a listing slower than the deadline stops between pages: no file from
	 * part of a listing, the previous one stands */
	struct fleet_buf prev, now_file;
	read_file_or_fail(f.file, &prev);
	nbf_ctl("/_fake/change", "{\"device\": 2, \"user\": \"admin\", "
				 "\"status\": \"offline\"}");
	nbf_ctl("/_fake/delay", "{\"ms\": 600, \"count\": 4}");
	before = nbf_log_len();
	assert_string_equal(run(&f, f.now + 90), "inventory-error");
	assert_int_equal(nbf_log_len() - before, 2); /* 2 pages of 4 asked */
	assert_int_equal(journaled(&f, "stopped after 2 pages: past its deadline"), 1);
	read_file_or_fail(f.file, &now_file);
	assert_int_equal(prev.len, now_file.len);
	assert_memory_equal(prev.data, now_file.data, prev.len);
	fb_free(&prev);
	fb_free(&now_file);
	nbf_ctl("/_fake/change", "{\"device\": 2, \"user\": \"admin\", "
				 "\"status\": \"active\"}");
	/* in time again (the fake's 2 delays left spent here) */
	f.c.pass_deadline_seconds = 60;
	assert_string_equal(run(&f, f.now + 100), "ok");

	/* fleetd stopping: the pass ends, nothing written, the file stands */
	struct fleet_buf keep, after;
	read_file_or_fail(f.file, &keep);
	nbf_ctl("/_fake/change", "{\"device\": 2, \"user\": \"admin\", "
				 "\"status\": \"offline\"}");
	atomic_store(&f.cancel, true);
	before = nbf_log_len();
	assert_string_equal(run(&f, f.now + 120), "cancelled");
	assert_int_equal(patches_since(before), 0);
	read_file_or_fail(f.file, &after);
	assert_int_equal(keep.len, after.len);
	assert_memory_equal(keep.data, after.data, keep.len);
	assert_int_equal(metric(&f, "fleetd_pass_total{result=\"cancelled\"}"), 1);
	fb_free(&keep);
	fb_free(&after);
	nbf_ctl("/_fake/change", "{\"device\": 2, \"user\": \"admin\", "
				 "\"status\": \"active\"}");
	fx_close(&f);
}

static void test_devices_never_admitted_are_journaled_once(void **st)
{
	(void)st;
	struct fx f;
	const char *stranger = "FLEET_REASON=not-admitted";
	fx_open(&f);
	assert_string_equal(run(&f, f.now), "ok");
	assert_int_equal(journaled(&f, stranger), 1);
	assert_int_equal(journaled(&f, "device 8 is active but fleetd never admitted it"), 1);
	assert_int_equal(journaled(&f, "pass: 1 device(s) active in the inventory were never "
				       "admitted by fleetd (1 new)"), 1);
	assert_int_equal(metric(&f, "fleetd_inventory_not_admitted_devices"), 1);
	/* the next passes: the count, not the device again */
	assert_string_equal(run(&f, f.now + 60), "ok");
	assert_string_equal(run(&f, f.now + 120), "ok");
	assert_int_equal(journaled(&f, stranger), 1);
	assert_int_equal(journaled(&f, "(0 new)"), 2);
	/* no longer active: none left, said once */
	nbf_ctl("/_fake/change", "{\"device\": 8, \"user\": \"admin\", \"status\": \"offline\"}");
	assert_string_equal(run(&f, f.now + 180), "ok");
	assert_string_equal(run(&f, f.now + 240), "ok");
	assert_int_equal(journaled(&f, "pass: 0 device(s) active"), 1);
	assert_int_equal(metric(&f, "fleetd_inventory_not_admitted_devices"), 0);
	/* active again: said again */
	nbf_ctl("/_fake/change", "{\"device\": 8, \"user\": \"admin\", \"status\": \"active\"}");
	assert_string_equal(run(&f, f.now + 300), "ok");
	assert_int_equal(journaled(&f, stranger), 2);
	assert_int_equal(metric(&f, "fleetd_inventory_not_admitted_devices"), 1);
	fx_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_malformed_devices_do_not_freeze_the_fleet),
		cmocka_unit_test(test_failed_ek_write_is_journaled_and_the_pass_goes_on),
		cmocka_unit_test(test_pass_deadline_and_cancel),
		cmocka_unit_test(test_devices_never_admitted_are_journaled_once),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
