/*
 * test_store_concurrency.c: the store owns its concurrency (store.h,
 * "Threads"; docs/store.md, "Threads and handles").
 *
 * The daemon's shape, in one process: the pass (fleet_pass_run, the real
 * one) runs in a loop on its own thread and its own read-only handle,
 * writing spire-nodes.json from an in-test inventory that lists every
 * device active; meanwhile three admission threads do an admission's store
 * work on ONE shared read-write handle, as the HTTP threads do, with no
 * lock of their own: provisional certificates, admissions (and
 * re-admissions), revocations of sessions that end unconfirmed, failed
 * verdicts, claims, binding author records; and a reader thread on the same
 * handle checks devices in snapshots, as the intake and fleetctl read.
 *
 * Asserted, every pass: spire-nodes.json lists only devices whose
 * admission was made (never a session that ended unconfirmed, never a
 * failed one), with only LDevID certificates of their admissions; every
 * admission that returned before a pass began is in that pass's file, with
 * its LDevID. Every store call succeeds (an interleaved transaction fails
 * BEGIN on a shared connection), and every failure's sentence read right
 * after it is that call's own, whatever the other threads' calls said.
 * After the threads: the file lists exactly the admitted devices.
 *
 * Built with -DFLEET_TSAN=ON, ThreadSanitizer checks it too: .ci/run builds
 * just this test that way and runs it; the normal builds run it as it is.
 */
#include "tests/testutil.h"
#include "tests/store/store_location.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include <jansson.h>
#include <openssl/x509.h>

#include "fleetd/config/config.h"
#include "fleetd/inventory/inventory.h"
#include "fleetd/obs/journal.h"
#include "fleetd/pass/pass.h"
#include "fleetd/store/store.h"
#include "tests/unit/x509_mint.h"

#define WORKERS 3
#define PER_WORKER 40
#define N_DEV (WORKERS * PER_WORKER)
#define AUTHOR "terraform"

/* What a device's admission thread does with it, by index. */
enum kind {
	K_CONFIRM = 0, /* issued, then admitted */
	K_READMIT,     /* admitted, then admitted again by a second session */
	K_ABANDON,     /* issued, then the session ends: revoked, never admitted */
	K_FAIL,        /* a failed verdict and a claim: never issued */
};

/* A session's progress, published with release so that its LDevID's
 * fingerprint is there for whoever reads the state with acquire. */
enum { S_NONE = 0, S_ADMITTING, S_ADMITTED };

struct session {
	atomic_int state;
	char ldevid[41];
	unsigned char *lak_der, *ldevid_der;
	size_t lak_len, ldevid_len;
};

struct dev {
	char name[32], serial[32], ek[65];
	enum kind kind;
	struct session s[2];
};

static struct dev devs[N_DEV];
static struct fleet_store *shared; /* the admission's read-write handle */
static atomic_int workers_left;
static atomic_int failures;
static atomic_long passes_checked;
static time_t now0;

/* Assertions off the main thread: cmocka's cannot longjmp across threads,
 * so a thread counts and says; the main thread asserts the count. */
#define CHECK(cond, ...)                                                                      \
	do {                                                                                  \
		if (!(cond)) {                                                                \
			fprintf(stderr, "FAILED %s:%d: ", __FILE__, __LINE__);                \
			fprintf(stderr, __VA_ARGS__);                                         \
			fputc('\n', stderr);                                                  \
			atomic_fetch_add(&failures, 1);                                       \
		}                                                                             \
	} while (0)

#define CHECK_OK(call)                                                                        \
	do {                                                                                  \
		fleet_err e_ = (call);                                             \
		CHECK(e_ == FLEET_STORE_OK, "%s: %s: %s", #call, fleet_err_str(e_),     \
		      fleet_store_errmsg(shared));                                            \
	} while (0)

static unsigned char *mint(EVP_PKEY *k, const char *cn, size_t *len)
{
	struct mint m = {.key = k, .cn = cn, .not_before = now0 - 3600,
			 .not_after = now0 + 30 * 86400};
	X509 *x = mint_cert(&m);
	unsigned char *der = mint_der(x, len);
	X509_free(x);
	return der;
}

