/*
 * test_admission_state.c: admission's state against the attacks and the
 * outages that independent testing found (fleetd/admission/admission.h,
 * sessions.h, lookup.h; fleetd/store/store.h "One admission"). Each test
 * reproduces its attack against the real fleetd binary over HTTPS, with
 * two swtpm machines, tink-attest's library and the NetBox contract fake;
 * a forger is a second client on 127.0.0.2 replaying what it saw.
 *
 *   forged_intakes_cannot_block   a replayed intake every 200 ms while the
 *                                 machine attests: it is admitted
 *   unproven_flood_not_journaled  1,000 unproven requests: a handful of
 *                                 journal lines, every one counted, the
 *                                 rest summarised (log-suppressed) by the
 *                                 time fleetd stops
 *   claim_only_after_proof        replayed intakes of an unknown serial
 *                                 write no claim; the TPM's answer does
 *   inventory_budget              a flood costs NetBox a bounded number of
 *                                 requests, the rest 503 (lookup-budget);
 *                                 ten sources for one serial meet its cap
 *                                 (session-caps)
 *   unconfirmed_is_provisional    certificates without a confirm belong to
 *                                 no device, are revoked when superseded or
 *                                 at the deadline (after a confirm with a
 *                                 bad signature; a confirm after it is
 *                                 refused), the journal naming each SHA-1,
 *                                 and SPIRE lists neither
 *   refused_confirm_undoes_all    the binding moves to another TPM before
 *                                 the confirm: nothing of the session stays;
 *                                 the new TPM is admitted, the old refused
 *   ek_name_alg_refused_at_intake an EK with a SHA-1 nameAlg: refused at
 *                                 intake, NetBox not asked
 *   requested_run_read_again      the owner's requested run changes after
 *                                 intake: the answer's re-read refuses
 *   kill9_each_write_point        kill -9 at every durable write of the
 *                                 answer and confirm: after a restart the
 *                                 state is the before or the after
 *   listener_guards_on_fleetd     the listener's default per-source rate
 *                                 limit (429s, bounded NetBox requests) and
 *                                 its request deadline (a trickled request
 *                                 cut and counted), with fleetd's wiring
 */
#include "tests/e2e/admission_fixture.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/stat.h>
#include <sys/wait.h>

#include <tss2/tss2_mu.h>

#include "lib/attest_wire.h"
#include "lib/ca.h"
#include "tests/e2e/http_client.h"
#include "tests/e2e/netbox_harness.h"

#define FORGER "127.0.0.2"
#define CONFIRM "/v1/attest/confirm"
#define N_SERIALS 9 /* STA-0001 .. STA-0009 (s1 .. s9), approved for machine A */

static char CONFIG[700], ARM[700];

#define N_KILL 40 /* STA-K00 .. STA-K39 (k0 .. k39): one per kill -9 point */

static void seed_one(FILE *f, int id, const char *name, const char *serial, bool last)
{
	fprintf(f,
		"  {\"id\": %d, \"name\": \"%s\", \"serial\": \"%s\", \"status\": \"planned\",\n"
		"   \"primary_ip4\": \"10.0.%d.%d/24\", \"created_by\": \"terraform\",\n"
		"   \"custom_fields\": {\"class\": \"worker\", \"install_disk\": \"/dev/nvme0n1\",\n"
		"     \"install_disk_serial\": \"S5GX%d\", \"bmc_type\": \"ipmi\", \"tpm_version\": "
		"\"2.0\", \"amt\": false, \"secure_boot_expected\": true, \"expected_port\": \"%s\",\n"
		"     \"approved_ek_hash\": \"%s\", \"approved_ek_hash_ecc\": \"%s\", \"ek_hash\": "
		"null, \"ek_hash_ecc\": null, \"desired_action\": null}}%s\n",
		id, name, serial, id / 200 + 1, id % 200 + 10, id, PORT_OK, MA.ek, MA.ek_ecc,
		last ? "" : ",");
}

static void write_seed(const char *path)
{
	FILE *f = fopen(path, "w");
	char name[32], serial[32];
	assert_non_null(f);
	fprintf(f, "{\"paginate_count\": 50, \"max_page_size\": 50,\n"
		   " \"tokens\": {\"" TOKEN "\": {\"user\": \"fleetd\"}},\n"
		   " \"custom_fields\": [\"class\", \"install_disk\", \"install_disk_serial\",\n"
		   "   \"bmc_type\", \"tpm_version\", \"amt\", \"secure_boot_expected\",\n"
		   "   \"expected_port\", \"approved_ek_hash\", \"approved_ek_hash_ecc\",\n"
		   "   \"ek_hash\", \"ek_hash_ecc\", \"desired_action\"],\n"
		   " \"devices\": [\n");
	for (int id = 1; id <= N_SERIALS; id++) {
		snprintf(name, sizeof(name), "s%d", id);
		snprintf(serial, sizeof(serial), "STA-%04d", id);
		seed_one(f, id, name, serial, false);
	}
	for (int i = 0; i < N_KILL; i++) {
		snprintf(name, sizeof(name), "k%d", i);
		snprintf(serial, sizeof(serial), "STA-K%02d", i);
		seed_one(f, 100 + i, name, serial, i == N_KILL - 1);
	}
	fprintf(f, " ]}\n");
	assert_int_equal(fclose(f), 0);
}

