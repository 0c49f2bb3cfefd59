/*
 * fwsim.c: the firmware simulator (fwsim.h).
 *
 * Loading: libyaml's document loader keeps every node's start mark, so each
 * refusal names a line. Each node may be reached once, which refuses aliases;
 * each mapping's keys are checked against a fixed list and duplicates are
 * refused. Booting: the log is written by fleet_evlog_builder and the TPM is
 * extended with the builder's own digests of each event, so the two cannot
 * drift apart.
 */
#include "tests/fwsim/fwsim.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tss2/tss2_rc.h>
#include <yaml.h>

#include "lib/eventlog.h"
#include "lib/file_read.h"
#include "lib/eventlog_build.h"
#include "lib/hex.h"
#include "lib/tpm_alg.h"

/* EFI_GLOBAL_VARIABLE and EFI_IMAGE_SECURITY_DATABASE_GUID (UEFI 2.x). */
static const char guid_global[] = "8be4df61-93ca-11d2-aa0d-00e098032b8c";
static const char guid_image_security_db[] = "d719b2cb-3d3a-4596-a3bc-dad00e67656f";

/* Where a boot application is said to be loaded when the file gives no base:
 * an address below 4 GiB as OVMF uses, distinct per application. */
#define FWSIM_DEFAULT_IMAGE_BASE 0x7e000000ull

__attribute__((format(printf, 3, 4))) static void seterr(char *err, size_t errlen,
							  const char *fmt, ...)
{
	if (!err || !errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* ---- loading ---------------------------------------------------------- */

struct lctx {
	const char *name;
	yaml_document_t *doc;
	unsigned char *used;
	size_t n_nodes;
	char *err;
	size_t errlen;
};

__attribute__((format(printf, 4, 5))) static fleet_err fail(struct lctx *c, fleet_err e,
							     const yaml_node_t *n, const char *fmt,
							     ...)
{
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n)
		seterr(c->err, c->errlen, "%s:%lu: %s", c->name,
		       (unsigned long)n->start_mark.line + 1, msg);
	else
		seterr(c->err, c->errlen, "%s: %s", c->name, msg);
	return e;
}

/* The node for id, refusing a second visit (an alias) and explicit tags. */
static fleet_err node_get(struct lctx *c, int id, const yaml_node_t *parent, yaml_node_t **out)
{
	yaml_node_t *n = yaml_document_get_node(c->doc, id);
	if (!n)
		return fail(c, FLEET_E_MALFORMED, parent, "missing node");
	size_t i = (size_t)(id - 1);
	if (i >= c->n_nodes || c->used[i])
		return fail(c, FLEET_E_MALFORMED, n, "YAML aliases are not accepted");
	c->used[i] = 1;
	const char *tag = (const char *)n->tag;
	const char *impl = n->type == YAML_SCALAR_NODE	  ? YAML_STR_TAG
			   : n->type == YAML_SEQUENCE_NODE ? YAML_SEQ_TAG
							   : YAML_MAP_TAG;
	if (!tag || strcmp(tag, impl))
		return fail(c, FLEET_E_MALFORMED, n, "explicit YAML tags are not accepted");
	*out = n;
	return FLEET_OK;
}

/* A scalar as a C string: refuses non-scalars and embedded NULs. *s is NULL
 * on a refusal. */
static fleet_err scalar(struct lctx *c, const yaml_node_t *n, const char *what, size_t max,
			const char **s)
{
	*s = NULL;
	if (n->type != YAML_SCALAR_NODE)
		return fail(c, FLEET_E_MALFORMED, n, "%s must be a scalar", what);
	size_t len = n->data.scalar.length;
	if (len > max)
		return fail(c, FLEET_E_TOO_LARGE, n, "%s is %zu bytes, over the cap of %zu", what,
			    len, max);
	if (strlen((const char *)n->data.scalar.value) != len)
		return fail(c, FLEET_E_MALFORMED, n, "%s holds a NUL byte", what);
	*s = (const char *)n->data.scalar.value;
	return FLEET_OK;
}

/* An unsigned integer, decimal or 0x-hex, plain style, at most max. */
static fleet_err number(struct lctx *c, const yaml_node_t *n, const char *what, uint64_t max,
			uint64_t *v)
{
	const char *s;
	fleet_err e = scalar(c, n, what, 32, &s);
	if (e)
		return e;
	if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return fail(c, FLEET_E_MALFORMED, n, "%s must be an unquoted number", what);
	int base = 10;
	const char *digits = s;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		digits = s + 2;
	} else if (s[0] == '0' && s[1]) {
		return fail(c, FLEET_E_MALFORMED, n,
			    "%s '%s' has a leading zero (write decimal, or hex with 0x)", what, s);
	}
	if (!*digits)
		return fail(c, FLEET_E_MALFORMED, n, "%s is not a number", what);
	for (const char *p = digits; *p; p++)
		if (!(base == 16 ? isxdigit((unsigned char)*p) : isdigit((unsigned char)*p)))
			return fail(c, FLEET_E_MALFORMED, n, "%s '%s' is not a number", what, s);
	errno = 0;
	unsigned long long x = strtoull(digits, NULL, base);
	if (errno == ERANGE || x > max)
		return fail(c, FLEET_E_MALFORMED, n, "%s '%s' is out of range (0..%llu)", what, s,
			    (unsigned long long)max);
	*v = x;
	return FLEET_OK;
}

