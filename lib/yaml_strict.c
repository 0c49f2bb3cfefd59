/*
 * yaml_strict.c: strict YAML for the files fleetd reads (see yaml_strict.h).
 */
#include "lib/yaml_strict.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/sanitize.h"

const char *fleet_yaml_printable(const yaml_node_t *n, char out[48])
{
	size_t len = n->type == YAML_SCALAR_NODE ? n->data.scalar.length : 0;
	return fleet_sanitize(len ? n->data.scalar.value : NULL, len, out, 48, 40);
}

/* Where in the file a refusal just recorded in ec was: m, 1-based (the
 * library's setters leave line and column 0). Kept as a helper: it places
 * the refusal, which no setter does. */
static fleet_err at(struct fleet_errctx *ec, const yaml_mark_t *m, fleet_err e)
{
	if (ec && m) {
		ec->line = (unsigned)m->line + 1;
		ec->column = (unsigned)m->column + 1;
	}
	return e;
}

fleet_err fleet_yaml_fail(struct fleet_yaml *y, fleet_err e, const yaml_mark_t *m,
			  const char *fmt, ...)
{
	if (!y->ec)
		return e;
	char msg[sizeof(y->ec->detail)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fleet_errctx_msg(y->ec, e, "%s", msg);
	return at(y->ec, m, e);
}

fleet_err fleet_yaml_load(struct fleet_yaml *y, const uint8_t *buf, size_t len, size_t max,
			  const char *what, struct fleet_errctx *ec)
{
	memset(y, 0, sizeof(*y));
	y->ec = ec;
	if (ec)
		memset(ec, 0, sizeof(*ec));
	if (!buf && len)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG, "no input");
	if (len > max)
		return fleet_errctx_msg(ec, FLEET_E_TOO_LARGE, "%s is %zu bytes, at most %zu", what,
					len, max);
	yaml_parser_t parser;
	if (!yaml_parser_initialize(&parser))
		return fleet_errctx_msg(ec, FLEET_E_NOMEM, "out of memory");
	yaml_parser_set_input_string(&parser, buf ? buf : (const uint8_t *)"", len);
	if (!yaml_parser_load(&parser, &y->doc)) {
		yaml_mark_t m = parser.problem_mark;
		fleet_err e = parser.error == YAML_MEMORY_ERROR ? FLEET_E_NOMEM : FLEET_E_MALFORMED;
		fleet_errctx_msg(ec, e, "bad YAML: %s%s%s",
				 parser.problem ? parser.problem : "error", parser.context ? " " : "",
				 parser.context ? parser.context : "");
		at(ec, &m, e);
		yaml_parser_delete(&parser);
		return e;
	}
	fleet_err e = FLEET_OK;
	y->root = yaml_document_get_root_node(&y->doc);
	if (!y->root) {
		e = fleet_errctx_msg(ec, FLEET_E_MALFORMED, "%s is empty", what);
		goto out;
	}
	/* A second document would be ignored here and read by another tool. */
	yaml_document_t next;
	if (!yaml_parser_load(&parser, &next)) {
		yaml_mark_t m = parser.problem_mark;
		e = at(ec, &m,
		       fleet_errctx_msg(ec, FLEET_E_MALFORMED, "bad YAML: %s",
					parser.problem ? parser.problem : "error"));
		goto out;
	}
	bool second = yaml_document_get_root_node(&next) != NULL;
	yaml_mark_t second_mark = next.start_mark;
	yaml_document_delete(&next);
	if (second) {
		e = at(ec, &second_mark,
		       fleet_errctx_msg(ec, FLEET_E_MALFORMED,
					"%s is one YAML document, this file has more", what));
		goto out;
	}
	y->n_nodes = (size_t)(y->doc.nodes.top - y->doc.nodes.start);
	if (!(y->used = calloc(y->n_nodes ? y->n_nodes : 1, 1))) {
		e = fleet_errctx_msg(ec, FLEET_E_NOMEM, "out of memory");
		goto out;
	}
	yaml_node_t *root;
	e = fleet_yaml_reach(y, 1, &y->root->start_mark, &root);
out:
	yaml_parser_delete(&parser);
	if (e) {
		free(y->used);
		yaml_document_delete(&y->doc);
		memset(y, 0, sizeof(*y));
		return e;
	}
	y->ec = ec;
	y->loaded = true;
	return FLEET_OK;
}

void fleet_yaml_free(struct fleet_yaml *y)
{
	if (!y || !y->loaded)
		return;
	free(y->used);
	yaml_document_delete(&y->doc);
	memset(y, 0, sizeof(*y));
}

fleet_err fleet_yaml_reach(struct fleet_yaml *y, int idx, const yaml_mark_t *from,
			   yaml_node_t **out)
{
	yaml_node_t *n = yaml_document_get_node(&y->doc, idx);
	if (!n || idx < 1 || (size_t)idx > y->n_nodes)
		return fleet_yaml_fail(y, FLEET_E_MALFORMED, from, "dangling YAML node");
	if (y->used[idx - 1])
		return fleet_yaml_fail(y, FLEET_E_MALFORMED, from, "YAML aliases are not allowed");
	y->used[idx - 1] = 1;
	const char *want = n->type == YAML_SCALAR_NODE     ? YAML_DEFAULT_SCALAR_TAG
			   : n->type == YAML_SEQUENCE_NODE ? YAML_DEFAULT_SEQUENCE_TAG
							   : YAML_DEFAULT_MAPPING_TAG;
	/* An explicit tag (!!int, !!binary, !custom) changes what a value means
	 * to other YAML readers; these files have one meaning only. */
	if (!n->tag || strcmp((const char *)n->tag, want) != 0)
		return fleet_yaml_fail(y, FLEET_E_MALFORMED, &n->start_mark,
				       "explicit YAML tags are not allowed");
	*out = n;
	return FLEET_OK;
}

