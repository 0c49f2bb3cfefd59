/*
 * kube.h: fleetd's Kubernetes API client (spec "Join Kubernetes": the
 * bootstrap-token Secret in kube-system, the kubelet CSR's approval, the
 * Secret's deletion; and the Tinkerbell Workflows). HTTPS with libcurl,
 * JSON with jansson; the credentials come from a kubeconfig or from the
 * pod's service account (kube_config.h, rules KC1-KC12).
 *
 * Transport:
 *
 *   K1  TLS is always verified (peer and host name) against the
 *       kubeconfig's or the service account's CA (the system's roots when
 *       a kubeconfig names none, as kubectl does); only https is spoken
 *       (CURLOPT_PROTOCOLS_STR), redirects are not followed (a 3xx is
 *       FLEET_KUBE_E_UNAVAILABLE), and no proxy is taken from the
 *       environment (CURLOPT_PROXY ""): fleetd's API server is folly's,
 *       reached directly, and an https_proxy left in a unit's environment
 *       must not decide where the token goes. A kubeconfig's proxy-url is
 *       refused (KC8).
 *   K2  A request's path starts with "/api/" or "/apis/" and is printable
 *       ASCII without spaces, "#", "\\" or a ".." segment
 *       (FLEET_KUBE_E_INVALID otherwise, nothing sent).
 *   K3  A bearer token is read again for every request from its file
 *       (the service account's token, kubelet rotates it; a kubeconfig's
 *       tokenFile), and for every watch connection; it never reaches a log
 *       or an error context: the header is built in a secret buffer and
 *       wiped, with the copy curl's header list held, after the request.
 *   K4  An answer's body is at most cfg->max_response bytes (0: 4 MiB); a
 *       bigger one is FLEET_KUBE_E_TOO_LARGE, never truncated.
 *   K5  Each request is bounded by cfg->timeout_seconds (0: 10). Each call
 *       makes its own curl handle: any thread may call any function on one
 *       struct fleet_kube at the same time as another.
 *
 * Typed calls (kube_objects.c):
 *
 *   K6  Answers map to errors by status and the Status object's reason:
 *       2xx FLEET_OK; 401 and 403 FLEET_KUBE_E_AUTH; 404
 *       FLEET_KUBE_E_NOT_FOUND; 409 reason AlreadyExists (or any 409 to a
 *       POST) FLEET_KUBE_E_EXISTS, else FLEET_KUBE_E_CONFLICT; 400 and 422
 *       FLEET_KUBE_E_INVALID; 429, 5xx and transport failures
 *       FLEET_KUBE_E_UNAVAILABLE; anything else FLEET_KUBE_E_INVALID. The
 *       Status message, sanitised (lib/sanitize.h) and cut to 300
 *       characters, is in ec->detail with the status.
 *   K7  A 2xx answer that is not one JSON object is FLEET_KUBE_E_MALFORMED.
 *   K8  fleet_kube_list follows metadata.continue in pages of 500
 *       (fleet_kube_set_list_page), at most
 *       FLEET_KUBE_LIST_MAX items in all (FLEET_KUBE_E_TOO_LARGE past it);
 *       a 410 in the middle (the continue token expired) starts the list
 *       again, at most 3 times. *list is a new JSON array of the items;
 *       rv gets the last page's metadata.resourceVersion (rvlen at least
 *       FLEET_KUBE_RV_MAX; a resourceVersion that is not short printable
 *       ASCII without '&', '#', '%', '+', space is MALFORMED).
 *   K9  fleet_kube_csr_approve PUTs .../certificatesigningrequests/<name>/
 *       approval with the object as given (so its resourceVersion: a CSR
 *       changed since it was read is FLEET_KUBE_E_CONFLICT), kind and
 *       apiVersion set when the object came from a list, and one condition
 *       appended to status.conditions: {type Approved, status "True",
 *       reason, message, lastUpdateTime now}. The name must be a DNS-1123
 *       subdomain (FLEET_KUBE_E_INVALID, nothing sent).
 *
 * Watch (kube_watch.c):
 *
 *   K10 fleet_kube_watch lists (on_relist with the items), then watches
 *       from the list's resourceVersion with allowWatchBookmarks=true and
 *       timeoutSeconds (fleet_kube_set_watch_timeout, default 60); every
 *       ADDED, MODIFIED and DELETED event goes to on_event; each event's
 *       resourceVersion, BOOKMARKs' too, is where the next watch resumes
 *       when a stream ends, without a relist.
 *   K11 A 410 (an ERROR event holding a Status of code 410, or a 410
 *       answer) relists, on_relist first, then watches from the new list.
 *   K12 Failures (transport, an ERROR event other than 410, a status other
 *       than 200, an event line that does not parse, K13) go to on_error
 *       with the back-off about to be slept: 500 ms doubling to 30 s, the
 *       sleep a uniform draw in [d/2, d]; a good event resets it. A stream
 *       that ends within a second without any event counts as a failure.
 *   K13 One event line is at most FLEET_KUBE_EVENT_MAX bytes; a longer one
 *       ends the stream (FLEET_KUBE_E_TOO_LARGE to on_error) and the watch
 *       lists afresh rather than resume at the same resourceVersion.
 *   K14 *stop is read at least every second (curl's progress callback, the
 *       back-off sleeping in slices of 100 ms); when it is true the watch
 *       returns FLEET_OK. It runs in the caller's thread, which the
 *       callbacks run in.
 *   K15 The event line parser (fleet_kube_watch_event_parse): one JSON
 *       object with "type" one of ADDED, MODIFIED, DELETED, BOOKMARK,
 *       ERROR and "object" an object; every type but ERROR needs
 *       object.metadata.resourceVersion as K8 says; ERROR needs a numeric
 *       object.code. Anything else is FLEET_KUBE_E_MALFORMED.
 *
 * Tests: tests/unit/test_kube_config.c (KC1-KC12, K2, K15),
 * tests/e2e/test_kube_client.c (K1, K3-K14 against
 * tests/fakes/kube_apiserver_fake.py); fuzz: tests/fuzz/fuzz_kubeconfig.c,
 * tests/fuzz/fuzz_kube_watch_event.c.
 */