static fleet_err pcr_index(struct lctx *c, const yaml_node_t *n, uint32_t *pcr)
{
	uint64_t v;
	fleet_err e = number(c, n, "pcr", FLEET_PCR_COUNT - 1, &v);
	if (e)
		return e;
	*pcr = (uint32_t)v;
	return FLEET_OK;
}

static fleet_err hex_data(struct lctx *c, const yaml_node_t *n, uint8_t **out, size_t *len)
{
	const char *s;
	fleet_err e = scalar(c, n, "data", 2 * (size_t)FWSIM_MAX_DATA, &s);
	if (e)
		return e;
	size_t sl = strlen(s);
	if (sl % 2)
		return fail(c, FLEET_E_MALFORMED, n, "data has an odd number of hex digits (%zu)",
			    sl);
	uint8_t *b = malloc(sl / 2 + 1);
	if (!b)
		return fail(c, FLEET_E_NOMEM, n, "out of memory");
	if (fleet_hex_decode(s, sl, b, sl / 2)) {
		free(b);
		return fail(c, FLEET_E_MALFORMED, n, "data is not hex");
	}
	*out = b;
	*len = sl / 2;
	return FLEET_OK;
}

/* Bytes of a text scalar (content, image). */
static fleet_err text_bytes(struct lctx *c, const yaml_node_t *n, const char *what,
			    uint8_t **out, size_t *len)
{
	const char *s;
	fleet_err e = scalar(c, n, what, FWSIM_MAX_DATA, &s);
	if (e)
		return e;
	size_t sl = strlen(s);
	*out = malloc(sl + 1);
	if (!*out)
		return fail(c, FLEET_E_NOMEM, n, "out of memory");
	memcpy(*out, s, sl + 1);
	*len = sl;
	return FLEET_OK;
}

/* Printable ASCII text (it is written as UCS-2 or as bytes a verifier prints). */
static fleet_err ascii_text(struct lctx *c, const yaml_node_t *n, const char *what, char **out)
{
	const char *s;
	fleet_err e = scalar(c, n, what, FWSIM_MAX_TEXT, &s);
	if (e)
		return e;
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
			return fail(c, FLEET_E_MALFORMED, n,
				    "%s holds a byte 0x%02x outside printable ASCII", what,
				    (unsigned char)*p);
	*out = strdup(s);
	if (!*out)
		return fail(c, FLEET_E_NOMEM, n, "out of memory");
	return FLEET_OK;
}

static int parse_uuid(const char *s, uint8_t g[16])
{
	if (strlen(s) != 36)
		return -1;
	char hex[33];
	size_t k = 0;
	for (size_t i = 0; i < 36; i++) {
		int is_dash = i == 8 || i == 13 || i == 18 || i == 23;
		if (is_dash ? s[i] != '-' : !isxdigit((unsigned char)s[i]))
			return -1;
		if (!is_dash)
			hex[k++] = s[i];
	}
	uint8_t be[16];
	if (fleet_hex_decode(hex, 32, be, 16))
		return -1;
	/* EFI_GUID: Data1 (u32), Data2, Data3 (u16) little-endian, Data4 bytes. */
	const uint8_t order[16] = {3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15};
	for (size_t i = 0; i < 16; i++)
		g[i] = be[order[i]];
	return 0;
}