/* The forger's floods reach admission (no listener rate limit); the lookup
 * budget is small enough to see; unproven sessions live 5 s. */
static void write_config(void)
{
	adm_write_config(CONFIG, "    lookups_per_second: 5\n",
			 "  ttl_seconds: 30\n  answer_seconds: 5\n");
}

static void start(bool shim)
{
	char asan[512];
	const char *was = getenv("ASAN_OPTIONS");
	snprintf(asan, sizeof(asan), "%s", was ? was : "");
	if (shim) {
		char with[600];
		setenv("LD_PRELOAD", CRASH_SHIM, 1);
		setenv("FLEET_CRASH_ARM", ARM, 1);
		/* a sanitizer build's runtime wants to be first; the shim is not
		 * instrumented and only forwards */
		snprintf(with, sizeof(with), "%s%sverify_asan_link_order=0", asan,
			 asan[0] ? ":" : "");
		setenv("ASAN_OPTIONS", with, 1);
	}
	fleetd_start(&FD, FLEETD_BIN, CONFIG, LOG);
	unsetenv("LD_PRELOAD");
	unsetenv("FLEET_CRASH_ARM");
	if (was)
		setenv("ASAN_OPTIONS", asan, 1);
	else
		unsetenv("ASAN_OPTIONS");
}

static int setup(void **state)
{
	(void)state;
	adm_fixture_up("admstate", write_seed);
	snprintf(CONFIG, sizeof(CONFIG), "%s/fleetd.yaml", D);
	snprintf(ARM, sizeof(ARM), "%s/crash-arm", D);
	write_config();
	start(false);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	int rc = FD.pid ? fleetd_stop(&FD) : 0;
	adm_fixture_down();
	return rc == 0 ? 0 : -1;
}

/* ---- the machine's rounds, seen and steered -------------------------------- */

/* What a hooked run captured, and where it stops. */
struct capture {
	struct hooked h;
	struct fleet_buf intake, answer, confirm;
	const char *stop_before; /* a round's path: the machine vanishes there */
};

static void capture_before(struct hooked *h, const char *path, const struct fleet_buf *body)
{
	struct capture *c = (struct capture *)h;
	if (strcmp(path, "/v1/attest/intake") == 0 && c->intake.len == 0)
		fb_put(&c->intake, body->data, body->len);
	if (strcmp(path, "/v1/attest/answer") == 0 && c->answer.len == 0)
		fb_put(&c->answer, body->data, body->len);
	if (strcmp(path, "/v1/attest/confirm") == 0 && c->confirm.len == 0)
		fb_put(&c->confirm, body->data, body->len);
	if (c->stop_before && strcmp(path, c->stop_before) == 0) {
		/* the machine is gone: nothing answers, nothing is retried */
		snprintf(h->curl.base_url, sizeof(h->curl.base_url), "https://127.0.0.1:1");
		h->seen++;
	}
}

static int run_captured(struct machine *m, const char *serial, struct capture *c,
			const char *stop_before)
{
	char out[800];
	memset(c, 0, sizeof(*c));
	fb_init(&c->intake);
	fb_init(&c->answer);
	fb_init(&c->confirm);
	c->stop_before = stop_before;
	c->h.before = capture_before;
	return run_hooked(m, serial, &c->h, 1, out, sizeof(out));
}

static void capture_free(struct capture *c)
{
	fb_free(&c->intake);
	fb_free(&c->answer);
	fb_free(&c->confirm);
}

/* POST from the forger; returns the status, and the reply's session id
 * (hex) when it is a challenge. */
static long forge(struct http_client *c, const char *path, const struct fleet_buf *body,
		  uint8_t session[FLEET_WIRE_ID_LEN])
{
	struct http_reply r;
	long st = http_post(c, path, "application/json", body->data, body->len, &r);
	if (session && st == 200) {
		struct fleet_wire_intake_reply ir;
		memset(session, 0, FLEET_WIRE_ID_LEN);
		if (fleet_wire_intake_reply_decode((const uint8_t *)r.body, r.len, &ir, NULL) ==
			    FLEET_OK &&
		    ir.status == FLEET_WIRE_CHALLENGE)
			memcpy(session, ir.session, FLEET_WIRE_ID_LEN);
		fleet_wire_intake_reply_free(&ir);
	}
	http_reply_free(&r);
	return st;
}

