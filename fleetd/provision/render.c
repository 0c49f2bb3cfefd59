/*
 * render.c: talosctl gen config, talosctl validate, and the checks R1-R6
 * (render.h).
 *
 * The node's own values reach talosctl as a strategic-merge patch file
 * written here as JSON documents (JSON is YAML; jansson quotes every
 * value, so nothing a device name holds can become YAML syntax), mode
 * 0600, in the render's private directory, and are deleted with the
 * configuration file when the render ends, whatever its outcome.
 */
#include "fleetd/provision/render.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "lib/runner.h"
#include "lib/sanitize.h"

#define CONFIG_FILE "config.yaml"
#define NODE_PATCH "node-patch.json"

int fleet_render_token_ok(const char *s)
{
	if (!s)
		return 0;
	if (!strcmp(s, FLEET_RENDER_NOJOIN_TOKEN))
		return 1;
	if (strlen(s) != 23 || s[6] != '.')
		return 0;
	for (size_t i = 0; i < 23; i++)
		if (i != 6 && !((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9')))
			return 0;
	return 1;
}

/* A hostname Talos takes: RFC 1123 labels, lowercase, at most 63 bytes. */
static bool hostname_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > 63 || s[0] == '-' || s[0] == '.' || s[n - 1] == '-' || s[n - 1] == '.')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-' ||
		      s[i] == '.'))
			return false;
	return true;
}

/* ---- reading the rendered configuration --------------------------------- */

/* The scalar at path (NULL-terminated keys) under mapping node, or NULL. */
static const char *scalar_at(yaml_document_t *d, yaml_node_t *node, const char *const *path)
{
	for (; *path; path++) {
		if (!node || node->type != YAML_MAPPING_NODE)
			return NULL;
		yaml_node_t *next = NULL;
		for (yaml_node_pair_t *p = node->data.mapping.pairs.start;
		     p < node->data.mapping.pairs.top; p++) {
			yaml_node_t *k = yaml_document_get_node(d, p->key);
			if (k && k->type == YAML_SCALAR_NODE &&
			    k->data.scalar.length == strlen(*path) &&
			    !memcmp(k->data.scalar.value, *path, k->data.scalar.length)) {
				next = yaml_document_get_node(d, p->value);
				break;
			}
		}
		node = next;
	}
	if (!node || node->type != YAML_SCALAR_NODE ||
	    strlen((const char *)node->data.scalar.value) != node->data.scalar.length)
		return NULL;
	return (const char *)node->data.scalar.value;
}

static bool eq(const char *got, const char *want)
{
	return got && want && !strcmp(got, want);
}

/* Aliases would let a small file name one node many times; a rendered
 * configuration has none. */
static bool has_alias(const uint8_t *buf, size_t len)
{
	yaml_parser_t p;
	yaml_event_t ev;
	bool alias = false, done = false;
	if (!yaml_parser_initialize(&p))
		return true;
	yaml_parser_set_input_string(&p, buf, len);
	while (!done && !alias) {
		if (!yaml_parser_parse(&p, &ev))
			break; /* the document loader reports the error */
		alias = ev.type == YAML_ALIAS_EVENT;
		done = ev.type == YAML_STREAM_END_EVENT;
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&p);
	return alias;
}

/* ---- R7: what libyaml and Go's yaml.v3 could read differently ------------ */

static int key_cmp(const void *a, const void *b)
{
	const yaml_node_t *x = *(yaml_node_t *const *)a, *y = *(yaml_node_t *const *)b;
	if (x->data.scalar.length != y->data.scalar.length)
		return x->data.scalar.length < y->data.scalar.length ? -1 : 1;
	return memcmp(x->data.scalar.value, y->data.scalar.value, x->data.scalar.length);
}

