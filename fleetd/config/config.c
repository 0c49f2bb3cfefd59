/*
 * config.c: fleetd.yaml (see config.h and docs/configuration.md).
 *
 * Each section is a mapping with a fixed key list; a table below says, per
 * key, what it is and where it goes, so the walk is one loop and adding a
 * key is one line (plus its line in docs/configuration.md).
 */
#include "fleetd/config/config.h"
#include "lib/tpm.h"
#include "lib/tpm_join_evidence.h"
#include "lib/spire_nodes_format.h"
#include "lib/attest_wire.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "fleetd/inventory/nodes_file.h"
#include "lib/buf.h"
#include "lib/file_read.h"
#include "lib/sanitize.h"

#define MIB (1024u * 1024)

void fleet_config_defaults(struct fleet_config *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->listen_address, sizeof(c->listen_address), "::");
	c->listen_port = 8443;
	c->listen_request_deadline_seconds = 10;
	c->listen_body_memory_bytes = 16 * MIB;
	c->listen_rate_per_second = 5;
	c->listen_rate_burst = 20;
	snprintf(c->state_dir, sizeof(c->state_dir), "/var/lib/fleetd");
	snprintf(c->roots_dir, sizeof(c->roots_dir), "/etc/fleetd/roots");
	snprintf(c->ca_dir, sizeof(c->ca_dir), "/var/lib/fleetd/ca");
	snprintf(c->profiles_dir, sizeof(c->profiles_dir), "/etc/fleetd/profiles");
	c->netbox_timeout_ms = 10000;
	c->netbox_page_size = 100;
	c->session_ttl_seconds = 600;
	c->max_open_sessions = 1024;
	c->session_answer_seconds = 60;
	c->session_round_seconds = 20;
	c->inventory_lookups_per_second = 50;
	c->inventory_lookup_cache_ms = 2000;
	c->cert_validity_days = 90;
	c->verdict_log_max_bytes = 16 * MIB;
	c->verdict_log_max_files = 5;
	c->pass_interval_seconds = 3600;
	c->pass_deadline_seconds = 900;
	c->metrics = true;
	snprintf(c->provision_namespace, sizeof(c->provision_namespace), "tinkerbell");
	snprintf(c->provision_template, sizeof(c->provision_template), "folly-talos-install");
	c->provision_delivery_deadline_seconds = 30;
	c->join_cert_ttl_seconds = 86400;
	c->join_x509pop_grace_seconds = 7 * 86400;
	c->join_x509pop_window_seconds = 60;
	c->join_x509pop_min_interval_seconds = 600;
	snprintf(c->join_discovery_approval, sizeof(c->join_discovery_approval), "never");
	c->join_discovery_cert_ttl_seconds = 7200;
	c->join_discovery_pending_ttl_seconds = 86400;
	c->join_discovery_retry_after_seconds = 30;
	snprintf(c->join_tpm_node_key, sizeof(c->join_tpm_node_key), "certified");
	snprintf(c->join_tpm_role, sizeof(c->join_tpm_role), "node");
	snprintf(c->join_tpm_pcr_selection, sizeof(c->join_tpm_pcr_selection),
		 "sha256:0,1,2,3,4,5,6,7");
	c->join_tpm_challenge_ttl_seconds = 300;
	c->join_tpm_pending_ttl_seconds = 86400;
	c->join_tpm_retry_after_seconds = 30;
	c->provision_render_timeout_seconds = 15;
	/* The protocol's own cap (lib/attest_wire.h): an answer carrying a
	 * 1 MiB event log is about 1.4 MiB of JSON. */
	c->max_body_bytes = FLEET_WIRE_MAX_BODY;
}


/* repository@sha256:<64 lowercase hex>, the repository printable, no space. */
static bool image_pinned(const char *s)
{
	const char *at = strstr(s, "@sha256:");
	if (!at || at == s || strlen(at + 8) != 64)
		return false;
	for (const char *p = s; p < at; p++)
		if (*p <= ' ' || *p > '~' || *p == '@')
			return false;
	for (const char *p = at + 8; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return false;
	return true;
}

/* A host name, an IPv4 address or a [IPv6] literal, then an optional
 * :port: what goes into talos.config=https://HOST/config. */
static bool host_port_ok(const char *s)
{
	size_t n = strlen(s);
	if (n < 1 || n > 255)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '-' || c == ':' || c == '[' || c == ']'))
			return false;
	}
	return true;
}