static fleet_err guid_value(struct lctx *c, const yaml_node_t *n, uint8_t g[16])
{
	const char *s;
	fleet_err e = scalar(c, n, "guid", 64, &s);
	if (e)
		return e;
	const char *u = !strcmp(s, "global")		  ? guid_global
			: !strcmp(s, "image_security_db") ? guid_image_security_db
							  : s;
	if (parse_uuid(u, g))
		return fail(c, FLEET_E_MALFORMED, n,
			    "guid '%s' is not global, image_security_db or a UUID", s);
	return FLEET_OK;
}

static fleet_err var_name(struct lctx *c, const yaml_node_t *n, char out[FWSIM_MAX_NAME + 1])
{
	const char *s;
	fleet_err e = scalar(c, n, "name", FWSIM_MAX_NAME, &s);
	if (e)
		return e;
	if (!*s)
		return fail(c, FLEET_E_MALFORMED, n, "name is empty");
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
			return fail(c, FLEET_E_MALFORMED, n, "name holds a non-ASCII byte");
	snprintf(out, FWSIM_MAX_NAME + 1, "%s", s);
	return FLEET_OK;
}

static fleet_err separator_pcrs(struct lctx *c, const yaml_node_t *n, struct fwsim_event *ev)
{
	if (n->type != YAML_SEQUENCE_NODE)
		return fail(c, FLEET_E_MALFORMED, n, "pcrs must be a list");
	uint32_t seen = 0;
	for (yaml_node_item_t *it = n->data.sequence.items.start;
	     it < n->data.sequence.items.top; it++) {
		yaml_node_t *item;
		uint32_t pcr;
		fleet_err e = node_get(c, *it, n, &item);
		if (!e)
			e = pcr_index(c, item, &pcr);
		if (e)
			return e;
		if (seen & (1u << pcr))
			return fail(c, FLEET_E_MALFORMED, item, "PCR %u is listed twice", pcr);
		seen |= 1u << pcr;
		ev->pcrs[ev->n_pcrs++] = (uint8_t)pcr;
	}
	if (!ev->n_pcrs)
		return fail(c, FLEET_E_MALFORMED, n, "pcrs is empty");
	return FLEET_OK;
}

/* The keys each kind takes: required ones first, then optional ones. */
struct kind_desc {
	const char *key;
	enum fwsim_kind kind;
	const char *required[5];
	const char *optional[2];
};

static const struct kind_desc kinds[] = {
	{"scrtm_version", FWSIM_SCRTM_VERSION, {NULL}, {NULL}},
	{"firmware_blob", FWSIM_FIRMWARE_BLOB, {"pcr", "base", "length", "content"}, {NULL}},
	{"efi_variable", FWSIM_EFI_VARIABLE, {"pcr", "name", "guid", "data"}, {NULL}},
	{"efi_variable_boot", FWSIM_EFI_VARIABLE_BOOT, {"pcr", "name", "data"}, {"guid"}},
	{"authority", FWSIM_AUTHORITY, {"pcr", "name", "guid", "data"}, {NULL}},
	{"separator", FWSIM_SEPARATOR, {"pcrs"}, {NULL}},
	{"efi_action", FWSIM_EFI_ACTION, {"pcr", "text"}, {NULL}},
	{"boot_application", FWSIM_BOOT_APPLICATION, {"pcr", "path", "image"}, {"base"}},
};

static fleet_err field(struct lctx *c, struct fwsim_event *ev, const char *k,
		       const yaml_node_t *v)
{
	uint64_t x;
	fleet_err e;
	if (!strcmp(k, "pcr"))
		return pcr_index(c, v, &ev->pcr);
	if (!strcmp(k, "pcrs"))
		return separator_pcrs(c, v, ev);
	if (!strcmp(k, "base") || !strcmp(k, "length")) {
		e = number(c, v, k, UINT64_MAX, &x);
		if (!e)
			*(k[0] == 'b' ? &ev->base : &ev->length) = x;
		return e;
	}
	if (!strcmp(k, "name"))
		return var_name(c, v, ev->name);
	if (!strcmp(k, "guid"))
		return guid_value(c, v, ev->guid);
	if (!strcmp(k, "data"))
		return hex_data(c, v, &ev->data, &ev->data_len);
	if (!strcmp(k, "content") || !strcmp(k, "image"))
		return text_bytes(c, v, k, &ev->data, &ev->data_len);
	if (!strcmp(k, "text") || !strcmp(k, "path"))
		return ascii_text(c, v, k, &ev->text);
	return fail(c, FLEET_E_MALFORMED, v, "unknown key '%s'", k);
}