/* NULL when node and all under it are unambiguous; else what is wrong. */
static const char *ambiguous(yaml_document_t *d, yaml_node_t *node, int depth)
{
	if (!node)
		return NULL;
	if (depth > 64)
		return "nesting deeper than 64";
	if (node->type == YAML_SEQUENCE_NODE) {
		for (yaml_node_item_t *i = node->data.sequence.items.start;
		     i < node->data.sequence.items.top; i++) {
			const char *w = ambiguous(d, yaml_document_get_node(d, *i), depth + 1);
			if (w)
				return w;
		}
		return NULL;
	}
	if (node->type != YAML_MAPPING_NODE)
		return NULL;
	size_t n = (size_t)(node->data.mapping.pairs.top - node->data.mapping.pairs.start);
	yaml_node_t **keys = n ? calloc(n, sizeof(*keys)) : NULL;
	const char *w = NULL;
	if (n && !keys)
		return "out of memory";
	for (size_t i = 0; i < n && !w; i++) {
		yaml_node_pair_t *p = node->data.mapping.pairs.start + i;
		yaml_node_t *k = yaml_document_get_node(d, p->key);
		if (!k || k->type != YAML_SCALAR_NODE)
			w = "a key that is not a scalar";
		else if ((k->data.scalar.length == 2 && !memcmp(k->data.scalar.value, "<<", 2)) ||
			 (k->tag && !strcmp((const char *)k->tag, "tag:yaml.org,2002:merge")))
			w = "a merge key (<<)";
		else
			keys[i] = k;
	}
	if (!w && n > 1) {
		qsort(keys, n, sizeof(*keys), key_cmp);
		for (size_t i = 1; i < n && !w; i++)
			if (key_cmp(&keys[i - 1], &keys[i]) == 0)
				w = "a duplicate key";
	}
	for (size_t i = 0; i < n && !w; i++) {
		yaml_node_pair_t *p = node->data.mapping.pairs.start + i;
		w = ambiguous(d, yaml_document_get_node(d, p->value), depth + 1);
	}
	free(keys);
	return w;
}

/* How Talos's decoder (configloader/internal/decoder, decode()) names a
 * document: it walks the root mapping's nodes, keys and values alike, in
 * order; "kind" and "apiVersion" take the node after them, machine,
 * cluster, debug and persist make the version v1alpha1. 1: the v1alpha1
 * document; 2: a typed document (*kind set); 0: one Talos refuses. */
enum doc_class { DOC_REFUSED = 0, DOC_V1ALPHA1 = 1, DOC_TYPED = 2 };

static bool scalar_is(const yaml_node_t *n, const char *s)
{
	return n && n->type == YAML_SCALAR_NODE && n->data.scalar.length == strlen(s) &&
	       !memcmp(n->data.scalar.value, s, n->data.scalar.length);
}

static enum doc_class classify(yaml_document_t *d, yaml_node_t *root, const char **kind)
{
	const char *version = NULL;
	*kind = NULL;
	if (!root || root->type != YAML_MAPPING_NODE)
		return DOC_REFUSED;
	size_t n = 2 * (size_t)(root->data.mapping.pairs.top - root->data.mapping.pairs.start);
	for (size_t i = 0; i < n; i++) {
		yaml_node_pair_t *p = root->data.mapping.pairs.start + i / 2;
		yaml_node_t *c = yaml_document_get_node(d, i % 2 ? p->value : p->key);
		bool is_kind = scalar_is(c, "kind"), is_version = scalar_is(c, "apiVersion");
		if (is_kind || is_version) {
			if (i + 1 >= n)
				return DOC_REFUSED;
			yaml_node_pair_t *q = root->data.mapping.pairs.start + (i + 1) / 2;
			yaml_node_t *v = yaml_document_get_node(d, (i + 1) % 2 ? q->value : q->key);
			if (!v || v->type != YAML_SCALAR_NODE ||
			    strlen((const char *)v->data.scalar.value) != v->data.scalar.length)
				return DOC_REFUSED;
			if (is_kind)
				*kind = (const char *)v->data.scalar.value;
			else
				version = (const char *)v->data.scalar.value;
		} else if (scalar_is(c, "machine") || scalar_is(c, "cluster") ||
			   scalar_is(c, "debug") || scalar_is(c, "persist")) {
			version = "v1alpha1";
		}
	}
	if (*kind && !**kind)
		*kind = NULL;
	if (version && !strcmp(version, "v1alpha1") && !*kind)
		return DOC_V1ALPHA1;
	if (!*kind || !version || !*version)
		return DOC_REFUSED;
	return DOC_TYPED;
}