static void forger_init(struct http_client *c)
{
	http_client_init(c, FD.port, FD.tls_ca);
	snprintf(c->source, sizeof(c->source), FORGER);
}

/* ---- I2: an unproven intake neither ends nor blocks ------------------------- */

struct flooder {
	const struct fleet_buf *intake;
	volatile int stop;
	unsigned sent, challenged;
};

static void *flood(void *arg)
{
	struct flooder *f = arg;
	struct http_client c;
	forger_init(&c);
	while (!f->stop) {
		uint8_t sid[FLEET_WIRE_ID_LEN];
		if (forge(&c, "/v1/attest/intake", f->intake, sid) == 200)
			f->challenged++;
		f->sent++;
		usleep(200 * 1000);
	}
	http_client_free(&c);
	return NULL;
}

static void forged_intakes_cannot_block(void **state)
{
	(void)state;
	struct capture cap;
	char out[800];
	/* the forger saw the machine's intake once (it is public anyway) */
	assert_int_not_equal(run_captured(&MA, "STA-0001", &cap, "/v1/attest/answer"),
			     TINK_EXIT_CONFIRMED);
	struct flooder f = {.intake = &cap.intake};
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, flood, &f), 0);
	usleep(1500 * 1000);
	assert_int_equal(run_tink(&MA, "STA-0001", NULL, out, sizeof(out)), TINK_EXIT_CONFIRMED);
	f.stop = 1;
	pthread_join(th, NULL);
	assert_true(f.sent >= 5);
	assert_true(f.challenged >= 1); /* its intakes were answered, not refused */
	assert_true(exists_in(out, "ldevid.pem"));
	struct fleet_store_device d;
	assert_true(store_device("STA-0001", &d));
	assert_string_equal(d.ek_hash, MA.ek);
	capture_free(&cap);
}

/* ---- unproven requests are counted, not journaled --------------------------- */

/* The sum of field's numeric values (field is "NAME=") over the log lines
 * holding both needles. */
static unsigned long long log_sum(const char *log, const char *field, const char *a,
				  const char *b)
{
	FILE *f = fopen(log, "r");
	char line[8192];
	unsigned long long sum = 0;
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		const char *v = strstr(line, field);
		if (v && strstr(line, a) && strstr(line, b))
			sum += strtoull(v + strlen(field), NULL, 10);
	}
	fclose(f);
	return sum;
}

static void unproven_flood_not_journaled(void **state)
{
	(void)state;
	struct capture cap;
	struct http_client c;
	struct fleet_wire_answer a;
	assert_int_not_equal(run_captured(&MA, "STA-0002", &cap, "/v1/attest/confirm"),
			     TINK_EXIT_CONFIRMED);
	assert_true(cap.answer.len > 0);
	assert_int_equal(fleet_wire_answer_decode(cap.answer.data, cap.answer.len, &a, NULL),
			 FLEET_OK);
	sleep(2); /* a fresh window for the lookup budget */
	forger_init(&c);
	size_t lines0 = adm_log_lines(LOG);
	long long proof0 = metric(UNPROVEN("answer-proof"));
	unsigned challenged = 0;
	for (int i = 0; i < 500; i++) {
		uint8_t sid[FLEET_WIRE_ID_LEN];
		long st = forge(&c, "/v1/attest/intake", &cap.intake, sid);
		assert_true(st == 200 || st == 503);
		/* the machine's answer, replayed into the forger's session */
		struct fleet_buf body;
		fb_init(&body);
		if (st == 200) {
			challenged++;
			memcpy(a.session, sid, sizeof(sid));
		} else {
			memset(a.session, (uint8_t)i, sizeof(a.session)); /* no such session */
		}
		assert_int_equal(fleet_wire_answer_encode(&a, &body), FLEET_OK);
		assert_int_equal(forge(&c, "/v1/attest/answer", &body, NULL), 200);
		fb_free(&body);
	}
	http_client_free(&c);
	size_t added = adm_log_lines(LOG) - lines0;
	print_message("1,000 unproven requests: %u challenged, %zu journal lines\n", challenged,
		      added);
	assert_true(challenged >= 1);
	assert_true(added <= 8);
	assert_int_equal(metric(UNPROVEN("answer-proof")) - proof0,
			 challenged);
	/* What the limiter held back is summarised when its window ends, at
	 * the latest as fleetd stops: the auth failures journaled plus those
	 * the log-suppressed lines count are every one fleetd counted. */
	long long failures = metric("fleetd_auth_failures_total");
	fleetd_stop(&FD);
	size_t journaled = adm_log_count(LOG, "event=auth-failure ", (char *)NULL);
	unsigned long long suppressed = log_sum(LOG, "FLEET_SUPPRESSED=", "event=log-suppressed ",
						"FLEET_KEY=auth-failure/");
	print_message("%lld auth failures: %zu journaled, %llu summarised\n", failures,
		      journaled, suppressed);
	assert_true(suppressed >= 1);
	assert_int_equal((long long)journaled + (long long)suppressed, failures);
	start(false);
	fleet_wire_answer_free(&a);
	capture_free(&cap);
}