enum kind { K_MAP, K_PATH, K_STR, K_U32, K_U64, K_BOOL, K_ADDR, K_URL, K_INVKIND, K_CLASSES };

struct key {
	const char *name;
	enum kind kind;
	size_t off; /* into struct fleet_config; for K_MAP, the section index */
	size_t size;
	uint64_t min, max;
};

#define F(field) offsetof(struct fleet_config, field), sizeof(((struct fleet_config *)0)->field)
#define SEC(i) (size_t)(i), 0

enum { S_TOP, S_LISTEN, S_TLS, S_INV, S_NETBOX, S_FILE, S_SESS, S_CERT, S_VLOG, S_PASS, S_MET,
       S_HTTP, S_SPIRE, S_PROV, S_JOIN, S_JOIN_TPM, S__N };

static const struct key top_keys[] = {
	{"listen", K_MAP, SEC(S_LISTEN), 0, 0},
	{"tls", K_MAP, SEC(S_TLS), 0, 0},
	{"state_dir", K_PATH, F(state_dir), 0, 0},
	{"store", K_STR, F(store), 0, 0},
	{"roots_dir", K_PATH, F(roots_dir), 0, 0},
	{"ca_dir", K_PATH, F(ca_dir), 0, 0},
	{"profiles_dir", K_PATH, F(profiles_dir), 0, 0},
	{"classes", K_CLASSES, 0, 0, 0, 0},
	{"inventory", K_MAP, SEC(S_INV), 0, 0},
	{"binding_author", K_STR, F(binding_author), 0, 0},
	{"sessions", K_MAP, SEC(S_SESS), 0, 0},
	{"certificates", K_MAP, SEC(S_CERT), 0, 0},
	{"verdict_log", K_MAP, SEC(S_VLOG), 0, 0},
	{"pass", K_MAP, SEC(S_PASS), 0, 0},
	{"metrics", K_MAP, SEC(S_MET), 0, 0},
	{"http", K_MAP, SEC(S_HTTP), 0, 0},
	{"spire", K_MAP, SEC(S_SPIRE), 0, 0},
	{"provision", K_MAP, SEC(S_PROV), 0, 0},
	{"join", K_MAP, SEC(S_JOIN), 0, 0},
};
static const struct key listen_keys[] = {
	{"address", K_ADDR, F(listen_address), 0, 0},
	{"port", K_U32, F(listen_port), 1, 65535},
	{"request_deadline_seconds", K_U32, F(listen_request_deadline_seconds), 1, 3600},
	{"body_memory_bytes", K_U64, F(listen_body_memory_bytes), 64 * 1024, 4096ull * MIB},
	{"rate_per_second", K_U32, F(listen_rate_per_second), 1, 100000},
	{"rate_burst", K_U32, F(listen_rate_burst), 1, 100000},
};
static const struct key tls_keys[] = {
	{"cert", K_PATH, F(tls_cert), 0, 0},
	{"key", K_PATH, F(tls_key), 0, 0},
};
static const struct key inv_keys[] = {
	{"kind", K_INVKIND, F(inventory), 0, 0},
	{"netbox", K_MAP, SEC(S_NETBOX), 0, 0},
	{"file", K_MAP, SEC(S_FILE), 0, 0},
};
static const struct key netbox_keys[] = {
	{"url", K_URL, F(netbox_url), 0, 0},
	{"token_file", K_PATH, F(netbox_token_file), 0, 0},
	{"ca_file", K_PATH, F(netbox_ca_file), 0, 0},
	{"timeout_ms", K_U32, F(netbox_timeout_ms), 100, 600000},
	{"page_size", K_U32, F(netbox_page_size), 1, 1000},
	{"lookups_per_second", K_U32, F(inventory_lookups_per_second), 1, 100000},
	{"lookup_cache_ms", K_U32, F(inventory_lookup_cache_ms), 0, 60000},
};
static const struct key file_keys[] = {
	{"path", K_PATH, F(nodes_file), 0, 0},
};
static const struct key sess_keys[] = {
	{"ttl_seconds", K_U32, F(session_ttl_seconds), 30, 86400},
	{"max_open", K_U32, F(max_open_sessions), 1, 100000},
	{"answer_seconds", K_U32, F(session_answer_seconds), 5, 3600},
	{"round_seconds", K_U32, F(session_round_seconds), 1, 3600},
};
/* Renewal starts 30 days before expiry: a shorter life would renew always. */
static const struct key cert_keys[] = {
	{"validity_days", K_U32, F(cert_validity_days), 31, 3650},
};
static const struct key vlog_keys[] = {
	{"max_bytes", K_U64, F(verdict_log_max_bytes), 64 * 1024, 1024ull * MIB},
	{"max_files", K_U32, F(verdict_log_max_files), 1, 100},
};
static const struct key pass_keys[] = {
	{"interval_seconds", K_U32, F(pass_interval_seconds), 60, 86400},
	{"deadline_seconds", K_U32, F(pass_deadline_seconds), 10, 86400},
};
static const struct key met_keys[] = {
	{"enabled", K_BOOL, F(metrics), 0, 0},
};
static const struct key spire_keys[] = {
	{"trust_domain", K_STR, F(spire_trust_domain), 0, 0},
};
static const struct key prov_keys[] = {
	{"classes_file", K_PATH, F(provision_classes_file), 0, 0},
	{"class_inputs_file", K_PATH, F(provision_class_inputs_file), 0, 0},
	{"auto_provision", K_BOOL, F(provision_auto), 0, 0},
	{"talosctl", K_PATH, F(provision_talosctl), 0, 0},
	{"secrets_file", K_PATH, F(provision_secrets_file), 0, 0},
	{"kubeconfig", K_PATH, F(provision_kubeconfig), 0, 0},
	{"tinkerbell_namespace", K_STR, F(provision_namespace), 0, 0},
	{"template", K_STR, F(provision_template), 0, 0},
	{"tools_image", K_STR, F(provision_tools_image), 0, 0},
	{"config_host", K_STR, F(provision_config_host), 0, 0},
	{"delivery_deadline_seconds", K_U32, F(provision_delivery_deadline_seconds), 5, 600},
	{"render_timeout_seconds", K_U32, F(provision_render_timeout_seconds), 5, 600},
};
static const struct key join_keys[] = {
	{"trust_domain", K_STR, F(join_trust_domain), 0, 0},
	{"seal_key", K_PATH, F(join_seal_key), 0, 0},
	{"on_refusal", K_PATH, F(join_on_refusal), 0, 0},
	{"cert_ttl_seconds", K_U32, F(join_cert_ttl_seconds), 60, 86400},
	{"x509pop_grace_seconds", K_U32, F(join_x509pop_grace_seconds), 0, 30 * 86400},
	{"x509pop_window_seconds", K_U32, F(join_x509pop_window_seconds), 1, 600},
	{"x509pop_min_interval_seconds", K_U32, F(join_x509pop_min_interval_seconds), 0, 86400},
	{"discovery_approval", K_STR, F(join_discovery_approval), 0, 0},
	{"discovery_cert_ttl_seconds", K_U32, F(join_discovery_cert_ttl_seconds), 60, 7200},
	{"discovery_pending_ttl_seconds", K_U32, F(join_discovery_pending_ttl_seconds), 60,
	 30 * 86400},
	{"discovery_retry_after_seconds", K_U32, F(join_discovery_retry_after_seconds), 1, 3600},
	{"tpm", K_MAP, SEC(S_JOIN_TPM), 0, 0},
	{"cloud_iid_file", K_PATH, F(join_cloud_iid_file), 0, 0},
};
/* join.tpm: the tpm attestor (docs/attestors.md, "tpm"); on when present. */
static const struct key join_tpm_keys[] = {
	{"challenge_key", K_PATH, F(join_tpm_challenge_key), 0, 0},
	{"allow_uncertified_ek", K_BOOL, F(join_tpm_allow_uncertified_ek), 0, 0},
	{"pcr_selection", K_STR, F(join_tpm_pcr_selection), 0, 0},
	{"pcr_profile", K_PATH, F(join_tpm_pcr_profile), 0, 0},
	{"node_key", K_STR, F(join_tpm_node_key), 0, 0},
	{"challenge_ttl_seconds", K_U32, F(join_tpm_challenge_ttl_seconds), 1, 300},
	{"role", K_STR, F(join_tpm_role), 0, 0},
	{"resolve_file", K_PATH, F(join_tpm_resolve_file), 0, 0},
	{"enrollment_pool", K_STR, F(join_tpm_enrollment_pool), 0, 0},
	{"enrollment_site", K_STR, F(join_tpm_enrollment_site), 0, 0},
	{"pending_ttl_seconds", K_U32, F(join_tpm_pending_ttl_seconds), 60, 30 * 86400},
	{"retry_after_seconds", K_U32, F(join_tpm_retry_after_seconds), 1, 3600},
};
static const struct key http_keys[] = {
	{"max_body_bytes", K_U64, F(max_body_bytes), 4096, 64 * MIB},
};

