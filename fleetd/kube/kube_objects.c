/*
 * kube_objects.c: the typed calls, K6-K9 (kube.h).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fleetd/kube/kube_internal.h"
#include "lib/sanitize.h"

int fleet_kube_rv_ok(const char *rv)
{
	if (!rv)
		return 0;
	size_t n = strlen(rv);
	if (n == 0 || n >= FLEET_KUBE_RV_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)rv[i];
		if (c <= 0x20 || c >= 0x7f || c == '&' || c == '#' || c == '%' || c == '+' ||
		    c == '?' || c == '=')
			return 0;
	}
	return 1;
}

int kube_query_ok(const char *q)
{
	size_t n = strlen(q);
	if (n > 2048)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)q[i];
		if (c <= 0x20 || c >= 0x7f || c == '#' || c == '\\')
			return 0;
	}
	return 1;
}

/* The Status object's reason and message, if the body is one. */
static void status_words(const struct fleet_buf *body, char *reason, size_t rlen, char *msg,
			 size_t mlen)
{
	reason[0] = msg[0] = '\0';
	if (!body || !body->len)
		return;
	json_t *j = json_loadb((const char *)body->data, body->len, 0, NULL);
	if (!json_is_object(j)) {
		json_decref(j);
		return;
	}
	const char *r = json_string_value(json_object_get(j, "reason"));
	const char *m = json_string_value(json_object_get(j, "message"));
	if (r)
		fleet_sanitize(r, strlen(r), reason, rlen, 40);
	if (m)
		fleet_sanitize(m, strlen(m), msg, mlen, 300);
	json_decref(j);
}

fleet_err kube_status_err(const char *method, const char *path, long status,
			  const struct fleet_buf *body, struct fleet_errctx *ec)
{
	if (status >= 200 && status < 300)
		return FLEET_OK;
	char reason[64], msg[400], p[120];
	status_words(body, reason, sizeof(reason), msg, sizeof(msg));
	fleet_sanitize(path, strlen(path), p, sizeof(p), 100);
	fleet_err e;
	if (status == 401 || status == 403)
		e = FLEET_KUBE_E_AUTH;
	else if (status == 404)
		e = FLEET_KUBE_E_NOT_FOUND;
	else if (status == 409)
		e = (strcmp(reason, "AlreadyExists") == 0 ||
		     (!reason[0] && strcmp(method, "POST") == 0))
			    ? FLEET_KUBE_E_EXISTS
			    : FLEET_KUBE_E_CONFLICT;
	else if (status == 429 || status >= 500 || (status >= 300 && status < 400) || status == 0)
		e = FLEET_KUBE_E_UNAVAILABLE;
	else
		e = FLEET_KUBE_E_INVALID;
	return fleet_errctx_msg(ec, e, "the API server answered %s %s with %ld%s%s%s%s", method, p,
				status, reason[0] ? " " : "", reason, msg[0] ? ": " : "", msg);
}

/* One request with a JSON body (may be NULL) whose 2xx answer is a JSON
 * object (*out, if not NULL). */
static fleet_err json_call(struct fleet_kube *k, const char *method, const char *path,
			   const json_t *obj, json_t **out, long *status_out,
			   volatile int *stop, struct fleet_errctx *ec)
{
	if (out)
		*out = NULL;
	char *body = NULL;
	if (obj && !(body = json_dumps(obj, JSON_COMPACT)))
		return fleet_errctx_msg(ec, FLEET_KUBE_E_NOMEM, "out of memory for the request");
	struct fleet_buf resp;
	fb_init_capped(&resp, k->max_response + 1);
	long status = 0;
	struct kube_stream st = {.stop = stop};
	fleet_err e = kube_request_ex(k, method, path, NULL, body, body ? strlen(body) : 0,
				      &status, &resp, stop ? &st : NULL, ec);
	if (body) {
		explicit_bzero(body, strlen(body)); /* a Secret's data */
		free(body);
	}
	if (status_out)
		*status_out = status;
	if (e == FLEET_OK && st.stopped)
		e = fleet_errctx_msg(ec, FLEET_KUBE_E_UNAVAILABLE, "stopped");
	if (e == FLEET_OK)
		e = kube_status_err(method, path, status, &resp, ec);
	if (e == FLEET_OK && out) {
		json_error_t je;
		json_t *j = json_loadb((const char *)resp.data, resp.len, JSON_REJECT_DUPLICATES, &je);
		if (!json_is_object(j)) {
			json_decref(j);
			char p[120];
			fleet_sanitize(path, strlen(path), p, sizeof(p), 100);
			e = fleet_errctx_msg(ec, FLEET_KUBE_E_MALFORMED,
					     "the API server's answer to %s %s is not a JSON object",
					     method, p);
		} else {
			*out = j;
		}
	}
	fb_free_secret(&resp); /* may be a Secret */
	return e;
}