fleet_err fleet_render_check(const void *buf, size_t len, const struct fleet_render_expect *x,
			     struct fleet_errctx *ec)
{
	static const char *const p_version[] = {"version", NULL};
	static const char *const p_type[] = {"machine", "type", NULL};
	static const char *const p_image[] = {"machine", "install", "image", NULL};
	static const char *const p_disk[] = {"machine", "install", "disk", NULL};
	static const char *const p_serial[] = {"machine", "install", "diskSelector", "serial", NULL};
	static const char *const p_token[] = {"cluster", "token", NULL};
	static const char *const p_endpoint[] = {"cluster", "controlPlane", "endpoint", NULL};
	static const char *const p_hostname[] = {"hostname", NULL};
	static const char *const p_auto[] = {"auto", NULL};

	if (!buf || !x)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG, "no configuration or expectation");
	if (len > FLEET_RENDER_OUTPUT_MAX)
		return fleet_errctx_refuse(ec, FLEET_E_TOO_LARGE, "output-malformed",
					   "the rendered configuration is %zu bytes, over %u", len,
					   FLEET_RENDER_OUTPUT_MAX);
	if (has_alias(buf, len))
		return fleet_errctx_refuse(ec, FLEET_E_MALFORMED, "output-malformed",
					   "the rendered configuration uses a YAML alias");
	yaml_parser_t p;
	if (!yaml_parser_initialize(&p))
		return fleet_errctx_msg(ec, FLEET_E_NOMEM, "out of memory");
	yaml_parser_set_input_string(&p, buf, len);
	fleet_err e = FLEET_OK;
	int n_v1 = 0, n_host = 0, docs = 0;
	const char *why = NULL, *what = "";
	const char *want_type = x->role == FLEET_ROLE_CONTROLPLANE ? "controlplane" : "worker";
	for (;;) {
		yaml_document_t d;
		if (!yaml_parser_load(&p, &d)) {
			e = fleet_errctx_refuse(ec, FLEET_E_MALFORMED, "output-malformed",
						"the rendered configuration is not YAML (line %zu)",
						p.problem_mark.line + 1);
			break;
		}
		yaml_node_t *root = yaml_document_get_root_node(&d);
		if (!root) { /* the end of the stream */
			yaml_document_delete(&d);
			break;
		}
		if (++docs > 16) {
			yaml_document_delete(&d);
			e = fleet_errctx_refuse(ec, FLEET_E_MALFORMED, "output-malformed",
						"the rendered configuration has more than 16 documents");
			break;
		}
		const char *amb = ambiguous(&d, root, 0), *kind = NULL;
		enum doc_class c = amb ? DOC_REFUSED : classify(&d, root, &kind);
		if (amb) {
			why = "yaml-ambiguous";
			what = amb;
		} else if (c == DOC_REFUSED) {
			why = "output-malformed";
			what = "a document Talos cannot name (apiVersion and kind, or the v1alpha1 "
			       "document)";
		} else if (c == DOC_V1ALPHA1) {
			n_v1++;
			if (!eq(scalar_at(&d, root, p_version), "v1alpha1")) {
				why = "output-malformed";
				what = "the v1alpha1 document has no version: v1alpha1";
			} else if (!eq(scalar_at(&d, root, p_type), want_type)) {
				why = "role";
				what = "machine.type is not the class's role";
			} else if (!eq(scalar_at(&d, root, p_image), x->image_ref)) {
				why = "image-not-pinned";
				what = "machine.install.image is not the class's pinned digest";
			} else if (!eq(scalar_at(&d, root, p_serial), x->disk_serial) ||
				   scalar_at(&d, root, p_disk)) {
				why = "disk-selector";
				what = "the install disk is not selected by the declared serial alone";
			} else if (!eq(scalar_at(&d, root, p_token), x->token)) {
				why = "token";
				what = "cluster.token is not this machine's token";
			} else if (!eq(scalar_at(&d, root, p_endpoint), x->endpoint)) {
				why = "endpoint";
				what = "cluster.controlPlane.endpoint is not the class's endpoint";
			}
		} else if (eq(kind, "HostnameConfig")) {
			n_host++;
			if (!eq(scalar_at(&d, root, p_hostname), x->hostname) ||
			    !eq(scalar_at(&d, root, p_auto), "off")) {
				why = "hostname";
				what = "the HostnameConfig does not name the device (auto off)";
			}
		}
		yaml_document_delete(&d);
		if (why)
			break;
	}
	yaml_parser_delete(&p);
	if (e)
		return e;
	if (!why && n_v1 != 1)
		return fleet_errctx_refuse(ec, FLEET_E_MALFORMED, "output-malformed",
					   "the rendered configuration: %d v1alpha1 documents, not one",
					   n_v1);
	if (!why && n_host != 1)
		return fleet_errctx_refuse(ec, FLEET_E_VERIFY, "hostname",
					   "the rendered configuration: %d HostnameConfig documents, "
					   "not one",
					   n_host);
	if (why)
		return fleet_errctx_refuse(ec,
					   !strcmp(why, "output-malformed") ||
							   !strcmp(why, "yaml-ambiguous")
						   ? FLEET_E_MALFORMED
						   : FLEET_E_VERIFY,
					   why, "the rendered configuration: %s", what);
	return FLEET_OK;
}

