/*
 * json_view.h: a NetBox answer read once into a flat, read-only view (after
 * jsmn): one array of tokens in document order and one buffer of decoded
 * strings, two allocations per answer instead of jansson's one or more per
 * value. netbox.c reads every 200 answer through it; nothing here does I/O.
 *
 * The contract is jansson's json_loadb(..., JSON_REJECT_DUPLICATES) on the
 * same bytes, which fleetd used before and which tests/fuzz/
 * fuzz_netbox_answer.c checks this against, value by value:
 *
 *   J1  jv_parse accepts exactly what json_loadb(JSON_REJECT_DUPLICATES)
 *       accepts when the top level is an object or an array: RFC 8259 text,
 *       UTF-8 that is valid (no overlong forms, no surrogates, nothing past
 *       U+10FFFF), no control character inside a string, no \u0000, no lone
 *       surrogate escape, nothing but whitespace after the value, nesting at
 *       most JV_MAX_DEPTH deep, no object with two equal (decoded) keys.
 *       One deliberate difference: jansson 2.14 skips a NUL byte that
 *       follows a number or a literal ("[1\0]" parses: its stream_unget
 *       leaves a NUL that stream_get takes for "nothing buffered"); the
 *       view refuses every NUL outside a string, as RFC 8259 does.
 *       (test_json_view: refusals; fuzz_netbox_answer: the differential)
 *   J2  Numbers are typed as jansson types them: without '.', 'e' or 'E' an
 *       integer (int64; one out of range is refused, as jansson refuses
 *       it), else a real (strtod; one that overflows is refused, one that
 *       underflows is kept).
 *   J3  Strings are decoded (escapes resolved) and NUL-terminated; a key is
 *       a JV_STRING token followed by its value.
 *   J4  Duplicate keys are found in O(n log n) per object, never O(n^2):
 *       an object of 100,000 keys costs what sorting them costs.
 *       (test_json_view: test_many_keys)
 *   J5  A refusal leaves doc empty and names what was wrong in err; nothing
 *       of the input is kept after jv_free.
 *
 * Memory: the string buffer is len + 1 bytes, the tokens 24 bytes each, at
 * most one per two input bytes ("[0,0,...]"): an 8 MiB answer (netbox.c's
 * cap) costs at most 96 MiB, where jansson's tree of it took 160 (measured,
 * 2026-12-04); a NetBox device answer runs at about one token per 12 bytes.
 *
 * A token's index is stable for the life of the view; JV_NONE is "absent".
 */
#ifndef FLEET_JSON_VIEW_H
#define FLEET_JSON_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* jansson's JSON_PARSER_MAX_DEPTH: what parsed before parses now. */
#define JV_MAX_DEPTH 2048

enum jv_type {
	JV_ABSENT = 0, /* JV_NONE's type: a member that is not there */
	JV_NULL,
	JV_FALSE,
	JV_TRUE,
	JV_INT,
	JV_REAL,
	JV_STRING,
	JV_ARRAY,
	JV_OBJECT,
};

#define JV_NONE UINT32_MAX

struct jv_tok {
	uint32_t next; /* index of the token after this value (and its subtree) */
	uint32_t n;    /* ARRAY: elements; OBJECT: members; STRING: bytes */
	uint32_t off;  /* STRING: offset of its decoded bytes in jv_doc.str */
	uint8_t type;  /* enum jv_type */
	union {
		int64_t i; /* JV_INT */
		double d;  /* JV_REAL */
	} v;
};

struct jv_doc {
	struct jv_tok *tok;
	size_t ntok, cap;
	char *str; /* decoded strings, each followed by a NUL */
	size_t strlen;
};

enum jv_result {
	JV_OK = 0,
	JV_INVALID, /* not JSON jansson would accept (err says why) */
	JV_NOMEM,
};

struct jv_error {
	size_t offset; /* byte offset of the fault in the input */
	char text[80]; /* e.g. "duplicate object key" */
};

/* Read buf[len]; the top level must be an object or an array. */
enum jv_result jv_parse(struct jv_doc *doc, const char *buf, size_t len, struct jv_error *err);
void jv_free(struct jv_doc *doc);

static inline enum jv_type jv_type(const struct jv_doc *d, uint32_t i)
{
	return i == JV_NONE ? JV_ABSENT : (enum jv_type)d->tok[i].type;
}

/* The value of member key of object o; JV_NONE when o is not an object or
 * has no such member. Members are compared as decoded bytes. */
uint32_t jv_get(const struct jv_doc *d, uint32_t o, const char *key);

/* JV_STRING's decoded bytes (NUL-terminated; *len may be NULL), else NULL. */
const char *jv_str(const struct jv_doc *d, uint32_t i, size_t *len);

/* Elements and members: the first child of a container is i + 1 (for an
 * object, its first key; the key's value is key + 1), the one after child c
 * is d->tok[c].next (for an object, after the value: d->tok[key + 1].next). */
static inline uint32_t jv_count(const struct jv_doc *d, uint32_t i)
{
	enum jv_type t = jv_type(d, i);
	return t == JV_ARRAY || t == JV_OBJECT ? d->tok[i].n : 0;
}

#endif
