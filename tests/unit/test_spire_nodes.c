/*
 * test_spire_nodes.c: spire-nodes.json (fleetd/spire/, docs/spire-nodes.md).
 * Eligibility for every inventory status and everything the store holds
 * back; revoked entries kept until their notAfter, then dropped; which
 * LDevID certificates are listed; ordering; the exact format; the serial
 * (grows across writes, a deleted file, a deleted serial file); unchanged
 * content is not rewritten; an inventory error leaves the file as it was;
 * the directory's lock and mode; what the format cannot carry.
 *
 * A real store in a temp dir with real certificates (minted with OpenSSL);
 * the inventory is a small in-test implementation of its interface.
 */
#include "tests/testutil.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "lib/spire_nodes_format.h"
#include "fleetd/obs/journal.h"
#include "fleetd/obs/metrics.h"
#include "fleetd/spire/spire_nodes.h"
#include "tests/unit/x509_mint.h"

#define NOW ((time_t)1796014800) /* 2026-11-30T05:00:00Z */
#define DAY 86400
#define TD "fleet.example"

/* One EK hash two devices share in test_format_rules. */
#define EKA "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

struct fake_inv {
	struct fleet_inventory base;
	struct fleet_inv_device devs[64];
	size_t n;
	fleet_err result; /* what list() answers */
};

static fleet_err fake_list(struct fleet_inventory *inv, struct fleet_inv_device **out, size_t *n,
			   struct fleet_inv_malformed **bad, size_t *n_bad, struct fleet_errctx *ec)
{
	struct fake_inv *f = (struct fake_inv *)inv;
	*bad = NULL;
	*n_bad = 0;
	if (f->result != FLEET_INV_OK)
		return fleet_errctx_msg(ec, f->result, "HTTP 503 from the test inventory");
	*out = calloc(f->n + 1, sizeof(**out));
	memcpy(*out, f->devs, f->n * sizeof(**out));
	*n = f->n;
	return FLEET_INV_OK;
}

static const struct fleet_inventory_ops fake_ops = {.list = fake_list};

struct fx {
	char *dir;
	char state[512], out[512];
	struct fleet_store *st;
	struct fake_inv inv;
	EVP_PKEY *key;
	int n_admitted;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	f->dir = make_temp_dir("spnodes");
	snprintf(f->state, sizeof(f->state), "%s/state", f->dir);
	snprintf(f->out, sizeof(f->out), "%s/out", f->dir);
	assert_int_equal(mkdir(f->out, 0755), 0);
	struct fleet_errctx sec = {0};
	char err[sizeof(sec.detail) + 80];
	if (fleet_store_open(f->state, FLEET_STORE_RW, &f->st, &sec) != FLEET_STORE_OK)
		fail_msg("open: %s", fleet_errctx_text(&sec, err, sizeof(err)));
	f->inv.base.ops = &fake_ops;
	f->key = mint_key_ec();
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	fleet_store_close(f->st);
	EVP_PKEY_free(f->key);
	rm_rf(f->dir);
	free(f->dir);
	free(f);
	return 0;
}

static void inv_add(struct fx *f, const char *name, const char *serial, const char *status)
{
	struct fleet_inv_device *d = &f->inv.devs[f->inv.n++];
	memset(d, 0, sizeof(*d));
	d->id = (long)f->inv.n;
	snprintf(d->name, sizeof(d->name), "%s", name);
	snprintf(d->serial, sizeof(d->serial), "%s", serial);
	snprintf(d->status, sizeof(d->status), "%s", status);
}

static void set_status(struct fx *f, const char *name, const char *status)
{
	for (size_t i = 0; i < f->inv.n; i++)
		if (strcmp(f->inv.devs[i].name, name) == 0)
			snprintf(f->inv.devs[i].status, sizeof(f->inv.devs[i].status), "%s", status);
}

/* A distinct 64-hex EK hash for each n. */
static void ek_for(int n, char out[65])
{
	snprintf(out, 65, "%064x", n);
}

/* Admit name/serial with an RSA and/or an ECC EK of its own. */
static void admit(struct fx *f, const char *name, const char *serial, bool rsa, bool ecc)
{
	char ek[65], ek_ecc[65];
	int n = ++f->n_admitted;
	ek_for(2 * n, ek);
	ek_for(2 * n + 1, ek_ecc);
	fleet_err e = fleet_store_device_record_admission(
		f->st, name, serial, n, rsa ? ek : NULL, ecc ? ek_ecc : NULL, NOW - 30 * DAY);
	if (e)
		fail_msg("admit %s: %s: %s", name, fleet_err_str(e), fleet_store_errmsg(f->st));
}

static void verdict(struct fx *f, const char *name, bool pass)
{
	static const char *const reasons[] = {"pcr7-authority"};
	struct fleet_store_verdict_in v = {.time = NOW - DAY, .device = name, .serial = "S",
					   .session = "0a", .pass = pass,
					   .reasons = pass ? NULL : reasons, .n_reasons = pass ? 0 : 1};
	assert_int_equal(fleet_store_verdict_insert(f->st, &v, NULL), FLEET_STORE_OK);
}

/* A certificate of kind for name, valid until not_after; sha1 out. */
static void cert(struct fx *f, const char *name, const char *kind, time_t not_after,
		 char sha1[41])
{
	struct mint m = {.key = f->key, .cn = name, .not_before = NOW - 60 * DAY,
			 .not_after = not_after};
	X509 *x = mint_cert(&m);
	size_t len;
	unsigned char *der = mint_der(x, &len);
	fleet_err e = fleet_store_cert_insert(f->st, name, kind, der, len, NOW - DAY,
							 sha1);
	if (e)
		fail_msg("cert %s: %s: %s", name, fleet_err_str(e), fleet_store_errmsg(f->st));
	free(der);
	X509_free(x);
}

/* Both provisional certificates of an answer round that no confirm
 * completed (store.h "One admission") for name, valid until not_after;
 * left unrevoked, as a session still open leaves them. */
static void provisional(struct fx *f, const char *session, const char *name, const char *serial,
			time_t not_after, char lak[41], char ldevid[41])
{
	struct mint m = {.key = f->key, .cn = name, .not_before = NOW - 60, .not_after = not_after};
	X509 *x1 = mint_cert(&m), *x2 = mint_cert(&m);
	size_t l1, l2;
	unsigned char *d1 = mint_der(x1, &l1), *d2 = mint_der(x2, &l2);
	struct fleet_store_issue_in in = {.session = session, .serial = serial, .device = name,
					  .lak_der = d1, .lak_len = l1, .ldevid_der = d2,
					  .ldevid_len = l2, .now = NOW - 60};
	fleet_err e = fleet_store_provisional_issue(f->st, &in, lak, ldevid);
	if (e)
		fail_msg("provisional %s: %s: %s", name, fleet_err_str(e),
			 fleet_store_errmsg(f->st));
	free(d1);
	free(d2);
	X509_free(x1);
	X509_free(x2);
}

