/*
 * test_kube_client.c: fleetd's Kubernetes client (fleetd/kube/kube.h)
 * against the Kubernetes v1.32 API contract fake
 * (tests/fakes/kube_apiserver_fake.py) over TLS with bearer tokens:
 *
 *   secrets      create, 409 EXISTS on the second create, get, delete,
 *                404 NOT_FOUND after (K6)
 *   workflows    a Workflow the real CRD refuses is 422 INVALID with the
 *                apiserver's message in ec; a valid one is created (K6)
 *   CSRs         listed across pages, each page a request with continue
 *                (K8); approved with the Approved condition; a stale
 *                resourceVersion is 409 CONFLICT (K9)
 *   watch        ADDED and MODIFIED events; resumes from the last
 *                resourceVersion after the fake ends the stream, without a
 *                relist; relists after a 410 ERROR event; stops (K10-K14)
 *   tokens       the in-cluster token file is read again for every
 *                request: rotated between two requests, the fake sees the
 *                second user (K3, KC12); an unknown token is AUTH
 *   transport    an answer over max_response is TOO_LARGE (K4); a server
 *                certificate from another CA is UNAVAILABLE (K1)
 *
 * Skips (77) without /usr/bin/python3 with yaml and jsonschema, openssl,
 * or ../shared/contracts/tinkerbell.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <jansson.h>

#include "fleetd/kube/kube.h"
#include "tests/testutil.h"

#include "tests/e2e/kube_fixture.h"

static struct fleet_kube *open_kubeconfig(size_t max_response)
{
	struct fleet_kube_config cfg = {.kubeconfig = g_kubeconfig, .max_response = max_response};
	struct fleet_kube *k = NULL;
	struct fleet_errctx ec;
	memset(&ec, 0, sizeof(ec));
	fleet_err e = fleet_kube_open(&cfg, &k, &ec);
	if (e)
		fail_msg("open: %s: %s", fleet_err_str(e), ec.detail);
	return k;
}

/* ---- the tests ----------------------------------------------------------- */

#define SECRETS "/api/v1/namespaces/kube-system/secrets"

static void k6_bootstrap_secret_create_get_delete(void **state)
{
	(void)state;
	struct fleet_kube *k = open_kubeconfig(0);
	struct fleet_errctx ec;
	json_t *s = json_pack("{s:s, s:s, s:{s:s, s:s}, s:s, s:{s:s, s:s, s:s}}", "apiVersion", "v1",
			      "kind", "Secret", "metadata", "name", "bootstrap-token-abcdef",
			      "namespace", "kube-system", "type", "bootstrap.kubernetes.io/token",
			      "stringData", "token-id", "abcdef", "token-secret", "0123456789abcdef",
			      "usage-bootstrap-authentication", "true");
	json_t *created = NULL;
	assert_int_equal(fleet_kube_create(k, SECRETS, s, &created, &ec), FLEET_OK);
	assert_non_null(json_string_value(
		json_object_get(json_object_get(created, "metadata"), "resourceVersion")));
	json_decref(created);
	/* the second create: 409 AlreadyExists */
	assert_int_equal(fleet_kube_create(k, SECRETS, s, NULL, &ec), FLEET_KUBE_E_EXISTS);
	assert_non_null(strstr(ec.detail, "409"));
	assert_non_null(strstr(ec.detail, "already exists"));
	json_t *got = NULL;
	assert_int_equal(fleet_kube_get(k, SECRETS "/bootstrap-token-abcdef", &got, &ec), FLEET_OK);
	assert_string_equal(json_string_value(json_object_get(json_object_get(got, "data"), "token-id")),
			    "YWJjZGVm"); /* stringData merged into data */
	json_decref(got);
	assert_int_equal(fleet_kube_delete(k, SECRETS "/bootstrap-token-abcdef", &ec), FLEET_OK);
	assert_int_equal(fleet_kube_get(k, SECRETS "/bootstrap-token-abcdef", &got, &ec),
			 FLEET_KUBE_E_NOT_FOUND);
	assert_null(got);
	assert_int_equal(fleet_kube_delete(k, SECRETS "/bootstrap-token-abcdef", &ec),
			 FLEET_KUBE_E_NOT_FOUND); /* already gone */
	/* K2: nothing outside /api/ and /apis/ is sent */
	assert_int_equal(fleet_kube_get(k, "/_fake/state", &got, &ec), FLEET_KUBE_E_INVALID);
	json_decref(s);
	fleet_kube_close(k);
}

#define WORKFLOWS "/apis/tinkerbell.org/v1alpha1/namespaces/tink-system/workflows"