static void make_devices(void)
{
	EVP_PKEY *k = mint_key_ec();
	assert_non_null(k);
	for (int i = 0; i < N_DEV; i++) {
		struct dev *d = &devs[i];
		memset(d, 0, sizeof(*d));
		snprintf(d->name, sizeof(d->name), "d%03d", i);
		snprintf(d->serial, sizeof(d->serial), "SER-%03d", i);
		snprintf(d->ek, sizeof(d->ek), "%056x%08x", 0, i + 1);
		d->kind = (enum kind)(i % 4);
		for (int j = 0; j < 2; j++) {
			char cn[48];
			snprintf(cn, sizeof(cn), "d%03d lak %d", i, j);
			d->s[j].lak_der = mint(k, cn, &d->s[j].lak_len);
			snprintf(cn, sizeof(cn), "d%03d ldevid %d", i, j);
			d->s[j].ldevid_der = mint(k, cn, &d->s[j].ldevid_len);
			assert_non_null(d->s[j].lak_der);
			assert_non_null(d->s[j].ldevid_der);
		}
	}
	EVP_PKEY_free(k);
}

static void session_id(int dev, int j, char out[65])
{
	snprintf(out, 65, "%062x%02x", dev + 1, j);
}

/* A failing call's sentence, read right after it, is its own. */
static void own_sentence(const char *want)
{
	const char *got = fleet_store_errmsg(shared);
	CHECK(strcmp(got, want) == 0, "errmsg \"%s\", not this call's \"%s\"", got, want);
}

static void issue(int i, int j)
{
	struct dev *d = &devs[i];
	struct session *s = &d->s[j];
	char sid[65], lak[41];
	session_id(i, j, sid);
	struct fleet_store_issue_in in = {
		.session = sid, .serial = d->serial, .device = d->name,
		.lak_der = s->lak_der, .lak_len = s->lak_len,
		.ldevid_der = s->ldevid_der, .ldevid_len = s->ldevid_len, .now = time(NULL)};
	CHECK_OK(fleet_store_provisional_issue(shared, &in, lak, s->ldevid));
}

static void admit(int i, int j)
{
	struct dev *d = &devs[i];
	char sid[65];
	session_id(i, j, sid);
	struct fleet_store_admit_in in = {
		.session = sid, .device = d->name, .serial = d->serial, .inventory_id = i + 1,
		.ek_hash = d->ek, .ek_hash_ecc = "", .may_create = j == 0, .now = time(NULL)};
	atomic_store_explicit(&d->s[j].state, S_ADMITTING, memory_order_release);
	int64_t vid = 0;
	CHECK_OK(fleet_store_admit(shared, &in, &vid));
	CHECK(vid > 0, "admit %s: no verdict id", d->name);
	atomic_store_explicit(&d->s[j].state, S_ADMITTED, memory_order_release);
}

static void abandon(int i)
{
	char sid[65], sha1s[FLEET_STORE_REVOKE_SHA1S][41];
	size_t n = 0;
	session_id(i, 0, sid);
	CHECK_OK(fleet_store_provisional_revoke(shared, sid, "session-ended", time(NULL), sha1s,
						&n));
	CHECK(n == 2, "revoke %s: %zu certificates revoked, not 2", devs[i].name, n);
}

static void fail_and_claim(int i)
{
	struct dev *d = &devs[i];
	static const char *const reasons[] = {"pcr7-authority"};
	char sid[65];
	session_id(i, 0, sid);
	struct fleet_store_verdict_in v = {.time = time(NULL), .device = d->name,
					   .serial = d->serial, .session = sid, .pass = false,
					   .reasons = reasons, .n_reasons = 1, .ek_hash = d->ek};
	CHECK_OK(fleet_store_verdict_insert(shared, &v, NULL));
	CHECK_OK(fleet_store_claim_upsert(shared, d->serial, FLEET_STORE_CLAIM_NO_BINDING, d->ek,
					  NULL, time(NULL)));
}

