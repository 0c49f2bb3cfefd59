/* admission_fixture.c: see admission_fixture.h. */
#include "tests/e2e/admission_fixture.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <tss2/tss2_tctildr.h>

#include "lib/ca.h"
#include "lib/x509_ek.h"
#include "tests/e2e/http_client.h"
#include "tests/e2e/netbox_harness.h"
#include "tests/fwsim/fwsim.h"
#include "tink-attest/tpm_client.h"

struct machine MA, MB;       /* two TPMs: A is approved, B is not */
char *D;                     /* the test's directory */
char STATE[700], LOG[700], LLDP[700], EVLOG[700], BADLOG[700];
struct fleetd_proc FD;
static unsigned RUNS;

/* lldpd's JSON for one neighbour: system name leaf-07.folly, port Ethernet12. */
const char lldp_json[] =
	"{\"lldp\":{\"interface\":{\"eno1\":{\"via\":\"LLDP\",\"chassis\":{\"leaf-07.folly\":"
	"{\"id\":{\"type\":\"mac\",\"value\":\"0c:42:a1:00:07:00\"}}},\"port\":{\"id\":"
	"{\"type\":\"ifname\",\"value\":\"Ethernet12\"}}}}}}";

void put(const char *path, const char *data)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(data, f);
	assert_int_equal(fclose(f), 0);
}

void shf(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (system(cmd) != 0)
		fail_msg("command failed: %s", cmd);
}

static void ek_hash_nv(struct swtpm *t, TPM2_HANDLE index, char out[65])
{
	unsigned char *der = NULL;
	size_t len = 0;
	X509 *cert = NULL;
	assert_int_equal(swtpm_nv_read(t, index, &der, &len), 0);
	assert_int_equal(fleet_ek_cert_load(der, len, &cert, NULL), FLEET_OK);
	assert_int_equal(fleet_ek_hash(cert, out), FLEET_OK);
	X509_free(cert);
	free(der);
}

/* Manufacture, boot the simulated firmware, read the EK hashes, and let go
 * of the TPM (swtpm serves one client at a time). */
void machine_up(struct machine *m, const char *log_out)
{
	struct fwsim_events *ev = NULL;
	struct fleet_buf log;
	char err[300], events[600];
	if (swtpm_start(&m->t, NULL) != 0)
		fail_msg("swtpm did not start");
	snprintf(events, sizeof(events), "%s/tests/fwsim/worker.events.yaml", FLEET_SOURCE_DIR);
	assert_int_equal(fwsim_load(events, &ev, err, sizeof(err)), FLEET_OK);
	fb_init(&log);
	assert_int_equal(fwsim_apply(swtpm_esys(&m->t), ev, &log, err, sizeof(err)), FLEET_OK);
	if (log_out) {
		FILE *f = fopen(log_out, "wb");
		assert_non_null(f);
		assert_int_equal(fwrite(log.data, 1, log.len, f), log.len);
		fclose(f);
	}
	fb_free(&log);
	fwsim_free(ev);
	ek_hash_nv(&m->t, TINK_NV_EK_RSA, m->ek);
	ek_hash_nv(&m->t, TINK_NV_EK_ECC_P384, m->ek_ecc);
	Esys_Finalize(&m->t.esys);
	Tss2_TctiLdr_Finalize(&m->t.tcti_ctx);
}

void adm_fixture_up(const char *what, void (*write_seed)(const char *path))
{
	struct fleet_errctx ec;
	char path[800];
	swtpm_require_or_skip();
	setenv("TSS2_LOG", "all+NONE", 0); /* tink_run says which TPM call failed */
	D = make_temp_dir(what);
	assert_non_null(D);
	snprintf(STATE, sizeof(STATE), "%s/state", D);
	snprintf(LOG, sizeof(LOG), "%s/fleetd.log", D);
	snprintf(LLDP, sizeof(LLDP), "%s/lldp.json", D);
	snprintf(EVLOG, sizeof(EVLOG), "%s/eventlog.bin", D);
	snprintf(BADLOG, sizeof(BADLOG), "%s/bad-eventlog.bin", D);
	put(LLDP, lldp_json);
	put(BADLOG, "not an event log");
	machine_up(&MA, EVLOG);
	machine_up(&MB, NULL);
	nbf_setup(write_seed);
	assert_int_equal(tink_curl_global_init(), 0);
	shf("mkdir -p %s/roots %s/profiles"
	    " && for f in %s/*; do cp \"$f\" %s/roots/a-\"${f##*/}\"; done"
	    " && for f in %s/*; do cp \"$f\" %s/roots/b-\"${f##*/}\"; done"
	    " && cp %s/tests/fwsim/worker.profile.yaml %s/profiles/worker.yaml",
	    D, D, MA.t.roots, D, MB.t.roots, D, FLEET_SOURCE_DIR, D);
	snprintf(path, sizeof(path), "%s/ca", D);
	memset(&ec, 0, sizeof(ec));
	assert_int_equal(fleet_ca_init(path, "fleetd e2e identity CA", 30, &ec), FLEET_OK);
	adm_mint_tls(D, FD.tls_ca, sizeof(FD.tls_ca));
	snprintf(path, sizeof(path), "%s/token", D);
	put(path, TOKEN "\n");
	chmod(path, 0600);
	FD.port = adm_free_port();
}