static fleet_err one_event(struct lctx *c, const yaml_node_t *item, struct fwsim_event *ev)
{
	if (item->type != YAML_MAPPING_NODE ||
	    item->data.mapping.pairs.top - item->data.mapping.pairs.start != 1)
		return fail(c, FLEET_E_MALFORMED, item,
			    "an event is a mapping with exactly one key, its kind");
	yaml_node_pair_t *p = item->data.mapping.pairs.start;
	yaml_node_t *kn, *vn;
	const char *kind;
	fleet_err e = node_get(c, p->key, item, &kn);
	if (!e)
		e = scalar(c, kn, "event kind", 64, &kind);
	if (!e)
		e = node_get(c, p->value, item, &vn);
	if (e)
		return e;
	const struct kind_desc *d = NULL;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(kinds[i].key, kind))
			d = &kinds[i];
	if (!d)
		return fail(c, FLEET_E_MALFORMED, kn, "unknown event kind '%s'", kind);
	ev->kind = d->kind;
	ev->line = (unsigned)kn->start_mark.line + 1;
	ev->base = FWSIM_DEFAULT_IMAGE_BASE;
	parse_uuid(guid_global, ev->guid); /* efi_variable_boot's default */

	if (d->kind == FWSIM_SCRTM_VERSION) {
		ev->pcr = 0;
		return ascii_text(c, vn, "scrtm_version", &ev->text);
	}
	if (vn->type != YAML_MAPPING_NODE)
		return fail(c, FLEET_E_MALFORMED, vn, "%s takes a mapping", kind);
	unsigned seen = 0;
	for (yaml_node_pair_t *q = vn->data.mapping.pairs.start; q < vn->data.mapping.pairs.top;
	     q++) {
		yaml_node_t *k2, *v2;
		const char *key;
		e = node_get(c, q->key, vn, &k2);
		if (!e)
			e = scalar(c, k2, "key", 64, &key);
		if (e)
			return e;
		size_t nreq = 0;
		while (nreq < 5 && d->required[nreq])
			nreq++;
		int idx = -1;
		for (size_t i = 0; i < nreq; i++)
			if (!strcmp(d->required[i], key))
				idx = (int)i;
		for (size_t i = 0; idx < 0 && i < 2 && d->optional[i]; i++)
			if (!strcmp(d->optional[i], key))
				idx = (int)(5 + i);
		if (idx < 0)
			return fail(c, FLEET_E_MALFORMED, k2, "unknown key '%s' in %s", key, kind);
		if (seen & (1u << idx))
			return fail(c, FLEET_E_MALFORMED, k2, "duplicate key '%s'", key);
		seen |= 1u << idx;
		e = node_get(c, q->value, k2, &v2);
		if (!e)
			e = field(c, ev, key, v2);
		if (e)
			return e;
	}
	for (size_t i = 0; i < 5 && d->required[i]; i++)
		if (!(seen & (1u << i)))
			return fail(c, FLEET_E_MALFORMED, vn, "%s needs '%s'", kind,
				    d->required[i]);
	return FLEET_OK;
}

void fwsim_free(struct fwsim_events *evs)
{
	if (!evs)
		return;
	for (size_t i = 0; i < evs->n; i++) {
		free(evs->ev[i].text);
		free(evs->ev[i].data);
	}
	free(evs->ev);
	free(evs);
}

