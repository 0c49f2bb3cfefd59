/*
 * applier_config.c: the --config file and the templates (applier_config.h).
 */
#include "spire-server-fleet-entries/applier_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/hex.h"
#include "lib/sanitize.h"

static const char *const default_selectors[] = {"tpm:pub_hash:{ek_hash}"};
static const char *const default_agent_ids[] = {
	"spiffe://{trust_domain}/spire/agent/tpm_devid/{ldevid_sha1}",
	"spiffe://{trust_domain}/spire/agent/tpm/{ek_hash}",
};

void ac_defaults(struct applier_config *c)
{
	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < sizeof(default_selectors) / sizeof(*default_selectors); i++)
		snprintf(c->selector[c->n_selector++], AC_TEMPLATE_MAX + 1, "%s",
			 default_selectors[i]);
	for (size_t i = 0; i < sizeof(default_agent_ids) / sizeof(*default_agent_ids); i++)
		snprintf(c->agent_id[c->n_agent_id++], AC_TEMPLATE_MAX + 1, "%s",
			 default_agent_ids[i]);
	c->timeout_seconds = 60;
	c->per_ek = 1;
}

int ac_uses(const char *tmpl, const char *placeholder)
{
	return strstr(tmpl, placeholder) != NULL;
}

/* Literal text is printable ASCII without spaces; placeholders are the
 * allowed ones, each at most once. Returns NULL or the rule broken. */
static const char *template_rule(const char *t, int agent)
{
	static const char *const names[] = {"{name}", "{ek_hash}", "{trust_domain}",
					    "{ldevid_sha1}"};
	size_t allowed = agent ? 4 : 3;
	int seen[4] = {0};
	for (const char *p = t; *p;) {
		if (*p == '{') {
			size_t i;
			for (i = 0; i < allowed; i++)
				if (!strncmp(p, names[i], strlen(names[i])))
					break;
			if (i == allowed)
				return "an unknown placeholder";
			if (seen[i]++)
				return "a placeholder used twice";
			p += strlen(names[i]);
			continue;
		}
		if (*p == '}' || !fleet_ascii_printable(p, 1, 0))
			return "a space, a control byte, a stray '}' or a non-ASCII byte";
		p++;
	}
	if (seen[1] && seen[3])
		return "both {ek_hash} and {ldevid_sha1}";
	return NULL;
}

static fleet_err add_template(struct applier_config *c, int agent, const char *val, int line,
			      int *replaced, struct fleet_errctx *ec)
{
	const char *key = agent ? "agent_id" : "selector";
	const char *rule = template_rule(val, agent);
	if (rule)
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "line %d: %s has %s", line, key,
					rule);
	if (strlen(val) > AC_TEMPLATE_MAX)
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
					"line %d: %s is longer than %d bytes", line, key,
					AC_TEMPLATE_MAX);
	if (agent) {
		if (strncmp(val, "spiffe://{trust_domain}/spire/agent/", 36) != 0 ||
		    strlen(val) == 36)
			return fleet_errctx_msg(
				ec, FLEET_E_MALFORMED,
				"line %d: agent_id must start with "
				"spiffe://{trust_domain}/spire/agent/ (SPIRE bans only "
				"agents of its own trust domain)",
				line);
	} else {
		const char *colon = strchr(val, ':');
		if (!colon || colon == val || !colon[1])
			return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
						"line %d: selector must be type:value, as "
						"spire-server entry create -selector takes it",
						line);
	}
	char (*list)[AC_TEMPLATE_MAX + 1] = agent ? c->agent_id : c->selector;
	size_t *n = agent ? &c->n_agent_id : &c->n_selector;
	if (!*replaced) {
		*n = 0;
		*replaced = 1;
	}
	if (*n == AC_MAX_TEMPLATES)
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "line %d: more than %d %s lines",
					line, AC_MAX_TEMPLATES, key);
	for (size_t i = 0; i < *n; i++)
		if (!strcmp(list[i], val))
			return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
						"line %d: this %s repeats an earlier one", line,
						key);
	memcpy(list[(*n)++], val, strlen(val) + 1);
	return FLEET_OK;
}

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
		s[--n] = '\0';
	return s;
}