static void k6_workflow_422_reaches_ec(void **state)
{
	(void)state;
	struct fleet_kube *k = open_kubeconfig(0);
	struct fleet_errctx ec;
	json_t *ns = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
			       "metadata", "name", "tink-system");
	fleet_err e = fleet_kube_create(k, "/api/v1/namespaces", ns, NULL, &ec);
	assert_true(e == FLEET_OK || e == FLEET_KUBE_E_EXISTS);
	json_decref(ns);
	json_t *bad = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s, s:{s:s}}}", "apiVersion",
				"tinkerbell.org/v1alpha1", "kind", "Workflow", "metadata", "name",
				"w1-floppy", "namespace", "tink-system", "spec", "templateRef",
				"talos-install", "hardwareRef", "w1", "bootOptions", "bootMode",
				"floppy");
	assert_int_equal(fleet_kube_create(k, WORKFLOWS, bad, NULL, &ec), FLEET_KUBE_E_INVALID);
	assert_non_null(strstr(ec.detail, "422"));
	assert_non_null(strstr(ec.detail, "spec.bootOptions.bootMode: Unsupported value"));
	json_decref(bad);
	json_t *good = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s, s:{s:b}}}", "apiVersion",
				 "tinkerbell.org/v1alpha1", "kind", "Workflow", "metadata", "name",
				 "w1-install", "namespace", "tink-system", "spec", "templateRef",
				 "talos-install", "hardwareRef", "w1", "bootOptions",
				 "toggleAllowNetboot", 1);
	json_t *created = NULL;
	e = fleet_kube_create(k, WORKFLOWS, good, &created, &ec);
	if (e)
		fail_msg("%s", ec.detail);
	assert_string_equal(json_string_value(json_object_get(created, "kind")), "Workflow");
	json_decref(created);
	json_decref(good);
	fleet_kube_close(k);
}

#define CSRS "/apis/certificates.k8s.io/v1/certificatesigningrequests"

static void seed_csrs(int n)
{
	sh("cd %s && openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes"
	   " -keyout w.key -out w.csr -subj /O=system:nodes/CN=system:node:w1 2>/dev/null"
	   " && base64 -w0 w.csr >w.csr.b64",
	   g_dir);
	char p[800];
	snprintf(p, sizeof(p), "%s/w.csr.b64", g_dir);
	struct fleet_buf b;
	fb_init(&b);
	read_file_or_fail(p, &b);
	fb_put_u8(&b, 0);
	json_t *objs = json_array();
	for (int i = 0; i < n; i++) {
		char name[32];
		snprintf(name, sizeof(name), "node-csr-%d", i);
		json_array_append_new(
			objs, json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:[s,s], s:s}}", "apiVersion",
					"certificates.k8s.io/v1", "kind",
					"CertificateSigningRequest", "metadata", "name", name, "spec",
					"signerName", "kubernetes.io/kube-apiserver-client-kubelet",
					"usages", "digital signature", "client auth", "request",
					(const char *)b.data));
	}
	fb_free(&b);
	json_t *req = json_pack("{s:o}", "objects", objs);
	char *body = json_dumps(req, 0);
	json_t *r = fake("POST", "/_fake/seed", body);
	assert_int_equal(json_array_size(json_object_get(r, "objects")), (size_t)n);
	json_decref(r);
	free(body);
	json_decref(req);
}