void adm_write_config(const char *path, const char *netbox_extra, const char *sessions)
{
	adm_write_config_listen(path, "  rate_per_second: 100000\n  rate_burst: 100000\n",
				netbox_extra, sessions);
}

void adm_write_config_listen(const char *path, const char *listen_extra,
			     const char *netbox_extra, const char *sessions)
{
	char cfg[4096];
	snprintf(cfg, sizeof(cfg),
		 "listen:\n  address: 127.0.0.1\n  port: %u\n%s"
		 "tls:\n  cert: %s/fleetd.crt\n  key: %s/fleetd.key\n"
		 "state_dir: %s\nroots_dir: %s/roots\nca_dir: %s/ca\nprofiles_dir: %s/profiles\n"
		 "classes:\n  worker: worker.yaml\n"
		 "inventory:\n  kind: netbox\n  netbox:\n    url: %s\n    token_file: %s/token\n"
		 "    ca_file: %s\n    timeout_ms: 5000\n%s"
		 "binding_author: terraform\n"
		 "sessions:\n%s"
		 "spire:\n  trust_domain: fleet.test\n",
		 (unsigned)FD.port, listen_extra, D, D, STATE, D, D, D, E.base, D, E.ca, netbox_extra,
		 sessions);
	put(path, cfg);
}

void adm_fixture_down(void)
{
	nbf_teardown();
	swtpm_stop(&MA.t);
	swtpm_stop(&MB.t);
	if (getenv("FLEET_KEEP_TEST_DIR"))
		fprintf(stderr, "kept %s\n", D);
	else
		rm_rf(D);
	free(D);
	D = NULL;
}

/* ---- the machine ----------------------------------------------------------- */

/* A machine's sysfs saying `serial`, and an empty output directory. */
static void machine_files(const char *serial, char *sysfs, char *out, size_t cap)
{
	snprintf(sysfs, cap, "%s/sys-%s", D, serial);
	snprintf(out, cap, "%s/out-%s-%u", D, serial, ++RUNS);
	shf("mkdir -p %s/class/dmi/id %s/class/net/eno1/device %s"
	    " && echo %s > %s/class/dmi/id/product_serial"
	    " && echo fleetd-sim-1.0 > %s/class/dmi/id/bios_version"
	    " && echo b4:96:91:00:00:01 > %s/class/net/eno1/address",
	    sysfs, sysfs, out, serial, sysfs, sysfs, sysfs);
}

/* The tink-attest binary; returns its exit code. */
int run_tink(struct machine *m, const char *serial, const char *eventlog, char *out,
		    size_t outcap)
{
	char sysfs[800], cmd[4096], errf[900];
	machine_files(serial, sysfs, out, outcap);
	snprintf(errf, sizeof(errf), "%s.stderr", out);
	snprintf(cmd, sizeof(cmd),
		 "'%s' --url https://127.0.0.1:%u --ca '%s' --tcti '%s' --sysfs-root '%s'"
		 " --lldp-file '%s' --eventlog '%s' --out-dir '%s' --attempts 2 --timeout 60"
		 " 2>'%s'",
		 TINK_ATTEST_BIN, (unsigned)FD.port, FD.tls_ca, m->t.tcti, sysfs, LLDP,
		 eventlog ? eventlog : EVLOG, out, errf);
	int st = system(cmd);
	int code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	char show[1000];
	snprintf(show, sizeof(show), "sed 's/^/  tink-attest: /' '%s'", errf);
	print_message("tink-attest %s: exit %d\n", serial, code);
	(void)!system(show);
	return code;
}