static const struct section {
	const char *name;
	const struct key *keys;
	size_t n;
} sections[S__N] = {
#define S(i, n, k) [i] = {n, k, sizeof(k) / sizeof(k[0])}
	S(S_TOP, "the configuration", top_keys),
	S(S_LISTEN, "listen", listen_keys),
	S(S_TLS, "tls", tls_keys),
	S(S_INV, "inventory", inv_keys),
	S(S_NETBOX, "inventory.netbox", netbox_keys),
	S(S_FILE, "inventory.file", file_keys),
	S(S_SESS, "sessions", sess_keys),
	S(S_CERT, "certificates", cert_keys),
	S(S_VLOG, "verdict_log", vlog_keys),
	S(S_PASS, "pass", pass_keys),
	S(S_MET, "metrics", met_keys),
	S(S_HTTP, "http", http_keys),
	S(S_SPIRE, "spire", spire_keys),
	S(S_PROV, "provision", prov_keys),
	S(S_JOIN, "join", join_keys),
	S(S_JOIN_TPM, "join.tpm", join_tpm_keys),
#undef S
};

/* The most keys a section has; walk() keeps one slot per key on its stack,
 * so every table below is held to it at compile time. */
#define MAX_KEYS 24
#define KEYS_FIT(k) _Static_assert(sizeof(k) / sizeof(k[0]) <= MAX_KEYS, #k " has too many keys")
KEYS_FIT(top_keys);
KEYS_FIT(listen_keys);
KEYS_FIT(tls_keys);
KEYS_FIT(inv_keys);
KEYS_FIT(netbox_keys);
KEYS_FIT(file_keys);
KEYS_FIT(sess_keys);
KEYS_FIT(cert_keys);
KEYS_FIT(vlog_keys);
KEYS_FIT(pass_keys);
KEYS_FIT(met_keys);
KEYS_FIT(spire_keys);
KEYS_FIT(prov_keys);
KEYS_FIT(http_keys);
KEYS_FIT(join_keys);
KEYS_FIT(join_tpm_keys);