#ifndef FLEETD_KUBE_KUBE_H
#define FLEETD_KUBE_KUBE_H

#include <stddef.h>

#include <jansson.h>

#include "lib/buf.h"
#include "lib/fleet_err.h"

/* The client's own failures, in the one error space (lib/fleet_err.h):
 * layer FLEET_LAYER_KUBE. A failure of a lower layer (the file reader,
 * the YAML reader) is passed on as that layer's value, unchanged. */
#define FLEET_KUBE_ERR(code) FLEET_ERR(FLEET_LAYER_KUBE, FLEET_CODE_##code)
enum {
	FLEET_KUBE_OK = FLEET_OK,
	FLEET_KUBE_E_EXISTS = FLEET_KUBE_ERR(EXISTS),        /* 409 AlreadyExists on a create */
	FLEET_KUBE_E_NOT_FOUND = FLEET_KUBE_ERR(NOT_FOUND),  /* 404 */
	FLEET_KUBE_E_CONFLICT = FLEET_KUBE_ERR(CONFLICT),    /* 409 on an update: a stale resourceVersion */
	FLEET_KUBE_E_INVALID = FLEET_KUBE_ERR(INVALID_ARG),  /* 400, 422, or a caller's value refused */
	FLEET_KUBE_E_AUTH = FLEET_KUBE_ERR(AUTH),            /* 401, 403 */
	FLEET_KUBE_E_UNAVAILABLE = FLEET_KUBE_ERR(UNAVAILABLE), /* transport, timeout, 5xx, 429, 3xx */
	FLEET_KUBE_E_MALFORMED = FLEET_KUBE_ERR(MALFORMED),  /* an answer or a kubeconfig that cannot be */
	FLEET_KUBE_E_TOO_LARGE = FLEET_KUBE_ERR(TOO_LARGE),  /* an answer, a list or an event past its cap */
	FLEET_KUBE_E_UNSUPPORTED = FLEET_KUBE_ERR(UNSUPPORTED), /* a kubeconfig feature not handled (exec) */
	FLEET_KUBE_E_NOMEM = FLEET_KUBE_ERR(NOMEM),
};

#define FLEET_KUBE_LIST_MAX 100000u          /* K8: items in one list, all pages */
#define FLEET_KUBE_LIST_PAGE 500u            /* K8 */
/* K13: bytes in one watch event line: above what one object the API server
 * stores can take as JSON (etcd's default request limit is 1.5 MiB), so a
 * valid object never exceeds it. */
#define FLEET_KUBE_EVENT_MAX (3u * 1024u * 1024u)
#define FLEET_KUBE_RV_MAX 64u                /* a resourceVersion, with its NUL */

struct fleet_kube;

struct fleet_kube_config {
	const char *kubeconfig;   /* path; NULL: in-cluster (KUBERNETES_SERVICE_HOST/PORT env,
	                             /var/run/secrets/kubernetes.io/serviceaccount/{token,ca.crt};
	                             the token file is RE-READ ON EVERY REQUEST, since kubelet rotates it) */
	const char *sa_dir;       /* in-cluster directory override; NULL: the standard path (tests set it) */
	unsigned timeout_seconds; /* per request; 0: 10 */
	size_t max_response;      /* 0: 4 MiB; a bigger body is an error, never truncated silently */
};

/* Read the credentials (kube_config.h) and make a client. FLEET_OK and
 * *out, or the refusal in ec (*out NULL). */
fleet_err fleet_kube_open(const struct fleet_kube_config *cfg, struct fleet_kube **out,
			  struct fleet_errctx *ec);
/* Frees k, wiping its keys and tokens. NULL is fine. */
void fleet_kube_close(struct fleet_kube *k);