/* ---- claims record only what a TPM proved ----------------------------------- */

static void claim_only_after_proof(void **state)
{
	(void)state;
	struct capture cap;
	struct http_client c;
	char out[800];
	struct fleet_store_claim *cl;
	size_t n;
	assert_int_not_equal(run_captured(&MB, "STA-UNKNOWN", &cap, "/v1/attest/answer"),
			     TINK_EXIT_PENDING);
	sleep(2);
	forger_init(&c);
	for (int i = 0; i < 100; i++)
		(void)forge(&c, "/v1/attest/intake", &cap.intake, NULL);
	http_client_free(&c);
	struct fleet_store *st = store_ro();
	assert_int_equal(fleet_store_claims_list(st, &cl, &n), FLEET_STORE_OK);
	assert_int_equal(n, 0); /* 101 intakes, not one claim */
	free(cl);
	fleet_store_close(st);
	/* the machine answers its challenge: now the claim is recorded */
	sleep(2);
	assert_int_equal(run_tink(&MB, "STA-UNKNOWN", NULL, out, sizeof(out)), TINK_EXIT_PENDING);
	st = store_ro();
	assert_int_equal(fleet_store_claims_list(st, &cl, &n), FLEET_STORE_OK);
	assert_int_equal(n, 1);
	assert_string_equal(cl[0].serial, "STA-UNKNOWN");
	assert_int_equal(cl[0].count, 1);
	assert_string_equal(cl[0].eks[0].ek_hash, MB.ek);
	free(cl);
	fleet_store_close(st);
	capture_free(&cap);
}

/* ---- what a flood costs NetBox ------------------------------------------------ */

static void inventory_budget(void **state)
{
	(void)state;
	struct capture cap;
	struct http_client c;
	assert_int_not_equal(run_captured(&MA, "STA-0003", &cap, "/v1/attest/answer"),
			     TINK_EXIT_CONFIRMED);
	sleep(3); /* the bucket refills to its burst (10) */
	forger_init(&c);
	long long budget0 = metric(UNPROVEN("lookup-budget"));
	long long caps0 = metric(UNPROVEN("session-caps"));
	size_t asked0 = nbf_log_len();
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	unsigned busy = 0;
	for (int i = 0; i < 200; i++)
		busy += forge(&c, "/v1/attest/intake", &cap.intake, NULL) == 503;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	http_client_free(&c);
	double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	size_t asked = nbf_log_len() - asked0;
	long long budget = metric(UNPROVEN("lookup-budget")) - budget0;
	long long caps = metric(UNPROVEN("session-caps")) - caps0;
	print_message("200 intakes in %.2f s: %zu NetBox requests, %u answered 503 (%lld over "
		      "the lookup budget, %lld over the session caps)\n",
		      secs, asked, busy, budget, caps);
	/* the burst, plus 5 a second: two requests per intake that passes */
	assert_true((double)asked <= 10 + 5 * secs + 2);
	assert_true(busy >= 150);
	/* every 503 was the budget's: the forger's each intake replaced its
	 * own last session, so no cap was reached */
	assert_int_equal(budget, busy);
	assert_int_equal(caps, 0);

	/* Ten addresses at once for one serial: past ADM_SESSIONS_PER_SERIAL
	 * (8) open sessions, the rest are turned away before any lookup,
	 * counted as session-caps, not against the budget. */
	sleep(3);
	budget0 = metric(UNPROVEN("lookup-budget"));
	caps0 = metric(UNPROVEN("session-caps"));
	unsigned opened = 0, turned = 0;
	for (int i = 0; i < 10; i++) {
		forger_init(&c);
		snprintf(c.source, sizeof(c.source), "127.0.0.%d", 10 + i);
		long st = forge(&c, "/v1/attest/intake", &cap.intake, NULL);
		http_client_free(&c);
		assert_true(st == 200 || st == 503);
		opened += st == 200;
		turned += st == 503;
	}
	print_message("ten sources: %u challenged, %u turned away\n", opened, turned);
	assert_true(opened <= 8);
	assert_true(turned >= 2);
	assert_int_equal(metric(UNPROVEN("session-caps")) - caps0, turned);
	assert_int_equal(metric(UNPROVEN("lookup-budget")), budget0);
	capture_free(&cap);
}