static fleet_err walk(struct lctx *c, struct fwsim_events *evs)
{
	yaml_node_t *root;
	yaml_node_t *top = yaml_document_get_root_node(c->doc);
	if (!top)
		return fail(c, FLEET_E_MALFORMED, NULL, "the file is empty");
	fleet_err e = node_get(c, 1, NULL, &root);
	if (e)
		return e;
	if (root->type != YAML_MAPPING_NODE)
		return fail(c, FLEET_E_MALFORMED, root, "the top level must be a mapping");
	yaml_node_t *list = NULL;
	for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k;
		const char *key;
		e = node_get(c, p->key, root, &k);
		if (!e)
			e = scalar(c, k, "key", 64, &key);
		if (e)
			return e;
		if (strcmp(key, "events"))
			return fail(c, FLEET_E_MALFORMED, k, "unknown key '%s'", key);
		if (list)
			return fail(c, FLEET_E_MALFORMED, k, "duplicate key 'events'");
		e = node_get(c, p->value, k, &list);
		if (e)
			return e;
	}
	if (!list)
		return fail(c, FLEET_E_MALFORMED, root, "no 'events' list");
	if (list->type != YAML_SEQUENCE_NODE)
		return fail(c, FLEET_E_MALFORMED, list, "events must be a list");
	size_t n = (size_t)(list->data.sequence.items.top - list->data.sequence.items.start);
	if (n > FWSIM_MAX_EVENTS)
		return fail(c, FLEET_E_TOO_LARGE, list, "%zu events, over the cap of %u", n,
			    FWSIM_MAX_EVENTS);
	evs->ev = calloc(n ? n : 1, sizeof(*evs->ev));
	if (!evs->ev)
		return fail(c, FLEET_E_NOMEM, list, "out of memory");
	for (yaml_node_item_t *it = list->data.sequence.items.start;
	     it < list->data.sequence.items.top; it++) {
		yaml_node_t *item;
		struct fwsim_event *ev = &evs->ev[evs->n++];
		e = node_get(c, *it, list, &item);
		if (!e)
			e = one_event(c, item, ev);
		if (e)
			return e;
	}
	return FLEET_OK;
}

fleet_err fwsim_parse(const char *name, const uint8_t *yaml, size_t len,
		      struct fwsim_events **out, char *err, size_t errlen)
{
	*out = NULL;
	if (len > FWSIM_MAX_FILE) {
		seterr(err, errlen, "%s: %zu bytes, over the cap of %u", name, len, FWSIM_MAX_FILE);
		return FLEET_E_TOO_LARGE;
	}
	yaml_parser_t parser;
	yaml_document_t doc;
	if (!yaml_parser_initialize(&parser)) {
		seterr(err, errlen, "%s: out of memory", name);
		return FLEET_E_NOMEM;
	}
	yaml_parser_set_input_string(&parser, yaml, len);
	if (!yaml_parser_load(&parser, &doc)) {
		seterr(err, errlen, "%s:%lu:%lu: %s", name,
		       (unsigned long)parser.problem_mark.line + 1,
		       (unsigned long)parser.problem_mark.column + 1,
		       parser.problem ? parser.problem : "YAML error");
		yaml_parser_delete(&parser);
		return FLEET_E_MALFORMED;
	}
	fleet_err e = FLEET_OK;
	yaml_document_t extra;
	struct lctx c = {.name = name, .doc = &doc, .err = err, .errlen = errlen};
	if (!yaml_parser_load(&parser, &extra)) {
		e = fail(&c, FLEET_E_MALFORMED, NULL, "YAML error after the first document");
	} else {
		if (yaml_document_get_root_node(&extra))
			e = fail(&c, FLEET_E_MALFORMED, yaml_document_get_root_node(&extra),
				 "more than one YAML document");
		yaml_document_delete(&extra);
	}
	struct fwsim_events *evs = calloc(1, sizeof(*evs));
	c.n_nodes = (size_t)(doc.nodes.top - doc.nodes.start);
	c.used = calloc(c.n_nodes ? c.n_nodes : 1, 1);
	if (!e && (!evs || !c.used))
		e = fail(&c, FLEET_E_NOMEM, NULL, "out of memory");
	if (!e)
		e = walk(&c, evs);
	free(c.used);
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	if (e) {
		fwsim_free(evs);
		return e;
	}
	*out = evs;
	return FLEET_OK;
}

fleet_err fwsim_load(const char *path, struct fwsim_events **out, char *err, size_t errlen)
{
	struct fleet_buf b;
	fb_init(&b);
	*out = NULL;
	errno = 0;
	fleet_err e = fleet_file_read_data(path, FWSIM_MAX_FILE, &b, NULL);
	if (e) {
		seterr(err, errlen, "%s: cannot read (%s%s%s)", path, fleet_err_str(e),
		       errno ? ": " : "", errno ? strerror(errno) : "");
		fb_free(&b);
		return e;
	}
	e = fwsim_parse(path, b.data ? b.data : (const uint8_t *)"", b.len, out, err, errlen);
	fb_free(&b);
	return e;
}