struct cctx {
	struct fleet_yaml *y;
	struct fleet_config *c;
	bool seen[S__N];
	yaml_mark_t mark[S__N]; /* where each section's key was */
	yaml_mark_t author_mark, kind_mark;
	bool has_author, has_classes;
};

static bool path_ok(const char *p)
{
	if (p[0] != '/' || strstr(p, "/../") || strstr(p, "/./") || strstr(p, "//"))
		return false;
	size_t l = strlen(p);
	if ((l >= 3 && !strcmp(p + l - 3, "/..")) || (l >= 2 && !strcmp(p + l - 2, "/.")))
		return false;
	return !strchr(p, ' ');
}

static bool name_ok(const char *s, size_t max)
{
	size_t l = strlen(s);
	if (l == 0 || l > max || !isalnum((unsigned char)s[0]))
		return false;
	for (size_t i = 0; i < l; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("-_.", s[i]))
			return false;
	return true;
}

static fleet_err get_classes(struct cctx *x, yaml_node_t *n)
{
	struct fleet_yaml *y = x->y;
	fleet_err e = fleet_yaml_want(y, n, YAML_MAPPING_NODE, "classes");
	if (e)
		return e;
	size_t count = (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
	if (count == 0 || count > FLEET_CONFIG_MAX_CLASSES)
		return fleet_yaml_fail(y, FLEET_E_MALFORMED, &n->start_mark,
				       "classes maps 1 to %d classes to profiles, this has %zu",
				       FLEET_CONFIG_MAX_CLASSES, count);
	for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top;
	     pr++) {
		struct fleet_config_class *cl = &x->c->classes[x->c->n_classes];
		yaml_node_t *k, *v;
		if ((e = fleet_yaml_reach(y, pr->key, &n->start_mark, &k)) ||
		    (e = fleet_yaml_str(y, k, "a class name", cl->name, sizeof(cl->name))))
			return e;
		if (!name_ok(cl->name, sizeof(cl->name) - 1))
			return fleet_yaml_fail(y, FLEET_E_MALFORMED, &k->start_mark,
					       "a class name is letters, digits, '.', '-' or '_'");
		if (fleet_config_profile_for(x->c, cl->name))
			return fleet_yaml_fail(y, FLEET_E_MALFORMED, &k->start_mark,
					       "duplicate key '%s' in classes", cl->name);
		if ((e = fleet_yaml_reach(y, pr->value, &k->start_mark, &v)) ||
		    (e = fleet_yaml_str(y, v, "a profile file", cl->profile, sizeof(cl->profile))))
			return e;
		/* A file name in profiles_dir, nothing that climbs out of it. */
		if (!name_ok(cl->profile, sizeof(cl->profile) - 1))
			return fleet_yaml_fail(y, FLEET_E_MALFORMED, &v->start_mark,
					       "a profile is a file name in profiles_dir (letters, "
					       "digits, '.', '-', '_'; no '/')");
		x->c->n_classes++;
	}
	x->has_classes = true;
	return FLEET_OK;
}

