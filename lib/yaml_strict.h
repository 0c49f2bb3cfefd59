/*
 * yaml_strict.h: the strict YAML reading every YAML file fleetd reads
 * shares: the daemon's configuration and the nodes file (fleetd/), the
 * boot-policy profiles (policy/profile.c).
 *
 * One document only, a size cap before parsing, every node reached once (so
 * aliases are refused), no explicit tags, every mapping's keys known and
 * none twice. Every refusal names a 1-based line and column and never
 * quotes more than a short, printable rendering of the input.
 *
 * A refusal is told in the one error context (lib/fleet_err.h): ec->err
 * its code, ec->detail the sentence, ec->line and ec->column where in the
 * file (both 0 when the refusal has no place in it: too large, no input,
 * a rule over the whole file).
 */
#ifndef FLEET_YAML_STRICT_H
#define FLEET_YAML_STRICT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <yaml.h>

#include "lib/fleet_err.h"

struct fleet_yaml {
	yaml_document_t doc;
	yaml_node_t *root;
	unsigned char *used; /* one flag per node: reached already */
	size_t n_nodes;
	struct fleet_errctx *ec; /* where refusals go (may be NULL) */
	bool loaded;
};

/* Parse buf (at most max bytes) as exactly one YAML document with a root
 * node; refusals, now and later through y, go in ec (may be NULL), which
 * must outlive y. On failure y needs no fleet_yaml_free. Of the refusals
 * here, only "%s is empty" (no document at all) is FLEET_E_MALFORMED with
 * line 0: a caller that words that case its own way can tell it by that. */
fleet_err fleet_yaml_load(struct fleet_yaml *y, const uint8_t *buf, size_t len, size_t max,
			  const char *what, struct fleet_errctx *ec);
void fleet_yaml_free(struct fleet_yaml *y);

/* Record a refusal at mark m (NULL: no place: line and column 0) in y's
 * context and return e. */
fleet_err fleet_yaml_fail(struct fleet_yaml *y, fleet_err e, const yaml_mark_t *m,
			  const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Reach node idx (from a parent at mark `from`); refuses a node reached
 * twice (an alias), a dangling index and explicit tags. */
fleet_err fleet_yaml_reach(struct fleet_yaml *y, int idx, const yaml_mark_t *from,
			   yaml_node_t **out);

/* Check a node's type, naming `what` in the refusal. */
fleet_err fleet_yaml_want(struct fleet_yaml *y, const yaml_node_t *n, yaml_node_type_t t,
			  const char *what);

/* A mapping's keys: each a scalar, each in known[], none twice. vals[k]
 * gets the value node of known[k] (0 when absent), marks[k] its key's mark. */
fleet_err fleet_yaml_keys(struct fleet_yaml *y, const yaml_node_t *map, const char *const *known,
			  size_t n_known, int *vals, yaml_mark_t *marks);

/* A scalar as a NUL-terminated string of 0..cap-1 bytes. Refuses a
 * non-scalar, longer text and any byte outside printable ASCII (these
 * strings reach logs, JSON and NetBox); `what` names the field. */
fleet_err fleet_yaml_str(struct fleet_yaml *y, const yaml_node_t *n, const char *what,
			 char *out, size_t cap);

/* A plain `true` or `false` (a quoted "true" is a string to YAML). */
fleet_err fleet_yaml_bool(struct fleet_yaml *y, const yaml_node_t *n, const char *what,
			  bool *out);

/* A plain decimal integer in [min, max]: no sign, no leading zero (YAML 1.1
 * reads 010 as octal), no underscores or exponents. */
fleet_err fleet_yaml_uint(struct fleet_yaml *y, const yaml_node_t *n, const char *what,
			  uint64_t min, uint64_t max, uint64_t *out);

/* A scalar from the file, made safe to print (lib/sanitize.h): at most 40
 * characters and within out, "[+N]" when cut ("" for a non-scalar). */
const char *fleet_yaml_printable(const yaml_node_t *n, char out[48]);

/* True when n is a scalar equal to s. */
bool fleet_yaml_is(const yaml_node_t *n, const char *s);
bool fleet_yaml_is_plain(const yaml_node_t *n);

/* "line 12, column 3: unknown key 'x'" (or the sentence alone, with the
 * system's reason after it when ec holds an errno: fleet_errctx_text). */
void fleet_yaml_error_format(const struct fleet_errctx *ec, char *out, size_t outlen);

#endif
