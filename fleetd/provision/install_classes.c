/*
 * install_classes.c: classes.json and class-inputs.json (install_classes.h).
 *
 * Both files are read whole, parsed by jansson with duplicate keys refused,
 * then walked with every key named: anything not listed here is refused,
 * so a misspelt "digets" cannot leave a class without its pin unnoticed.
 */
#include "fleetd/provision/install_classes.h"

#include <fcntl.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/file_read.h"
#include "lib/sanitize.h"

/* Refusals go through fleet_errctx_refuse with the class and key in the
 * sentence. Names reach a sentence only after the name rule (letters,
 * digits, . - _) or through fleet_sanitize, so a detail holds nothing a
 * file could use to forge a line. */
/* Letters, digits, . - _, starting with a letter or digit: a name that
 * began with '-' would reach talosctl's command line as a flag. */
static bool name_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > FLEET_INSTALL_NAME_MAX ||
	    !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') ||
	      (s[0] >= '0' && s[0] <= '9')))
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '-' || c == '_'))
			return false;
	}
	return true;
}

/* N.N.N, each 1 to 4 digits; with_v: a leading 'v'. */
static bool version_ok(const char *s, bool with_v)
{
	if (with_v && *s++ != 'v')
		return false;
	for (int part = 0; part < 3; part++) {
		size_t d = 0;
		while (s[d] >= '0' && s[d] <= '9')
			d++;
		if (d == 0 || d > 4)
			return false;
		s += d;
		if (part < 2 && *s++ != '.')
			return false;
	}
	return *s == '\0';
}