/* ---- the TPM ------------------------------------------------------------ */

static void tpm_fail(char *err, size_t errlen, const char *what, TSS2_RC rc)
{
	seterr(err, errlen, "%s failed: %s (0x%08x)", what, Tss2_RC_Decode(rc), (unsigned)rc);
}

fleet_err fwsim_tpm_banks(ESYS_CONTEXT *esys, uint16_t *algs, size_t max, size_t *n,
			  char *err, size_t errlen)
{
	TPMS_CAPABILITY_DATA *cap = NULL;
	TPMI_YES_NO more = TPM2_NO;
	*n = 0;
	TSS2_RC rc = Esys_GetCapability(esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE,
					TPM2_CAP_PCRS, 0, 1, &more, &cap);
	if (rc != TSS2_RC_SUCCESS) {
		tpm_fail(err, errlen, "TPM2_GetCapability(TPM2_CAP_PCRS)", rc);
		return FLEET_E_IO;
	}
	fleet_err e = FLEET_OK;
	const TPML_PCR_SELECTION *sel = &cap->data.assignedPCR;
	for (UINT32 i = 0; i < sel->count && !e; i++) {
		const TPMS_PCR_SELECTION *s = &sel->pcrSelections[i];
		int active = 0;
		for (unsigned j = 0; j < s->sizeofSelect && j < sizeof(s->pcrSelect); j++)
			active |= s->pcrSelect[j] != 0;
		if (!active)
			continue;
		if (!fleet_hash_alg_md(s->hash)) {
			seterr(err, errlen, "the TPM has an active PCR bank (algorithm 0x%04x) "
			       "fleetd cannot hash", (unsigned)s->hash);
			e = FLEET_E_UNSUPPORTED;
		} else if (*n == max) {
			seterr(err, errlen, "the TPM has more than %zu active PCR banks", max);
			e = FLEET_E_UNSUPPORTED;
		} else {
			algs[(*n)++] = s->hash;
		}
	}
	if (!e && *n == 0) {
		seterr(err, errlen, "the TPM has no active PCR bank");
		e = FLEET_E_UNSUPPORTED;
	}
	Esys_Free(cap);
	return e;
}

/* TPM2_PCR_Extend(pcr) with the digests of banks algs[0..n_algs) from d. */
static fleet_err extend(ESYS_CONTEXT *esys, uint32_t pcr, const uint16_t *algs, size_t n_algs,
			const struct fleet_evlog_digest *d, size_t n, char *err, size_t errlen)
{
	TPML_DIGEST_VALUES v;
	memset(&v, 0, sizeof(v));
	for (size_t i = 0; i < n_algs; i++) {
		const struct fleet_evlog_digest *m = NULL;
		for (size_t j = 0; j < n; j++)
			if (d[j].alg == algs[i])
				m = &d[j];
		if (!m || m->size != fleet_hash_alg_size(algs[i]) ||
		    m->size > sizeof(v.digests[0].digest)) {
			seterr(err, errlen, "PCR %u: no %s digest to extend", (unsigned)pcr,
			       fleet_hash_alg_name(algs[i]));
			return FLEET_E_UNSUPPORTED;
		}
		v.digests[v.count].hashAlg = algs[i];
		memcpy(&v.digests[v.count].digest, m->bytes, m->size);
		v.count++;
	}
	TSS2_RC rc = Esys_PCR_Extend(esys, ESYS_TR_PCR0 + pcr, ESYS_TR_PASSWORD, ESYS_TR_NONE,
				     ESYS_TR_NONE, &v);
	if (rc != TSS2_RC_SUCCESS) {
		char what[48];
		snprintf(what, sizeof(what), "TPM2_PCR_Extend(PCR %u)", (unsigned)pcr);
		tpm_fail(err, errlen, what, rc);
		return FLEET_E_IO;
	}
	return FLEET_OK;
}

static fleet_err put_ucs2(struct fleet_buf *b, const char *s)
{
	for (; *s; s++)
		fb_put_u16le(b, (uint8_t)*s);
	return fb_put_u16le(b, 0);
}