/* sha1 is in none of the doc's lists, eligible or revoked. */
static void listed_nowhere(const struct fleet_spire_doc *d, const char *sha1)
{
	for (size_t i = 0; i < d->n_eligible; i++)
		for (size_t j = 0; j < d->eligible[i].n_ldevid; j++)
			assert_string_not_equal(d->eligible[i].ldevid_sha1[j], sha1);
	for (size_t i = 0; i < d->n_revoked; i++)
		for (size_t j = 0; j < d->revoked[i].n_ldevid; j++)
			assert_string_not_equal(d->revoked[i].ldevid_sha1[j], sha1);
}

/* A device that would be eligible if the inventory said active. */
static void good_device(struct fx *f, const char *name, const char *serial, const char *status,
			char sha1[41])
{
	char tmp[41];
	admit(f, name, serial, true, true);
	verdict(f, name, true);
	cert(f, name, FLEET_STORE_CERT_LDEVID, NOW + 300 * DAY, sha1 ? sha1 : tmp);
	if (status)
		inv_add(f, name, serial, status);
}

static void build(struct fx *f, time_t now, struct fleet_spire_doc *doc)
{
	struct fleet_errctx ec;
	fleet_err e = fleet_spire_nodes_build(&f->inv.base, f->st, TD, now, doc, &ec);
	if (e)
		fail_msg("build: %s: %s", fleet_err_str(e), ec.detail);
}

static const struct fleet_spire_node *find(const struct fleet_spire_node *v, size_t n,
					   const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].name, name) == 0)
			return &v[i];
	return NULL;
}

static const char *why(const struct fleet_spire_doc *d, const char *name)
{
	for (size_t i = 0; i < d->n_excluded; i++)
		if (strcmp(d->excluded[i].name, name) == 0)
			return d->excluded[i].reason;
	return NULL;
}

static void assert_names(const struct fleet_spire_node *v, size_t n, const char *const *want,
			 size_t nwant)
{
	assert_int_equal(n, nwant);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(v[i].name, want[i]);
}

static void write_ok(struct fx *f, const struct fleet_spire_doc *doc, time_t now, bool *changed,
		     int64_t *serial)
{
	struct fleet_errctx ec;
	fleet_err e = fleet_spire_nodes_write(f->out, doc, now, changed, serial, &ec);
	if (e)
		fail_msg("write: %s: %s", fleet_err_str(e), ec.detail);
}

static char *path_in(struct fx *f, const char *name)
{
	static char p[600];
	snprintf(p, sizeof(p), "%s/%s", f->out, name);
	return p;
}

static json_t *load_file(struct fx *f)
{
	json_error_t je;
	json_t *o = json_load_file(path_in(f, FLEET_SPIRE_NODES_FILE), JSON_REJECT_DUPLICATES, &je);
	if (!o)
		fail_msg("spire-nodes.json: %s", je.text);
	return o;
}

static void slurp(const char *path, struct fleet_buf *b)
{
	read_file_or_fail(path, b);
}

/* spire-nodes.json is still the file stat'ed as a, with the bytes before. */
static void assert_unchanged(struct fx *f, const struct stat *a, const struct fleet_buf *before)
{
	struct stat b;
	struct fleet_buf after;
	assert_int_equal(stat(path_in(f, FLEET_SPIRE_NODES_FILE), &b), 0);
	assert_int_equal(a->st_ino, b.st_ino);
	slurp(path_in(f, FLEET_SPIRE_NODES_FILE), &after);
	assert_int_equal(before->len, after.len);
	assert_memory_equal(before->data, after.data, before->len);
	fb_free(&after);
}

/* Every status NetBox gives, plus one missing from the inventory. */
static void test_each_status(void **state)
{
	struct fx *f = *state;
	static const char *const st[] = {"planned", "staged",  "active",        "failed",
					 "offline", "inventory", "decommissioning", "quarantined"};
	for (size_t i = 0; i < sizeof(st) / sizeof(st[0]); i++) {
		char name[32], serial[32];
		snprintf(name, sizeof(name), "w-%s", st[i]);
		snprintf(serial, sizeof(serial), "SER-%zu", i);
		good_device(f, name, serial, st[i], NULL);
	}
	good_device(f, "w-absent", "SER-GONE", NULL, NULL);
	struct fleet_spire_doc d;
	build(f, NOW, &d);
	static const char *const elig[] = {"w-active"};
	static const char *const rev[] = {"w-absent", "w-decommissioning", "w-offline"};
	assert_names(d.eligible, d.n_eligible, elig, 1);
	assert_names(d.revoked, d.n_revoked, rev, 3);
	static const char *const held[] = {"w-planned", "w-staged", "w-failed", "w-inventory",
					   "w-quarantined"};
	for (size_t i = 0; i < 5; i++) {
		const char *r = why(&d, held[i]);
		assert_non_null(r);
		assert_string_equal(r, FLEET_SPIRE_X_NOT_ACTIVE);
	}
	assert_int_equal(d.n_excluded, 5);
	for (size_t i = 0; i < d.n_excluded; i++) /* the inventory's word is kept */
		assert_string_equal(d.excluded[i].status, d.excluded[i].name + 2);
	fleet_spire_doc_free(&d);
}