fleet_err fleet_yaml_want(struct fleet_yaml *y, const yaml_node_t *n, yaml_node_type_t t,
			  const char *what)
{
	static const char *const names[] = {"nothing", "a scalar", "a list", "a mapping"};
	if (n->type == t)
		return FLEET_OK;
	return fleet_yaml_fail(y, FLEET_E_MALFORMED, &n->start_mark, "%s must be %s", what,
			       names[t <= YAML_MAPPING_NODE ? t : 0]);
}

bool fleet_yaml_is(const yaml_node_t *n, const char *s)
{
	size_t l = strlen(s);
	return n->type == YAML_SCALAR_NODE && n->data.scalar.length == l &&
	       memcmp(n->data.scalar.value, s, l) == 0;
}

bool fleet_yaml_is_plain(const yaml_node_t *n)
{
	return n->type == YAML_SCALAR_NODE && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

fleet_err fleet_yaml_keys(struct fleet_yaml *y, const yaml_node_t *map, const char *const *known,
			  size_t n_known, int *vals, yaml_mark_t *marks)
{
	for (size_t k = 0; k < n_known; k++) {
		vals[k] = 0;
		memset(&marks[k], 0, sizeof(marks[k]));
	}
	for (yaml_node_pair_t *pr = map->data.mapping.pairs.start;
	     pr < map->data.mapping.pairs.top; pr++) {
		yaml_node_t *key;
		fleet_err e = fleet_yaml_reach(y, pr->key, &map->start_mark, &key);
		if (e)
			return e;
		if (key->type != YAML_SCALAR_NODE)
			return fleet_yaml_fail(y, FLEET_E_MALFORMED, &key->start_mark,
					       "a key must be a scalar");
		size_t k;
		for (k = 0; k < n_known; k++)
			if (fleet_yaml_is(key, known[k]))
				break;
		char pb[48];
		if (k == n_known)
			return fleet_yaml_fail(y, FLEET_E_MALFORMED, &key->start_mark,
					       "unknown key '%s'", fleet_yaml_printable(key, pb));
		if (vals[k])
			return fleet_yaml_fail(y, FLEET_E_MALFORMED, &key->start_mark,
					       "duplicate key '%s'", known[k]);
		vals[k] = pr->value;
		marks[k] = key->start_mark;
	}
	return FLEET_OK;
}

fleet_err fleet_yaml_str(struct fleet_yaml *y, const yaml_node_t *n, const char *what,
			 char *out, size_t cap)
{
	fleet_err e = fleet_yaml_want(y, n, YAML_SCALAR_NODE, what);
	if (e)
		return e;
	size_t len = n->data.scalar.length;
	if (len >= cap)
		return fleet_yaml_fail(y, FLEET_E_MALFORMED, &n->start_mark,
				       "%s is %zu characters, at most %zu", what, len, cap - 1);
	if (!fleet_ascii_printable(n->data.scalar.value, len, FLEET_ASCII_SPACE))
		return fleet_yaml_fail(y, FLEET_E_MALFORMED, &n->start_mark,
				       "%s may hold printable ASCII only", what);
	memcpy(out, n->data.scalar.value, len);
	out[len] = '\0';
	return FLEET_OK;
}

fleet_err fleet_yaml_bool(struct fleet_yaml *y, const yaml_node_t *n, const char *what,
			  bool *out)
{
	if (fleet_yaml_is_plain(n) && fleet_yaml_is(n, "true"))
		*out = true;
	else if (fleet_yaml_is_plain(n) && fleet_yaml_is(n, "false"))
		*out = false;
	else
		return fleet_yaml_fail(y, FLEET_E_MALFORMED, &n->start_mark,
				       "%s must be true or false (unquoted)", what);
	return FLEET_OK;
}

fleet_err fleet_yaml_uint(struct fleet_yaml *y, const yaml_node_t *n, const char *what,
			  uint64_t min, uint64_t max, uint64_t *out)
{
	if (!fleet_yaml_is_plain(n))
		return fleet_yaml_fail(y, FLEET_E_MALFORMED, &n->start_mark,
				       "%s must be an unquoted number", what);
	size_t len = n->data.scalar.length;
	const unsigned char *s = n->data.scalar.value;
	bool ok = len >= 1 && len <= 19 && !(len > 1 && s[0] == '0');
	uint64_t v = 0;
	for (size_t i = 0; ok && i < len; i++) {
		ok = s[i] >= '0' && s[i] <= '9';
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (!ok || v < min || v > max)
		return fleet_yaml_fail(y, FLEET_E_MALFORMED, &n->start_mark,
				       "%s must be a whole number from %llu to %llu", what,
				       (unsigned long long)min, (unsigned long long)max);
	*out = v;
	return FLEET_OK;
}

void fleet_yaml_error_format(const struct fleet_errctx *ec, char *out, size_t outlen)
{
	char text[sizeof(ec->detail) + sizeof(ec->ossl) + 80];
	fleet_errctx_text(ec, text, sizeof(text));
	if (ec->line)
		snprintf(out, outlen, "line %u, column %u: %s", ec->line, ec->column, text);
	else
		snprintf(out, outlen, "%s", text);
}