/* The pass's binding author records, written and read on the shared handle. */
static void author_round_trip(int i)
{
	struct dev *d = &devs[i];
	struct fleet_store_binding_author r = {.device_id = i + 1, .change_id = 1000 + i,
					       .changed_at = now0, .recorded_at = now0};
	snprintf(r.serial, sizeof(r.serial), "%s", d->serial);
	snprintf(r.approved_ek_hash, sizeof(r.approved_ek_hash), "%s", d->ek);
	snprintf(r.user, sizeof(r.user), "%s", AUTHOR);
	struct fleet_store_binding_author got;
	bool forgot = false;
	CHECK_OK(fleet_store_binding_author_record(shared, &r));
	CHECK_OK(fleet_store_binding_author_get(shared, i + 1, &got));
	CHECK(fleet_store_binding_author_matches(&got, i + 1, d->serial, d->ek, "", AUTHOR),
	      "binding author record of %s not read back", d->name);
	CHECK_OK(fleet_store_binding_author_forget(shared, i + 1, &forgot));
	CHECK(forgot, "binding author record of %s not forgotten", d->name);
}

static void *worker(void *arg)
{
	int w = (int)(intptr_t)arg;
	for (int k = 0; k < PER_WORKER; k++) {
		int i = w * PER_WORKER + k;
		switch (devs[i].kind) {
		case K_CONFIRM:
			issue(i, 0);
			admit(i, 0);
			break;
		case K_READMIT:
			issue(i, 0);
			admit(i, 0);
			issue(i, 1);
			admit(i, 1);
			break;
		case K_ABANDON:
			issue(i, 0);
			abandon(i);
			break;
		case K_FAIL:
			fail_and_claim(i);
			break;
		}
		author_round_trip(i);
		/* A refused call among the others: its sentence stays its own. */
		struct fleet_store_verdict *v = NULL;
		size_t n = 0;
		CHECK(fleet_store_verdicts_list(shared, NULL, 0, &v, &n) == FLEET_STORE_E_INVALID,
		      "a limit of 0 was not refused");
		own_sentence("a limit is 1 to 10000");
		free(v);
	}
	atomic_fetch_sub(&workers_left, 1);
	return NULL;
}

/* The intake's and fleetctl's reads, on the shared handle: one admitted
 * device at a time, in one snapshot, holds what its admissions wrote. */
static void *reader(void *arg)
{
	(void)arg;
	unsigned seed = 7;
	while (atomic_load(&workers_left) > 0) {
		int i = (int)(rand_r(&seed) % N_DEV);
		struct dev *d = &devs[i];
		int admitted = 0;
		for (int j = 0; j < 2; j++)
			admitted += atomic_load_explicit(&d->s[j].state, memory_order_acquire) ==
				    S_ADMITTED;
		if (admitted) {
			struct fleet_store_device row;
			struct fleet_store_cert *c = NULL;
			struct fleet_store_verdict *v = NULL;
			size_t nc = 0, nv = 0;
			CHECK_OK(fleet_store_snapshot_begin(shared));
			CHECK_OK(fleet_store_device_get_by_name(shared, d->name, &row));
			CHECK_OK(fleet_store_certs_for_device(shared, d->name, &c, &nc));
			CHECK_OK(fleet_store_verdicts_list(shared, d->name, 1, &v, &nv));
			CHECK(fleet_store_device_touch(shared, d->name, time(NULL)) ==
				      FLEET_STORE_E_INVALID,
			      "a write inside a snapshot was not refused");
			fleet_store_snapshot_end(shared);
			CHECK(nc >= 2 * (size_t)admitted, "%s: %zu certificates after %d admissions",
			      d->name, nc, admitted);
			CHECK(nv == 1 && v[0].pass, "%s: its last verdict is not its admission's",
			      d->name);
			fleet_store_certs_free(c, nc);
			free(v);
			CHECK(fleet_store_device_check_eks(shared, d->serial, d->ek, "").outcome ==
				      FLEET_PASSED,
			      "%s: its own EKs did not pass: %s", d->name, fleet_store_errmsg(shared));
		}
		struct fleet_store_device none;
		CHECK(fleet_store_device_get_by_serial(shared, "NO-SUCH-SERIAL", &none) ==
			      FLEET_STORE_E_NOT_FOUND,
		      "an unknown serial was found");
		own_sentence("no device with that serial");
	}
	return NULL;
}