/* snprintf's result: it wrote all of it. */
static bool fits(int n, size_t cap)
{
	return n >= 0 && (size_t)n < cap;
}

static fleet_err too_long(struct fleet_errctx *ec, const char *what)
{
	return fleet_errctx_refuse(ec, FLEET_E_TOO_LARGE, "render-invalid",
				   "%s does not fit (the render directory's path is too long)", what);
}

/* ---- running talosctl ----------------------------------------------------- */

/* Write text to name in dfd, mode 0600, a new file. */
static fleet_err write_private(int dfd, const char *name, const char *text,
			       struct fleet_errctx *ec)
{
	(void)unlinkat(dfd, name, 0); /* a leftover of a render killed in the middle */
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return fleet_errctx_errno(ec, FLEET_E_IO, errno, "cannot create %s", name);
	size_t n = strlen(text), off = 0;
	while (off < n) {
		ssize_t w = write(fd, text + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int er = errno;
			close(fd);
			return fleet_errctx_errno(ec, FLEET_E_IO, er, "cannot write %s", name);
		}
		off += (size_t)w;
	}
	if (fsync(fd) != 0 || close(fd) != 0)
		return fleet_errctx_errno(ec, FLEET_E_IO, errno, "cannot write %s", name);
	return FLEET_OK;
}

