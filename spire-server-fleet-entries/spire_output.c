/*
 * spire_output.c: reading the SPIRE CLI's JSON (spire_output.h).
 *
 * The CLI runs as root beside the server and is trusted to say what the
 * server holds, but its bytes are still read with caps: a wrong shape is a
 * refusal, never a guess, because a guess here becomes a deletion.
 */
#include "spire-server-fleet-entries/spire_output.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/sanitize.h"

static int printable(const char *s, size_t n)
{
	return fleet_ascii_printable(s, n, FLEET_ASCII_SPACE | FLEET_ASCII_8BIT);
}

/* A string field of o, printable and at most SP_ID_MAX bytes, else NULL. */
static const char *str_field(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_string(v) || json_string_length(v) > SP_ID_MAX ||
	    !printable(json_string_value(v), json_string_length(v)))
		return NULL;
	return json_string_value(v);
}

/* SPIFFEID {"trust_domain", "path"} to "spiffe://td/path"; NULL if absent
 * (a node entry's parent is always set) or malformed. */
static char *spiffe_id(json_t *o)
{
	if (!json_is_object(o))
		return NULL;
	const char *td = str_field(o, "trust_domain"), *path = str_field(o, "path");
	if (!td || !path || !*td || (*path && *path != '/'))
		return NULL;
	size_t n = strlen("spiffe://") + strlen(td) + strlen(path) + 1;
	char *s = malloc(n);
	if (s)
		snprintf(s, n, "spiffe://%s%s", td, path);
	return s;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void entry_free(struct sp_entry *e)
{
	free(e->id);
	free(e->spiffe_id);
	free(e->parent_id);
	for (size_t i = 0; i < e->n_selectors; i++)
		free(e->selectors[i]);
	free(e->selectors);
	memset(e, 0, sizeof(*e));
}

/* selectors [{"type", "value"}] to sorted "type:value" strings; what and
 * idx name the owner in a refusal. */
static fleet_err get_selectors(json_t *sel, size_t max, const char *what, size_t idx, char ***out,
			       size_t *n, struct fleet_errctx *ec)
{
	if (!json_is_array(sel) || json_array_size(sel) > max)
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
					"%s %zu: selectors is not an array of at most %zu", what,
					idx, max);
	*out = calloc(json_array_size(sel) + 1, sizeof(char *));
	if (!*out)
		return fleet_errctx_msg(ec, FLEET_E_NOMEM, "out of memory");
	for (size_t i = 0; i < json_array_size(sel); i++) {
		json_t *s = json_array_get(sel, i);
		const char *t = json_is_object(s) ? str_field(s, "type") : NULL;
		const char *v = json_is_object(s) ? str_field(s, "value") : NULL;
		if (!t || !v)
			return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
						"%s %zu: selector %zu lacks type or value", what,
						idx, i);
		size_t len = strlen(t) + strlen(v) + 2;
		if (!((*out)[i] = malloc(len)))
			return fleet_errctx_msg(ec, FLEET_E_NOMEM, "out of memory");
		snprintf((*out)[i], len, "%s:%s", t, v);
		*n = i + 1;
	}
	qsort(*out, *n, sizeof(char *), cmp_str);
	return FLEET_OK;
}

static fleet_err get_entry(json_t *o, size_t idx, struct sp_entry *e, struct fleet_errctx *ec)
{
	e->id = strdup(str_field(o, "id"));
	e->spiffe_id = spiffe_id(json_object_get(o, "spiffe_id"));
	e->parent_id = spiffe_id(json_object_get(o, "parent_id"));
	if (!e->id || !e->spiffe_id || !e->parent_id)
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
					"entry %zu (ours by its ID) lacks a well-formed "
					"spiffe_id or parent_id",
					idx);
	fleet_err r = get_selectors(json_object_get(o, "selectors"), SP_MAX_SELECTORS, "entry", idx,
				    &e->selectors, &e->n_selectors, ec);
	if (r)
		return r;
	json_t *admin = json_object_get(o, "admin"), *down = json_object_get(o, "downstream");
	e->admin = json_is_true(admin);
	e->downstream = json_is_true(down);
	return FLEET_OK;
}