/* ---- certificates without a confirm -------------------------------------------- */

static bool spire_lists(const char *sha1)
{
	char path[800];
	struct fleet_buf b;
	snprintf(path, sizeof(path), "%s/spire-nodes.json", STATE);
	fb_init(&b);
	read_file_or_fail(path, &b);
	fb_put_u8(&b, 0);
	bool found = strstr((const char *)b.data, sha1) != NULL;
	fb_free(&b);
	return found;
}

static void unconfirmed_is_provisional(void **state)
{
	(void)state;
	struct capture cap;
	char out[800];
	size_t revoked;
	struct fleet_store_device d;
	sleep(3); /* the last test drained the lookup budget: let it refill */
	/* the client takes the certificates and never confirms */
	assert_int_not_equal(run_captured(&MA, "STA-0004", &cap, "/v1/attest/confirm"),
			     TINK_EXIT_CONFIRMED);
	assert_false(store_device("STA-0004", &d)); /* not admitted */
	assert_int_equal(store_certs("s4", NULL), 0);
	assert_int_equal(store_provisional("s4", &revoked), 2);
	assert_int_equal(revoked, 0);
	size_t pass, fail;
	store_verdicts("s4", &pass, &fail, NULL);
	assert_int_equal(pass, 0); /* no passing verdict before the confirm */
	/* the same machine's proven retry supersedes it: revoked, admitted anew */
	assert_int_equal(run_tink(&MA, "STA-0004", NULL, out, sizeof(out)), TINK_EXIT_CONFIRMED);
	sleep(2); /* the reaper runs every second */
	assert_int_equal(store_provisional("s4", &revoked), 2);
	assert_int_equal(revoked, 2);
	assert_revoked_named("s4", "superseded");
	assert_int_equal(store_certs("s4", &revoked), 2);
	assert_int_equal(revoked, 0);

	/* abandoned for good after a confirm with a bad signature: refused,
	 * the session left as it was, revoked at its deadline; the genuine
	 * confirm, sent after the deadline, finds no session */
	capture_free(&cap);
	assert_int_not_equal(run_captured(&MA, "STA-0005", &cap, "/v1/attest/confirm"),
			     TINK_EXIT_CONFIRMED);
	assert_true(cap.confirm.len > 0); /* the machine had sent it when it vanished */
	assert_int_equal(store_provisional("s5", &revoked), 2);
	assert_int_equal(revoked, 0);
	struct fleet_wire_confirm cf;
	struct fleet_buf flipped;
	fb_init(&flipped);
	assert_int_equal(fleet_wire_confirm_decode(cap.confirm.data, cap.confirm.len, &cf, NULL),
			 FLEET_OK);
	cf.signature.data[cf.signature.len - 1] ^= 1;
	assert_int_equal(fleet_wire_confirm_encode(&cf, &flipped), FLEET_OK);
	fleet_wire_confirm_free(&cf);
	long long proof0 = metric(UNPROVEN("confirm-proof"));
	long long late0 = metric("fleetd_confirm_total{result=\"session-unknown\"}");
	post_raw(CONFIRM, flipped.data, flipped.len, 200, "\"refused\"");
	fb_free(&flipped);
	assert_int_equal(metric(UNPROVEN("confirm-proof")), proof0 + 1);
	assert_false(store_device("STA-0005", &d));
	assert_int_equal(store_certs("s5", NULL), 0);
	assert_int_equal(store_provisional("s5", &revoked), 2);
	assert_int_equal(revoked, 0); /* an unproven request ends no session */
	sleep(33); /* ttl 30 s, reaped within a second */
	assert_int_equal(store_provisional("s5", &revoked), 2);
	assert_int_equal(revoked, 2);
	assert_revoked_named("s5", "session-expired");
	post_raw(CONFIRM, cap.confirm.data, cap.confirm.len, 200, "\"refused\"");
	assert_int_equal(metric("fleetd_confirm_total{result=\"session-unknown\"}"), late0 + 1);
	assert_false(store_device("STA-0005", &d));
	assert_int_equal(store_certs("s5", NULL), 0);
	store_verdicts("s5", &pass, &fail, NULL);
	assert_int_equal(pass, 0);
	assert_int_equal(adm_log_count(LOG, "event=device-admitted", "FLEET_DEVICE=s5 ",
				       (char *)NULL), 0);

	/* SPIRE's list (rewritten at the start's pass) holds none of them */
	fleetd_stop(&FD);
	start(false);
	struct fleet_store *st = store_ro();
	struct fleet_store_cert *c = NULL;
	size_t n = 0;
	assert_int_equal(fleet_store_provisional_list(st, &c, &n), FLEET_STORE_OK);
	assert_true(n >= 4);
	for (size_t i = 0; i < n; i++)
		assert_false(spire_lists(c[i].sha1));
	fleet_store_certs_free(c, n);
	fleet_store_close(st);
	capture_free(&cap);
}