/* Active in the inventory, but the store holds it back. */
static void test_store_holds_back(void **state)
{
	struct fx *f = *state;
	good_device(f, "w-ok", "S1", "active", NULL);
	good_device(f, "w-quar", "S2", "active", NULL);
	assert_int_equal(fleet_store_device_set_quarantine(f->st, "w-quar", true, "pcr7", NOW),
			 FLEET_STORE_OK);
	good_device(f, "w-lastfail", "S3", "active", NULL); /* pass, then fail */
	verdict(f, "w-lastfail", false);
	admit(f, "w-lastpass", "S4", true, false); /* fail, then pass */
	verdict(f, "w-lastpass", false);
	verdict(f, "w-lastpass", true);
	inv_add(f, "w-lastpass", "S4", "active");
	admit(f, "w-noverdict", "S5", true, true);
	inv_add(f, "w-noverdict", "S5", "active");
	good_device(f, "w-retired", "S6", "active", NULL);
	assert_int_equal(fleet_store_device_set_state(f->st, "w-retired", FLEET_STORE_STATE_RETIRED),
			 FLEET_STORE_OK);
	inv_add(f, "w-stranger", "S7", "active"); /* never admitted */
	good_device(f, "w-renamed", "S8", NULL, NULL);
	inv_add(f, "w-newname", "s8", "active"); /* same serial, other case, other name */
	good_device(f, "w-twice", "S9", NULL, NULL);
	inv_add(f, "w-twice", "S9", "active");
	inv_add(f, "w-twice-b", "S9", "active");

	struct fleet_spire_doc d;
	build(f, NOW, &d);
	static const char *const elig[] = {"w-lastpass", "w-ok"};
	assert_names(d.eligible, d.n_eligible, elig, 2);
	assert_int_equal(d.n_revoked, 0); /* none is absent or leaving */
	assert_string_equal(why(&d, "w-quar"), FLEET_SPIRE_X_QUARANTINED);
	assert_string_equal(why(&d, "w-lastfail"), FLEET_SPIRE_X_VERDICT_FAILED);
	assert_string_equal(why(&d, "w-noverdict"), FLEET_SPIRE_X_NO_VERDICT);
	assert_string_equal(why(&d, "w-retired"), FLEET_SPIRE_X_RETIRED);
	/* never admitted: kept apart from the excluded, for the journal to say
	 * once (fleet_spire_not_admitted_journal), not every pass */
	assert_null(why(&d, "w-stranger"));
	assert_int_equal(d.n_not_admitted, 1);
	assert_string_equal(d.not_admitted[0].name, "w-stranger");
	assert_true(d.not_admitted[0].id > 0);
	assert_string_equal(why(&d, "w-newname"), FLEET_SPIRE_X_NAME_MISMATCH);
	assert_string_equal(why(&d, "w-twice"), FLEET_SPIRE_X_AMBIGUOUS);
	assert_null(why(&d, "w-twice-b")); /* matched (ambiguously), not a stranger */
	/* A w-lastpass without an ECC EK and without a certificate. */
	const struct fleet_spire_node *n = find(d.eligible, d.n_eligible, "w-lastpass");
	assert_string_equal(n->ek_hash_ecc, "");
	assert_int_equal(n->n_ldevid, 0);
	fleet_spire_doc_free(&d);
}

/* Lines of s holding needle. */
static size_t lines_with(const char *s, const char *needle)
{
	size_t n = 0;
	for (const char *p = s; p && *p;) {
		const char *e = strchr(p, '\n');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		char *line = strndup(p, len);
		if (strstr(line, needle))
			n++;
		free(line);
		p = e ? e + 1 : NULL;
	}
	return n;
}

/* A journal of one call of the log on a document with these ids. */
static char *journal_once(struct fleet_spire_not_admitted_log *l, const long *ids, size_t n)
{
	struct fleet_spire_doc d;
	struct stderr_capture c;
	memset(&d, 0, sizeof(d));
	d.n_not_admitted = n;
	d.not_admitted = n ? calloc(n, sizeof(*d.not_admitted)) : NULL;
	for (size_t i = 0; i < n; i++) {
		d.not_admitted[i].id = ids[i];
		snprintf(d.not_admitted[i].name, sizeof(d.not_admitted[i].name), "sw%ld", ids[i]);
	}
	fleet_log_set_target(FLEET_LOG_STDERR);
	stderr_capture_start(&c);
	fleet_spire_not_admitted_journal(l, &d);
	char *out = stderr_capture_end(&c);
	fleet_spire_doc_free(&d);
	return out;
}

static int64_t gauge(struct fleet_metrics *m)
{
	struct fleet_buf b;
	fb_init(&b);
	assert_int_equal(fleet_metrics_render(m, &b), FLEET_OK);
	char *text = strndup((const char *)b.data, b.len);
	fb_free(&b);
	const char *k = "\nfleetd_inventory_not_admitted_devices ";
	char *p = strstr(text, k);
	int64_t v = p ? strtoll(p + strlen(k), NULL, 10) : -1;
	free(text);
	return v;
}

/* The journal j holds one count line: total devices, fresh of them new. */
static void assert_count_line(const char *j, size_t total, size_t fresh)
{
	char line[128];
	snprintf(line, sizeof(line), "%zu device(s) active in the inventory were never admitted "
		 "by fleetd (%zu new)", total, fresh);
	assert_int_equal(lines_with(j, line), 1);
}

/* Each device fleetd never admitted is journaled once while it stays so;
 * each pass has one line with the count; the gauge follows. */
static void test_not_admitted_journaled_once(void **state)
{
	(void)state;
	struct fleet_metrics *m = fleet_metrics_new();
	struct fleet_spire_not_admitted_log *l = NULL;
	assert_int_equal(fleet_spire_not_admitted_log_new(m, &l), FLEET_OK);
	static const long three[] = {4, 17, 230}, two[] = {4, 230}, again[] = {4, 17, 230};
	char *j = journal_once(l, three, 3);
	assert_int_equal(lines_with(j, "FLEET_REASON=not-admitted"), 3);
	assert_int_equal(lines_with(j, "FLEET_DEVICE=sw17"), 1);
	assert_count_line(j, 3, 3);
	assert_int_equal(gauge(m), 3);
	free(j);
	/* the same three: one count line, nothing per device */
	j = journal_once(l, three, 3);
	assert_int_equal(lines_with(j, "FLEET_REASON=not-admitted"), 0);
	assert_count_line(j, 3, 0);
	assert_int_equal(count_lines(j), 1);
	free(j);
	/* 17 was admitted (or left active): gone from the set */
	j = journal_once(l, two, 2);
	assert_int_equal(count_lines(j), 1);
	assert_int_equal(gauge(m), 2);
	free(j);
	/* and back: said again */
	j = journal_once(l, again, 3);
	assert_int_equal(lines_with(j, "FLEET_REASON=not-admitted"), 1);
	assert_int_equal(lines_with(j, "FLEET_DEVICE=sw17"), 1);
	free(j);
	/* none: one line saying so, then silence */
	j = journal_once(l, NULL, 0);
	assert_int_equal(lines_with(j, "0 device(s) active"), 1);
	assert_int_equal(gauge(m), 0);
	free(j);
	j = journal_once(l, NULL, 0);
	assert_int_equal(count_lines(j), 0);
	free(j);
	fleet_spire_not_admitted_log_free(l);
	fleet_metrics_free(m);
	/* without metrics, and freeing NULL */
	assert_int_equal(fleet_spire_not_admitted_log_new(NULL, &l), FLEET_OK);
	j = journal_once(l, three, 3);
	assert_int_equal(lines_with(j, "FLEET_REASON=not-admitted"), 3);
	free(j);
	fleet_spire_not_admitted_log_free(l);
	fleet_spire_not_admitted_log_free(NULL);
}

/* Current LDevIDs only: not revoked, not expired; no LAK; sorted; never a
 * provisional one, live and unrevoked, of an eligible device (a re-attest
 * whose confirm is still to come) or of a revoked one. */