fleet_err sp_parse_entries(const uint8_t *buf, size_t len, struct sp_entries *out,
			   struct fleet_errctx *ec)
{
	memset(out, 0, sizeof(*out));
	if (len > SP_MAX_OUTPUT)
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
					"entry show printed %zu bytes, more than %u", len,
					SP_MAX_OUTPUT);
	json_error_t jerr;
	json_t *root = json_loadb((const char *)buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
					"entry show did not print JSON (line %d column %d)",
					jerr.line, jerr.column);
	fleet_err e = FLEET_E_MALFORMED;
	json_t *entries = json_object_get(root, "entries");
	json_t *tok = json_object_get(root, "next_page_token");
	if (!json_is_object(root) || !json_is_array(entries)) {
		fleet_errctx_msg(ec, FLEET_E_MALFORMED, "entry show printed no \"entries\" array");
		goto out;
	}
	if (tok && (!json_is_string(tok) || json_string_length(tok) != 0)) {
		fleet_errctx_msg(
			ec, FLEET_E_MALFORMED,
			"entry show printed a next_page_token: the list is one page, "
			"not all entries, and deciding from it could delete what is not seen");
		goto out;
	}
	size_t n = json_array_size(entries);
	if (n > SP_MAX_ENTRIES) {
		fleet_errctx_msg(ec, FLEET_E_MALFORMED,
				 "entry show listed %zu entries, more than %d", n, SP_MAX_ENTRIES);
		goto out;
	}
	out->n_total = n;
	out->e = calloc(n ? n : 1, sizeof(*out->e));
	if (!out->e) {
		e = fleet_errctx_msg(ec, FLEET_E_NOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		json_t *o = json_array_get(entries, i);
		const char *id = json_is_object(o) ? str_field(o, "id") : NULL;
		if (!id || !*id) {
			fleet_errctx_msg(ec, FLEET_E_MALFORMED, "entry %zu has no id", i);
			goto out;
		}
		if (strncmp(id, SP_FLEET_PREFIX, strlen(SP_FLEET_PREFIX)) != 0)
			continue; /* not ours: never read further, never touched */
		for (size_t j = 0; j < out->n; j++)
			if (!strcmp(out->e[j].id, id)) {
				fleet_errctx_msg(ec, FLEET_E_MALFORMED,
						 "entry %zu repeats the ID of an earlier one", i);
				goto out;
			}
		struct sp_entry *en = &out->e[out->n++];
		if ((e = get_entry(o, i, en, ec)))
			goto out;
		e = FLEET_E_MALFORMED;
	}
	e = FLEET_OK;
out:
	json_decref(root);
	if (e)
		sp_entries_free(out);
	return e;
}

void sp_entries_free(struct sp_entries *l)
{
	for (size_t i = 0; i < l->n; i++)
		entry_free(&l->e[i]);
	free(l->e);
	memset(l, 0, sizeof(*l));
}

fleet_err sp_parse_batch_result(const uint8_t *buf, size_t len, int *code, char *msg, size_t msglen,
				struct fleet_errctx *ec)
{
	if (len > (1u << 20))
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
					"the CLI printed %zu bytes for one entry", len);
	json_error_t jerr;
	json_t *root = json_loadb((const char *)buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
					"the CLI did not print JSON (line %d column %d)", jerr.line,
					jerr.column);
	fleet_err e = FLEET_E_MALFORMED;
	json_t *results = json_object_get(root, "results");
	if (!json_is_array(results) || json_array_size(results) != 1) {
		fleet_errctx_msg(ec, FLEET_E_MALFORMED,
				 "the CLI printed no \"results\" array of exactly one result");
		goto out;
	}
	json_t *st = json_object_get(json_array_get(results, 0), "status");
	json_t *c = json_object_get(st, "code");
	if (!json_is_object(st) || !json_is_integer(c) || json_integer_value(c) < 0 ||
	    json_integer_value(c) > 16) {
		fleet_errctx_msg(ec, FLEET_E_MALFORMED,
				 "the result has no status with a gRPC code (0 to 16)");
		goto out;
	}
	*code = (int)json_integer_value(c);
	const char *m = str_field(st, "message");
	snprintf(msg, msglen, "%s", m ? m : "");
	e = FLEET_OK;
out:
	json_decref(root);
	return e;
}

const char *sp_code_name(int code)
{
	static const char *const names[] = {
		"OK",           "Canceled",          "Unknown",        "InvalidArgument",
		"DeadlineExceeded", "NotFound",      "AlreadyExists",  "PermissionDenied",
		"ResourceExhausted", "FailedPrecondition", "Aborted",  "OutOfRange",
		"Unimplemented", "Internal",         "Unavailable",    "DataLoss",
		"Unauthenticated",
	};
	return code >= 0 && code <= 16 ? names[code] : "?";
}