fleet_err fleet_kube_create(struct fleet_kube *k, const char *collection_path, json_t *obj,
			    json_t **created, struct fleet_errctx *ec)
{
	if (created)
		*created = NULL;
	if (!json_is_object(obj))
		return fleet_errctx_msg(ec, FLEET_KUBE_E_INVALID, "the object to create is not one");
	json_t *j = NULL;
	fleet_err e = json_call(k, "POST", collection_path, obj, &j, NULL, NULL, ec);
	if (e == FLEET_OK && created)
		*created = j;
	else
		json_decref(j);
	return e;
}

fleet_err fleet_kube_get(struct fleet_kube *k, const char *object_path, json_t **out,
			 struct fleet_errctx *ec)
{
	return json_call(k, "GET", object_path, NULL, out, NULL, NULL, ec);
}

fleet_err fleet_kube_delete(struct fleet_kube *k, const char *object_path,
			    struct fleet_errctx *ec)
{
	return json_call(k, "DELETE", object_path, NULL, NULL, NULL, NULL, ec);
}

fleet_err kube_list_ex(struct fleet_kube *k, const char *collection_path, const char *query,
		       volatile int *stop, json_t **list, char *rv, size_t rvlen,
		       struct fleet_errctx *ec)
{
	*list = NULL;
	if (rv && rvlen)
		rv[0] = '\0';
	if (!rv || rvlen < FLEET_KUBE_RV_MAX)
		return fleet_errctx_msg(ec, FLEET_KUBE_E_INVALID,
					"the resourceVersion buffer is under %u bytes",
					FLEET_KUBE_RV_MAX);
	if (!fleet_kube_path_ok(collection_path) || (query && !kube_query_ok(query)))
		return fleet_errctx_msg(ec, FLEET_KUBE_E_INVALID, "a bad collection path");
	char sep = strchr(collection_path, '?') ? '&' : '?';
	for (int attempt = 0; attempt < 4; attempt++) {
		json_t *items = json_array();
		if (!items)
			return fleet_errctx_msg(ec, FLEET_KUBE_E_NOMEM, "out of memory");
		char cont[2048] = "";
		bool restart = false;
		fleet_err e = FLEET_OK;
		for (;;) {
			char path[8192];
			int w = snprintf(path, sizeof(path), "%s%climit=%u%s%s%s%s", collection_path,
					 sep, k->list_page, query ? "&" : "",
					 query ? query : "", cont[0] ? "&continue=" : "", cont);
			if (w < 0 || (size_t)w >= sizeof(path)) {
				e = fleet_errctx_msg(ec, FLEET_KUBE_E_INVALID, "the list path is too long");
				break;
			}
			json_t *page = NULL;
			long status = 0;
			e = json_call(k, "GET", path, NULL, &page, &status, stop, ec);
			if (e && status == 410 && cont[0]) { /* K8: the continue token expired */
				restart = true;
				break;
			}
			if (e)
				break;
			json_t *pi = json_object_get(page, "items");
			json_t *meta = json_object_get(page, "metadata");
			const char *prv = json_string_value(json_object_get(meta, "resourceVersion"));
			const char *pc = json_string_value(json_object_get(meta, "continue"));
			if (!(json_is_array(pi) || json_is_null(pi) || !pi) || !json_is_object(meta) ||
			    !fleet_kube_rv_ok(prv)) {
				json_decref(page);
				e = fleet_errctx_msg(ec, FLEET_KUBE_E_MALFORMED,
						     "a list page without items or a usable "
						     "metadata.resourceVersion");
				break;
			}
			if (json_array_size(items) + json_array_size(pi) > FLEET_KUBE_LIST_MAX) {
				json_decref(page);
				e = fleet_errctx_msg(ec, FLEET_KUBE_E_TOO_LARGE,
						     "the list holds more than %u items",
						     FLEET_KUBE_LIST_MAX);
				break;
			}
			if (pi && json_array_extend(items, pi)) {
				json_decref(page);
				e = fleet_errctx_msg(ec, FLEET_KUBE_E_NOMEM, "out of memory");
				break;
			}
			snprintf(rv, rvlen, "%s", prv);
			bool more = pc && pc[0];
			if (more) {
				/* the token goes back in a query: URL-safe base64 or
				 * percent-encode what is not */
				size_t o = 0, n = strlen(pc);
				for (size_t i = 0; i < n; i++) {
					unsigned char ch = (unsigned char)pc[i];
					bool plain = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
						     (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' ||
						     ch == '.' || ch == '~';
					if (o + 4 >= sizeof(cont)) {
						o = sizeof(cont);
						break;
					}
					if (plain)
						cont[o++] = (char)ch;
					else
						o += (size_t)snprintf(cont + o, sizeof(cont) - o, "%%%02X", ch);
				}
				if (o >= sizeof(cont)) {
					json_decref(page);
					e = fleet_errctx_msg(ec, FLEET_KUBE_E_MALFORMED,
							     "a list continue token too long or "
							     "not printable");
					break;
				}
				cont[o] = '\0';
			}
			json_decref(page);
			if (!more)
				break;
		}
		if (restart) {
			json_decref(items);
			continue;
		}
		if (e) {
			json_decref(items);
			rv[0] = '\0';
			return e;
		}
		*list = items;
		return FLEET_OK;
	}
	return fleet_errctx_msg(ec, FLEET_KUBE_E_UNAVAILABLE,
				"the list's continue token expired four times in a row");
}

fleet_err fleet_kube_list(struct fleet_kube *k, const char *collection_path, json_t **list,
			  char *rv, size_t rvlen, struct fleet_errctx *ec)
{
	return kube_list_ex(k, collection_path, NULL, NULL, list, rv, rvlen, ec);
}

/* A DNS-1123 subdomain: what a CSR's name is. */
static bool dns_subdomain(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 253)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		bool an = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
		if (!an && c != '-' && c != '.')
			return false;
		if ((i == 0 || i == n - 1) && !an)
			return false;
	}
	return true;
}