/* ---- kill -9 at every write point ------------------------------------------------ */

/* The state for serial/device is "before" (nothing of the admission) or
 * "after" (device, both certificates, a passing verdict in the store and in
 * verdicts.jsonl); never between. Returns true for "after". */
static bool before_or_after(const char *serial, const char *device)
{
	struct fleet_store_device d;
	size_t pass, fail, revoked;
	bool admitted = store_device(serial, &d);
	size_t certs = store_certs(device, &revoked);
	store_verdicts(device, &pass, &fail, NULL);
	size_t lines = vlog_count(device, "\"result\":\"pass\"");
	if (admitted) {
		assert_int_equal(certs, 2);
		assert_int_equal(revoked, 0);
		assert_int_equal(pass, 1);
		assert_int_equal(lines, 1);
	} else {
		assert_int_equal(certs, 0);
		assert_int_equal(pass, 0);
		assert_int_equal(lines, 0);
	}
	/* whatever a lost session was issued is revoked by the restart */
	store_provisional(device, &revoked);
	size_t prov = store_provisional(device, NULL);
	assert_int_equal(revoked, prov);
	return admitted;
}

static long crash_count(void)
{
	char p[800];
	snprintf(p, sizeof(p), "%s.count", ARM);
	FILE *f = fopen(p, "r");
	long n = 0;
	if (f) {
		if (fscanf(f, "%ld", &n) != 1)
			n = 0;
		fclose(f);
	}
	return n;
}

/* Arm the shim when the machine sends its answer. */
static long arm_at;
static void arm_before_answer(struct hooked *h, const char *path, const struct fleet_buf *body)
{
	(void)body;
	if (strcmp(path, "/v1/attest/answer") == 0 && !h->seen++) {
		char n[32];
		snprintf(n, sizeof(n), "%ld\n", arm_at);
		put(ARM, n);
	}
}

/* For N = 1, 2, ...: a fresh planned device, fleetd killed at the Nth
 * durable write (sqlite3_step/exec, fsync, fdatasync, a verdicts.jsonl
 * write) from the answer on, restarted; its state must be the before or
 * the after. Until an N past every point of both rounds lets the machine
 * confirm with fleetd alive. */
static void kill9_each_write_point(void **state)
{
	(void)state;
	char out[800], serial[32], device[32];
	int crashes = 0, befores = 0, afters = 0;
	bool finished = false;
	fleetd_stop(&FD);
	start(true);
	for (arm_at = 1; arm_at <= N_KILL && !finished; arm_at++) {
		struct hooked h;
		int st = 0;
		snprintf(serial, sizeof(serial), "STA-K%02ld", arm_at - 1);
		snprintf(device, sizeof(device), "k%ld", arm_at - 1);
		memset(&h, 0, sizeof(h));
		h.before = arm_before_answer;
		int code = run_hooked(&MA, serial, &h, 1, out, sizeof(out));
		bool died = false;
		/* a kill can land after the reply went out: give it a moment */
		for (int i = 0; i < 10 && !died; i++) {
			died = waitpid(FD.pid, &st, WNOHANG) == FD.pid;
			if (!died && code != TINK_EXIT_CONFIRMED)
				usleep(100 * 1000);
			else if (!died)
				break;
		}
		unlink(ARM);
		if (!died) {
			assert_int_equal(code, TINK_EXIT_CONFIRMED);
			assert_true(before_or_after(serial, device));
			finished = true;
			break;
		}
		assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
		FD.pid = 0;
		crashes++;
		start(true); /* recovers: revokes, reconciles */
		if (before_or_after(serial, device))
			afters++;
		else
			befores++;
	}
	print_message("kill -9 at %d write points: %d left the before, %d the after\n", crashes,
		      befores, afters);
	assert_true(finished); /* N_KILL covers every point */
	/* the last, uncrashed run counted exactly the points the others died at */
	assert_int_equal(crash_count(), crashes);
	assert_true(befores >= 5);
	assert_true(afters >= 1); /* points after the commit were reached too */
	unlink(ARM);
	fleetd_stop(&FD);
	start(false);
}

/* ---- a refused confirm undoes everything ------------------------------------- */

/* The owner re-binds the device to machine B between A's answer and its
 * confirm. */
static void rebind_to_b(struct hooked *h, const char *path, const struct fleet_buf *body,
			long status, const struct fleet_buf *reply)
{
	(void)body;
	(void)reply;
	if (strcmp(path, "/v1/attest/answer") != 0 || status != 200 || h->seen++)
		return;
	char req[400];
	snprintf(req, sizeof(req),
		 "{\"device\": 7, \"user\": \"terraform\", \"custom_fields\": "
		 "{\"approved_ek_hash\": \"%s\", \"approved_ek_hash_ecc\": \"%s\"}}",
		 MB.ek, MB.ek_ecc);
	nbf_ctl("/_fake/change", req);
}