static void test_current_ldevids(void **state)
{
	struct fx *f = *state;
	char a[41], b[41], c[41], r[41], lak[41], edge[41];
	char plak[41], pldevid[41], qlak[41], qldevid[41], x[41];
	admit(f, "w1", "S1", true, true);
	verdict(f, "w1", true);
	inv_add(f, "w1", "S1", "active");
	cert(f, "w1", FLEET_STORE_CERT_LDEVID, NOW + 10 * DAY, a);
	cert(f, "w1", FLEET_STORE_CERT_LDEVID, NOW + 40 * DAY, b);
	cert(f, "w1", FLEET_STORE_CERT_LDEVID, NOW - 1, c); /* expired a second ago */
	cert(f, "w1", FLEET_STORE_CERT_LDEVID, NOW, edge);  /* notAfter is inclusive */
	cert(f, "w1", FLEET_STORE_CERT_LDEVID, NOW + 50 * DAY, r);
	assert_int_equal(fleet_store_cert_revoke(f->st, r, NOW), FLEET_STORE_OK);
	cert(f, "w1", FLEET_STORE_CERT_LAK, NOW + 50 * DAY, lak);
	provisional(f, "1111111111111111111111111111111111111111111111111111111111111111", "w1",
		    "S1", NOW + 60 * DAY, plak, pldevid);
	good_device(f, "w9", "S9", "decommissioning", x);
	provisional(f, "9999999999999999999999999999999999999999999999999999999999999999", "w9",
		    "S9", NOW + 60 * DAY, qlak, qldevid);
	struct fleet_spire_doc d;
	build(f, NOW, &d);
	assert_int_equal(d.n_eligible, 1);
	assert_int_equal(d.n_revoked, 1);
	assert_int_equal(d.revoked[0].n_ldevid, 1);
	assert_string_equal(d.revoked[0].ldevid_sha1[0], x);
	listed_nowhere(&d, pldevid);
	listed_nowhere(&d, plak);
	listed_nowhere(&d, qldevid);
	listed_nowhere(&d, qlak);
	const struct fleet_spire_node *n = &d.eligible[0];
	assert_int_equal(n->n_ldevid, 3);
	const char *want[3] = {a, b, edge};
	for (int i = 0; i < 3; i++)
		for (int j = i + 1; j < 3; j++)
			if (strcmp(want[i], want[j]) > 0) {
				const char *t = want[i];
				want[i] = want[j];
				want[j] = t;
			}
	for (int i = 0; i < 3; i++)
		assert_string_equal(n->ldevid_sha1[i], want[i]);
	fleet_spire_doc_free(&d);
}

/* A revoked device's entry lists its certificates (revoked ones too) and
 * the latest notAfter, loses each at its notAfter, and goes with the last. */
static void test_revoked_until_not_after(void **state)
{
	struct fx *f = *state;
	char x[41], y[41];
	admit(f, "w9", "S9", true, false);
	verdict(f, "w9", true);
	inv_add(f, "w9", "S9", "decommissioning");
	cert(f, "w9", FLEET_STORE_CERT_LDEVID, NOW + 10 * DAY, x);
	cert(f, "w9", FLEET_STORE_CERT_LDEVID, NOW + 20 * DAY, y);
	assert_int_equal(fleet_store_cert_revoke(f->st, y, NOW), FLEET_STORE_OK);
	struct fleet_spire_doc d;

	build(f, NOW + 10 * DAY, &d); /* x's last second */
	assert_int_equal(d.n_revoked, 1);
	assert_int_equal(d.revoked[0].n_ldevid, 2);
	assert_int_equal(d.revoked[0].not_after, NOW + 20 * DAY);
	assert_string_equal(d.revoked[0].ek_hash_ecc, "");
	write_ok(f, &d, NOW, &(bool){0}, NULL);
	json_t *o = load_file(f);
	json_t *e = json_array_get(json_object_get(o, "revoked"), 0);
	assert_string_equal(json_string_value(json_object_get(e, "not_after")),
			    "2026-12-20T05:00:00Z");
	assert_true(json_is_null(json_object_get(e, "ek_hash_ecc")));
	json_decref(o);
	fleet_spire_doc_free(&d);

	build(f, NOW + 10 * DAY + 1, &d); /* x expired: y alone */
	assert_int_equal(d.revoked[0].n_ldevid, 1);
	assert_string_equal(d.revoked[0].ldevid_sha1[0], y);
	fleet_spire_doc_free(&d);

	build(f, NOW + 20 * DAY, &d);
	assert_int_equal(d.n_revoked, 1);
	fleet_spire_doc_free(&d);

	build(f, NOW + 20 * DAY + 1, &d); /* all expired: dropped */
	assert_int_equal(d.n_revoked, 0);
	assert_int_equal(d.n_eligible, 0);
	fleet_spire_doc_free(&d);
}

/* Entries by name, whatever order the inventory and store give. */
static void test_ordering(void **state)
{
	struct fx *f = *state;
	good_device(f, "zeta", "S1", NULL, NULL);
	good_device(f, "alpha", "S2", NULL, NULL);
	good_device(f, "Mid", "S3", NULL, NULL);
	good_device(f, "beta", "S4", NULL, NULL);
	inv_add(f, "beta", "S4", "active");
	inv_add(f, "zeta", "S1", "active");
	inv_add(f, "Mid", "S3", "active");
	inv_add(f, "alpha", "S2", "offline");
	struct fleet_spire_doc d;
	build(f, NOW, &d);
	static const char *const elig[] = {"Mid", "beta", "zeta"}; /* bytewise */
	assert_names(d.eligible, d.n_eligible, elig, 3);
	fleet_spire_doc_free(&d);
}

static void assert_keys(json_t *o, const char *const *keys, size_t n)
{
	assert_int_equal(json_object_size(o), n);
	size_t i = 0;
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v) {
		(void)v;
		assert_string_equal(k, keys[i++]);
	}
}