fleet_err ac_parse(const char *text, size_t len, struct applier_config *c, struct fleet_errctx *ec)
{
	if (len > AC_MAX_CONFIG)
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
					"the configuration has %zu bytes, more than %u", len,
					AC_MAX_CONFIG);
	if (memchr(text, '\0', len))
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
					"the configuration holds a NUL byte");
	char *copy = malloc(len + 1);
	if (!copy)
		return fleet_errctx_msg(ec, FLEET_E_NOMEM, "out of memory");
	memcpy(copy, text, len);
	copy[len] = '\0';
	int sel_replaced = 0, agent_replaced = 0, timeout_seen = 0, line = 0;
	fleet_err e = FLEET_OK;
	char *save = NULL;
	for (char *p = copy; p && !e; p = save) {
		char *nl = strchr(p, '\n');
		save = nl ? nl + 1 : NULL;
		if (nl)
			*nl = '\0';
		line++;
		char *s = trim(p);
		if (!*s || *s == '#')
			continue;
		char *eq = strchr(s, '=');
		if (!eq) {
			e = fleet_errctx_msg(ec, FLEET_E_MALFORMED, "line %d: not key = value",
					     line);
			break;
		}
		*eq = '\0';
		char *key = trim(s), *val = trim(eq + 1);
		if (!strcmp(key, "selector")) {
			e = add_template(c, 0, val, line, &sel_replaced, ec);
		} else if (!strcmp(key, "agent_id")) {
			e = add_template(c, 1, val, line, &agent_replaced, ec);
		} else if (!strcmp(key, "timeout_seconds")) {
			char *end;
			long t = strtol(val, &end, 10);
			if (timeout_seen++)
				e = fleet_errctx_msg(ec, FLEET_E_MALFORMED,
						     "line %d: timeout_seconds given twice", line);
			else if (!*val || *end || t < 1 || t > 3600)
				e = fleet_errctx_msg(ec, FLEET_E_MALFORMED,
						     "line %d: timeout_seconds must be 1 to 3600",
						     line);
			else
				c->timeout_seconds = (int)t;
		} else {
			e = fleet_errctx_msg(ec, FLEET_E_MALFORMED,
					     "line %d: unknown key (selector, agent_id and "
					     "timeout_seconds are known)",
					     line);
		}
	}
	free(copy);
	if (e)
		return e;
	int specific = 0;
	c->per_ek = 0;
	for (size_t i = 0; i < c->n_selector; i++) {
		if (ac_uses(c->selector[i], "{ek_hash}"))
			c->per_ek = 1;
		if (ac_uses(c->selector[i], "{ek_hash}") || ac_uses(c->selector[i], "{name}"))
			specific = 1;
	}
	if (!specific)
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
					"no selector uses {ek_hash} or {name}: every node "
					"entry would match every agent");
	return FLEET_OK;
}

fleet_err ac_expand(const char *tmpl, const struct ac_vars *v, char *out, size_t outlen)
{
	size_t o = 0;
	for (const char *p = tmpl; *p;) {
		const char *val = NULL;
		size_t skip = 0;
		if (*p == '{') {
			if (!strncmp(p, "{name}", 6))
				val = v->name, skip = 6;
			else if (!strncmp(p, "{ek_hash}", 9))
				val = v->ek_hash, skip = 9;
			else if (!strncmp(p, "{trust_domain}", 14))
				val = v->trust_domain, skip = 14;
			else if (!strncmp(p, "{ldevid_sha1}", 13))
				val = v->ldevid_sha1, skip = 13;
			if (!skip || !val)
				return FLEET_E_INVALID_ARG;
		}
		const char *src = skip ? val : p;
		size_t n = skip ? strlen(val) : 1;
		if (o + n >= outlen)
			return FLEET_E_TOO_LARGE;
		memcpy(out + o, src, n);
		o += n;
		p += skip ? skip : 1;
	}
	out[o] = '\0';
	return FLEET_OK;
}

int ac_match_ek(const char *tmpl, const struct ac_vars *v, const char *s, char *ek)
{
	const char *ph = strstr(tmpl, "{ek_hash}");
	if (!ph)
		return 0;
	char pre[AC_TEMPLATE_MAX + 1], post[AC_TEMPLATE_MAX + 1];
	char pre_x[512], post_x[512];
	size_t pl = (size_t)(ph - tmpl);
	memcpy(pre, tmpl, pl);
	pre[pl] = '\0';
	snprintf(post, sizeof(post), "%s", ph + 9);
	struct ac_vars w = *v;
	w.ek_hash = NULL;
	if (ac_expand(pre, &w, pre_x, sizeof(pre_x)) || ac_expand(post, &w, post_x, sizeof(post_x)))
		return 0;
	size_t a = strlen(pre_x), b = strlen(post_x), n = strlen(s);
	if (n != a + 64 + b || strncmp(s, pre_x, a) || strcmp(s + a + 64, post_x))
		return 0;
	memcpy(ek, s + a, 64);
	ek[64] = '\0';
	return fleet_hex_is_lower(ek, 64);
}