static void k8_k9_csrs_paged_and_approved(void **state)
{
	(void)state;
	seed_csrs(5);
	struct fleet_kube *k = open_kubeconfig(0);
	fleet_kube_set_list_page(k, 2);
	struct fleet_errctx ec;
	json_decref(fake("POST", "/_fake/clear_log", NULL));
	json_t *items = NULL;
	char rv[FLEET_KUBE_RV_MAX];
	fleet_err e = fleet_kube_list(k, CSRS, &items, rv, sizeof(rv), &ec);
	if (e)
		fail_msg("%s", ec.detail);
	assert_int_equal(json_array_size(items), 5);
	assert_true(rv[0] != '\0');
	/* three pages: the first without continue, two with */
	assert_int_equal(log_count(CSRS, NULL, NULL), 3);
	assert_int_equal(log_count(CSRS, "continue", NULL), 2);
	/* K9: approve node-csr-1 as listed (no kind or apiVersion in a list's items) */
	json_t *csr1 = json_array_get(items, 1);
	assert_null(json_object_get(csr1, "kind"));
	e = fleet_kube_csr_approve(k, csr1, "FleetdApproved", "the bootstrap token's node", &ec);
	if (e)
		fail_msg("%s", ec.detail);
	json_t *got = NULL;
	assert_int_equal(fleet_kube_get(k, CSRS "/node-csr-1", &got, &ec), FLEET_OK);
	json_t *c0 = json_array_get(json_object_get(json_object_get(got, "status"), "conditions"), 0);
	assert_string_equal(json_string_value(json_object_get(c0, "type")), "Approved");
	assert_string_equal(json_string_value(json_object_get(c0, "status")), "True");
	assert_string_equal(json_string_value(json_object_get(c0, "reason")), "FleetdApproved");
	json_decref(got);
	/* a stale resourceVersion: node-csr-2 labelled since it was listed */
	const char *patch = "{\"metadata\":{\"labels\":{\"touched\":\"yes\"}}}";
	long status = 0;
	struct fleet_buf resp;
	fb_init(&resp);
	assert_int_equal(fleet_kube_request(k, "PATCH", CSRS "/node-csr-2",
					    "application/merge-patch+json", patch, strlen(patch),
					    &status, &resp, &ec),
			 FLEET_OK);
	assert_int_equal(status, 200);
	fb_free(&resp);
	e = fleet_kube_csr_approve(k, json_array_get(items, 2), "FleetdApproved", "m", &ec);
	assert_int_equal(e, FLEET_KUBE_E_CONFLICT);
	assert_non_null(strstr(ec.detail, "409"));
	json_decref(items);
	fleet_kube_close(k);
}

/* ---- watch --------------------------------------------------------------- */

#define WSECRETS "/api/v1/namespaces/default/secrets"

struct seen {
	pthread_mutex_t mu;
	int relists;
	int relist_items[8];
	char events[64][48]; /* "ADDED w-2" */
	int n_events;
	int errors;
	volatile int stop;
	fleet_err result;
	struct fleet_kube *k;
};

static void on_relist(void *ctx, json_t *items)
{
	struct seen *s = ctx;
	pthread_mutex_lock(&s->mu);
	if (s->relists < 8)
		s->relist_items[s->relists] = (int)json_array_size(items);
	s->relists++;
	pthread_mutex_unlock(&s->mu);
}

static void on_event(void *ctx, const char *type, json_t *obj)
{
	struct seen *s = ctx;
	const char *name = json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
	pthread_mutex_lock(&s->mu);
	if (s->n_events < 64)
		snprintf(s->events[s->n_events++], 48, "%s %s", type, name ? name : "?");
	pthread_mutex_unlock(&s->mu);
}

static void on_error(void *ctx, fleet_err e, const struct fleet_errctx *ec, unsigned backoff)
{
	struct seen *s = ctx;
	fprintf(stderr, "watch error %s: %s (backoff %u ms)\n", fleet_err_str(e), ec ? ec->detail : "",
		backoff);
	pthread_mutex_lock(&s->mu);
	s->errors++;
	pthread_mutex_unlock(&s->mu);
}

static void *watch_thread(void *arg)
{
	struct seen *s = arg;
	struct fleet_kube_watch_ops ops = {on_relist, on_event, on_error, s};
	struct fleet_errctx ec;
	s->result = fleet_kube_watch(s->k, WSECRETS, NULL, &ops, &s->stop, &ec);
	return NULL;
}

static bool has_event(struct seen *s, const char *ev)
{
	pthread_mutex_lock(&s->mu);
	bool found = false;
	for (int i = 0; i < s->n_events; i++)
		if (strcmp(s->events[i], ev) == 0)
			found = true;
	pthread_mutex_unlock(&s->mu);
	return found;
}

static void wait_for_event(struct seen *s, const char *ev)
{
	for (int i = 0; i < 100; i++) {
		if (has_event(s, ev))
			return;
		usleep(100000);
	}
	fail_msg("no event '%s' within 10 s", ev);
}

static int relists(struct seen *s)
{
	pthread_mutex_lock(&s->mu);
	int n = s->relists;
	pthread_mutex_unlock(&s->mu);
	return n;
}

static void make_secret(struct fleet_kube *k, const char *name)
{
	json_t *o = json_pack("{s:s, s:s, s:{s:s}, s:{s:s}}", "apiVersion", "v1", "kind", "Secret",
			      "metadata", "name", name, "stringData", "k", "v");
	struct fleet_errctx ec;
	assert_int_equal(fleet_kube_create(k, WSECRETS, o, NULL, &ec), FLEET_OK);
	json_decref(o);
}

