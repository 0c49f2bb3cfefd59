/*
 * kube_config.c: a kubeconfig or the service account, KC1-KC12
 * (kube_config.h).
 */
#include "fleetd/kube/kube_config.h"
#include "lib/attest_wire.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fleetd/kube/kube.h"
#include "lib/file_read.h"
#include "lib/yaml_strict.h"

void fleet_kube_auth_init(struct fleet_kube_auth *a)
{
	memset(a, 0, sizeof(*a));
	fb_init_capped(&a->ca_pem, FLEET_KUBE_PEM_MAX + 1);
	fb_init_secret(&a->token, FLEET_KUBE_TOKEN_MAX + 1);
	fb_init_capped(&a->cert_pem, FLEET_KUBE_PEM_MAX + 1);
	fb_init_secret(&a->key_pem, FLEET_KUBE_PEM_MAX + 1);
}

void fleet_kube_auth_free(struct fleet_kube_auth *a)
{
	if (!a)
		return;
	fb_free(&a->ca_pem);
	fb_free_secret(&a->token);
	fb_free(&a->cert_pem);
	fb_free_secret(&a->key_pem);
	explicit_bzero(a, sizeof(*a));
}

/* ---- base64, KC9 ---------------------------------------------------------- */

/* The one standard-base64 reader (lib/attest_wire.h fleet_b64std_decode:
 * padded, one spelling); an empty value is no value. */
fleet_err fleet_kube_b64_decode(const char *in, size_t len, struct fleet_buf *out, int secret,
				size_t max, struct fleet_errctx *ec)
{
	if (secret)
		fb_init_secret(out, max + 1);
	else
		fb_init_capped(out, max + 1);
	struct fleet_wire_bytes w = {0};
	fleet_err e = len ? fleet_b64std_decode(in, len, max, &w) : FLEET_E_MALFORMED;
	if (e == FLEET_OK && (fb_put(out, w.data, w.len) || fb_put_u8(out, 0)))
		e = FLEET_E_NOMEM;
	if (w.data) {
		explicit_bzero(w.data, w.len);
		free(w.data);
	}
	if (e == FLEET_OK) {
		out->len--; /* NUL-terminated, not counted */
		return FLEET_OK;
	}
	fb_free_secret(out);
	if (e == FLEET_E_TOO_LARGE)
		return fleet_errctx_refuse(ec, FLEET_KUBE_E_TOO_LARGE, "too-large",
					   "base64 value of %zu bytes is over the cap", len);
	if (e == FLEET_E_NOMEM)
		return fleet_errctx_msg(ec, FLEET_KUBE_E_NOMEM, "out of memory");
	return fleet_errctx_refuse(ec, FLEET_KUBE_E_MALFORMED, "bad-base64",
				   "a *-data value is not base64 (standard alphabet, padded, one line)");
}

/* ---- tokens, KC10 --------------------------------------------------------- */

/* Check b's bytes as a token, dropping one trailing newline, and
 * NUL-terminate it. */
static fleet_err token_check(struct fleet_buf *b, const char *what, struct fleet_errctx *ec)
{
	if (b->len && b->data[b->len - 1] == '\n')
		b->len--;
	if (b->len && b->data[b->len - 1] == '\r')
		b->len--;
	if (b->len == 0 || b->len > FLEET_KUBE_TOKEN_MAX)
		return fleet_errctx_refuse(ec, FLEET_KUBE_E_MALFORMED, "bad-token",
					   "%s is empty or longer than %u bytes", what,
					   FLEET_KUBE_TOKEN_MAX);
	for (size_t i = 0; i < b->len; i++)
		if (b->data[i] < 0x21 || b->data[i] > 0x7e)
			return fleet_errctx_refuse(ec, FLEET_KUBE_E_MALFORMED, "bad-token",
						   "%s holds a byte outside printable ASCII at "
						   "offset %zu",
						   what, i);
	if (fb_put_u8(b, 0))
		return fleet_errctx_msg(ec, FLEET_KUBE_E_NOMEM, "out of memory");
	b->len--;
	return FLEET_OK;
}

/* Read dir/name with policy into out; in a service account directory a
 * name that is a symbolic link is read as "..data/<name>" (KC12). */