static fleet_err walk(struct cctx *x, yaml_node_t *map, int sec);

static fleet_err get_value(struct cctx *x, const struct key *k, yaml_node_t *v,
			   const yaml_mark_t *km)
{
	struct fleet_yaml *y = x->y;
	char *dst = (char *)x->c + k->off;
	fleet_err e;
	uint64_t u;
	bool b;
	switch (k->kind) {
	case K_MAP:
		x->seen[k->off] = true;
		x->mark[k->off] = *km;
		return walk(x, v, (int)k->off);
	case K_CLASSES:
		return get_classes(x, v);
	case K_PATH:
		if ((e = fleet_yaml_str(y, v, k->name, dst, k->size)))
			return e;
		if (!path_ok(dst))
			return fleet_yaml_fail(y, FLEET_E_MALFORMED, &v->start_mark,
					       "%s must be an absolute path without '.', '..', "
					       "'//' or spaces", k->name);
		return FLEET_OK;
	case K_STR:
		if ((e = fleet_yaml_str(y, v, k->name, dst, k->size)))
			return e;
		if (!dst[0])
			return fleet_yaml_fail(y, FLEET_E_MALFORMED, &v->start_mark,
					       "%s must not be empty", k->name);
		if (dst == x->c->store && strncmp(dst, "postgres://", 11) != 0 &&
		    strncmp(dst, "postgresql://", 13) != 0)
			return fleet_yaml_fail(y, FLEET_E_MALFORMED, &v->start_mark,
					       "store must be a postgres:// or postgresql:// URI "
					       "(leave it out for the SQLite store in state_dir)");
		if (dst == x->c->binding_author) {
			x->has_author = true;
			x->author_mark = v->start_mark;
		}
		/* The same rule the spire-nodes.json writer and the applier
		 * apply (one definition, fleetd/spire/spire_nodes.h). */
		if ((dst == x->c->spire_trust_domain || dst == x->c->join_trust_domain) &&
		    !fleet_spire_trust_domain_ok(dst))
			return fleet_yaml_fail(y, FLEET_E_MALFORMED, &v->start_mark,
					       "%s may hold only a-z, 0-9, '.', '-' and '_'",
					       dst == x->c->spire_trust_domain ? "spire.trust_domain"
									       : "join.trust_domain");
		return FLEET_OK;
	case K_ADDR: {
		if ((e = fleet_yaml_str(y, v, k->name, dst, k->size)))
			return e;
		unsigned char a[16];
		if (inet_pton(AF_INET, dst, a) != 1 && inet_pton(AF_INET6, dst, a) != 1)
			return fleet_yaml_fail(y, FLEET_E_MALFORMED, &v->start_mark,
					       "listen.address must be an IPv4 or IPv6 address "
					       "(\"::\" for all)");
		return FLEET_OK;
	}
	case K_URL:
		if ((e = fleet_yaml_str(y, v, k->name, dst, k->size)))
			return e;
		/* The token travels with every request: never in the clear. */
		if (strncmp(dst, "https://", 8) != 0 || !dst[8] || strchr(dst, ' ') ||
		    strchr(dst, '@') || strchr(dst, '?') || strchr(dst, '#'))
			return fleet_yaml_fail(y, FLEET_E_MALFORMED, &v->start_mark,
					       "inventory.netbox.url must be https://HOST[:PORT][/PATH] "
					       "without credentials, query or fragment");
		return FLEET_OK;
	case K_INVKIND:
		x->kind_mark = v->start_mark;
		if (fleet_yaml_is_plain(v) && fleet_yaml_is(v, "netbox"))
			x->c->inventory = FLEET_INVENTORY_NETBOX;
		else if (fleet_yaml_is_plain(v) && fleet_yaml_is(v, "file"))
			x->c->inventory = FLEET_INVENTORY_FILE;
		else
			return fleet_yaml_fail(y, FLEET_E_MALFORMED, &v->start_mark,
					       "inventory.kind must be netbox or file");
		return FLEET_OK;
	case K_BOOL:
		if ((e = fleet_yaml_bool(y, v, k->name, &b)))
			return e;
		*(bool *)dst = b;
		return FLEET_OK;
	case K_U32:
	case K_U64:
		if ((e = fleet_yaml_uint(y, v, k->name, k->min, k->max, &u)))
			return e;
		if (k->size == sizeof(uint16_t))
			*(uint16_t *)dst = (uint16_t)u;
		else if (k->size == sizeof(uint32_t))
			*(uint32_t *)dst = (uint32_t)u;
		else
			*(uint64_t *)dst = u;
		return FLEET_OK;
	}
	return FLEET_E_INVALID_ARG;
}

