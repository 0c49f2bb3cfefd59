/*
 * json_view.c: a strict JSON reader into a flat token array (json_view.h).
 *
 * Why not jansson: a pass reads 50,000 devices, and jansson builds each one
 * as a tree of heap objects, a hash table per object and a copy per string;
 * half of the pass's CPU went there (docs/benchmark-pass.md). This reader
 * makes one token array and one string buffer per answer and finds members
 * by a short linear scan, which for NetBox's objects of a few dozen members
 * is cheaper than hashing every key on the way in.
 *
 * Why it must agree with jansson byte for byte on what it accepts: fleetd
 * refused what jansson refused, and a laxer reader would let NetBox (or
 * whoever answers in its place) smuggle a second value or a key twice past
 * the checks. The rules below cite the jansson 2.14 function each follows;
 * tests/fuzz/fuzz_netbox_answer.c holds the two to the same answer.
 *
 * Every read of the input is through the cursor s->p, checked against s->end
 * before it is dereferenced; the output buffers are sized from the input
 * length up front, so no length from the input reaches memcpy.
 */
#include "fleetd/inventory/json_view.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/hex.h"

struct scan {
	const unsigned char *p, *start, *end;
	struct jv_doc *doc;
	struct jv_error *err;
	uint32_t *keys; /* scratch for duplicate detection in big objects */
	size_t keys_cap;
};

static enum jv_result fail(struct scan *s, const char *text)
{
	if (s->err) {
		s->err->offset = (size_t)(s->p - s->start);
		snprintf(s->err->text, sizeof(s->err->text), "%s", text);
	}
	return JV_INVALID;
}

static void skip_ws(struct scan *s)
{
	while (s->p < s->end &&
	       (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
		s->p++;
}

/* A new token of type t; *idx gets its index. */
static enum jv_result push(struct scan *s, enum jv_type t, uint32_t *idx)
{
	struct jv_doc *d = s->doc;
	if (d->ntok == d->cap) {
		size_t ncap = d->cap * 2;
		struct jv_tok *nt = reallocarray(d->tok, ncap, sizeof(*nt));
		if (!nt)
			return JV_NOMEM;
		d->tok = nt;
		d->cap = ncap;
	}
	/* ntok < len < UINT32_MAX: every token starts at its own input byte */
	*idx = (uint32_t)d->ntok;
	struct jv_tok *k = &d->tok[d->ntok++];
	memset(k, 0, sizeof(*k));
	k->type = (uint8_t)t;
	k->next = *idx + 1;
	return JV_OK;
}

/* A \u escape and its four hex digits at p (p[0] == '\\', p[1] == 'u'),
 * within end: the code unit, or -1. */
static long unit(const unsigned char *p, const unsigned char *end)
{
	if (end - p < 6 || p[0] != '\\' || p[1] != 'u')
		return -1;
	long v = 0;
	for (int i = 2; i < 6; i++) {
		int h = fleet_hex_value((char)p[i]);
		if (h < 0)
			return -1;
		v = v * 16 + h;
	}
	return v;
}

static size_t put_utf8(char *o, unsigned long cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xC0 | (cp >> 6));
		o[1] = (char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xE0 | (cp >> 12));
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		o[2] = (char)(0x80 | (cp & 0x3F));
		return 3;
	}
	o[0] = (char)(0xF0 | (cp >> 18));
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
	o[3] = (char)(0x80 | (cp & 0x3F));
	return 4;
}

/*
 * The length of the UTF-8 sequence at p (p < end, *p >= 0x80) if it is
 * valid, else 0: jansson's utf8_check_first and utf8_check_full (no
 * overlong form, no surrogate, nothing past U+10FFFF).
 */