/* The file: exactly the documented keys in order, values, mode, newline. */
static void test_file_format(void **state)
{
	struct fx *f = *state;
	char s1[41];
	good_device(f, "w1", "S1", "active", s1);
	good_device(f, "w9", "S9", "offline", NULL);
	struct fleet_spire_doc d;
	build(f, NOW, &d);
	bool changed = false;
	int64_t serial = 0;
	write_ok(f, &d, NOW, &changed, &serial);
	assert_true(changed);
	assert_int_equal(serial, 1);
	json_t *o = load_file(f);
	static const char *const top[] = {"version", "serial",   "generated_at",
					  "trust_domain", "eligible", "revoked"};
	assert_keys(o, top, 6);
	assert_int_equal(json_integer_value(json_object_get(o, "version")), 1);
	assert_int_equal(json_integer_value(json_object_get(o, "serial")), 1);
	assert_string_equal(json_string_value(json_object_get(o, "generated_at")),
			    "2026-11-30T05:00:00Z");
	assert_string_equal(json_string_value(json_object_get(o, "trust_domain")), TD);
	json_t *e = json_array_get(json_object_get(o, "eligible"), 0);
	static const char *const ek[] = {"name", "ek_hash", "ek_hash_ecc", "ldevid_sha1"};
	assert_keys(e, ek, 4);
	assert_string_equal(json_string_value(json_object_get(e, "name")), "w1");
	assert_string_equal(json_string_value(json_object_get(e, "ek_hash")), d.eligible[0].ek_hash);
	assert_int_equal(strlen(json_string_value(json_object_get(e, "ek_hash_ecc"))), 64);
	assert_string_equal(json_string_value(json_array_get(json_object_get(e, "ldevid_sha1"), 0)),
			    s1);
	json_t *r = json_array_get(json_object_get(o, "revoked"), 0);
	static const char *const rk[] = {"name", "ek_hash", "ek_hash_ecc", "ldevid_sha1",
					 "not_after"};
	assert_keys(r, rk, 5);
	json_decref(o);
	struct stat sb;
	assert_int_equal(stat(path_in(f, FLEET_SPIRE_NODES_FILE), &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0644);
	struct fleet_buf b;
	slurp(path_in(f, FLEET_SPIRE_NODES_FILE), &b);
	assert_int_equal(b.data[b.len - 1], '\n');
	/* The other side of the handoff: the strict decoder the root applier
	 * reads with (lib/spire_nodes_format.h) accepts exactly what fleetd wrote. */
	struct fleet_spire_nodes sn;
	struct fleet_errctx ec;
	if (fleet_spire_nodes_decode(b.data, b.len, &sn, &ec) != FLEET_OK)
		fail_msg("the applier refuses fleetd's file: %s", ec.detail);
	assert_int_equal(sn.serial, 1);
	assert_int_equal(sn.n_eligible, 1);
	assert_int_equal(sn.n_revoked, 1);
	assert_non_null(fleet_spire_nodes_find(sn.eligible, sn.n_eligible, "w1"));
	assert_non_null(fleet_spire_nodes_find(sn.revoked, sn.n_revoked, "w9"));
	assert_string_equal(fleet_spire_nodes_find(sn.eligible, sn.n_eligible, "w1")->ek_hash,
			    d.eligible[0].ek_hash);
	fleet_spire_nodes_free(&sn);
	fb_free(&b);
	slurp(path_in(f, FLEET_SPIRE_SERIAL_FILE), &b);
	assert_int_equal(b.len, 2);
	assert_memory_equal(b.data, "1\n", 2);
	fb_free(&b);
	fleet_spire_doc_free(&d);
}

/* Same content at a later time: no rewrite (same inode, same bytes). */
static void test_unchanged_not_rewritten(void **state)
{
	struct fx *f = *state;
	good_device(f, "w1", "S1", "active", NULL);
	struct fleet_spire_doc d;
	build(f, NOW, &d);
	bool changed;
	int64_t serial;
	write_ok(f, &d, NOW, &changed, &serial);
	struct stat a, b;
	struct fleet_buf before, after;
	assert_int_equal(stat(path_in(f, FLEET_SPIRE_NODES_FILE), &a), 0);
	slurp(path_in(f, FLEET_SPIRE_NODES_FILE), &before);
	write_ok(f, &d, NOW + 3600, &changed, &serial);
	assert_false(changed);
	assert_int_equal(serial, 1);
	assert_int_equal(stat(path_in(f, FLEET_SPIRE_NODES_FILE), &b), 0);
	assert_int_equal(a.st_ino, b.st_ino);
	assert_int_equal(a.st_mtim.tv_sec, b.st_mtim.tv_sec);
	assert_int_equal(a.st_mtim.tv_nsec, b.st_mtim.tv_nsec);
	slurp(path_in(f, FLEET_SPIRE_NODES_FILE), &after);
	assert_int_equal(before.len, after.len);
	assert_memory_equal(before.data, after.data, before.len);
	fb_free(&after);
	fleet_spire_doc_free(&d);

	set_status(f, "w1", "failed"); /* now the content changes */
	build(f, NOW, &d);
	write_ok(f, &d, NOW + 7200, &changed, &serial);
	assert_true(changed);
	assert_int_equal(serial, 2);
	assert_int_equal(stat(path_in(f, FLEET_SPIRE_NODES_FILE), &b), 0);
	assert_int_not_equal(a.st_ino, b.st_ino);
	fb_free(&before);
	fleet_spire_doc_free(&d);
}

static void write_text(const char *path, const char *s)
{
	FILE *fp = fopen(path, "w");
	assert_non_null(fp);
	fputs(s, fp);
	assert_int_equal(fclose(fp), 0);
}

/* The serial only grows: across writes, a deleted file, a deleted serial
 * file; a damaged serial file is refused, not guessed past. */
static void test_serial(void **state)
{
	struct fx *f = *state;
	good_device(f, "w1", "S1", "active", NULL);
	struct fleet_spire_doc on, off;
	build(f, NOW, &on);
	set_status(f, "w1", "failed");
	build(f, NOW, &off);
	bool changed;
	int64_t serial;
	write_ok(f, &on, NOW, &changed, &serial);
	write_ok(f, &off, NOW, &changed, &serial);
	write_ok(f, &on, NOW, &changed, &serial);
	assert_int_equal(serial, 3);

	assert_int_equal(unlink(path_in(f, FLEET_SPIRE_NODES_FILE)), 0);
	write_ok(f, &on, NOW, &changed, &serial); /* same content, but no file */
	assert_true(changed);
	assert_int_equal(serial, 4);

	assert_int_equal(unlink(path_in(f, FLEET_SPIRE_SERIAL_FILE)), 0);
	write_ok(f, &on, NOW, &changed, &serial); /* unchanged: the serial file comes back */
	assert_false(changed);
	struct fleet_buf b;
	slurp(path_in(f, FLEET_SPIRE_SERIAL_FILE), &b);
	assert_memory_equal(b.data, "4\n", 2);
	fb_free(&b);
	assert_int_equal(unlink(path_in(f, FLEET_SPIRE_SERIAL_FILE)), 0);
	write_ok(f, &off, NOW, &changed, &serial); /* continues from the file */
	assert_int_equal(serial, 5);

	write_text(path_in(f, FLEET_SPIRE_SERIAL_FILE), "100\n"); /* ahead of the file */
	write_ok(f, &on, NOW, &changed, &serial);
	assert_int_equal(serial, 101);

	struct stat a, c;
	assert_int_equal(stat(path_in(f, FLEET_SPIRE_NODES_FILE), &a), 0);
	write_text(path_in(f, FLEET_SPIRE_SERIAL_FILE), "1O2\n");
	struct fleet_errctx ec;
	assert_int_equal(fleet_spire_nodes_write(f->out, &off, NOW, &changed, &serial, &ec),
			 FLEET_SPIRE_E_STATE);
	assert_non_null(strstr(ec.detail, "refusing to guess"));
	assert_int_equal(stat(path_in(f, FLEET_SPIRE_NODES_FILE), &c), 0);
	assert_int_equal(a.st_ino, c.st_ino);
	fleet_spire_doc_free(&on);
	fleet_spire_doc_free(&off);
}

/* The serial in dir's serial file. */
static int64_t serial_file(struct fx *f)
{
	struct fleet_buf b;
	slurp(path_in(f, FLEET_SPIRE_SERIAL_FILE), &b);
	int64_t v = strtoll((const char *)b.data, NULL, 10);
	fb_free(&b);
	return v;
}

/* The previous file is compared by its bytes after the canonical head and
 * decoded whole only when those do not tell (spire_nodes_file.c
 * compare_prev): never on an unchanged pass or an ordinary change; always
 * for a file in another layout (the same content there is still
 * unchanged) and for a file whose serial is past the serial file's (a
 * damaged one then counts for nothing, as before). */
static void test_prev_by_bytes(void **state)
{
	struct fx *f = *state;
	good_device(f, "w1", "S1", "active", NULL);
	struct fleet_spire_doc on, off;
	build(f, NOW, &on);
	set_status(f, "w1", "failed");
	build(f, NOW, &off);
	bool changed;
	int64_t serial;
	unsigned long n0 = fleet_spire_nodes_prev_decodes();
	write_ok(f, &on, NOW, &changed, &serial);
	assert_int_equal(serial, 1);
	write_ok(f, &on, NOW + 3600, &changed, &serial); /* unchanged */
	assert_false(changed);
	assert_int_equal(serial, 1);
	write_ok(f, &off, NOW + 7200, &changed, &serial); /* changed */
	assert_true(changed);
	assert_int_equal(serial, 2);
	assert_int_equal(fleet_spire_nodes_prev_decodes(), n0);

	/* The same content in another layout (compact, keys sorted): decoded,
	 * found the same, left as it is. */
	json_t *o = load_file(f);
	char *compact = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	assert_non_null(compact);
	write_text(path_in(f, FLEET_SPIRE_NODES_FILE), compact);
	free(compact);
	struct stat a;
	struct fleet_buf before;
	assert_int_equal(stat(path_in(f, FLEET_SPIRE_NODES_FILE), &a), 0);
	slurp(path_in(f, FLEET_SPIRE_NODES_FILE), &before);
	write_ok(f, &off, NOW + 7300, &changed, &serial);
	assert_false(changed);
	assert_int_equal(serial, 2);
	assert_int_equal(fleet_spire_nodes_prev_decodes(), n0 + 1);
	assert_unchanged(f, &a, &before);
	fb_free(&before);

	/* A canonical head over damaged bytes, its serial the serial file's:
	 * replaced under the next serial, with no decode. */
	write_text(path_in(f, FLEET_SPIRE_NODES_FILE),
		   "{\n  \"version\": 1,\n  \"serial\": 2,\n  \"generated_at\": "
		   "\"2026-11-30T05:00:00Z\",\n  \"trust_domain\": \"fleet.exa");
	write_ok(f, &off, NOW + 7400, &changed, &serial);
	assert_true(changed);
	assert_int_equal(serial, 3);
	assert_int_equal(fleet_spire_nodes_prev_decodes(), n0 + 1);
	assert_int_equal(serial_file(f), 3);

	/* The serial file lost: the file's serial decides, so the file is
	 * judged: a readable one continues its serial (the same content
	 * there is still unchanged, by bytes, with no decode) ... */
	assert_int_equal(unlink(path_in(f, FLEET_SPIRE_SERIAL_FILE)), 0);
	write_ok(f, &off, NOW + 7500, &changed, &serial);
	assert_false(changed);
	assert_int_equal(serial, 3);
	assert_int_equal(serial_file(f), 3);
	assert_int_equal(fleet_spire_nodes_prev_decodes(), n0 + 1);
	assert_int_equal(unlink(path_in(f, FLEET_SPIRE_SERIAL_FILE)), 0);
	write_ok(f, &on, NOW + 7600, &changed, &serial);
	assert_true(changed);
	assert_int_equal(serial, 4);
	assert_int_equal(fleet_spire_nodes_prev_decodes(), n0 + 2);

	/* ... and a damaged one's serial counts for nothing: the serial
	 * starts again from the serial file's (none: 1), as it always did. */
	assert_int_equal(unlink(path_in(f, FLEET_SPIRE_SERIAL_FILE)), 0);
	write_text(path_in(f, FLEET_SPIRE_NODES_FILE),
		   "{\n  \"version\": 1,\n  \"serial\": 50,\n  \"generated_at\": "
		   "\"2026-11-30T05:00:00Z\",\n  \"trust_domain\": 7\n}\n");
	write_ok(f, &on, NOW + 7700, &changed, &serial);
	assert_true(changed);
	assert_int_equal(serial, 1);
	assert_int_equal(fleet_spire_nodes_prev_decodes(), n0 + 3);
	assert_int_equal(serial_file(f), 1);
	fleet_spire_doc_free(&on);
	fleet_spire_doc_free(&off);
}

/* The byte comparison reads the whole old file to its end: one byte
 * changed at its end, or one more byte after it, is another file (then
 * replaced, canonical head and serial in step: no decode); the file as it
 * was is unchanged again. */
static void test_prev_bytes_to_the_end(void **state)
{
	struct fx *f = *state;
	good_device(f, "w1", "S1", "active", NULL);
	struct fleet_spire_doc d;
	build(f, NOW, &d);
	bool changed;
	int64_t serial;
	write_ok(f, &d, NOW, &changed, &serial);
	struct fleet_buf orig;
	slurp(path_in(f, FLEET_SPIRE_NODES_FILE), &orig);
	unsigned long n0 = fleet_spire_nodes_prev_decodes();
	char *t = malloc(orig.len + 2);
	assert_non_null(t);
	for (int round = 0; round < 2; round++) {
		memcpy(t, orig.data, orig.len);
		t[orig.len] = '\0';
		if (round == 0)
			t[orig.len - 2] = ']'; /* "}\n" becomes "]\n": same size */
		else
			memcpy(t + orig.len, "\n", 2); /* one byte more */
		write_text(path_in(f, FLEET_SPIRE_NODES_FILE), t);
		write_ok(f, &d, NOW, &changed, &serial);
		assert_true(changed);
		assert_int_equal(serial, 2 + round);
		write_ok(f, &d, NOW, &changed, &serial); /* now as it was: unchanged */
		assert_false(changed);
	}
	assert_int_equal(fleet_spire_nodes_prev_decodes(), n0);
	free(t);
	fb_free(&orig);
	fleet_spire_doc_free(&d);
}

/* An inventory error writes nothing, though the content would change. */
static void test_inventory_error_keeps_file(void **state)
{
	struct fx *f = *state;
	good_device(f, "w1", "S1", "active", NULL);
	struct fleet_spire_doc d;
	bool changed;
	int64_t serial;
	struct fleet_errctx ec;
	assert_int_equal(fleet_spire_nodes_pass(&f->inv.base, f->st, TD, f->out, NOW, &d, &changed,
						&serial, &ec),
			 FLEET_SPIRE_OK);
	fleet_spire_doc_free(&d);
	struct stat a;
	struct fleet_buf before;
	assert_int_equal(stat(path_in(f, FLEET_SPIRE_NODES_FILE), &a), 0);
	slurp(path_in(f, FLEET_SPIRE_NODES_FILE), &before);

	set_status(f, "w1", "decommissioning");
	/* Out of memory is no answer either: the file stands, as for an outage. */
	static const fleet_err bad[] = {FLEET_INV_UNAVAILABLE, FLEET_INV_INVALID, FLEET_INV_NOMEM};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		f->inv.result = bad[i];
		/* The inventory's failure, passed on in its own layer. */
		assert_int_equal(fleet_spire_nodes_pass(&f->inv.base, f->st, TD, f->out, NOW + 60,
							&d, &changed, &serial, &ec),
				 bad[i]);
		assert_false(changed);
		assert_int_equal(d.n_eligible + d.n_revoked + d.n_excluded, 0);
		assert_non_null(strstr(ec.detail, "HTTP 503"));
		assert_unchanged(f, &a, &before);
	}
	f->inv.result = FLEET_INV_OK; /* answering again: the change is written */
	assert_int_equal(fleet_spire_nodes_pass(&f->inv.base, f->st, TD, f->out, NOW + 120, &d,
						&changed, &serial, &ec),
			 FLEET_SPIRE_OK);
	assert_true(changed);
	assert_int_equal(d.n_revoked, 1);
	fleet_spire_doc_free(&d);
	fb_free(&before);
}