/* The event's type, data and measured bytes (NULL: the data itself). */
static fleet_err event_bytes(const struct fwsim_event *ev, uint32_t *type,
			     struct fleet_buf *data, const uint8_t **measured, size_t *mlen)
{
	struct fleet_buf dp;
	fleet_err e;
	*measured = NULL;
	*mlen = 0;
	switch (ev->kind) {
	case FWSIM_SCRTM_VERSION:
		*type = FLEET_EV_S_CRTM_VERSION;
		return put_ucs2(data, ev->text);
	case FWSIM_FIRMWARE_BLOB:
		*type = FLEET_EV_EFI_PLATFORM_FIRMWARE_BLOB;
		fb_put_u32le(data, (uint32_t)ev->base);
		fb_put_u32le(data, (uint32_t)(ev->base >> 32));
		fb_put_u32le(data, (uint32_t)ev->length);
		e = fb_put_u32le(data, (uint32_t)(ev->length >> 32));
		*measured = ev->data;
		*mlen = ev->data_len;
		return e;
	case FWSIM_EFI_VARIABLE:
	case FWSIM_EFI_VARIABLE_BOOT:
	case FWSIM_AUTHORITY:
		*type = ev->kind == FWSIM_EFI_VARIABLE	       ? FLEET_EV_EFI_VARIABLE_DRIVER_CONFIG
			: ev->kind == FWSIM_EFI_VARIABLE_BOOT ? FLEET_EV_EFI_VARIABLE_BOOT
							       : FLEET_EV_EFI_VARIABLE_AUTHORITY;
		return fleet_evlog_efi_variable_data(ev->guid, ev->name, ev->data, ev->data_len,
						     data);
	case FWSIM_SEPARATOR:
		*type = FLEET_EV_SEPARATOR;
		return fb_put_u32le(data, 0);
	case FWSIM_EFI_ACTION:
		*type = FLEET_EV_EFI_ACTION;
		return fb_put(data, ev->text, strlen(ev->text));
	case FWSIM_BOOT_APPLICATION:
		*type = FLEET_EV_EFI_BOOT_SERVICES_APPLICATION;
		fb_init(&dp);
		{
			struct fleet_buf name;
			fb_init(&name);
			put_ucs2(&name, ev->text);
			e = fb_err(&name);
			/* MEDIA_DEVICE_PATH / MEDIA_FILEPATH_DP, then the end node. */
			if (!e)
				e = fleet_evlog_devpath_node(&dp, 0x04, 0x04, name.data, name.len);
			fb_free(&name);
		}
		if (!e)
			e = fleet_evlog_devpath_node(&dp, 0x7f, 0xff, NULL, 0);
		if (!e)
			e = fleet_evlog_efi_image_load_data(ev->base, ev->data_len, 0, dp.data,
							    dp.len, data);
		fb_free(&dp);
		*measured = ev->data ? ev->data : (const uint8_t *)"";
		*mlen = ev->data_len;
		return e;
	}
	return FLEET_E_INVALID_ARG;
}

static fleet_err add_one(struct fleet_evlog_builder *b, const struct fwsim_event *ev,
			 uint32_t pcr)
{
	struct fleet_buf data;
	uint32_t type = 0;
	const uint8_t *measured;
	size_t mlen;
	fb_init(&data);
	fleet_err e = event_bytes(ev, &type, &data, &measured, &mlen);
	if (!e)
		e = fb_err(&data);
	if (!e && measured)
		e = fleet_evlog_builder_add_measured(b, pcr, type, data.data, data.len, measured,
						     mlen);
	else if (!e)
		e = fleet_evlog_builder_add(b, pcr, type, data.data, data.len);
	fb_free(&data);
	return e;
}