/* The inventory: every device, active. Only the pass's thread reads it. */
static fleet_err inv_list(struct fleet_inventory *inv, struct fleet_inv_device **out, size_t *n,
			  struct fleet_inv_malformed **bad, size_t *n_bad, struct fleet_errctx *ec)
{
	(void)inv;
	(void)ec;
	*bad = NULL;
	*n_bad = 0;
	*out = calloc(N_DEV, sizeof(**out));
	if (!*out)
		return FLEET_INV_UNAVAILABLE;
	for (int i = 0; i < N_DEV; i++) {
		struct fleet_inv_device *d = &(*out)[i];
		d->id = i + 1;
		snprintf(d->name, sizeof(d->name), "d%03d", i);
		snprintf(d->serial, sizeof(d->serial), "SER-%03d", i);
		snprintf(d->status, sizeof(d->status), "active");
		memcpy(d->ek_hash, devs[i].ek, sizeof(d->ek_hash));
	}
	*n = N_DEV;
	return FLEET_INV_OK;
}

static const struct fleet_inventory_ops inv_ops = {.list = inv_list};

static int dev_index(const char *name)
{
	int i;
	if (sscanf(name, "d%d", &i) != 1 || i < 0 || i >= N_DEV)
		return -1;
	return i;
}

/* One spire-nodes.json against what the admission threads had done:
 * before[i][j] says session j of device i was admitted before the pass
 * began. */
static void check_file(const char *path, int before[N_DEV][2], bool final)
{
	json_error_t jerr;
	json_t *doc = json_load_file(path, 0, &jerr);
	CHECK(doc != NULL, "%s: %s", path, jerr.text);
	if (!doc)
		return;
	json_t *eligible = json_object_get(doc, "eligible");
	CHECK(json_array_size(json_object_get(doc, "revoked")) == 0, "a device is revoked");
	bool listed[N_DEV] = {false};
	size_t k;
	json_t *e;
	json_array_foreach(eligible, k, e) {
		const char *name = json_string_value(json_object_get(e, "name"));
		int i = name ? dev_index(name) : -1;
		CHECK(i >= 0, "an eligible entry names no test device");
		if (i < 0)
			continue;
		struct dev *d = &devs[i];
		listed[i] = true;
		CHECK(d->kind == K_CONFIRM || d->kind == K_READMIT,
		      "%s is eligible, and was never admitted (kind %d)", d->name, d->kind);
		size_t m;
		json_t *sha1;
		json_array_foreach(json_object_get(e, "ldevid_sha1"), m, sha1) {
			const char *h = json_string_value(sha1);
			bool ours = false;
			for (int j = 0; j < 2 && h; j++)
				ours |= atomic_load_explicit(&d->s[j].state, memory_order_acquire) >=
						S_ADMITTING &&
					strcmp(h, d->s[j].ldevid) == 0;
			CHECK(ours, "%s lists an LDevID no admission of it made", d->name);
		}
		for (int j = 0; j < 2; j++) {
			if (!before[i][j])
				continue;
			bool found = false;
			json_array_foreach(json_object_get(e, "ldevid_sha1"), m, sha1)
				found |= strcmp(json_string_value(sha1), d->s[j].ldevid) == 0;
			CHECK(found, "%s: the LDevID of an admission before the pass is not listed",
			      d->name);
		}
	}
	for (int i = 0; i < N_DEV; i++)
		CHECK(listed[i] || !(before[i][0] || before[i][1]),
		      "%s was admitted before the pass and is not eligible", devs[i].name);
	if (final)
		for (int i = 0; i < N_DEV; i++)
			CHECK(listed[i] == (devs[i].kind == K_CONFIRM || devs[i].kind == K_READMIT),
			      "after the threads, %s is %s", devs[i].name,
			      listed[i] ? "eligible" : "not eligible");
	json_decref(doc);
}