static void refused_confirm_undoes_all(void **state)
{
	(void)state;
	char out[800];
	struct hooked h;
	struct fleet_store_device d;
	size_t revoked, pass, fail;
	sleep(3); /* a full lookup budget */
	memset(&h, 0, sizeof(h));
	h.after = rebind_to_b;
	assert_int_equal(run_hooked(&MA, "STA-0007", &h, 2, out, sizeof(out)), TINK_EXIT_REFUSED);
	assert_int_equal(h.seen, 1);
	/* nothing of A's session is left but its revoked certificates */
	assert_false(store_device("STA-0007", &d));
	assert_int_equal(store_certs("s7", NULL), 0);
	store_verdicts("s7", &pass, &fail, NULL);
	assert_int_equal(pass + fail, 0);
	assert_int_equal(store_provisional("s7", &revoked), 2);
	assert_int_equal(revoked, 2);
	assert_revoked_named("s7", "binding-changed");
	/* the newly approved TPM is admitted */
	assert_int_equal(run_tink(&MB, "STA-0007", NULL, out, sizeof(out)), TINK_EXIT_CONFIRMED);
	assert_true(store_device("STA-0007", &d));
	assert_string_equal(d.ek_hash, MB.ek);
	/* staged: held to the store, where the refused TPM never was */
	nbf_ctl("/_fake/change", "{\"device\": 7, \"user\": \"owner\", \"status\": \"staged\"}");
	assert_int_equal(run_tink(&MA, "STA-0007", NULL, out, sizeof(out)), TINK_EXIT_REFUSED);
	assert_refused_with("STA-0007", "ek-mismatch");
	assert_false(exists_in(out, "lak.pem"));
	assert_true(store_device("STA-0007", &d));
	assert_string_equal(d.ek_hash, MB.ek);
}

/* ---- what intake decided by is read again -------------------------------------- */

/* The owner requests a run between intake and answer: intake decided with
 * another view of the device (possibly a cached one). */
static void request_run_after_intake(struct hooked *h, const char *path,
				     const struct fleet_buf *body, long status,
				     const struct fleet_buf *reply)
{
	(void)body;
	(void)reply;
	if (strcmp(path, "/v1/attest/intake") != 0 || status != 200 || h->seen++)
		return;
	nbf_ctl("/_fake/change", "{\"device\": 6, \"user\": \"owner\","
				 " \"custom_fields\": {\"desired_action\": \"provision\"}}");
}

static void requested_run_read_again(void **state)
{
	(void)state;
	char out[800];
	struct hooked h;
	struct fleet_store_device d;
	sleep(3); /* a full lookup budget */
	memset(&h, 0, sizeof(h));
	h.after = request_run_after_intake;
	assert_int_equal(run_hooked(&MA, "STA-0006", &h, 2, out, sizeof(out)), TINK_EXIT_REFUSED);
	assert_int_equal(h.seen, 1);
	assert_int_equal(adm_log_count(LOG, "event=device-changed", "FLEET_DEVICE=s6",
				       (char *)NULL), 1);
	assert_false(store_device("STA-0006", &d));
	assert_false(exists_in(out, "lak.pem"));
}

/* ---- an EK MakeCredential cannot wrap to is refused at intake ------------------ */

static void ek_name_alg_refused_at_intake(void **state)
{
	(void)state;
	struct capture cap;
	struct fleet_wire_intake in;
	TPM2B_PUBLIC pub;
	uint8_t buf[sizeof(TPM2B_PUBLIC)];
	size_t off = 0;
	sleep(3);
	assert_int_not_equal(run_captured(&MA, "STA-0008", &cap, "/v1/attest/answer"),
			     TINK_EXIT_CONFIRMED);
	assert_int_equal(fleet_wire_intake_decode(cap.intake.data, cap.intake.len, &in, NULL),
			 FLEET_OK);
	memset(&pub, 0, sizeof(pub));
	assert_int_equal(Tss2_MU_TPM2B_PUBLIC_Unmarshal(in.ek_rsa.pub.data, in.ek_rsa.pub.len, NULL,
							&pub),
			 TSS2_RC_SUCCESS);
	pub.publicArea.nameAlg = TPM2_ALG_SHA1; /* the key, and so its certificate, unchanged */
	assert_int_equal(Tss2_MU_TPM2B_PUBLIC_Marshal(&pub, buf, sizeof(buf), &off),
			 TSS2_RC_SUCCESS);
	free(in.ek_rsa.pub.data);
	in.ek_rsa.pub.data = malloc(off);
	memcpy(in.ek_rsa.pub.data, buf, off);
	in.ek_rsa.pub.len = off;
	struct fleet_buf body;
	fb_init(&body);
	assert_int_equal(fleet_wire_intake_encode(&in, &body), FLEET_OK);
	size_t asked = nbf_log_len();
	post_raw_from(FORGER, "/v1/attest/intake", body.data, body.len, 200, "\"refused\"");
	assert_int_equal(nbf_log_len(), asked); /* refused before NetBox is asked */
	assert_int_equal(adm_log_count(LOG, "event=intake-refused",
				       "FLEET_REASON=ek-name-alg-unsupported", (char *)NULL),
			 1);
	fb_free(&body);
	fleet_wire_intake_free(&in);
	capture_free(&cap);
}