static enum tink_tx_result hooked_post(void *ctx, const char *path, const struct fleet_buf *body,
				       size_t max_reply, struct fleet_buf *reply, long *status,
				       struct fleet_errctx *ec)
{
	struct hooked *h = ctx;
	if (h->before)
		h->before(h, path, body);
	enum tink_tx_result r =
		h->inner.post(h->inner.ctx, path, body, max_reply, reply, status, ec);
	if (h->after && r == TINK_TX_OK)
		h->after(h, path, body, *status, reply);
	return r;
}

int run_hooked(struct machine *m, const char *serial, struct hooked *h, unsigned attempts,
		      char *out, size_t outcap)
{
	char sysfs[800];
	struct tink_result res;
	machine_files(serial, sysfs, out, outcap);
	snprintf(h->curl.base_url, sizeof(h->curl.base_url), "https://127.0.0.1:%u",
		 (unsigned)FD.port);
	h->curl.ca_file = FD.tls_ca;
	fb_init(&h->curl.ca_pem);
	h->curl.connect_timeout_s = 10;
	h->curl.timeout_s = 60;
	h->curl.attempts = attempts;
	h->curl.backoff_base_s = 0.1;
	h->curl.backoff_cap_s = 0.5;
	h->curl.keep_alive = 1; /* as tink-attest */
	h->curl.handle = NULL;  /* a new connection for each run, as a new process */
	h->inner = tink_curl_transport(&h->curl);
	struct tink_transport tx = {.post = hooked_post, .ctx = h};
	struct tink_config cfg = {.tcti = m->t.tcti, .sysfs_root = sysfs, .lldp_file = LLDP,
				  .eventlog = EVLOG, .out_dir = out};
	memset(&res, 0, sizeof(res));
	int code = tink_run(&cfg, &tx, &res);
	/* Closed as tink-attest's exit closes it: held open, each run's
	 * connection would count against fleetd's per-source limit. */
	tink_curl_close(&h->curl);
	print_message("tink_run %s: exit %d %s\n", serial, code, res.message);
	return code;
}

/* ---- what to look at --------------------------------------------------------- */

bool exists_in(const char *dir, const char *name)
{
	char p[1000];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return stat(p, &st) == 0;
}

struct fleet_store *store_ro(void)
{
	struct fleet_store *st = NULL;
	struct fleet_errctx sec = {0};
	assert_int_equal(fleet_store_open(STATE, FLEET_STORE_READONLY, &st, &sec),
			 FLEET_STORE_OK);
	return st;
}

bool store_device(const char *serial, struct fleet_store_device *d)
{
	struct fleet_store *st = store_ro();
	fleet_err e = fleet_store_device_get_by_serial(st, serial, d);
	fleet_store_close(st);
	assert_true(e == FLEET_STORE_OK || e == FLEET_STORE_E_NOT_FOUND);
	return e == FLEET_STORE_OK;
}

/* Verdicts in the store for device: passing and failing. */
void store_verdicts(const char *device, size_t *pass, size_t *fail, const char *reason)
{
	struct fleet_store *st = store_ro();
	struct fleet_store_verdict *v = NULL;
	size_t n = 0;
	*pass = *fail = 0;
	assert_int_equal(fleet_store_verdicts_list(st, device, 100, &v, &n), FLEET_STORE_OK);
	for (size_t i = 0; i < n; i++) {
		if (v[i].pass)
			(*pass)++;
		else if (!reason || (v[i].n_reasons && strcmp(v[i].reasons[0], reason) == 0))
			(*fail)++;
	}
	free(v);
	fleet_store_close(st);
}

size_t store_certs(const char *device, size_t *revoked)
{
	struct fleet_store *st = store_ro();
	struct fleet_store_cert *c = NULL;
	size_t n = 0, r = 0;
	fleet_err e = fleet_store_certs_for_device(st, device, &c, &n);
	assert_true(e == FLEET_STORE_OK || e == FLEET_STORE_E_NOT_FOUND);
	for (size_t i = 0; i < n; i++)
		r += c[i].revoked;
	fleet_store_certs_free(c, n);
	fleet_store_close(st);
	if (revoked)
		*revoked = r;
	return n;
}

size_t store_provisional(const char *device, size_t *revoked)
{
	struct fleet_store *st = store_ro();
	struct fleet_store_cert *c = NULL;
	size_t n = 0, mine = 0, r = 0;
	assert_int_equal(fleet_store_provisional_list(st, &c, &n), FLEET_STORE_OK);
	for (size_t i = 0; i < n; i++) {
		if (strcmp(c[i].device, device) != 0)
			continue;
		mine++;
		r += c[i].revoked;
	}
	fleet_store_certs_free(c, n);
	fleet_store_close(st);
	if (revoked)
		*revoked = r;
	return mine;
}