struct pass_ctx {
	struct fleet_pass *pass;
	char file[600];
};

static void pass_once(struct pass_ctx *pc, bool final)
{
	static int before[N_DEV][2];
	for (int i = 0; i < N_DEV; i++)
		for (int j = 0; j < 2; j++)
			before[i][j] = atomic_load_explicit(&devs[i].s[j].state,
							    memory_order_acquire) == S_ADMITTED;
	const char *r = fleet_pass_run(pc->pass, time(NULL));
	CHECK(strcmp(r, "ok") == 0, "the pass: %s", r);
	check_file(pc->file, before, final);
	atomic_fetch_add(&passes_checked, 1);
}

static void *pass_thread(void *arg)
{
	struct pass_ctx *pc = arg;
	while (atomic_load(&workers_left) > 0)
		pass_once(pc, false);
	return NULL;
}

static void pass_during_admissions(void **state)
{
	(void)state;
	now0 = time(NULL);
	fleet_log_set_target(FLEET_LOG_STDERR);
	fleet_log_set_max_priority(LOG_WARNING); /* no line per excluded device and pass */
	make_devices();
	char *dir = make_temp_dir("storeconc");
	char loc[1024]; /* dir, or its PostgreSQL database (store_location.h) */
	store_location_new(dir, loc, sizeof(loc));
	struct fleet_errctx sec = {0};
	char err[sizeof(sec.detail) + 80];
	struct fleet_store *pass_store = NULL;
	if (fleet_store_open(loc, FLEET_STORE_RW, &shared, &sec) != FLEET_STORE_OK ||
	    fleet_store_open(loc, FLEET_STORE_READONLY, &pass_store, &sec) !=
		    FLEET_STORE_OK)
		fail_msg("store: %s", fleet_errctx_text(&sec, err, sizeof(err)));

	struct fleet_config c;
	fleet_config_defaults(&c);
	snprintf(c.state_dir, sizeof(c.state_dir), "%s", dir);
	snprintf(c.spire_trust_domain, sizeof(c.spire_trust_domain), "fleet.example");
	struct fleet_inventory inv = {.ops = &inv_ops};
	struct fleet_pass_deps pd = {.config = &c, .inventory = &inv, .store = pass_store};
	struct pass_ctx pc;
	snprintf(pc.file, sizeof(pc.file), "%s/spire-nodes.json", dir);
	assert_int_equal(fleet_pass_new(&pd, &pc.pass), FLEET_OK);

	pthread_t w[WORKERS], rd, pt;
	atomic_store(&workers_left, WORKERS);
	assert_int_equal(pthread_create(&pt, NULL, pass_thread, &pc), 0);
	assert_int_equal(pthread_create(&rd, NULL, reader, NULL), 0);
	for (int i = 0; i < WORKERS; i++)
		assert_int_equal(pthread_create(&w[i], NULL, worker, (void *)(intptr_t)i), 0);
	for (int i = 0; i < WORKERS; i++)
		pthread_join(w[i], NULL);
	pthread_join(rd, NULL);
	pthread_join(pt, NULL);
	pass_once(&pc, true); /* everything admitted is in, and nothing else */
	printf("  %ld passes checked during and after %d admission threads' work\n",
	       atomic_load(&passes_checked), WORKERS);
	assert_int_equal(atomic_load(&failures), 0);
	assert_true(atomic_load(&passes_checked) >= 2);

	fleet_pass_free(pc.pass);
	fleet_store_close(pass_store);
	fleet_store_close(shared);
	store_location_free(loc);
	for (int i = 0; i < N_DEV; i++)
		for (int j = 0; j < 2; j++) {
			free(devs[i].s[j].lak_der);
			free(devs[i].s[j].ldevid_der);
		}
	rm_rf(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(pass_during_admissions),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