/* A temp file left by a killed writer is removed by the next write. */
static void test_stale_temp_removed(void **state)
{
	struct fx *f = *state;
	good_device(f, "w1", "S1", "active", NULL);
	struct fleet_spire_doc d;
	build(f, NOW, &d);
	bool changed;
	write_ok(f, &d, NOW, &changed, NULL);
	write_text(path_in(f, ".spire-nodes.json.tmp"), "{\"version\": 1, \"ser");
	write_text(path_in(f, ".spire-nodes.serial.tmp"), "9");
	write_ok(f, &d, NOW, &changed, NULL); /* unchanged, still cleans */
	assert_false(changed);
	assert_int_equal(access(path_in(f, ".spire-nodes.json.tmp"), F_OK), -1);
	assert_int_equal(access(path_in(f, ".spire-nodes.serial.tmp"), F_OK), -1);
	fleet_spire_doc_free(&d);
}

/* The directory: refused when others may write it; one writer at a time. */
static void test_directory_rules(void **state)
{
	struct fx *f = *state;
	good_device(f, "w1", "S1", "active", NULL);
	struct fleet_spire_doc d;
	build(f, NOW, &d);
	struct fleet_errctx ec;
	bool changed;
	assert_int_equal(chmod(f->out, 0775), 0);
	assert_int_equal(fleet_spire_nodes_write(f->out, &d, NOW, &changed, NULL, &ec),
			 FLEET_SPIRE_E_UNSAFE);
	assert_non_null(strstr(ec.detail, "not writable by group or others"));
	assert_int_equal(chmod(f->out, 0755), 0);
	int dfd = open(f->out, O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0);
	assert_int_equal(flock(dfd, LOCK_EX), 0); /* another writer */
	assert_int_equal(fleet_spire_nodes_write(f->out, &d, NOW, &changed, NULL, &ec),
			 FLEET_SPIRE_E_BUSY);
	assert_int_equal(access(path_in(f, FLEET_SPIRE_NODES_FILE), F_OK), -1);
	close(dfd);
	write_ok(f, &d, NOW, &changed, NULL);
	assert_true(changed);
	fleet_spire_doc_free(&d);
}