static void k10_k14_watch_resume_relist_stop(void **state)
{
	(void)state;
	struct fleet_kube *k = open_kubeconfig(0);
	struct fleet_kube *w = open_kubeconfig(0);
	fleet_kube_set_watch_timeout(w, 30);
	make_secret(k, "w-1");
	struct seen s = {.mu = PTHREAD_MUTEX_INITIALIZER, .k = w};
	json_decref(fake("POST", "/_fake/clear_log", NULL));
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, watch_thread, &s), 0);
	for (int i = 0; i < 100 && relists(&s) < 1; i++)
		usleep(100000);
	assert_int_equal(relists(&s), 1);
	assert_int_equal(s.relist_items[0], 1); /* w-1, from the list */
	/* K10: ADDED and MODIFIED from the stream */
	make_secret(k, "w-2");
	wait_for_event(&s, "ADDED w-2");
	const char *patch = "{\"stringData\":{\"k\":\"v2\"}}";
	long status;
	struct fleet_buf resp;
	fb_init(&resp);
	struct fleet_errctx ec;
	assert_int_equal(fleet_kube_request(k, "PATCH", WSECRETS "/w-2",
					    "application/merge-patch+json", patch, strlen(patch),
					    &status, &resp, &ec),
			 FLEET_OK);
	assert_int_equal(status, 200);
	json_t *patched = json_loadb((const char *)resp.data, resp.len, 0, NULL);
	char rv_w2[64];
	snprintf(rv_w2, sizeof(rv_w2), "%s",
		 json_string_value(json_object_get(json_object_get(patched, "metadata"),
						   "resourceVersion")));
	json_decref(patched);
	fb_free(&resp);
	wait_for_event(&s, "MODIFIED w-2");
	assert_false(has_event(&s, "ADDED w-1")); /* listed, not streamed again */
	/* the fake ends the stream: the watch comes back from where it was
	 * (its request is checked below, once the fake has logged it) */
	json_decref(fake("POST", "/_fake/end_watches", "{}"));
	make_secret(k, "w-3");
	wait_for_event(&s, "ADDED w-3");
	assert_int_equal(relists(&s), 1);
	/* K11: a 410 ERROR event: relist first, then watch on */
	json_decref(fake("POST", "/_fake/end_watches", "{\"expire\": true}"));
	for (int i = 0; i < 100 && relists(&s) < 2; i++)
		usleep(100000);
	assert_int_equal(relists(&s), 2);
	assert_int_equal(s.relist_items[1], 3); /* w-1, w-2, w-3 */
	/* the fake logs a watch when it ends: the first from the list's
	 * resourceVersion, the second resumed at rv_w2 or later (a bookmark),
	 * with no list between them */
	json_t *lg = fake("GET", "/_fake/log", NULL), *ent;
	size_t i, n_watch = 0, lists_before_second = 0;
	const char *resumed = NULL;
	json_array_foreach(json_object_get(lg, "log"), i, ent)
	{
		const char *p = json_string_value(json_object_get(ent, "path"));
		json_t *q = json_object_get(ent, "query");
		if (!p || strcmp(p, WSECRETS) != 0 || strcmp(json_string_value(json_object_get(ent, "method")), "GET"))
			continue;
		if (!json_object_get(q, "watch")) {
			if (n_watch < 2)
				lists_before_second++;
			continue;
		}
		if (++n_watch == 2) {
			resumed = json_string_value(json_object_get(q, "resourceVersion"));
			assert_string_equal(json_string_value(json_object_get(q, "allowWatchBookmarks")),
					    "true");
		}
	}
	assert_true(n_watch >= 2);
	assert_non_null(resumed);
	assert_true(strtoull(resumed, NULL, 10) >= strtoull(rv_w2, NULL, 10));
	assert_int_equal(lists_before_second, 1);
	json_decref(lg);
	make_secret(k, "w-4");
	wait_for_event(&s, "ADDED w-4");
	/* K14: stop is seen within about a second, mid-stream */
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	s.stop = 1;
	pthread_join(t, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	assert_true(took < 2.5);
	assert_int_equal(s.result, FLEET_OK);
	assert_int_equal(s.errors, 0);
	fleet_kube_close(w);
	fleet_kube_close(k);
}

/* ---- tokens and transport ------------------------------------------------ */

static const char *last_user(void)
{
	static char user[64];
	json_t *last = NULL;
	log_count("/api/v1/namespaces", NULL, &last);
	assert_non_null(last);
	const char *u = json_string_value(json_object_get(last, "user"));
	snprintf(user, sizeof(user), "%s", u ? u : "(none)");
	json_decref(last);
	return user;
}