static fleet_err read_file_at(const char *dir, const char *name, int in_cluster,
			      const struct fleet_file_policy *pol, struct fleet_buf *out,
			      struct fleet_errctx *ec)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return fleet_errctx_errno(ec, errno == ENOENT ? FLEET_E_NOT_FOUND : FLEET_E_IO,
					  errno, "%s: cannot open the directory %s", pol->what,
					  dir);
	struct fleet_errctx local;
	memset(&local, 0, sizeof(local));
	fleet_err e = fleet_file_read(dfd, name, pol, out, &local);
	if (e == FLEET_E_UNSAFE && in_cluster && local.reason &&
	    strcmp(local.reason, "symlink") == 0) {
		char alt[PATH_MAX];
		if ((size_t)snprintf(alt, sizeof(alt), "..data/%s", name) < sizeof(alt))
			e = fleet_file_read(dfd, alt, pol, out, &local);
	}
	if (e && ec)
		*ec = local;
	close(dfd);
	return e;
}

/* Split path into its directory and last component. */
static fleet_err split_path(const char *path, char *dir, size_t dlen, char *name, size_t nlen,
			    struct fleet_errctx *ec)
{
	const char *slash = strrchr(path, '/');
	int w1, w2;
	if (!slash) {
		w1 = snprintf(dir, dlen, ".");
		w2 = snprintf(name, nlen, "%s", path);
	} else {
		w1 = snprintf(dir, dlen, "%.*s", slash == path ? 1 : (int)(slash - path), path);
		w2 = snprintf(name, nlen, "%s", slash + 1);
	}
	if (w1 < 0 || (size_t)w1 >= dlen || w2 < 0 || (size_t)w2 >= nlen || !name[0])
		return fleet_errctx_msg(ec, FLEET_KUBE_E_INVALID, "the path %s is not a file's",
					path);
	return FLEET_OK;
}

fleet_err fleet_kube_auth_token(const struct fleet_kube_auth *a, struct fleet_buf *out,
				struct fleet_errctx *ec)
{
	if (a->token.len) {
		fb_init_secret(out, FLEET_KUBE_TOKEN_MAX + 1);
		if (fb_put(out, a->token.data, a->token.len) || fb_put_u8(out, 0)) {
			fb_free_secret(out);
			return fleet_errctx_msg(ec, FLEET_KUBE_E_NOMEM, "out of memory");
		}
		out->len--;
		return FLEET_OK;
	}
	if (!a->token_name[0]) {
		fb_init(out);
		return FLEET_OK;
	}
	struct fleet_file_policy pol =
		FLEET_FILE_POLICY_SECRET("the Kubernetes token file", FLEET_KUBE_TOKEN_MAX + 2);
	if (a->token_in_cluster) {
		pol.what = "the service account token";
		pol.forbid = 022; /* KC12: kubelet mounts it 0644 */
	}
	fb_init(out);
	fleet_err e = read_file_at(a->token_dir, a->token_name, a->token_in_cluster, &pol, out, ec);
	if (e)
		return e;
	if ((e = token_check(out, pol.what, ec)) != FLEET_OK)
		fb_free_secret(out);
	return e;
}

/* ---- the kubeconfig ------------------------------------------------------- */

struct kc {
	struct fleet_yaml y;
	const char *base_dir;
	struct fleet_errctx *ec;
};