int sp_ban_said_not_found(const uint8_t *err, size_t len)
{
	static const char needle[] = "code = NotFound desc = agent not found";
	size_t n = sizeof(needle) - 1;
	for (size_t i = 0; i + n <= len; i++)
		if (!memcmp(err + i, needle, n))
			return 1;
	return 0;
}

static void agent_free(struct sp_agent *a)
{
	free(a->id);
	free(a->attestation_type);
	for (size_t i = 0; i < a->n_selectors; i++)
		free(a->selectors[i]);
	free(a->selectors);
	memset(a, 0, sizeof(*a));
}

void sp_agents_free(struct sp_agents *l)
{
	for (size_t i = 0; i < l->n; i++)
		agent_free(&l->a[i]);
	free(l->a);
	memset(l, 0, sizeof(*l));
}

static int cmp_agent_id(const void *a, const void *b)
{
	return strcmp(((const struct sp_agent *)a)->id, ((const struct sp_agent *)b)->id);
}

static fleet_err get_agent(json_t *o, size_t idx, struct sp_agent *a, struct fleet_errctx *ec)
{
	static const char agent_path[] = "/spire/agent/";
	json_t *id = json_is_object(o) ? json_object_get(o, "id") : NULL;
	const char *path = json_is_object(id) ? str_field(id, "path") : NULL;
	if (!path || strncmp(path, agent_path, sizeof(agent_path) - 1) ||
	    !path[sizeof(agent_path) - 1] || !(a->id = spiffe_id(id)))
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
					"agent %zu lacks a well-formed id under /spire/agent/",
					idx);
	const char *at = str_field(o, "attestation_type");
	json_t *banned = json_object_get(o, "banned");
	if (!at || !json_is_boolean(banned))
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
					"agent %zu lacks attestation_type or banned", idx);
	if (!(a->attestation_type = strdup(at)))
		return fleet_errctx_msg(ec, FLEET_E_NOMEM, "out of memory");
	a->banned = json_is_true(banned);
	return get_selectors(json_object_get(o, "selectors"), SP_MAX_AGENT_SELECTORS, "agent", idx,
			     &a->selectors, &a->n_selectors, ec);
}

fleet_err sp_parse_agents(const uint8_t *buf, size_t len, struct sp_agents *out,
			  struct fleet_errctx *ec)
{
	memset(out, 0, sizeof(*out));
	if (len > SP_MAX_OUTPUT)
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
					"agent list printed %zu bytes, more than %u", len,
					SP_MAX_OUTPUT);
	json_error_t jerr;
	json_t *root = json_loadb((const char *)buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
					"agent list did not print JSON (line %d column %d)",
					jerr.line, jerr.column);
	fleet_err e = FLEET_E_MALFORMED;
	json_t *agents = json_object_get(root, "agents");
	json_t *tok = json_object_get(root, "next_page_token");
	if (!json_is_object(root) || !json_is_array(agents)) {
		fleet_errctx_msg(ec, FLEET_E_MALFORMED, "agent list printed no \"agents\" array");
		goto out;
	}
	if (tok && (!json_is_string(tok) || json_string_length(tok) != 0)) {
		fleet_errctx_msg(
			ec, FLEET_E_MALFORMED,
			"agent list printed a next_page_token: the list is one page, "
			"not all agents, and a departing device's agent could be on another");
		goto out;
	}
	size_t n = json_array_size(agents);
	if (n > SP_MAX_AGENTS) {
		fleet_errctx_msg(ec, FLEET_E_MALFORMED,
				 "agent list listed %zu agents, more than %d", n, SP_MAX_AGENTS);
		goto out;
	}
	out->a = calloc(n ? n : 1, sizeof(*out->a));
	if (!out->a) {
		e = fleet_errctx_msg(ec, FLEET_E_NOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		struct sp_agent *a = &out->a[out->n++];
		if ((e = get_agent(json_array_get(agents, i), i, a, ec)))
			goto out;
		e = FLEET_E_MALFORMED;
	}
	qsort(out->a, out->n, sizeof(*out->a), cmp_agent_id);
	for (size_t i = 1; i < out->n; i++)
		if (!strcmp(out->a[i - 1].id, out->a[i].id)) {
			fleet_errctx_msg(ec, FLEET_E_MALFORMED,
					 "agent list lists one agent ID twice");
			goto out;
		}
	e = FLEET_OK;
out:
	json_decref(root);
	if (e)
		sp_agents_free(out);
	return e;
}

int sp_agent_has_selector(const struct sp_agent *a, const char *sel)
{
	return a->n_selectors &&
	       bsearch(&sel, a->selectors, a->n_selectors, sizeof(char *), cmp_str) != NULL;
}