static fleet_err walk(struct cctx *x, yaml_node_t *map, int sec)
{
	const struct section *s = &sections[sec];
	const char *known[MAX_KEYS] = {0}; /* s->n of them used; zeroed for -O2 flow analysis */
	int vals[MAX_KEYS];
	yaml_mark_t marks[MAX_KEYS];
	fleet_err e = fleet_yaml_want(x->y, map, YAML_MAPPING_NODE, s->name);
	if (e)
		return e;
	for (size_t i = 0; i < s->n; i++)
		known[i] = s->keys[i].name;
	if ((e = fleet_yaml_keys(x->y, map, known, s->n, vals, marks)))
		return e;
	for (size_t i = 0; i < s->n; i++) {
		yaml_node_t *v;
		if (!vals[i])
			continue;
		if ((e = fleet_yaml_reach(x->y, vals[i], &marks[i], &v)) ||
		    (e = get_value(x, &s->keys[i], v, &marks[i])))
			return e;
	}
	return FLEET_OK;
}


/* Rules across keys; each names the line an operator should look at. */
static fleet_err cross_checks(struct cctx *x)
{
	struct fleet_yaml *y = x->y;
	struct fleet_config *c = x->c;
	const yaml_mark_t *top = &y->root->start_mark;
	if (!x->seen[S_TLS] || !c->tls_cert[0] || !c->tls_key[0])
		return fleet_yaml_fail(y, FLEET_E_MALFORMED, x->seen[S_TLS] ? &x->mark[S_TLS] : top,
				       "tls.cert and tls.key are required");
	if (c->listen_body_memory_bytes < c->max_body_bytes)
		return fleet_yaml_fail(y, FLEET_E_MALFORMED,
				       x->seen[S_LISTEN] ? &x->mark[S_LISTEN]
				       : x->seen[S_HTTP] ? &x->mark[S_HTTP] : top,
				       "listen.body_memory_bytes (%llu) must be at least "
				       "http.max_body_bytes (%llu): a request at the cap could "
				       "never be read",
				       (unsigned long long)c->listen_body_memory_bytes,
				       (unsigned long long)c->max_body_bytes);
	if (!x->has_classes)
		return fleet_yaml_fail(y, FLEET_E_MALFORMED, top,
				       "classes is required (class name: profile file)");
	if (x->seen[S_PROV]) {
		if (!c->provision_classes_file[0] || !c->provision_class_inputs_file[0] ||
		    !c->provision_talosctl[0] || !c->provision_secrets_file[0])
			return fleet_yaml_fail(y, FLEET_E_MALFORMED, &x->mark[S_PROV],
					       "provision.classes_file, class_inputs_file, "
					       "talosctl and secrets_file are required to install "
					       "machines");
		if (!fleet_dns_label(c->provision_namespace) || !fleet_dns_label(c->provision_template))
			return fleet_yaml_fail(y, FLEET_E_MALFORMED, &x->mark[S_PROV],
					       "provision.tinkerbell_namespace and template must "
					       "be DNS labels ([a-z0-9-], 1..63, alphanumeric at "
					       "both ends)");
		if (!c->provision_tools_image[0] || !c->provision_config_host[0])
			return fleet_yaml_fail(y, FLEET_E_MALFORMED, &x->mark[S_PROV],
					       "provision.tools_image and config_host are required: "
					       "the Template runs the one and fetches from the other");
		if (!image_pinned(c->provision_tools_image))
			return fleet_yaml_fail(y, FLEET_E_MALFORMED, &x->mark[S_PROV],
					       "provision.tools_image must be pinned by digest "
					       "(<repository>@sha256:<64 hex>): it runs before the disk "
					       "is wiped");
		if (!host_port_ok(c->provision_config_host))
			return fleet_yaml_fail(y, FLEET_E_MALFORMED, &x->mark[S_PROV],
					       "provision.config_host must be a host name or address "
					       "with an optional :port, nothing else");
		c->provision_enabled = true;
	}
	if (x->seen[S_JOIN]) {
		if (!c->join_trust_domain[0])
			return fleet_yaml_fail(y, FLEET_E_MALFORMED, &x->mark[S_JOIN],
					       "join.trust_domain is required: it names every node "
					       "certificate (spiffe://<trust_domain>/<role>/<node>)");
		if (strcmp(c->join_discovery_approval, "never") &&
		    strcmp(c->join_discovery_approval, "unknown-machines") &&
		    strcmp(c->join_discovery_approval, "always"))
			return fleet_yaml_fail(y, FLEET_E_MALFORMED, &x->mark[S_JOIN],
					       "join.discovery_approval is never, unknown-machines "
					       "or always");
		c->join_enabled = true;
	}
	if (x->seen[S_JOIN_TPM]) {
		TPML_PCR_SELECTION sel;
		if (strcmp(c->join_tpm_node_key, "certified") && strcmp(c->join_tpm_node_key, "any"))
			return fleet_yaml_fail(y, FLEET_E_MALFORMED, &x->mark[S_JOIN_TPM],
					       "join.tpm.node_key is certified or any");
		if (strcmp(c->join_tpm_role, "node") && strcmp(c->join_tpm_role, "site"))
			return fleet_yaml_fail(y, FLEET_E_MALFORMED, &x->mark[S_JOIN_TPM],
					       "join.tpm.role is node or site");
		if (fleet_pcr_selection_parse(c->join_tpm_pcr_selection, &sel) != FLEET_OK ||
		    strlen(c->join_tpm_pcr_selection) > FLEET_TPM_MAX_SELECTION)
			return fleet_yaml_fail(y, FLEET_E_MALFORMED, &x->mark[S_JOIN_TPM],
					       "join.tpm.pcr_selection is a PCR selection such as "
					       "sha256:0,1,2,3,4,5,6,7");
		if (!c->join_tpm_enrollment_pool[0] && c->join_tpm_enrollment_site[0])
			return fleet_yaml_fail(y, FLEET_E_MALFORMED, &x->mark[S_JOIN_TPM],
					       "join.tpm.enrollment_site needs enrollment_pool");
		c->join_tpm_enabled = true;
	}
	if (!x->seen[S_INV] || !c->inventory)
		return fleet_yaml_fail(y, FLEET_E_MALFORMED, x->seen[S_INV] ? &x->mark[S_INV] : top,
				       "inventory.kind is required (netbox or file)");
	if (c->inventory == FLEET_INVENTORY_NETBOX) {
		if (x->seen[S_FILE])
			return fleet_yaml_fail(y, FLEET_E_MALFORMED, &x->mark[S_FILE],
					       "inventory.file is set but inventory.kind is netbox");
		if (!c->netbox_url[0] || !c->netbox_token_file[0])
			return fleet_yaml_fail(y, FLEET_E_MALFORMED,
					       x->seen[S_NETBOX] ? &x->mark[S_NETBOX] : &x->kind_mark,
					       "inventory.netbox.url and token_file are required");
		/* NetBox's changelog names whoever changed the binding; only
		 * the operator knows which user Terraform runs as. */
		if (!x->has_author)
			return fleet_yaml_fail(y, FLEET_E_MALFORMED, top,
					       "binding_author (the user Terraform writes NetBox "
					       "as) is required with the netbox inventory");
	} else {
		if (x->seen[S_NETBOX])
			return fleet_yaml_fail(y, FLEET_E_MALFORMED, &x->mark[S_NETBOX],
					       "inventory.netbox is set but inventory.kind is file");
		if (!c->nodes_file[0])
			return fleet_yaml_fail(y, FLEET_E_MALFORMED,
					       x->seen[S_FILE] ? &x->mark[S_FILE] : &x->kind_mark,
					       "inventory.file.path is required");
		if (!x->has_author)
			snprintf(c->binding_author, sizeof(c->binding_author), "%s",
				 FLEET_NODES_FILE_AUTHOR);
		else if (strcmp(c->binding_author, FLEET_NODES_FILE_AUTHOR) != 0)
			return fleet_yaml_fail(y, FLEET_E_MALFORMED, &x->author_mark,
					       "with the file inventory the nodes file is the "
					       "binding's author: binding_author must be '%s' or "
					       "left out", FLEET_NODES_FILE_AUTHOR);
	}
	return FLEET_OK;
}