static fleet_err kc_refuse(struct kc *c, fleet_err e, const char *reason, const yaml_mark_t *m,
			   const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static fleet_err kc_refuse(struct kc *c, fleet_err e, const char *reason, const yaml_mark_t *m,
			   const char *fmt, ...)
{
	if (!c->ec)
		return e;
	char msg[sizeof(c->ec->detail)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fleet_yaml_fail(&c->y, e, m, "kubeconfig: %s", msg);
	c->ec->reason = reason;
	return e;
}

/* A mapping's value node for key index k, reached; NULL when absent. A
 * plain null or empty scalar counts as absent. */
static fleet_err kc_val(struct kc *c, int idx, const yaml_mark_t *m, yaml_node_t **out)
{
	*out = NULL;
	if (!idx)
		return FLEET_OK;
	yaml_node_t *n;
	fleet_err e = fleet_yaml_reach(&c->y, idx, m, &n);
	if (e)
		return e;
	if (n->type == YAML_SCALAR_NODE && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
	    (n->data.scalar.length == 0 || fleet_yaml_is(n, "null") || fleet_yaml_is(n, "~")))
		return FLEET_OK;
	*out = n;
	return FLEET_OK;
}

/* An optional string value; "" when absent. */
static fleet_err kc_str(struct kc *c, int idx, const yaml_mark_t *m, const char *what, char *out,
			size_t cap)
{
	out[0] = '\0';
	yaml_node_t *n;
	fleet_err e = kc_val(c, idx, m, &n);
	if (e || !n)
		return e;
	return fleet_yaml_str(&c->y, n, what, out, cap);
}

/* A *-data value: its scalar bytes, base64-decoded into out. */
static fleet_err kc_data(struct kc *c, yaml_node_t *n, const char *what, int secret,
			 struct fleet_buf *out)
{
	fleet_err e = fleet_yaml_want(&c->y, n, YAML_SCALAR_NODE, what);
	if (e)
		return e;
	struct fleet_buf tmp;
	e = fleet_kube_b64_decode((const char *)n->data.scalar.value, n->data.scalar.length, &tmp,
				  secret, FLEET_KUBE_PEM_MAX, c->ec);
	if (e) {
		if (c->ec) {
			c->ec->line = (unsigned)n->start_mark.line + 1;
			c->ec->column = (unsigned)n->start_mark.column + 1;
			const char *r = c->ec->reason;
			fleet_errctx_wrap(c->ec, e, "kubeconfig: ", NULL);
			char w[64];
			snprintf(w, sizeof(w), " (%s)", what);
			size_t l = strlen(c->ec->detail);
			if (l + strlen(w) < sizeof(c->ec->detail))
				memcpy(c->ec->detail + l, w, strlen(w) + 1);
			c->ec->reason = r;
		}
		return e;
	}
	fb_reset(out);
	fb_put(out, tmp.data, tmp.len);
	fb_free_secret(&tmp);
	if (fb_err(out))
		return fleet_errctx_msg(c->ec, FLEET_KUBE_E_NOMEM, "out of memory");
	return FLEET_OK;
}

/* A file named in the kubeconfig, relative to its directory. */
static fleet_err kc_file(struct kc *c, const char *path, const struct fleet_file_policy *pol,
			 struct fleet_buf *out)
{
	char full[PATH_MAX];
	int w = path[0] == '/' ? snprintf(full, sizeof(full), "%s", path)
			       : snprintf(full, sizeof(full), "%s/%s", c->base_dir, path);
	if (w < 0 || (size_t)w >= sizeof(full))
		return fleet_errctx_msg(c->ec, FLEET_KUBE_E_INVALID, "%s: path too long", pol->what);
	struct fleet_buf tmp;
	fb_init(&tmp);
	fleet_err e = fleet_file_read(AT_FDCWD, full, pol, &tmp, c->ec);
	if (e)
		return e;
	fb_reset(out);
	fb_put(out, tmp.data, tmp.len);
	fb_free_secret(&tmp);
	if (fb_err(out))
		return fleet_errctx_msg(c->ec, FLEET_KUBE_E_NOMEM, "out of memory");
	return FLEET_OK;
}

static bool has_pem(const struct fleet_buf *b, const char *label)
{
	char want[64];
	snprintf(want, sizeof(want), "-----BEGIN %s", label);
	size_t wl = strlen(want);
	for (size_t i = 0; i + wl <= b->len; i++)
		if (memcmp(b->data + i, want, wl) == 0)
			return true;
	return false;
}

/* KC4. */
static fleet_err kc_server(struct kc *c, const char *s, const yaml_mark_t *m, char *out)
{
	if (strncmp(s, "https://", 8) != 0) {
		if (strstr(s, "://"))
			return kc_refuse(c, FLEET_KUBE_E_MALFORMED, "not-https", m,
					 "the cluster's server must be https://, not %.*s",
					 (int)(strstr(s, "://") - s), s);
		return kc_refuse(c, FLEET_KUBE_E_MALFORMED, "not-https", m,
				 "the cluster's server must be an https:// URL");
	}
	const char *host = s + 8;
	size_t hl = strcspn(host, "/");
	if (hl == 0 || strpbrk(s, "?#@ \\") || memchr(host, '%', hl))
		return kc_refuse(c, FLEET_KUBE_E_MALFORMED, "bad-server", m,
				 "the cluster's server is not https://host[:port][/path]");
	size_t n = strlen(s);
	while (n > 8 + hl && s[n - 1] == '/')
		n--;
	if (n >= FLEET_KUBE_SERVER_MAX)
		return kc_refuse(c, FLEET_KUBE_E_MALFORMED, "bad-server", m,
				 "the cluster's server is too long");
	memcpy(out, s, n);
	out[n] = '\0';
	return FLEET_OK;
}

/* Find the entry named `name` in a list of {name, <field>} mappings and
 * return its <field> node. */
static fleet_err kc_find(struct kc *c, yaml_node_t *list, const char *listname, const char *field,
			 const char *name, yaml_node_t **found, yaml_mark_t *found_mark)
{
	*found = NULL;
	if (!list)
		return FLEET_OK;
	fleet_err e = fleet_yaml_want(&c->y, list, YAML_SEQUENCE_NODE, listname);
	if (e)
		return e;
	for (yaml_node_item_t *it = list->data.sequence.items.start;
	     it < list->data.sequence.items.top; it++) {
		yaml_node_t *ent;
		if ((e = fleet_yaml_reach(&c->y, *it, &list->start_mark, &ent)) ||
		    (e = fleet_yaml_want(&c->y, ent, YAML_MAPPING_NODE, listname)))
			return e;
		const char *const known[] = {"name", field, "extensions"};
		int vals[3];
		yaml_mark_t marks[3];
		if ((e = fleet_yaml_keys(&c->y, ent, known, 3, vals, marks)))
			return e;
		char nm[256];
		if ((e = kc_str(c, vals[0], &marks[0], "a name", nm, sizeof(nm))))
			return e;
		if (strcmp(nm, name) != 0)
			continue;
		if (*found)
			return kc_refuse(c, FLEET_KUBE_E_MALFORMED, "duplicate-name",
					 &ent->start_mark, "%s names '%s' twice", listname, name);
		yaml_node_t *v;
		if ((e = kc_val(c, vals[1], &marks[1], &v)))
			return e;
		if (!v)
			return kc_refuse(c, FLEET_KUBE_E_MALFORMED, "no-context", &ent->start_mark,
					 "%s '%s' has no %s", listname, name, field);
		if ((e = fleet_yaml_want(&c->y, v, YAML_MAPPING_NODE, field)))
			return e;
		*found = v;
		*found_mark = ent->start_mark;
	}
	return FLEET_OK;
}

enum { CL_SERVER, CL_CA, CL_CA_DATA, CL_INSECURE, CL_TLS_NAME, CL_PROXY, CL_NOCOMP, CL_EXT, CL_N };
static const char *const cluster_keys[CL_N] = {
	"server", "certificate-authority", "certificate-authority-data", "insecure-skip-tls-verify",
	"tls-server-name", "proxy-url", "disable-compression", "extensions"};

static fleet_err kc_cluster(struct kc *c, yaml_node_t *cl, struct fleet_kube_auth *a)
{
	int v[CL_N];
	yaml_mark_t m[CL_N];
	fleet_err e = fleet_yaml_keys(&c->y, cl, cluster_keys, CL_N, v, m);
	if (e)
		return e;
	yaml_node_t *n;
	if ((e = kc_val(c, v[CL_INSECURE], &m[CL_INSECURE], &n)))
		return e;
	if (n) {
		bool b;
		if ((e = fleet_yaml_bool(&c->y, n, "insecure-skip-tls-verify", &b)))
			return e;
		if (b)
			return kc_refuse(c, FLEET_KUBE_E_MALFORMED, "insecure-skip-tls-verify",
					 &m[CL_INSECURE],
					 "insecure-skip-tls-verify: true is refused: TLS is "
					 "always verified");
	}
	if ((e = kc_val(c, v[CL_TLS_NAME], &m[CL_TLS_NAME], &n)))
		return e;
	if (n)
		return kc_refuse(c, FLEET_KUBE_E_UNSUPPORTED, "tls-server-name", &m[CL_TLS_NAME],
				 "tls-server-name is not supported");
	if ((e = kc_val(c, v[CL_PROXY], &m[CL_PROXY], &n)))
		return e;
	if (n)
		return kc_refuse(c, FLEET_KUBE_E_UNSUPPORTED, "proxy-url", &m[CL_PROXY],
				 "proxy-url is not supported: fleetd reaches the API server "
				 "directly");
	if ((e = kc_val(c, v[CL_NOCOMP], &m[CL_NOCOMP], &n)))
		return e;
	if (n) {
		bool b;
		if ((e = fleet_yaml_bool(&c->y, n, "disable-compression", &b)))
			return e;
	}
	char server[FLEET_KUBE_SERVER_MAX + 8];
	if ((e = kc_str(c, v[CL_SERVER], &m[CL_SERVER], "server", server, sizeof(server))))
		return e;
	if (!server[0])
		return kc_refuse(c, FLEET_KUBE_E_MALFORMED, "bad-server", &cl->start_mark,
				 "the cluster has no server");
	if ((e = kc_server(c, server, &m[CL_SERVER], a->server)))
		return e;
	char ca_path[PATH_MAX];
	yaml_node_t *ca_data;
	if ((e = kc_str(c, v[CL_CA], &m[CL_CA], "certificate-authority", ca_path, sizeof(ca_path))) ||
	    (e = kc_val(c, v[CL_CA_DATA], &m[CL_CA_DATA], &ca_data)))
		return e;
	if (ca_path[0] && ca_data)
		return kc_refuse(c, FLEET_KUBE_E_MALFORMED, "both-ca", &m[CL_CA_DATA],
				 "certificate-authority and certificate-authority-data are both "
				 "given");
	if (ca_data)
		e = kc_data(c, ca_data, "certificate-authority-data", 0, &a->ca_pem);
	else if (ca_path[0]) {
		struct fleet_file_policy pol =
			FLEET_FILE_POLICY_CONFIG("the Kubernetes CA", FLEET_KUBE_PEM_MAX);
		e = kc_file(c, ca_path, &pol, &a->ca_pem);
	}
	if (e)
		return e;
	if ((ca_data || ca_path[0]) && !has_pem(&a->ca_pem, "CERTIFICATE-----"))
		return kc_refuse(c, FLEET_KUBE_E_MALFORMED, "bad-pem",
				 ca_data ? &m[CL_CA_DATA] : &m[CL_CA],
				 "the cluster's CA holds no PEM CERTIFICATE");
	return FLEET_OK;
}

enum {
	U_TOKEN, U_TOKEN_FILE, U_CERT, U_CERT_DATA, U_KEY, U_KEY_DATA, U_EXEC, U_AUTHP, U_USER,
	U_PASS, U_AS, U_AS_UID, U_AS_GROUPS, U_AS_EXTRA, U_EXT, U_N
};
static const char *const user_keys[U_N] = {
	"token", "tokenFile", "client-certificate", "client-certificate-data", "client-key",
	"client-key-data", "exec", "auth-provider", "username", "password", "as", "as-uid",
	"as-groups", "as-user-extra", "extensions"};

static fleet_err kc_user(struct kc *c, yaml_node_t *u, struct fleet_kube_auth *a)
{
	int v[U_N];
	yaml_mark_t m[U_N];
	fleet_err e = fleet_yaml_keys(&c->y, u, user_keys, U_N, v, m);
	if (e)
		return e;
	/* KC8: present at all (even empty) is refused, except plain nulls */
	static const struct {
		int k;
		const char *reason, *what;
	} unsup[] = {
		{U_EXEC, "exec-plugin", "exec credential plugins are not supported"},
		{U_AUTHP, "auth-provider", "auth-provider plugins are not supported"},
		{U_USER, "basic-auth", "username/password is not supported"},
		{U_PASS, "basic-auth", "username/password is not supported"},
		{U_AS, "impersonation", "impersonation (as) is not supported"},
		{U_AS_UID, "impersonation", "impersonation (as-uid) is not supported"},
		{U_AS_GROUPS, "impersonation", "impersonation (as-groups) is not supported"},
		{U_AS_EXTRA, "impersonation", "impersonation (as-user-extra) is not supported"},
	};
	for (size_t i = 0; i < sizeof(unsup) / sizeof(unsup[0]); i++) {
		yaml_node_t *n;
		if ((e = kc_val(c, v[unsup[i].k], &m[unsup[i].k], &n)))
			return e;
		if (n)
			return kc_refuse(c, FLEET_KUBE_E_UNSUPPORTED, unsup[i].reason,
					 &m[unsup[i].k], "%s", unsup[i].what);
	}
	yaml_node_t *tok, *cert_d, *key_d;
	char tok_file[PATH_MAX], cert_f[PATH_MAX], key_f[PATH_MAX];
	if ((e = kc_val(c, v[U_TOKEN], &m[U_TOKEN], &tok)) ||
	    (e = kc_str(c, v[U_TOKEN_FILE], &m[U_TOKEN_FILE], "tokenFile", tok_file,
			sizeof(tok_file))) ||
	    (e = kc_str(c, v[U_CERT], &m[U_CERT], "client-certificate", cert_f, sizeof(cert_f))) ||
	    (e = kc_val(c, v[U_CERT_DATA], &m[U_CERT_DATA], &cert_d)) ||
	    (e = kc_str(c, v[U_KEY], &m[U_KEY], "client-key", key_f, sizeof(key_f))) ||
	    (e = kc_val(c, v[U_KEY_DATA], &m[U_KEY_DATA], &key_d)))
		return e;
	bool has_cert = cert_d || cert_f[0], has_key = key_d || key_f[0];
	int methods = (tok != NULL) + (tok_file[0] != 0) + (has_cert || has_key);
	if (methods == 0)
		return kc_refuse(c, FLEET_KUBE_E_MALFORMED, "no-credentials", &u->start_mark,
				 "the user has no token, tokenFile or client certificate");
	if (methods > 1)
		return kc_refuse(c, FLEET_KUBE_E_MALFORMED, "ambiguous-credentials",
				 &u->start_mark,
				 "the user has more than one of token, tokenFile, client "
				 "certificate; only one is allowed");
	if (tok) {
		if ((e = fleet_yaml_want(&c->y, tok, YAML_SCALAR_NODE, "token")))
			return e;
		fb_reset(&a->token);
		if (fb_put(&a->token, tok->data.scalar.value, tok->data.scalar.length) &&
		    fb_err(&a->token) == FLEET_E_NOMEM)
			return fleet_errctx_msg(c->ec, FLEET_KUBE_E_NOMEM, "out of memory");
		if (fb_err(&a->token) || (e = token_check(&a->token, "the user's token", c->ec))) {
			if (c->ec) {
				c->ec->err = FLEET_KUBE_E_MALFORMED;
				c->ec->reason = "bad-token";
				c->ec->line = (unsigned)tok->start_mark.line + 1;
				c->ec->column = (unsigned)tok->start_mark.column + 1;
			}
			return FLEET_KUBE_E_MALFORMED;
		}
		return FLEET_OK;
	}
	if (tok_file[0]) {
		char full[PATH_MAX];
		int w = tok_file[0] == '/' ? snprintf(full, sizeof(full), "%s", tok_file)
					   : snprintf(full, sizeof(full), "%s/%s", c->base_dir,
						      tok_file);
		if (w < 0 || (size_t)w >= sizeof(full) ||
		    (e = split_path(full, a->token_dir, sizeof(a->token_dir), a->token_name,
				    sizeof(a->token_name), c->ec)))
			return kc_refuse(c, FLEET_KUBE_E_MALFORMED, "bad-token", &m[U_TOKEN_FILE],
					 "tokenFile is not a usable path");
		/* read it once now, so a kubeconfig whose token file is
		 * missing or unsafe is refused at open */
		struct fleet_buf t;
		if ((e = fleet_kube_auth_token(a, &t, c->ec)))
			return e;
		fb_free_secret(&t);
		return FLEET_OK;
	}
	if (!has_cert || !has_key)
		return kc_refuse(c, FLEET_KUBE_E_MALFORMED, "half-client-cert", &u->start_mark,
				 "a client certificate needs both the certificate and its key");
	if (cert_d && cert_f[0])
		return kc_refuse(c, FLEET_KUBE_E_MALFORMED, "ambiguous-credentials",
				 &m[U_CERT_DATA],
				 "client-certificate and client-certificate-data are both given");
	if (key_d && key_f[0])
		return kc_refuse(c, FLEET_KUBE_E_MALFORMED, "ambiguous-credentials", &m[U_KEY_DATA],
				 "client-key and client-key-data are both given");
	struct fleet_file_policy cpol =
		FLEET_FILE_POLICY_CONFIG("the Kubernetes client certificate", FLEET_KUBE_PEM_MAX);
	struct fleet_file_policy kpol =
		FLEET_FILE_POLICY_SECRET("the Kubernetes client key", FLEET_KUBE_PEM_MAX);
	if ((e = cert_d ? kc_data(c, cert_d, "client-certificate-data", 0, &a->cert_pem)
			: kc_file(c, cert_f, &cpol, &a->cert_pem)) ||
	    (e = key_d ? kc_data(c, key_d, "client-key-data", 1, &a->key_pem)
		       : kc_file(c, key_f, &kpol, &a->key_pem)))
		return e;
	if (!has_pem(&a->cert_pem, "CERTIFICATE-----"))
		return kc_refuse(c, FLEET_KUBE_E_MALFORMED, "bad-pem", &m[cert_d ? U_CERT_DATA : U_CERT],
				 "the client certificate holds no PEM CERTIFICATE");
	if (!has_pem(&a->key_pem, ""))
		return kc_refuse(c, FLEET_KUBE_E_MALFORMED, "bad-pem", &m[key_d ? U_KEY_DATA : U_KEY],
				 "the client key holds no PEM block");
	return FLEET_OK;
}

enum { T_APIV, T_KIND, T_CLUSTERS, T_CONTEXTS, T_USERS, T_CURRENT, T_PREFS, T_EXT, T_N };
static const char *const top_keys[T_N] = {"apiVersion", "kind", "clusters", "contexts",
					  "users", "current-context", "preferences", "extensions"};

static fleet_err kc_parse(struct kc *c, struct fleet_kube_auth *a)
{
	struct fleet_yaml *y = &c->y;
	fleet_err e = fleet_yaml_want(y, y->root, YAML_MAPPING_NODE, "a kubeconfig");
	if (e)
		return e;
	int v[T_N];
	yaml_mark_t m[T_N];
	if ((e = fleet_yaml_keys(y, y->root, top_keys, T_N, v, m)))
		return e;
	char s[256];
	if ((e = kc_str(c, v[T_APIV], &m[T_APIV], "apiVersion", s, sizeof(s))))
		return e;
	if (s[0] && strcmp(s, "v1") != 0)
		return kc_refuse(c, FLEET_KUBE_E_UNSUPPORTED, "api-version", &m[T_APIV],
				 "apiVersion must be v1");
	if ((e = kc_str(c, v[T_KIND], &m[T_KIND], "kind", s, sizeof(s))))
		return e;
	if (s[0] && strcmp(s, "Config") != 0)
		return kc_refuse(c, FLEET_KUBE_E_MALFORMED, "kind", &m[T_KIND],
				 "kind must be Config");
	char cur[256];
	if ((e = kc_str(c, v[T_CURRENT], &m[T_CURRENT], "current-context", cur, sizeof(cur))))
		return e;
	if (!cur[0])
		return kc_refuse(c, FLEET_KUBE_E_MALFORMED, "no-context", v[T_CURRENT] ? &m[T_CURRENT] : NULL,
				 "current-context is not set");
	yaml_node_t *clusters, *contexts, *users;
	if ((e = kc_val(c, v[T_CLUSTERS], &m[T_CLUSTERS], &clusters)) ||
	    (e = kc_val(c, v[T_CONTEXTS], &m[T_CONTEXTS], &contexts)) ||
	    (e = kc_val(c, v[T_USERS], &m[T_USERS], &users)))
		return e;
	yaml_node_t *ctx, *cl, *us;
	yaml_mark_t ctx_m, cl_m, us_m;
	if ((e = kc_find(c, contexts, "contexts", "context", cur, &ctx, &ctx_m)))
		return e;
	if (!ctx)
		return kc_refuse(c, FLEET_KUBE_E_MALFORMED, "no-context", &m[T_CURRENT],
				 "current-context names no entry of contexts");
	const char *const ctx_keys[] = {"cluster", "user", "namespace", "extensions"};
	int cv[4];
	yaml_mark_t cm[4];
	char cl_name[256], us_name[256], ns[256];
	if ((e = fleet_yaml_keys(y, ctx, ctx_keys, 4, cv, cm)) ||
	    (e = kc_str(c, cv[0], &cm[0], "cluster", cl_name, sizeof(cl_name))) ||
	    (e = kc_str(c, cv[1], &cm[1], "user", us_name, sizeof(us_name))) ||
	    (e = kc_str(c, cv[2], &cm[2], "namespace", ns, sizeof(ns))))
		return e;
	if (!cl_name[0] || !us_name[0])
		return kc_refuse(c, FLEET_KUBE_E_MALFORMED, "no-context", &ctx_m,
				 "the current context needs a cluster and a user");
	if ((e = kc_find(c, clusters, "clusters", "cluster", cl_name, &cl, &cl_m)))
		return e;
	if (!cl)
		return kc_refuse(c, FLEET_KUBE_E_MALFORMED, "no-context", &cm[0],
				 "the current context's cluster is not in clusters");
	if ((e = kc_find(c, users, "users", "user", us_name, &us, &us_m)))
		return e;
	if (!us)
		return kc_refuse(c, FLEET_KUBE_E_MALFORMED, "no-context", &cm[1],
				 "the current context's user is not in users");
	if ((e = kc_cluster(c, cl, a)))
		return e;
	return kc_user(c, us, a);
}

/* KC11: the document's scalars may be a token or a key. */
static void wipe_doc(struct fleet_yaml *y)
{
	if (!y->loaded)
		return;
	for (yaml_node_t *n = y->doc.nodes.start; n < y->doc.nodes.top; n++)
		if (n->type == YAML_SCALAR_NODE && n->data.scalar.value)
			explicit_bzero(n->data.scalar.value, n->data.scalar.length);
}

fleet_err fleet_kubeconfig_parse(const uint8_t *buf, size_t len, const char *base_dir,
				 struct fleet_kube_auth *a, struct fleet_errctx *ec)
{
	struct kc c = {.base_dir = base_dir ? base_dir : ".", .ec = ec};
	fleet_kube_auth_init(a);
	fleet_err e = fleet_yaml_load(&c.y, buf, len, FLEET_KUBECONFIG_MAX, "the kubeconfig", ec);
	if (e)
		return e;
	e = kc_parse(&c, a);
	wipe_doc(&c.y);
	fleet_yaml_free(&c.y);
	if (e) {
		fleet_kube_auth_free(a);
		fleet_kube_auth_init(a);
	}
	return e;
}

fleet_err fleet_kubeconfig_load(const char *path, struct fleet_kube_auth *a,
				struct fleet_errctx *ec)
{
	struct fleet_file_policy pol = FLEET_FILE_POLICY_SECRET("the kubeconfig", FLEET_KUBECONFIG_MAX);
	struct fleet_buf b;
	fb_init(&b);
	fleet_kube_auth_init(a);
	fleet_err e = fleet_file_read(AT_FDCWD, path, &pol, &b, ec);
	if (e)
		return e;
	char dir[PATH_MAX], name[PATH_MAX];
	if ((e = split_path(path, dir, sizeof(dir), name, sizeof(name), ec)) == FLEET_OK)
		e = fleet_kubeconfig_parse(b.data, b.len, dir, a, ec);
	fb_free_secret(&b);
	return e;
}

fleet_err fleet_kube_in_cluster(const char *sa_dir, struct fleet_kube_auth *a,
				struct fleet_errctx *ec)
{
	fleet_kube_auth_init(a);
	const char *dir = sa_dir ? sa_dir : FLEET_KUBE_SA_DIR;
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	if (!host || !host[0] || !port || !port[0])
		return fleet_errctx_refuse(ec, FLEET_KUBE_E_MALFORMED, "no-in-cluster-env",
					   "not in a cluster: KUBERNETES_SERVICE_HOST and "
					   "KUBERNETES_SERVICE_PORT must both be set");
	size_t hl = strlen(host);
	bool v6 = strchr(host, ':') != NULL;
	if (hl > 253)
		goto bad_env;
	for (size_t i = 0; i < hl; i++) {
		char ch = host[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		      ch == '.' || ch == '-' || ch == ':'))
			goto bad_env;
	}
	char *end = NULL;
	errno = 0;
	unsigned long p = strtoul(port, &end, 10);
	if (errno || !end || *end || p == 0 || p > 65535 || port[0] < '1' || port[0] > '9')
		goto bad_env;
	snprintf(a->server, sizeof(a->server), v6 ? "https://[%s]:%lu" : "https://%s:%lu", host, p);
	struct fleet_file_policy cpol =
		FLEET_FILE_POLICY_CONFIG("the service account CA", FLEET_KUBE_PEM_MAX);
	struct fleet_buf ca;
	fb_init(&ca);
	fleet_err e = read_file_at(dir, "ca.crt", 1, &cpol, &ca, ec);
	if (e)
		goto fail;
	fb_put(&a->ca_pem, ca.data, ca.len);
	fb_free(&ca);
	if (fb_err(&a->ca_pem)) {
		e = fleet_errctx_msg(ec, FLEET_KUBE_E_NOMEM, "out of memory");
		goto fail;
	}
	if (!has_pem(&a->ca_pem, "CERTIFICATE-----")) {
		e = fleet_errctx_refuse(ec, FLEET_KUBE_E_MALFORMED, "bad-pem",
					"the service account CA holds no PEM CERTIFICATE");
		goto fail;
	}
	if ((size_t)snprintf(a->token_dir, sizeof(a->token_dir), "%s", dir) >= sizeof(a->token_dir)) {
		e = fleet_errctx_msg(ec, FLEET_KUBE_E_INVALID, "the service account path is too long");
		goto fail;
	}
	snprintf(a->token_name, sizeof(a->token_name), "token");
	a->token_in_cluster = 1;
	struct fleet_buf t;
	if ((e = fleet_kube_auth_token(a, &t, ec)))
		goto fail;
	fb_free_secret(&t);
	return FLEET_OK;
fail:
	fleet_kube_auth_free(a);
	fleet_kube_auth_init(a);
	return e;
bad_env:
	return fleet_errctx_refuse(ec, FLEET_KUBE_E_MALFORMED, "no-in-cluster-env",
				   "KUBERNETES_SERVICE_HOST or KUBERNETES_SERVICE_PORT is not an "
				   "address and a port");
}