/* K10: the watch's timeoutSeconds (1..3600; 0 leaves it as it is). Set it
 * before a watch starts, not during one. */
void fleet_kube_set_watch_timeout(struct fleet_kube *k, unsigned seconds);

/* K8's page size (1..FLEET_KUBE_LIST_PAGE; 0 leaves it): the tests page
 * a short list; fleetd keeps 500. */
void fleet_kube_set_list_page(struct fleet_kube *k, unsigned limit);

/* One request, K1-K5. path starts with "/api/" or "/apis/"; body may be
 * NULL; content_type NULL means application/json when there is a body.
 * FLEET_OK when the server answered (whatever the status): *status is the
 * HTTP status and resp (which the caller made, fb_init or capped; it is
 * reset first) the body. Otherwise FLEET_KUBE_E_UNAVAILABLE (no answer),
 * FLEET_KUBE_E_TOO_LARGE (K4), FLEET_KUBE_E_INVALID (K2), a token file's
 * failure (the file reader's, passed on), FLEET_KUBE_E_NOMEM. */
fleet_err fleet_kube_request(struct fleet_kube *k, const char *method, const char *path,
			     const char *content_type, const void *body, size_t body_len,
			     long *status, struct fleet_buf *resp, struct fleet_errctx *ec);

/* Typed calls, K6-K9. Each returns FLEET_OK, FLEET_KUBE_E_EXISTS (409
 * AlreadyExists on create), FLEET_KUBE_E_NOT_FOUND (404),
 * FLEET_KUBE_E_CONFLICT (409 on update), FLEET_KUBE_E_INVALID (422/400,
 * the Status message in ec), FLEET_KUBE_E_AUTH (401/403),
 * FLEET_KUBE_E_UNAVAILABLE (transport, 5xx, 429), FLEET_KUBE_E_MALFORMED
 * (an answer that does not parse), or what fleet_kube_request returns. */
/* POST obj to collection_path; *created (if not NULL) the object the
 * server stored, a new reference. */
fleet_err fleet_kube_create(struct fleet_kube *k, const char *collection_path, json_t *obj,
			    json_t **created, struct fleet_errctx *ec);
fleet_err fleet_kube_get(struct fleet_kube *k, const char *object_path, json_t **out,
			 struct fleet_errctx *ec);
/* 404 -> FLEET_KUBE_E_NOT_FOUND, so a caller can treat "already gone" as done. */
fleet_err fleet_kube_delete(struct fleet_kube *k, const char *object_path,
			    struct fleet_errctx *ec);
/* K8. collection_path may carry a query ("...?fieldSelector=..."). */
fleet_err fleet_kube_list(struct fleet_kube *k, const char *collection_path, json_t **list,
			  char *rv, size_t rvlen, struct fleet_errctx *ec);
/* K9. */
fleet_err fleet_kube_csr_approve(struct fleet_kube *k, const json_t *csr, const char *reason,
				 const char *message, struct fleet_errctx *ec);

/* K10-K14. */
struct fleet_kube_watch_ops {
	void (*on_relist)(void *ctx, json_t *items); /* after every (re)list, items an array */
	void (*on_event)(void *ctx, const char *type, json_t *obj);
	void (*on_error)(void *ctx, fleet_err e, const struct fleet_errctx *ec,
			 unsigned backoff_ms); /* for the journal */
	void *ctx;
};
/* query: e.g. fieldSelector=spec.signerName%3D...; may be NULL. The
 * callbacks borrow items and obj (json_incref to keep them). Returns
 * FLEET_OK when *stop became true; FLEET_KUBE_E_INVALID at once for a bad
 * path or query (K2), nothing else: every other failure is retried. */
fleet_err fleet_kube_watch(struct fleet_kube *k, const char *collection_path,
			   const char *query, const struct fleet_kube_watch_ops *ops,
			   volatile int *stop, struct fleet_errctx *ec);

/* K15: one watch event line (without its newline). */
enum fleet_kube_event_type {
	FLEET_KUBE_EV_ADDED = 1,
	FLEET_KUBE_EV_MODIFIED,
	FLEET_KUBE_EV_DELETED,
	FLEET_KUBE_EV_BOOKMARK,
	FLEET_KUBE_EV_ERROR,
};
struct fleet_kube_event {
	enum fleet_kube_event_type type;
	const char *type_str;      /* "ADDED", ... (static) */
	json_t *object;            /* a new reference: json_decref it */
	char rv[FLEET_KUBE_RV_MAX]; /* not ERROR: object.metadata.resourceVersion */
	long code;                 /* ERROR: the Status's code */
};
fleet_err fleet_kube_watch_event_parse(const char *line, size_t len, struct fleet_kube_event *ev,
				       struct fleet_errctx *ec);

/* K2, for the caller and the tests: whether path may be requested. */
int fleet_kube_path_ok(const char *path);
/* K8's resourceVersion rule. */
int fleet_kube_rv_ok(const char *rv);

#endif