/* ---- the listener's guards, as fleetd runs them ------------------------------- */

#define GUARD_DEADLINE 2 /* listen.request_deadline_seconds */
#define REJECTED(reason) "fleetd_http_rejected_total{reason=\"" reason "\"}"

/* fleetd with the listener's default rate limit (5 POSTs a second per
 * source, a burst of 20: docs/configuration.md) and a 2 s request deadline;
 * the lookup budget lifted, so that only the listener stands between a
 * source and NetBox. */
static void listener_guards_on_fleetd(void **state)
{
	(void)state;
	struct capture cap;
	struct http_client c;
	assert_int_not_equal(run_captured(&MA, "STA-0009", &cap, "/v1/attest/answer"),
			     TINK_EXIT_CONFIRMED);
	fleetd_stop(&FD);
	adm_write_config_listen(CONFIG, "  request_deadline_seconds: 2\n",
				"    lookups_per_second: 1000\n",
				"  ttl_seconds: 30\n  answer_seconds: 5\n");
	start(false);

	/* 25 intakes from one source, as fast as it sends them */
	http_client_init(&c, FD.port, FD.tls_ca);
	snprintf(c.source, sizeof(c.source), "127.0.0.3");
	long long limited0 = metric(REJECTED("rate-limited"));
	size_t asked0 = nbf_log_len();
	unsigned served = 0, limited = 0;
	double t0 = http_now_s();
	for (int i = 0; i < 25; i++) {
		long st = forge(&c, "/v1/attest/intake", &cap.intake, NULL);
		assert_true(st == 200 || st == 429);
		served += st == 200;
		limited += st == 429;
	}
	double secs = http_now_s() - t0;
	http_client_free(&c);
	size_t asked = nbf_log_len() - asked0;
	print_message("25 intakes from one source in %.2f s: %u served, %u answered 429, %zu "
		      "NetBox requests\n",
		      secs, served, limited, asked);
	/* the burst and what 5 a second refilled meanwhile; the rest 429,
	 * each counted, and none of them cost NetBox anything */
	assert_true(served <= 20 + 5 * secs + 1);
	assert_true(limited >= 1);
	assert_int_equal(metric(REJECTED("rate-limited")) - limited0, limited);
	assert_true(asked <= 2 * (size_t)served);

	/* a request's headers a byte a second: cut at the deadline, counted */
	long long cut0 = metric(REJECTED("request-deadline"));
	struct raw_tls t;
	t0 = http_now_s();
	raw_tls_open(&t, FD.port, FD.tls_ca);
	double closed = raw_tls_trickle(&t,
					"POST /v1/attest/intake HTTP/1.1\r\nHost: 127.0.0.1\r\n"
					"Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
					t0, GUARD_DEADLINE + 10);
	raw_tls_close(&t);
	print_message("a trickled request: closed after %.2f s\n", closed);
	if (closed < GUARD_DEADLINE - 0.5 || closed > GUARD_DEADLINE + 1.5)
		fail_msg("a trickled request was closed after %.2f s, want %d s", closed,
			 GUARD_DEADLINE);
	assert_int_equal(metric(REJECTED("request-deadline")), cut0 + 1);

	fleetd_stop(&FD);
	write_config();
	start(false);
	capture_free(&cap);
}

int main(void)
{
	/* line by line into ctest's pipe: a timeout then shows the step it was in */
	setvbuf(stdout, NULL, _IOLBF, 0);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(forged_intakes_cannot_block),
		cmocka_unit_test(unproven_flood_not_journaled),
		cmocka_unit_test(claim_only_after_proof),
		cmocka_unit_test(inventory_budget),
		cmocka_unit_test(unconfirmed_is_provisional),
		cmocka_unit_test(refused_confirm_undoes_all),
		cmocka_unit_test(ek_name_alg_refused_at_intake),
		cmocka_unit_test(requested_run_read_again),
		cmocka_unit_test(kill9_each_write_point),
		cmocka_unit_test(listener_guards_on_fleetd),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