static size_t utf8_len(const unsigned char *p, const unsigned char *end)
{
	unsigned char c = p[0];
	size_t n;
	unsigned long cp;
	if (c >= 0xC2 && c <= 0xDF) {
		n = 2;
		cp = c & 0x1F;
	} else if (c >= 0xE0 && c <= 0xEF) {
		n = 3;
		cp = c & 0x0F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		n = 4;
		cp = c & 0x07;
	} else {
		return 0; /* a continuation byte, 0xC0/0xC1 (overlong), or 0xF5.. */
	}
	if ((size_t)(end - p) < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3F);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF ||
	    (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return n;
}

/*
 * The string at s->p (on its opening quote) as a JV_STRING token, decoded
 * into doc->str: jansson's lex_scan_string. Escapes: \" \\ \/ \b \f \n \r \t
 * and \u with four hex digits; a high surrogate only with a low one right
 * after it, never a low one alone, never \u0000; no byte below 0x20
 * unescaped.
 */
static enum jv_result scan_string(struct scan *s)
{
	struct jv_doc *d = s->doc;
	uint32_t idx;
	enum jv_result r = push(s, JV_STRING, &idx);
	if (r != JV_OK)
		return r;
	char *o = d->str + d->strlen, *o0 = o;
	s->p++; /* the quote */
	for (;;) {
		if (s->p >= s->end)
			return fail(s, "premature end of input");
		unsigned char c = *s->p;
		if (c == '"') {
			s->p++;
			break;
		}
		if (c < 0x20)
			return fail(s, "control character in a string");
		if (c >= 0x80) {
			size_t n = utf8_len(s->p, s->end);
			if (!n)
				return fail(s, "invalid UTF-8");
			memcpy(o, s->p, n);
			o += n;
			s->p += n;
			continue;
		}
		if (c != '\\') {
			*o++ = (char)c;
			s->p++;
			continue;
		}
		if (s->end - s->p < 2)
			return fail(s, "premature end of input");
		switch (s->p[1]) {
		case '"': *o++ = '"'; break;
		case '\\': *o++ = '\\'; break;
		case '/': *o++ = '/'; break;
		case 'b': *o++ = '\b'; break;
		case 'f': *o++ = '\f'; break;
		case 'n': *o++ = '\n'; break;
		case 'r': *o++ = '\r'; break;
		case 't': *o++ = '\t'; break;
		case 'u': {
			long u = unit(s->p, s->end), u2;
			unsigned long cp;
			if (u < 0)
				return fail(s, "invalid escape");
			if (u >= 0xD800 && u <= 0xDBFF) {
				u2 = unit(s->p + 6, s->end);
				if (u2 < 0xDC00 || u2 > 0xDFFF)
					return fail(s, "invalid Unicode: a lone high surrogate");
				cp = 0x10000 + (((unsigned long)u - 0xD800) << 10) +
				     ((unsigned long)u2 - 0xDC00);
				s->p += 6;
			} else if (u >= 0xDC00 && u <= 0xDFFF) {
				return fail(s, "invalid Unicode: a lone low surrogate");
			} else if (u == 0) {
				return fail(s, "\\u0000 is not allowed");
			} else {
				cp = (unsigned long)u;
			}
			o += put_utf8(o, cp);
			s->p += 6;
			continue;
		}
		default:
			return fail(s, "invalid escape");
		}
		s->p += 2;
	}
	/* decoded bytes + NUL <= source bytes with both quotes: str has room */
	*o = '\0';
	d->tok[idx].n = (uint32_t)(o - o0);
	d->tok[idx].off = (uint32_t)d->strlen;
	d->strlen += (size_t)(o - o0) + 1;
	return JV_OK;
}

/*
 * jansson's lex_scan_number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?;
 * an integer (no fraction, no exponent) must fit int64, a real must not
 * overflow strtod (an underflow is kept, as jsonp_strtod keeps it).
 */
static enum jv_result scan_number(struct scan *s)
{
	const unsigned char *b = s->p, *q = s->p;
	bool neg = false, real = false;
	if (q < s->end && *q == '-') {
		neg = true;
		q++;
	}
	if (q >= s->end || *q < '0' || *q > '9')
		return fail(s, "invalid token");
	if (*q == '0') {
		q++;
		if (q < s->end && *q >= '0' && *q <= '9')
			return fail(s, "invalid token");
	} else {
		while (q < s->end && *q >= '0' && *q <= '9')
			q++;
	}
	const unsigned char *int_end = q;
	if (q < s->end && *q == '.') {
		real = true;
		q++;
		if (q >= s->end || *q < '0' || *q > '9')
			return fail(s, "invalid token");
		while (q < s->end && *q >= '0' && *q <= '9')
			q++;
	}
	if (q < s->end && (*q == 'e' || *q == 'E')) {
		real = true;
		q++;
		if (q < s->end && (*q == '+' || *q == '-'))
			q++;
		if (q >= s->end || *q < '0' || *q > '9')
			return fail(s, "invalid token");
		while (q < s->end && *q >= '0' && *q <= '9')
			q++;
	}
	uint32_t idx;
	enum jv_result r = push(s, real ? JV_REAL : JV_INT, &idx);
	if (r != JV_OK)
		return r;
	if (!real) {
		/* strtoll's range, accumulated negative so INT64_MIN fits */
		int64_t v = 0;
		for (const unsigned char *c = b + neg; c < int_end; c++) {
			int dgt = *c - '0';
			if (v < (INT64_MIN + dgt) / 10)
				return fail(s, neg ? "too big negative integer" : "too big integer");
			v = v * 10 - dgt;
		}
		if (!neg) {
			if (v == INT64_MIN)
				return fail(s, "too big integer");
			v = -v;
		}
		s->doc->tok[idx].v.i = v;
	} else {
		char small[64], *text = small;
		size_t n = (size_t)(q - b);
		if (n >= sizeof(small) && !(text = malloc(n + 1)))
			return JV_NOMEM;
		memcpy(text, b, n);
		text[n] = '\0';
		/* strtod reads the C locale's '.' only while nothing in the
		 * process calls setlocale (fleetd never does); under another
		 * locale it would stop at the '.', and a short read is refused
		 * rather than taken as a smaller number */
		char *end;
		errno = 0;
		double v = strtod(text, &end);
		bool over = (v == HUGE_VAL || v == -HUGE_VAL) && errno == ERANGE;
		bool whole = end == text + n;
		if (text != small)
			free(text);
		if (!whole)
			return fail(s, "real number not read whole (locale)");
		if (over)
			return fail(s, "real number overflow");
		s->doc->tok[idx].v.d = v;
	}
	s->p = q;
	return JV_OK;
}

/* jansson reads a run of letters and compares it whole. */
static enum jv_result scan_literal(struct scan *s)
{
	const unsigned char *q = s->p;
	while (q < s->end && ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z')))
		q++;
	size_t n = (size_t)(q - s->p);
	enum jv_type t;
	if (n == 4 && !memcmp(s->p, "true", 4))
		t = JV_TRUE;
	else if (n == 5 && !memcmp(s->p, "false", 5))
		t = JV_FALSE;
	else if (n == 4 && !memcmp(s->p, "null", 4))
		t = JV_NULL;
	else
		return fail(s, "invalid token");
	uint32_t idx;
	enum jv_result r = push(s, t, &idx);
	if (r == JV_OK)
		s->p = q;
	return r;
}

static int key_cmp(const struct jv_doc *d, uint32_t a, uint32_t b)
{
	const struct jv_tok *x = &d->tok[a], *y = &d->tok[b];
	if (x->n != y->n)
		return x->n < y->n ? -1 : 1;
	return memcmp(d->str + x->off, d->str + y->off, x->n);
}

static int key_cmp_q(const void *a, const void *b, void *d)
{
	return key_cmp(d, *(const uint32_t *)a, *(const uint32_t *)b);
}

#define PAIRWISE_MAX 16 /* up to here n^2/2 compares beat a sort */

/* Two members of object o with equal keys? (J4: n log n at worst) */
static enum jv_result duplicate_keys(struct scan *s, uint32_t o, bool *dup)
{
	const struct jv_doc *d = s->doc;
	uint32_t n = d->tok[o].n, k = o + 1;
	*dup = false;
	if (n <= PAIRWISE_MAX) {
		uint32_t keys[PAIRWISE_MAX];
		for (uint32_t i = 0; i < n; i++, k = d->tok[k + 1].next) {
			for (uint32_t j = 0; j < i; j++)
				if (!key_cmp(d, keys[j], k)) {
					*dup = true;
					return JV_OK;
				}
			keys[i] = k;
		}
		return JV_OK;
	}
	if (n > s->keys_cap) {
		uint32_t *nk = reallocarray(s->keys, n, sizeof(*nk));
		if (!nk)
			return JV_NOMEM;
		s->keys = nk;
		s->keys_cap = n;
	}
	for (uint32_t i = 0; i < n; i++, k = d->tok[k + 1].next)
		s->keys[i] = k;
	/* glibc's qsort_r merges: n log n compares at worst */
	qsort_r(s->keys, n, sizeof(*s->keys), key_cmp_q, (void *)d);
	for (uint32_t i = 1; i < n; i++)
		if (!key_cmp(d, s->keys[i - 1], s->keys[i])) {
			*dup = true;
			break;
		}
	return JV_OK;
}

/* One scalar value or the opening of a container (pushed on stack). */
static enum jv_result scan_value(struct scan *s, uint32_t *stack, size_t *depth)
{
	uint32_t idx;
	enum jv_result r;
	if (s->p >= s->end)
		return fail(s, "premature end of input");
	/* jansson's parse_value counts every value, scalars too: one inside
	 * the deepest container allowed is one too deep */
	if (*depth == JV_MAX_DEPTH)
		return fail(s, "maximum parsing depth reached");
	switch (*s->p) {
	case '{':
	case '[':
		if ((r = push(s, *s->p == '{' ? JV_OBJECT : JV_ARRAY, &idx)) != JV_OK)
			return r;
		stack[(*depth)++] = idx;
		s->p++;
		return JV_OK;
	case '"':
		return scan_string(s);
	case 't':
	case 'f':
	case 'n':
		return scan_literal(s);
	default:
		if (*s->p == '-' || (*s->p >= '0' && *s->p <= '9'))
			return scan_number(s);
		return fail(s, "invalid token");
	}
}

/* A member's key and its colon, s->p on the key's quote. */
static enum jv_result scan_key(struct scan *s)
{
	enum jv_result r;
	if (s->p >= s->end || *s->p != '"')
		return fail(s, "string or '}' expected");
	if ((r = scan_string(s)) != JV_OK)
		return r;
	skip_ws(s);
	if (s->p >= s->end || *s->p != ':')
		return fail(s, "':' expected");
	s->p++;
	skip_ws(s);
	return JV_OK;
}

static enum jv_result scan_doc(struct scan *s, uint32_t *stack)
{
	size_t depth = 0;
	enum jv_result r;
	skip_ws(s);
	if (s->p >= s->end || (*s->p != '{' && *s->p != '['))
		return fail(s, "'[' or '{' expected");
	/* After a value (or an opening) the innermost container says what may
	 * come: its first member or element, a comma, or its end. */
	bool opened;
	if ((r = scan_value(s, stack, &depth)) != JV_OK)
		return r;
	opened = true;
	while (depth) {
		uint32_t c = stack[depth - 1];
		struct jv_tok *t = &s->doc->tok[c];
		bool obj = t->type == JV_OBJECT;
		skip_ws(s);
		if (s->p >= s->end)
			return fail(s, "premature end of input");
		/* at the top of the loop: just opened, or just after a value
		 * (after a comma the next member is read below, at once) */
		if (*s->p == (obj ? '}' : ']')) {
			s->p++;
			t->next = (uint32_t)s->doc->ntok;
			if (obj) {
				bool dup;
				if ((r = duplicate_keys(s, c, &dup)) != JV_OK)
					return r;
				if (dup)
					return fail(s, "duplicate object key");
			}
			depth--;
			opened = false;
			continue;
		}
		if (!opened) {
			if (*s->p != ',')
				return fail(s, obj ? "'}' expected" : "']' expected");
			s->p++;
			skip_ws(s);
		}
		if (obj && (r = scan_key(s)) != JV_OK)
			return r;
		s->doc->tok[c].n++; /* not t: the key's push may have moved tok */
		size_t before = depth;
		if ((r = scan_value(s, stack, &depth)) != JV_OK)
			return r;
		opened = depth > before;
	}
	skip_ws(s);
	if (s->p != s->end)
		return fail(s, "end of file expected");
	return JV_OK;
}

enum jv_result jv_parse(struct jv_doc *doc, const char *buf, size_t len, struct jv_error *err)
{
	if (!buf) /* an empty body may have no buffer at all */
		buf = "";
	struct scan s = {.p = (const unsigned char *)buf,
			 .start = (const unsigned char *)buf,
			 .end = (const unsigned char *)buf + len,
			 .doc = doc,
			 .err = err};
	memset(doc, 0, sizeof(*doc));
	if (err) {
		err->offset = 0;
		err->text[0] = '\0';
	}
	if (len >= UINT32_MAX)
		return fail(&s, "input too large");
	/* a token per ~8 input bytes to start with (NetBox's answers run at
	 * about one per 12); doubled as needed */
	doc->cap = len / 8 + 16;
	doc->tok = reallocarray(NULL, doc->cap, sizeof(*doc->tok));
	doc->str = malloc(len + 1);
	uint32_t *stack = reallocarray(NULL, JV_MAX_DEPTH, sizeof(*stack));
	enum jv_result r = JV_NOMEM;
	if (doc->tok && doc->str && stack)
		r = scan_doc(&s, stack);
	free(stack);
	free(s.keys);
	if (r != JV_OK)
		jv_free(doc);
	return r;
}

void jv_free(struct jv_doc *doc)
{
	free(doc->tok);
	free(doc->str);
	memset(doc, 0, sizeof(*doc));
}

uint32_t jv_get(const struct jv_doc *d, uint32_t o, const char *key)
{
	if (jv_type(d, o) != JV_OBJECT)
		return JV_NONE;
	size_t len = strlen(key);
	uint32_t k = o + 1;
	for (uint32_t i = 0; i < d->tok[o].n; i++, k = d->tok[k + 1].next)
		if (d->tok[k].n == len && !memcmp(d->str + d->tok[k].off, key, len))
			return k + 1;
	return JV_NONE;
}

const char *jv_str(const struct jv_doc *d, uint32_t i, size_t *len)
{
	if (jv_type(d, i) != JV_STRING)
		return NULL;
	if (len)
		*len = d->tok[i].n;
	return d->str + d->tok[i].off;
}