void assert_revoked_named(const char *device, const char *reason)
{
	struct fleet_store *st = store_ro();
	struct fleet_store_cert *c = NULL;
	size_t n = 0, k = 0;
	char sha1[2][41], dev[100], why[100], named[2][100];
	assert_int_equal(fleet_store_provisional_list(st, &c, &n), FLEET_STORE_OK);
	for (size_t i = 0; i < n; i++) {
		if (strcmp(c[i].device, device) != 0)
			continue;
		assert_true(c[i].revoked);
		assert_true(k < 2);
		snprintf(sha1[k++], sizeof(sha1[0]), "%s", c[i].sha1);
	}
	fleet_store_certs_free(c, n);
	fleet_store_close(st);
	assert_int_equal(k, 2);
	snprintf(dev, sizeof(dev), "FLEET_DEVICE=%s ", device);
	snprintf(why, sizeof(why), "FLEET_REASON=%s ", reason);
	/* in the order the store revoked them, which the test does not know */
	snprintf(named[0], sizeof(named[0]), "FLEET_DETAIL=\"%s %s\"", sha1[0], sha1[1]);
	snprintf(named[1], sizeof(named[1]), "FLEET_DETAIL=\"%s %s\"", sha1[1], sha1[0]);
	size_t lines = adm_log_count(LOG, "event=provisional-revoked", dev, why, (char *)NULL);
	size_t exact = adm_log_count(LOG, "event=provisional-revoked", dev, why, named[0],
				     (char *)NULL) +
		       adm_log_count(LOG, "event=provisional-revoked", dev, why, named[1],
				     (char *)NULL);
	if (lines != 1 || exact != 1)
		fail_msg("%zu provisional-revoked lines for %s (%s), %zu naming exactly %s and %s",
			 lines, device, reason, exact, sha1[0], sha1[1]);
}

/* Lines of verdicts.jsonl holding both needles. */
size_t vlog_count(const char *a, const char *b)
{
	char p[800];
	snprintf(p, sizeof(p), "%s/verdicts.jsonl", STATE);
	return adm_log_count(p, a, b, (char *)NULL);
}

/* One series' value from GET /metrics. */
long long metric(const char *series)
{
	struct http_client c;
	struct http_reply r;
	long long v = -1;
	http_client_init(&c, FD.port, FD.tls_ca);
	assert_int_equal(http_get(&c, "/metrics", NULL, &r), 200);
	size_t sl = strlen(series);
	for (const char *p = r.body; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, series, sl) == 0 && p[sl] == ' ')
			v = strtoll(p + sl + 1, NULL, 10);
	http_reply_free(&r);
	http_client_free(&c);
	if (v < 0)
		fail_msg("no series %s in /metrics", series);
	return v;
}

/* The fake's view of one device (a new reference) and its PATCH count. */
json_t *nb_device(long id)
{
	json_t *s = nbf_state();
	json_t *d = json_deep_copy(nbf_device(s, id));
	json_decref(s);
	return d;
}

size_t nb_writes(void)
{
	json_t *s = nbf_state(), *e;
	size_t i, n = 0;
	json_array_foreach(json_object_get(s, "log"), i, e)
		if (strcmp(json_string_value(json_object_get(e, "method")), "GET") != 0)
			n++;
	json_decref(s);
	return n;
}

void assert_refused_with(const char *serial, const char *reason)
{
	char r[100], s[100];
	snprintf(r, sizeof(r), "FLEET_REASON=%s", reason);
	snprintf(s, sizeof(s), "FLEET_SERIAL=%s", serial);
	if (adm_log_count(LOG, "event=intake-refused", r, s, (char *)NULL) == 0)
		fail_msg("no intake-refused %s for %s in fleetd's log", reason, serial);
}

void post_raw(const char *path, const void *body, size_t len, long want_status,
		     const char *want_in_body)
{
	post_raw_from(NULL, path, body, len, want_status, want_in_body);
}

void post_raw_from(const char *source, const char *path, const void *body, size_t len,
		   long want_status, const char *want_in_body)
{
	struct http_client c;
	struct http_reply r;
	http_client_init(&c, FD.port, FD.tls_ca);
	if (source)
		snprintf(c.source, sizeof(c.source), "%s", source);
	assert_int_equal(http_post(&c, path, "application/json", body, len, &r), want_status);
	if (want_in_body && !strstr(r.body, want_in_body))
		fail_msg("%s answered %s", path, r.body);
	http_reply_free(&r);
	http_client_free(&c);
}