static bool digest_ok(const char *s)
{
	if (strncmp(s, "sha256:", 7) != 0 || strlen(s) != 7 + 64)
		return false;
	for (const char *p = s + 7; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return false;
	return true;
}

/* K2: registry[:port]/path, lowercase; no tag, no digest. */
static bool image_ok(const char *s)
{
	size_t n = strlen(s);
	const char *slash = strchr(s, '/');
	if (n == 0 || n > FLEET_INSTALL_IMAGE_MAX || !slash || slash == s || slash[1] == '\0' ||
	    s[n - 1] == '/')
		return false;
	for (const char *p = s; *p; p++) {
		char c = *p;
		bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
			  c == '_' || c == '/' || (c == ':' && p < slash);
		if (!ok)
			return false;
		if (c == '/' && p[1] == '/')
			return false;
	}
	return true;
}

/* K4: https://host[:port], nothing after. */
static bool endpoint_ok(const char *s)
{
	if (strncmp(s, "https://", 8) != 0)
		return false;
	const char *h = s + 8;
	size_t n = strlen(h);
	if (n == 0 || n > 200)
		return false;
	bool colon = false;
	for (size_t i = 0; i < n; i++) {
		char c = h[i];
		if (c == ':') {
			if (colon || i == 0 || i + 1 == n)
				return false;
			colon = true;
			continue;
		}
		if (colon ? !(c >= '0' && c <= '9')
			  : !((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
			      c == '-'))
			return false;
	}
	return true;
}

/* The object's keys must all be in allowed (NULL-terminated). */
static fleet_err only_keys(json_t *o, const char *const *allowed, const char *file,
			   const char *where, struct fleet_errctx *ec)
{
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v) {
		bool known = false;
		for (size_t i = 0; allowed[i] && !known; i++)
			known = strcmp(k, allowed[i]) == 0;
		if (!known) {
			char safe[FLEET_SANITIZE_BUF(40)];
			fleet_sanitize(k, strlen(k), safe, sizeof(safe), 40);
			return fleet_errctx_refuse(ec, FLEET_E_MALFORMED, "unknown-key", "%s: %s: unknown key \"%s\"",
				   file, where, safe);
		}
	}
	return FLEET_OK;
}

/* A string member into out[cap]; required or "" when absent. */
static fleet_err get_str(json_t *o, const char *key, bool required, char *out, size_t cap,
			 const char *file, const char *cls, struct fleet_errctx *ec)
{
	json_t *v = json_object_get(o, key);
	out[0] = '\0';
	if (!v) {
		if (required)
			return fleet_errctx_refuse(ec, FLEET_E_MALFORMED, "malformed", "%s: class %s: no \"%s\"",
				   file, cls, key);
		return FLEET_OK;
	}
	if (!json_is_string(v) || json_string_length(v) >= cap ||
	    strlen(json_string_value(v)) != json_string_length(v))
		return fleet_errctx_refuse(ec, FLEET_E_MALFORMED, "malformed",
			   "%s: class %s: \"%s\" is not a string of at most %zu bytes", file, cls,
			   key, cap - 1);
	memcpy(out, json_string_value(v), json_string_length(v) + 1);
	return FLEET_OK;
}

/* The top level of either file: {"version": 1, "classes": {...}}. */
static fleet_err open_doc(const void *buf, size_t len, const char *file, json_t **root,
			  json_t **classes, struct fleet_errctx *ec)
{
	static const char *const top[] = {"version", "classes", NULL};
	json_error_t je;
	*root = NULL;
	if (!buf)
		return fleet_errctx_refuse(ec, FLEET_E_INVALID_ARG, "malformed", "%s: no bytes", file);
	if (len > FLEET_INSTALL_FILE_MAX)
		return fleet_errctx_refuse(ec, FLEET_E_TOO_LARGE, "malformed", "%s: %zu bytes, over the %u cap",
			   file, len, FLEET_INSTALL_FILE_MAX);
	*root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	if (!*root) {
		/* je.text is jansson's own sentence; it can quote a key. */
		char safe[FLEET_SANITIZE_BUF(80)];
		fleet_sanitize(je.text, strlen(je.text), safe, sizeof(safe), 80);
		return fleet_errctx_refuse(ec, FLEET_E_MALFORMED, "malformed", "%s: line %d: %s", file, je.line,
			   safe);
	}
	if (!json_is_object(*root))
		return fleet_errctx_refuse(ec, FLEET_E_MALFORMED, "malformed", "%s: not a JSON object", file);
	fleet_err e = only_keys(*root, top, file, "the top level", ec);
	if (e)
		return e;
	json_t *v = json_object_get(*root, "version");
	if (!json_is_integer(v) || json_integer_value(v) != 1)
		return fleet_errctx_refuse(ec, FLEET_E_MALFORMED, "malformed", "%s: \"version\" must be 1", file);
	*classes = json_object_get(*root, "classes");
	if (!json_is_object(*classes))
		return fleet_errctx_refuse(ec, FLEET_E_MALFORMED, "malformed", "%s: \"classes\" must be an object",
			   file);
	if (json_object_size(*classes) > FLEET_INSTALL_MAX_CLASSES)
		return fleet_errctx_refuse(ec, FLEET_E_TOO_LARGE, "malformed", "%s: more than %d classes", file,
			   FLEET_INSTALL_MAX_CLASSES);
	return FLEET_OK;
}

static fleet_err parse_class(const char *name, json_t *o, struct fleet_install_class *k,
			     struct fleet_errctx *ec)
{
	static const char *const keys[] = {"role", "talos_version", "image", "digest", NULL};
	static const char *const file = "classes.json";
	char role[32];
	fleet_err e;

	if (!json_is_object(o))
		return fleet_errctx_refuse(ec, FLEET_E_MALFORMED, "malformed", "%s: class %s is not an object",
			   file, name);
	if ((e = only_keys(o, keys, file, "a class", ec)) ||
	    (e = get_str(o, "role", true, role, sizeof(role), file, name, ec)) ||
	    (e = get_str(o, "talos_version", false, k->talos_version, sizeof(k->talos_version),
			 file, name, ec)) ||
	    (e = get_str(o, "image", false, k->image, sizeof(k->image), file, name, ec)) ||
	    (e = get_str(o, "digest", false, k->digest, sizeof(k->digest), file, name, ec)))
		return e;
	snprintf(k->name, sizeof(k->name), "%s", name);
	if (!strcmp(role, "worker"))
		k->role = FLEET_ROLE_WORKER;
	else if (!strcmp(role, "controlplane"))
		k->role = FLEET_ROLE_CONTROLPLANE;
	else if (!strcmp(role, "none"))
		k->role = FLEET_ROLE_NONE;
	else
		return fleet_errctx_refuse(ec, FLEET_E_MALFORMED, "malformed",
			   "%s: class %s: \"role\" is worker, controlplane or none", file, name);
	if (k->role == FLEET_ROLE_NONE) {
		if (k->talos_version[0] || k->image[0] || k->digest[0])
			return fleet_errctx_refuse(ec, FLEET_E_MALFORMED, "malformed",
				   "%s: class %s installs nothing (role none): no talos_version, "
				   "image or digest",
				   file, name);
		return FLEET_OK;
	}
	/* K1 */
	if (!k->digest[0])
		return fleet_errctx_refuse(ec, FLEET_E_MALFORMED, "no-digest",
			   "%s: class %s installs (role %s) and its installer has no digest: the "
			   "image workflow has not pinned one",
			   file, name, role);
	if (!digest_ok(k->digest))
		return fleet_errctx_refuse(ec, FLEET_E_MALFORMED, "bad-digest",
			   "%s: class %s: \"digest\" is sha256: and 64 lowercase hex digits", file,
			   name);
	/* K2 */
	if (!image_ok(k->image))
		return fleet_errctx_refuse(ec, FLEET_E_MALFORMED, "bad-image",
			   "%s: class %s: \"image\" is a lowercase registry/path without a tag or "
			   "digest",
			   file, name);
	/* K3 */
	if (!version_ok(k->talos_version, true))
		return fleet_errctx_refuse(ec, FLEET_E_MALFORMED, "bad-version",
			   "%s: class %s: \"talos_version\" is vMAJOR.MINOR.PATCH", file, name);
	return FLEET_OK;
}

static fleet_err parse_inputs(json_t *o, struct fleet_install_class *k, struct fleet_errctx *ec)
{
	static const char *const keys[] = {"cluster_name", "endpoint", "kubernetes_version",
					   "patches", NULL};
	static const char *const file = "class-inputs.json";
	const char *name = k->name;
	fleet_err e;

	if (!json_is_object(o))
		return fleet_errctx_refuse(ec, FLEET_E_MALFORMED, "malformed", "%s: class %s is not an object",
			   file, name);
	if ((e = only_keys(o, keys, file, "a class's inputs", ec)) ||
	    (e = get_str(o, "cluster_name", true, k->cluster_name, sizeof(k->cluster_name), file,
			 name, ec)) ||
	    (e = get_str(o, "endpoint", true, k->endpoint, sizeof(k->endpoint), file, name,
			 ec)) ||
	    (e = get_str(o, "kubernetes_version", true, k->kubernetes_version,
			 sizeof(k->kubernetes_version), file, name, ec)))
		return e;
	if (!name_ok(k->cluster_name))
		return fleet_errctx_refuse(ec, FLEET_E_MALFORMED, "malformed",
			   "%s: class %s: \"cluster_name\" is 1 to %d letters, digits, . - _",
			   file, name, FLEET_INSTALL_NAME_MAX);
	if (!endpoint_ok(k->endpoint))
		return fleet_errctx_refuse(ec, FLEET_E_MALFORMED, "bad-endpoint",
			   "%s: class %s: \"endpoint\" is https://host[:port], nothing after", file,
			   name);
	if (!version_ok(k->kubernetes_version, false))
		return fleet_errctx_refuse(ec, FLEET_E_MALFORMED, "bad-version",
			   "%s: class %s: \"kubernetes_version\" is MAJOR.MINOR.PATCH", file, name);
	json_t *p = json_object_get(o, "patches");
	if (!p)
		return FLEET_OK;
	if (!json_is_array(p) || json_array_size(p) > FLEET_INSTALL_MAX_PATCHES)
		return fleet_errctx_refuse(ec, FLEET_E_MALFORMED, "malformed",
			   "%s: class %s: \"patches\" is a list of at most %d objects", file, name,
			   FLEET_INSTALL_MAX_PATCHES);
	size_t i;
	json_t *v;
	json_array_foreach(p, i, v) {
		if (!json_is_object(v))
			return fleet_errctx_refuse(ec, FLEET_E_MALFORMED, "malformed",
				   "%s: class %s: patch %zu is not an object (a strategic merge "
				   "patch)",
				   file, name, i + 1);
		char *s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
		if (!s)
			return fleet_errctx_refuse(ec, FLEET_E_NOMEM, "malformed", "out of memory");
		if (strlen(s) > FLEET_INSTALL_PATCH_MAX) {
			free(s);
			return fleet_errctx_refuse(ec, FLEET_E_TOO_LARGE, "malformed",
				   "%s: class %s: patch %zu is over %u bytes", file, name, i + 1,
				   FLEET_INSTALL_PATCH_MAX);
		}
		k->patches[k->n_patches++] = s;
	}
	return FLEET_OK;
}

fleet_err fleet_install_classes_parse(const void *classes, size_t classes_len, const void *inputs,
				      size_t inputs_len, struct fleet_install_classes *out,
				      struct fleet_errctx *ec)
{
	json_t *croot = NULL, *iroot = NULL, *cl, *in;
	fleet_err e;

	if (!out)
		return fleet_errctx_refuse(ec, FLEET_E_INVALID_ARG, "malformed", "no output");
	memset(out, 0, sizeof(*out));
	if ((e = open_doc(classes, classes_len, "classes.json", &croot, &cl, ec)) ||
	    (e = open_doc(inputs, inputs_len, "class-inputs.json", &iroot, &in, ec)))
		goto out;
	const char *name;
	json_t *v;
	json_object_foreach(cl, name, v) {
		if (!name_ok(name)) {
			e = fleet_errctx_refuse(ec, FLEET_E_MALFORMED, "malformed",
				"classes.json: a class name is 1 to %d letters, digits, . - _",
				FLEET_INSTALL_NAME_MAX);
			goto out;
		}
		struct fleet_install_class *k = &out->v[out->n++];
		if ((e = parse_class(name, v, k, ec)))
			goto out;
		json_t *ki = json_object_get(in, name);
		/* K4 */
		if (fleet_install_class_installs(k) && !ki) {
			e = fleet_errctx_refuse(ec, FLEET_E_MALFORMED, "no-inputs",
				"class-inputs.json: class %s installs and has no inputs", name);
			goto out;
		}
		if (ki && k->role == FLEET_ROLE_NONE) {
			e = fleet_errctx_refuse(ec, FLEET_E_MALFORMED, "malformed",
				"class-inputs.json: class %s installs nothing (role none) and has "
				"inputs",
				name);
			goto out;
		}
		if (ki && (e = parse_inputs(ki, k, ec)))
			goto out;
	}
	json_object_foreach(in, name, v) {
		if (!json_object_get(cl, name)) {
			char safe[FLEET_SANITIZE_BUF(40)];
			fleet_sanitize(name, strlen(name), safe, sizeof(safe), 40);
			e = fleet_errctx_refuse(ec, FLEET_E_MALFORMED, "unknown-class",
				"class-inputs.json: class \"%s\" is not in classes.json", safe);
			goto out;
		}
	}
out:
	json_decref(croot);
	json_decref(iroot);
	return e;
}

fleet_err fleet_install_classes_load(const char *classes_path, const char *inputs_path,
				     struct fleet_install_classes *out, struct fleet_errctx *ec)
{
	static const struct fleet_file_policy pc =
		FLEET_FILE_POLICY_CONFIG("the classes file", FLEET_INSTALL_FILE_MAX);
	static const struct fleet_file_policy pi =
		FLEET_FILE_POLICY_CONFIG("the class inputs file", FLEET_INSTALL_FILE_MAX);
	struct fleet_buf a, b;
	fleet_err e;
	fb_init(&a);
	fb_init(&b);
	if (out)
		memset(out, 0, sizeof(*out));
	if ((e = fleet_file_read(AT_FDCWD, classes_path, &pc, &a, ec)) == FLEET_OK &&
	    (e = fleet_file_read(AT_FDCWD, inputs_path, &pi, &b, ec)) == FLEET_OK)
		e = fleet_install_classes_parse(a.data, a.len, b.data, b.len, out, ec);
	fb_free(&a);
	fb_free(&b);
	return e;
}

fleet_err fleet_install_classes_check_profiles(const struct fleet_install_classes *c,
					       const char *const *names, size_t n,
					       struct fleet_errctx *ec)
{
	for (size_t i = 0; i < n; i++)
		if (!fleet_install_class_find(c, names[i])) {
			char safe[FLEET_SANITIZE_BUF(64)];
			fleet_sanitize(names[i], strlen(names[i]), safe, sizeof(safe), 64);
			return fleet_errctx_refuse(ec, FLEET_E_NOT_FOUND, "unknown-class",
				   "class %s has a profile in fleetd.yaml and is not in "
				   "classes.json: what it installs is not declared",
				   safe);
		}
	return FLEET_OK;
}

const struct fleet_install_class *fleet_install_class_find(const struct fleet_install_classes *c,
							   const char *name)
{
	for (size_t i = 0; c && name && i < c->n; i++)
		if (!strcmp(c->v[i].name, name))
			return &c->v[i];
	return NULL;
}

int fleet_install_class_installs(const struct fleet_install_class *k)
{
	return k && (k->role == FLEET_ROLE_WORKER || k->role == FLEET_ROLE_CONTROLPLANE);
}

fleet_err fleet_install_class_image_ref(const struct fleet_install_class *k, char *out,
					size_t outlen)
{
	if (!fleet_install_class_installs(k) || !out || outlen == 0)
		return FLEET_E_INVALID_ARG;
	int n = snprintf(out, outlen, "%s@%s", k->image, k->digest);
	return n > 0 && (size_t)n < outlen ? FLEET_OK : FLEET_E_TOO_LARGE;
}

const char *fleet_install_role_str(enum fleet_install_role r)
{
	switch (r) {
	case FLEET_ROLE_NONE:
		return "none";
	case FLEET_ROLE_WORKER:
		return "worker";
	case FLEET_ROLE_CONTROLPLANE:
		return "controlplane";
	}
	return "unknown";
}

void fleet_install_classes_free(struct fleet_install_classes *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++)
		for (size_t j = 0; j < c->v[i].n_patches; j++) {
			free(c->v[i].patches[j]);
			c->v[i].patches[j] = NULL;
		}
	memset(c, 0, sizeof(*c));
}