/* What the format cannot carry is left out, so the file is never refused. */
static void test_format_rules(void **state)
{
	struct fx *f = *state;
	good_device(f, "bad name", "S1", "active", NULL);
	admit(f, "w-ecconly", "S2", false, true);
	verdict(f, "w-ecconly", true);
	inv_add(f, "w-ecconly", "S2", "active");
	good_device(f, "w5", "S5", "active", NULL);
	good_device(f, "w5-ecc", "S6", "active", NULL);
	/* Two devices the store holds with one RSA EK. */
	assert_int_equal(fleet_store_device_record_admission(f->st, "w7", "S7", 7, EKA, NULL, NOW),
			 FLEET_STORE_OK);
	assert_int_equal(fleet_store_device_record_admission(f->st, "w8", "S8", 8, EKA, NULL, NOW),
			 FLEET_STORE_OK);
	verdict(f, "w7", true);
	verdict(f, "w8", true);
	inv_add(f, "w7", "S7", "active");
	inv_add(f, "w8", "S8", "active");
	/* More current LDevIDs than an entry carries. */
	good_device(f, "w-many", "S9", "active", NULL);
	good_device(f, "w-many-gone", "S10", NULL, NULL);
	char first[41] = "", last[41] = "", tmp[41];
	for (int i = 0; i < FLEET_SPIRE_LDEVID_MAX; i++) { /* with good_device's: one over */
		cert(f, "w-many", FLEET_STORE_CERT_LDEVID, NOW + (10 + i) * DAY, tmp);
		cert(f, "w-many-gone", FLEET_STORE_CERT_LDEVID, NOW + (10 + i) * DAY,
		     i == 0 ? first : last);
	}
	struct fleet_spire_doc d;
	build(f, NOW, &d);
	static const char *const elig[] = {"w5"};
	assert_names(d.eligible, d.n_eligible, elig, 1);
	assert_string_equal(why(&d, "bad name"), FLEET_SPIRE_X_NAME_UNUSABLE);
	assert_string_equal(why(&d, "w-ecconly"), FLEET_SPIRE_X_NO_RSA_EK);
	assert_string_equal(why(&d, "w5-ecc"), FLEET_SPIRE_X_NAME_ECC);
	assert_string_equal(why(&d, "w7"), FLEET_SPIRE_X_EK_SHARED);
	assert_string_equal(why(&d, "w8"), FLEET_SPIRE_X_EK_SHARED);
	assert_string_equal(why(&d, "w-many"), FLEET_SPIRE_X_TOO_MANY_LDEVID);
	/* Revoked keeps the 16 that stay valid longest (the one expiring
	 * soonest is left out), and the latest notAfter (good_device's). */
	assert_int_equal(d.n_revoked, 1);
	assert_int_equal(d.revoked[0].n_ldevid, FLEET_SPIRE_LDEVID_MAX);
	assert_int_equal(d.revoked[0].not_after, NOW + 300 * DAY);
	bool has_first = false, has_last = false;
	for (size_t i = 0; i < d.revoked[0].n_ldevid; i++) {
		has_first |= strcmp(d.revoked[0].ldevid_sha1[i], first) == 0;
		has_last |= strcmp(d.revoked[0].ldevid_sha1[i], last) == 0;
	}
	assert_false(has_first);
	assert_true(has_last);
	fleet_spire_doc_free(&d);

	struct fleet_errctx ec;
	assert_int_equal(
		fleet_spire_nodes_build(&f->inv.base, f->st, "Fleet.Example", NOW, &d, &ec),
		FLEET_SPIRE_E_INVALID);
	assert_false(fleet_spire_name_ok("-w1"));
	assert_false(fleet_spire_name_ok("a/b"));
	assert_true(fleet_spire_name_ok("w1.rack-2_b"));
}