/* The node's patch: its disk, image and token; its hostname. */
static char *node_patch(const struct fleet_render_expect *x)
{
	json_t *v1 = json_pack("{s:{s:{s:{s:s},s:s}},s:{s:s}}", "machine", "install",
			       "diskSelector", "serial", x->disk_serial, "image", x->image_ref,
			       "cluster", "token", x->token);
	json_t *host = json_pack("{s:s,s:s,s:s,s:s}", "apiVersion", "v1alpha1", "kind",
				 "HostnameConfig", "auto", "off", "hostname", x->hostname);
	char *a = v1 ? json_dumps(v1, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	char *b = host ? json_dumps(host, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	char *out = NULL;
	if (a && b && (out = malloc(strlen(a) + strlen(b) + 8)))
		snprintf(out, strlen(a) + strlen(b) + 8, "%s\n---\n%s\n", a, b); /* sized */
	if (a)
		explicit_bzero(a, strlen(a));
	free(a);
	free(b);
	json_decref(v1);
	json_decref(host);
	return out;
}

/* Run talosctl; FLEET_OK with r filled, or the runner's failure. */
static fleet_err talosctl(const struct fleet_render_env *env, char *const argv[],
			  struct fleet_buf *out, struct fleet_buf *err, struct fleet_run_result *r,
			  struct fleet_errctx *ec)
{
	/* R6: nothing of fleetd's environment (its NOTIFY_SOCKET, its
	 * credentials directory) reaches talosctl. */
	static char *const envp[] = {"PATH=/usr/bin:/bin", "LC_ALL=C", NULL};
	unsigned t = env->timeout_seconds ? env->timeout_seconds : FLEET_RENDER_TIMEOUT_SECONDS;
	if (t > FLEET_RENDER_TIMEOUT_MAX) /* and so no (int) of an unsigned past INT_MAX */
		t = FLEET_RENDER_TIMEOUT_MAX;
	fleet_err e = fleet_runner_run(env->talosctl, argv, envp, (int)t, FLEET_RENDER_OUTPUT_MAX,
				       out, err, r);
	if (e)
		return fleet_errctx_msg(ec, e, "cannot run %s", env->talosctl);
	return FLEET_OK;
}

/* A failed run, said with talosctl's own first words. */
static fleet_err run_failed(const char *reason, const char *what, const struct fleet_buf *err,
			    const struct fleet_run_result *r, struct fleet_errctx *ec)
{
	char said[FLEET_SANITIZE_BUF(200)];
	fleet_sanitize(err->data, err->len, said, sizeof(said), 200);
	if (r->timed_out)
		return fleet_errctx_refuse(ec, FLEET_E_UNAVAILABLE, reason, "%s: timed out", what);
	if (r->overflow)
		return fleet_errctx_refuse(ec, FLEET_E_TOO_LARGE, reason,
					   "%s: printed more than the cap", what);
	if (!r->exited)
		return fleet_errctx_refuse(ec, FLEET_E_UNAVAILABLE, reason, "%s: killed by a signal",
					   what);
	return fleet_errctx_refuse(ec, FLEET_E_VERIFY, reason, "%s: exit %d: %s", what,
				   r->exit_code, said);
}

fleet_err fleet_render(const struct fleet_render_env *env, const struct fleet_install_class *k,
		       const struct fleet_render_node *n, struct fleet_buf *out,
		       struct fleet_errctx *ec)
{
	struct fleet_render_expect x;
	char path[FLEET_INSTALL_MAX_PATCHES + 1][320], cfg[300], tv[64], *node = NULL;
	struct fleet_buf gout, gerr;
	struct fleet_run_result r;
	fleet_err e;
	int dfd = -1;

	fb_init_secret(&gout, FLEET_RENDER_OUTPUT_MAX);
	fb_init_capped(&gerr, FLEET_RUNNER_ERR_CAP);
	memset(&x, 0, sizeof(x));
	if (!env || !env->talosctl || !env->secrets_file || !env->work_dir || !k || !n || !out)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG, "no environment, class or node");
	if (!fleet_install_class_installs(k))
		return fleet_errctx_refuse(ec, FLEET_E_INVALID_ARG, "render-invalid",
					   "class %s installs nothing", k->name);
	if (!hostname_ok(n->device_name))
		return fleet_errctx_refuse(ec, FLEET_E_INVALID_ARG, "render-invalid",
					   "the device name is not a hostname (lowercase RFC 1123, "
					   "at most 63)");
	if (!n->install_disk_serial || !n->install_disk_serial[0] ||
	    !fleet_ascii_printable(n->install_disk_serial, strlen(n->install_disk_serial),
				   FLEET_ASCII_SPACE) ||
	    strlen(n->install_disk_serial) > 120)
		return fleet_errctx_refuse(ec, FLEET_E_INVALID_ARG, "render-invalid",
					   "the install disk serial is not 1 to 120 printable "
					   "characters");
	if (!fleet_render_token_ok(n->bootstrap_token) ||
	    (k->role == FLEET_ROLE_CONTROLPLANE) !=
		    !strcmp(n->bootstrap_token, FLEET_RENDER_NOJOIN_TOKEN))
		return fleet_errctx_refuse(ec, FLEET_E_INVALID_ARG, "render-invalid",
					   "a worker has its own bootstrap token, a control plane "
					   "the no-join token");
	x.role = k->role;
	if ((e = fleet_install_class_image_ref(k, x.image_ref, sizeof(x.image_ref))))
		return fleet_errctx_refuse(ec, e, "render-invalid", "class %s: no image reference",
					   k->name);
	x.disk_serial = n->install_disk_serial;
	x.token = n->bootstrap_token;
	x.hostname = n->device_name;
	x.endpoint = k->endpoint;

	if ((dfd = open(env->work_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return fleet_errctx_errno(ec, FLEET_E_IO, errno, "cannot open the render directory");
	struct stat st;
	if (fstat(dfd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & 077)) {
		close(dfd);
		return fleet_errctx_refuse(ec, FLEET_E_UNSAFE, "render-invalid",
					   "the render directory is not ours alone (mode 0700)");
	}

	/* The class's patches, then the node's: talosctl applies them in
	 * order, so the node's values win. */
	const char *flag = k->role == FLEET_ROLE_CONTROLPLANE ? "--config-patch-control-plane"
							      : "--config-patch-worker";
	size_t np = 0;
	for (size_t i = 0; i < k->n_patches; i++, np++) {
		char name[48];
		if (!fits(snprintf(name, sizeof(name), "class-patch-%zu.json", i), sizeof(name)) ||
		    !fits(snprintf(path[np], sizeof(path[np]), "@%s/%s", env->work_dir, name),
			  sizeof(path[np]))) {
			e = too_long(ec, "a class patch's path");
			goto out;
		}
		if ((e = write_private(dfd, name, k->patches[i], ec)))
			goto out;
	}
	if (!(node = node_patch(&x))) {
		e = fleet_errctx_msg(ec, FLEET_E_NOMEM, "out of memory");
		goto out;
	}
	if ((e = write_private(dfd, NODE_PATCH, node, ec)))
		goto out;
	if (!fits(snprintf(path[np++], sizeof(path[0]), "@%s/%s", env->work_dir, NODE_PATCH),
		  sizeof(path[0])) ||
	    !fits(snprintf(tv, sizeof(tv), "%s", k->talos_version), sizeof(tv))) {
		e = too_long(ec, "the node patch's path or the Talos version");
		goto out;
	}

	char *argv[64];
	size_t a = 0;
	argv[a++] = "talosctl";
	argv[a++] = "gen";
	argv[a++] = "config";
	argv[a++] = (char *)k->cluster_name;
	argv[a++] = (char *)k->endpoint;
	argv[a++] = "--with-secrets";
	argv[a++] = (char *)env->secrets_file;
	argv[a++] = "--kubernetes-version";
	argv[a++] = (char *)k->kubernetes_version;
	argv[a++] = "--talos-version";
	argv[a++] = tv;
	argv[a++] = "--install-image";
	argv[a++] = x.image_ref;
	argv[a++] = "--install-disk"; /* R3: no disk by name, the selector alone */
	argv[a++] = "";
	argv[a++] = "--output-types";
	argv[a++] = k->role == FLEET_ROLE_CONTROLPLANE ? "controlplane" : "worker";
	argv[a++] = "--output";
	argv[a++] = "-";
	argv[a++] = "--with-docs=false";
	argv[a++] = "--with-examples=false";
	for (size_t i = 0; i < np; i++) {
		argv[a++] = (char *)flag;
		argv[a++] = path[i];
	}
	argv[a] = NULL;
	if ((e = talosctl(env, argv, &gout, &gerr, &r, ec)))
		goto out;
	if (!r.exited || r.exit_code != 0) {
		e = run_failed("talosctl-failed", "talosctl gen config", &gerr, &r, ec);
		goto out;
	}
	/* R2-R5 first: they need no second program. */
	if ((e = fleet_render_check(gout.data, gout.len, &x, ec)))
		goto out;
	/* R1 */
	char *text = malloc(gout.len + 1);
	if (!text) {
		e = fleet_errctx_msg(ec, FLEET_E_NOMEM, "out of memory");
		goto out;
	}
	memcpy(text, gout.data, gout.len);
	text[gout.len] = '\0';
	e = write_private(dfd, CONFIG_FILE, text, ec);
	explicit_bzero(text, gout.len);
	free(text);
	if (e)
		goto out;
	if (!fits(snprintf(cfg, sizeof(cfg), "%s/%s", env->work_dir, CONFIG_FILE), sizeof(cfg))) {
		e = too_long(ec, "the configuration's path");
		goto out;
	}
	char *vargv[] = {"talosctl", "validate", "--config", cfg, "--mode", "metal", "--strict",
			 NULL};
	struct fleet_buf vout, verr;
	fb_init_capped(&vout, 64 * 1024);
	fb_init_capped(&verr, FLEET_RUNNER_ERR_CAP);
	e = talosctl(env, vargv, &vout, &verr, &r, ec);
	if (!e && (!r.exited || r.exit_code != 0))
		e = run_failed("validate-failed", "talosctl validate --mode metal --strict", &verr,
			       &r, ec);
	fb_free(&vout);
	fb_free(&verr);
	if (e)
		goto out;
	fb_free_secret(out);
	*out = gout;
	fb_init(&gout);
out:
	if (dfd >= 0) {
		/* The token and the configuration leave the disk with the render. */
		(void)unlinkat(dfd, NODE_PATCH, 0);
		(void)unlinkat(dfd, CONFIG_FILE, 0);
		for (size_t i = 0; i < k->n_patches; i++) {
			char name[48];
			if (fits(snprintf(name, sizeof(name), "class-patch-%zu.json", i),
				 sizeof(name)))
				(void)unlinkat(dfd, name, 0);
		}
		close(dfd);
	}
	if (node) {
		explicit_bzero(node, strlen(node));
		free(node);
	}
	fb_free_secret(&gout);
	fb_free(&gerr);
	return e;
}