static void k3_in_cluster_token_read_per_request(void **state)
{
	(void)state;
	char port[16];
	snprintf(port, sizeof(port), "%d", g_port);
	setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1", 1);
	setenv("KUBERNETES_SERVICE_PORT", port, 1);
	struct fleet_kube_config cfg = {.sa_dir = g_sa};
	struct fleet_kube *k = NULL;
	struct fleet_errctx ec;
	fleet_err e = fleet_kube_open(&cfg, &k, &ec);
	if (e)
		fail_msg("%s", ec.detail);
	json_t *l = NULL;
	char rv[FLEET_KUBE_RV_MAX];
	assert_int_equal(fleet_kube_list(k, "/api/v1/namespaces", &l, rv, sizeof(rv), &ec), FLEET_OK);
	json_decref(l);
	assert_string_equal(last_user(), "sa-one");
	/* kubelet rotates the token: written beside and renamed over */
	char tmp[800], dst[800];
	snprintf(tmp, sizeof(tmp), "%s/token.new", g_sa);
	snprintf(dst, sizeof(dst), "%s/token", g_sa);
	write_text(tmp, "tok-two-0123456789\n");
	assert_int_equal(rename(tmp, dst), 0);
	assert_int_equal(fleet_kube_list(k, "/api/v1/namespaces", &l, rv, sizeof(rv), &ec), FLEET_OK);
	json_decref(l);
	assert_string_equal(last_user(), "sa-two");
	/* a token the server does not know: 401, AUTH */
	write_text(tmp, "tok-unknown\n");
	assert_int_equal(rename(tmp, dst), 0);
	assert_int_equal(fleet_kube_list(k, "/api/v1/namespaces", &l, rv, sizeof(rv), &ec),
			 FLEET_KUBE_E_AUTH);
	assert_non_null(strstr(ec.detail, "401"));
	assert_null(strstr(ec.detail, "tok-unknown")); /* K3: never in an error */
	assert_null(l);
	write_text(tmp, "tok-one-0123456789\n");
	assert_int_equal(rename(tmp, dst), 0);
	fleet_kube_close(k);
	unsetenv("KUBERNETES_SERVICE_HOST");
	unsetenv("KUBERNETES_SERVICE_PORT");
}

static void k4_k1_answer_cap_and_tls(void **state)
{
	(void)state;
	/* K4: an answer over the cap is an error, not a cut body */
	struct fleet_kube *k = open_kubeconfig(256);
	struct fleet_errctx ec;
	json_t *l = NULL;
	char rv[FLEET_KUBE_RV_MAX];
	assert_int_equal(fleet_kube_list(k, "/api/v1/namespaces", &l, rv, sizeof(rv), &ec),
			 FLEET_KUBE_E_TOO_LARGE);
	assert_null(l);
	long status;
	struct fleet_buf resp;
	fb_init(&resp);
	assert_int_equal(fleet_kube_request(k, "GET", "/api/v1/namespaces", NULL, NULL, 0, &status,
					    &resp, &ec),
			 FLEET_KUBE_E_TOO_LARGE);
	fb_free(&resp);
	fleet_kube_close(k);
	/* K1: a server certificate the kubeconfig's CA did not issue */
	char text[2048], path[800];
	snprintf(text, sizeof(text),
		 "clusters:\n- name: fake\n  cluster:\n"
		 "    server: https://127.0.0.1:%d\n    certificate-authority: rogue.pem\n"
		 "users:\n- name: admin\n  user:\n    token: tok-one-0123456789\n"
		 "contexts:\n- name: fake\n  context: {cluster: fake, user: admin}\n"
		 "current-context: fake\n",
		 g_port);
	snprintf(path, sizeof(path), "%s/kubeconfig.rogue", g_dir);
	write_text(path, text);
	struct fleet_kube_config cfg = {.kubeconfig = path, .timeout_seconds = 5};
	assert_int_equal(fleet_kube_open(&cfg, &k, &ec), FLEET_OK);
	assert_int_equal(fleet_kube_list(k, "/api/v1/namespaces", &l, rv, sizeof(rv), &ec),
			 FLEET_KUBE_E_UNAVAILABLE);
	fleet_kube_close(k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(k6_bootstrap_secret_create_get_delete),
		cmocka_unit_test(k6_workflow_422_reaches_ec),
		cmocka_unit_test(k8_k9_csrs_paged_and_approved),
		cmocka_unit_test(k10_k14_watch_resume_relist_stop),
		cmocka_unit_test(k3_in_cluster_token_read_per_request),
		cmocka_unit_test(k4_k1_answer_cap_and_tls),
	};
	return cmocka_run_group_tests(tests, start, stop_fake);
}