/* The writer checks what it is given: a document the format cannot carry
 * is refused and nothing is written. */
static void test_write_refuses_malformed(void **state)
{
	struct fx *f = *state;
	good_device(f, "w1", "S1", "active", NULL);
	good_device(f, "w2", "S2", "active", NULL);
	struct fleet_errctx ec;
	bool changed;
	struct fleet_spire_doc d;
	build(f, NOW, &d);
	assert_int_equal(d.n_eligible, 2);
	assert_int_equal(d.eligible[0].n_ldevid, 1);
	char saved[41];
	memcpy(saved, d.eligible[0].ldevid_sha1[0], 41);
	d.eligible[0].ldevid_sha1[0][5] = 'G';
	assert_int_equal(fleet_spire_nodes_write(f->out, &d, NOW, &changed, NULL, &ec),
			 FLEET_SPIRE_E_INVALID);
	assert_non_null(strstr(ec.detail, "eligible[0]"));
	memcpy(d.eligible[0].ldevid_sha1[0], saved, 41);
	struct fleet_spire_node t = d.eligible[0]; /* out of order */
	d.eligible[0] = d.eligible[1];
	d.eligible[1] = t;
	assert_int_equal(fleet_spire_nodes_write(f->out, &d, NOW, &changed, NULL, &ec),
			 FLEET_SPIRE_E_INVALID);
	assert_non_null(strstr(ec.detail, "out of order"));
	d.eligible[1] = d.eligible[0];
	d.eligible[0] = t;
	d.eligible[0].ek_hash[0] = '\0'; /* ek_hash cannot be null */
	assert_int_equal(fleet_spire_nodes_write(f->out, &d, NOW, &changed, NULL, &ec),
			 FLEET_SPIRE_E_INVALID);
	assert_int_equal(access(path_in(f, FLEET_SPIRE_NODES_FILE), F_OK), -1);
	assert_int_equal(access(path_in(f, FLEET_SPIRE_SERIAL_FILE), F_OK), -1);
	fleet_spire_doc_free(&d);
}

/* n eligible entries, sorted by name, each its own EK and one LDevID. */
static void many(struct fleet_spire_doc *d, size_t n)
{
	memset(d, 0, sizeof(*d));
	snprintf(d->trust_domain, sizeof(d->trust_domain), TD);
	d->eligible = calloc(n, sizeof(*d->eligible));
	assert_non_null(d->eligible);
	d->n_eligible = n;
	for (size_t i = 0; i < n; i++) {
		struct fleet_spire_node *e = &d->eligible[i];
		snprintf(e->name, sizeof(e->name), "m%06zu", i);
		snprintf(e->ek_hash, sizeof(e->ek_hash), "%064zx", i + 1);
		e->ldevid_sha1 = calloc(1, sizeof(*e->ldevid_sha1));
		assert_non_null(e->ldevid_sha1);
		snprintf(e->ldevid_sha1[0], sizeof(e->ldevid_sha1[0]), "%040zx", i + 1);
		e->n_ldevid = 1;
	}
}

/* The writer and the applier share the format's limits: a list at the
 * cap is written and read back; one entry more, which the applier would
 * refuse whole, is refused by the writer (INVALID, the pass journals it)
 * and the previous file and serial stand. */
static void test_write_refuses_over_cap(void **state)
{
	struct fx *f = *state;
	struct fleet_spire_doc d;
	many(&d, 3); /* the previous file */
	bool changed;
	int64_t serial;
	write_ok(f, &d, NOW, &changed, &serial);
	fleet_spire_doc_free(&d);
	struct stat a;
	struct fleet_buf before, after;
	assert_int_equal(stat(path_in(f, FLEET_SPIRE_NODES_FILE), &a), 0);
	slurp(path_in(f, FLEET_SPIRE_NODES_FILE), &before);

	struct fleet_errctx ec;
	many(&d, FLEET_SPIRE_LIST_MAX + 1);
	assert_int_equal(fleet_spire_nodes_write(f->out, &d, NOW + 60, &changed, &serial, &ec),
			 FLEET_SPIRE_E_INVALID);
	assert_false(changed);
	assert_non_null(strstr(ec.detail, "eligible has 100001 devices, more than 100000"));
	assert_unchanged(f, &a, &before);
	slurp(path_in(f, FLEET_SPIRE_SERIAL_FILE), &after);
	assert_memory_equal(after.data, "1\n", 2);
	fb_free(&after);

	/* At the cap: written, and the applier's decoder takes all of it. */
	free(d.eligible[FLEET_SPIRE_LIST_MAX].ldevid_sha1);
	d.eligible = realloc(d.eligible, FLEET_SPIRE_LIST_MAX * sizeof(*d.eligible));
	d.n_eligible = FLEET_SPIRE_LIST_MAX;
	write_ok(f, &d, NOW + 120, &changed, &serial);
	assert_true(changed);
	assert_int_equal(serial, 2);
	slurp(path_in(f, FLEET_SPIRE_NODES_FILE), &after);
	struct fleet_spire_nodes sn;
	struct fleet_errctx iec;
	if (fleet_spire_nodes_decode(after.data, after.len, &sn, &iec) != FLEET_OK)
		fail_msg("the applier refuses fleetd's file: %s", iec.detail);
	assert_int_equal(sn.n_eligible, FLEET_SPIRE_LIST_MAX);
	assert_string_equal(sn.eligible[FLEET_SPIRE_LIST_MAX - 1].name, "m099999");
	fleet_spire_nodes_free(&sn);
	fb_free(&after);
	fb_free(&before);
	fleet_spire_doc_free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_each_status, setup, teardown),
		cmocka_unit_test_setup_teardown(test_store_holds_back, setup, teardown),
		cmocka_unit_test(test_not_admitted_journaled_once),
		cmocka_unit_test_setup_teardown(test_current_ldevids, setup, teardown),
		cmocka_unit_test_setup_teardown(test_revoked_until_not_after, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ordering, setup, teardown),
		cmocka_unit_test_setup_teardown(test_file_format, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unchanged_not_rewritten, setup, teardown),
		cmocka_unit_test_setup_teardown(test_serial, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prev_by_bytes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prev_bytes_to_the_end, setup, teardown),
		cmocka_unit_test_setup_teardown(test_inventory_error_keeps_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_temp_removed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_directory_rules, setup, teardown),
		cmocka_unit_test_setup_teardown(test_format_rules, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_refuses_malformed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_refuses_over_cap, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