fleet_err fleet_config_parse(const uint8_t *buf, size_t len, struct fleet_config *c,
			     struct fleet_errctx *ec)
{
	fleet_config_defaults(c);
	struct fleet_yaml y;
	fleet_err e = fleet_yaml_load(&y, buf, len, FLEET_CONFIG_MAX_SIZE, "the configuration",
				      ec);
	if (e)
		return e;
	struct cctx x = {.y = &y, .c = c};
	if (!(e = walk(&x, y.root, S_TOP)))
		e = cross_checks(&x);
	fleet_yaml_free(&y);
	if (e)
		fleet_config_defaults(c);
	return e;
}

fleet_err fleet_config_load(const char *path, struct fleet_config *c,
			    struct fleet_errctx *ec)
{
	/* Configuration (docs/files.md): it names every trust anchor, so owned
	 * by root or us and writable by nobody else. */
	static const struct fleet_file_policy policy =
		FLEET_FILE_POLICY_CONFIG("the configuration", FLEET_CONFIG_MAX_SIZE);
	struct fleet_buf b;
	fb_init(&b);
	if (ec)
		memset(ec, 0, sizeof(*ec));
	fleet_config_defaults(c);
	fleet_err e = fleet_file_read(AT_FDCWD, path, &policy, &b, ec);
	if (e)
		fleet_errctx_wrap(ec, e, "cannot read ", NULL);
	else
		e = fleet_config_parse(b.data, b.len, c, ec);
	fb_free(&b);
	return e;
}