fleet_err fleet_kube_csr_approve(struct fleet_kube *k, const json_t *csr, const char *reason,
				 const char *message, struct fleet_errctx *ec)
{
	const char *name =
		json_string_value(json_object_get(json_object_get(csr, "metadata"), "name"));
	if (!json_is_object(csr) || !name || !dns_subdomain(name))
		return fleet_errctx_msg(ec, FLEET_KUBE_E_INVALID,
					"the CSR has no metadata.name that is a DNS-1123 subdomain");
	if (!reason || !message)
		return fleet_errctx_msg(ec, FLEET_KUBE_E_INVALID, "an approval needs a reason and a message");
	char path[400];
	snprintf(path, sizeof(path),
		 "/apis/certificates.k8s.io/v1/certificatesigningrequests/%s/approval", name);
	json_t *o = json_deep_copy(csr);
	if (!o)
		return fleet_errctx_msg(ec, FLEET_KUBE_E_NOMEM, "out of memory");
	char now[32];
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", &tm);
	json_t *status = json_object_get(o, "status");
	if (!json_is_object(status)) {
		status = json_object();
		if (!status || json_object_set_new(o, "status", status))
			goto nomem;
	}
	json_t *conds = json_object_get(status, "conditions");
	if (!json_is_array(conds)) {
		conds = json_array();
		if (!conds || json_object_set_new(status, "conditions", conds))
			goto nomem;
	}
	json_t *c = json_pack("{s:s, s:s, s:s, s:s, s:s}", "type", "Approved", "status", "True",
			      "reason", reason, "message", message, "lastUpdateTime", now);
	if (!c || json_array_append_new(conds, c))
		goto nomem;
	/* a list's items carry no kind or apiVersion */
	if (json_object_set_new(o, "kind", json_string("CertificateSigningRequest")) ||
	    json_object_set_new(o, "apiVersion", json_string("certificates.k8s.io/v1")))
		goto nomem;
	fleet_err e = json_call(k, "PUT", path, o, NULL, NULL, NULL, ec);
	json_decref(o);
	return e;
nomem:
	json_decref(o);
	return fleet_errctx_msg(ec, FLEET_KUBE_E_NOMEM, "out of memory");
}