fleet_err fwsim_apply(ESYS_CONTEXT *esys, const struct fwsim_events *evs,
		      struct fleet_buf *log_out, char *err, size_t errlen)
{
	uint16_t algs[FLEET_EVLOG_MAX_BANKS];
	size_t n_algs;
	struct fleet_evlog_builder *b = NULL;
	fleet_err e = fwsim_tpm_banks(esys, algs, FLEET_EVLOG_MAX_BANKS, &n_algs, err, errlen);
	if (e)
		return e;
	e = fleet_evlog_builder_new(algs, n_algs, &b);
	if (e) {
		seterr(err, errlen, "cannot start a log for the TPM's banks: %s",
		       fleet_err_str(e));
		return e;
	}
	for (size_t i = 0; i < evs->n && !e; i++) {
		const struct fwsim_event *ev = &evs->ev[i];
		size_t n_pcrs = ev->kind == FWSIM_SEPARATOR ? ev->n_pcrs : 1;
		for (size_t j = 0; j < n_pcrs && !e; j++) {
			uint32_t pcr = ev->kind == FWSIM_SEPARATOR ? ev->pcrs[j] : ev->pcr;
			const struct fleet_evlog_digest *d;
			size_t nd;
			e = add_one(b, ev, pcr);
			if (e) {
				seterr(err, errlen, "event at line %u: cannot write it: %s",
				       ev->line, fleet_err_str(e));
				break;
			}
			e = fleet_evlog_builder_last_digests(b, &d, &nd);
			if (!e)
				e = extend(esys, pcr, algs, n_algs, d, nd, err, errlen);
		}
	}
	if (!e) {
		e = fleet_evlog_builder_finish(b, log_out);
		if (e)
			seterr(err, errlen, "cannot write the log: %s", fleet_err_str(e));
	}
	fleet_evlog_builder_free(b);
	return e;
}

fleet_err fwsim_replay_log(ESYS_CONTEXT *esys, const uint8_t *raw, size_t len, char *err,
			   size_t errlen)
{
	struct fleet_evlog *log = NULL;
	struct fleet_errctx ec = {0};
	uint16_t algs[FLEET_EVLOG_MAX_BANKS];
	size_t n_algs;
	fleet_err e = fleet_evlog_parse(raw, len, &log, &ec);
	if (e) {
		char msg[300];
		fleet_errctx_format(&ec, e, msg, sizeof(msg));
		seterr(err, errlen, "the log does not parse: %s", msg);
		return e;
	}
	if (log->startup_locality == 3 || log->startup_locality == 4 || log->hcrtm) {
		seterr(err, errlen,
		       "the log starts PCR 0 at %s, not zero; a TPM started at locality 0 "
		       "cannot be brought there with extends",
		       log->hcrtm ? "the H-CRTM value 00..04" :
		       log->startup_locality == 3 ? "00..03 (StartupLocality 3)"
						  : "00..04 (StartupLocality 4)");
		fleet_evlog_free(log);
		return FLEET_E_UNSUPPORTED;
	}
	e = fwsim_tpm_banks(esys, algs, FLEET_EVLOG_MAX_BANKS, &n_algs, err, errlen);
	for (size_t i = 0; i < n_algs && !e; i++) {
		int found = 0;
		for (uint32_t j = 0; j < log->n_algs; j++)
			found |= log->algs[j].alg == algs[i];
		if (!found) {
			seterr(err, errlen, "the TPM has a %s bank and the log has no %s digests",
			       fleet_hash_alg_name(algs[i]), fleet_hash_alg_name(algs[i]));
			e = FLEET_E_UNSUPPORTED;
		}
	}
	/* Check every event before extending anything, so a refusal leaves the
	 * TPM as it was. */
	for (size_t i = 0; i < log->n_events && !e; i++) {
		const struct fleet_evlog_event *ev = &log->events[i];
		if (ev->type == FLEET_EV_NO_ACTION)
			continue;
		for (size_t k = 0; k < n_algs && !e; k++)
			if (!fleet_evlog_event_digest(ev, algs[k])) {
				seterr(err, errlen,
				       "the event at byte %zu (PCR %u) has no %s digest for the "
				       "TPM's %s bank",
				       ev->offset, (unsigned)ev->pcr, fleet_hash_alg_name(algs[k]),
				       fleet_hash_alg_name(algs[k]));
				e = FLEET_E_UNSUPPORTED;
			}
	}
	for (size_t i = 0; i < log->n_events && !e; i++) {
		const struct fleet_evlog_event *ev = &log->events[i];
		if (ev->type == FLEET_EV_NO_ACTION)
			continue;
		e = extend(esys, ev->pcr, algs, n_algs, ev->digests, ev->n_digests, err, errlen);
	}
	fleet_evlog_free(log);
	return e;
}