static bool token_space(uint8_t ch) { return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r'; }

fleet_err fleet_config_read_token(const struct fleet_config *c, char *out, size_t cap,
				  struct fleet_errctx *ec)
{
	/* A secret: owned by this user (as before: not even root's), no access
	 * for group or others, read from the descriptor just checked into a
	 * buffer that is wiped (docs/files.md). */
	static const struct fleet_file_policy policy = {
		.what = "the NetBox token file",
		.max_size = FLEET_CONFIG_TOKEN_MAX,
		.owners = FLEET_FILE_OWNER_EUID,
		.forbid = 077,
		.secret = true,
	};
	const char *p = c->netbox_token_file;
	struct fleet_buf b;
	if (cap)
		out[0] = '\0';
	fb_init(&b);
	/* As the reader says it: UNSAFE for a file that breaks a rule,
	 * NOT_FOUND, TOO_LARGE, IO (lib/file_read.h), its reason and errno. */
	fleet_err e = fleet_file_read(AT_FDCWD, p, &policy, &b, ec);
	if (e != FLEET_OK)
		return e;
	size_t s = 0, n = b.len;
	while (s < n && token_space(b.data[s]))
		s++;
	while (n > s && token_space(b.data[n - 1]))
		n--;
	if (n == s || n - s >= cap) {
		e = fleet_errctx_msg(ec, FLEET_E_MALFORMED,
				     "the NetBox token file %s is empty or too long", p);
	} else if (!fleet_ascii_printable(b.data + s, n - s, 0)) {
		e = fleet_errctx_msg(ec, FLEET_E_MALFORMED,
				     "the NetBox token file %s holds more than one token "
				     "(white space or a control character inside)",
				     p);
	} else {
		memcpy(out, b.data + s, n - s);
		out[n - s] = '\0';
	}
	fb_free(&b); /* a secret buffer: wiped */
	return e;
}

fleet_err fleet_config_check_files(const struct fleet_config *c, struct fleet_errctx *ec)
{
	if (c->inventory != FLEET_INVENTORY_NETBOX)
		return FLEET_OK;
	char token[FLEET_CONFIG_TOKEN_MAX + 1];
	fleet_err e = fleet_config_read_token(c, token, sizeof(token), ec);
	OPENSSL_cleanse(token, sizeof(token));
	return e;
}

const char *fleet_config_profile_for(const struct fleet_config *c, const char *class_name)
{
	for (size_t i = 0; class_name && i < c->n_classes; i++)
		if (!strcmp(c->classes[i].name, class_name))
			return c->classes[i].profile;
	return NULL;
}
