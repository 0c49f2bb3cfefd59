/*
 * tpm_resolve.c: the tpm attestor's resolve list (attestor.h), where an EK
 * no node is bound to joins: a vendor's delivery manifest, or the
 * operator's own list of the TPMs it bought. One line an EK:
 *
 *     # comment
 *     <ek_hash: 64 lowercase hex> pool=<pool> [site=<site>] [node=<node id>]
 *
 * The file is the operator's, but it is parsed as untrusted bytes all the
 * same (tests/fuzz/fuzz_tpm_resolve.c): a line that is not exactly this is
 * refused with its number, and so is an EK listed twice (which line would
 * win is nothing an operator should have to guess).
 */
#include "policy/attestors/attestor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LINE_MAX_LEN 512
#define ID_SET "abcdefghijklmnopqrstuvwxyz0123456789_-"

static bool hex64(const char *s, size_t n)
{
	if (n != 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* One "key=value" word into dst (cap with the NUL) of ID_SET. */
static bool word(const char *w, size_t n, const char *key, char *dst, size_t cap)
{
	size_t k = strlen(key);
	if (n <= k + 1 || strncmp(w, key, k) || w[k] != '=' || n - k - 1 >= cap || dst[0])
		return false;
	for (size_t i = k + 1; i < n; i++)
		if (!strchr(ID_SET, w[i]) || w[i] == '\0')
			return false;
	memcpy(dst, w + k + 1, n - k - 1);
	dst[n - k - 1] = '\0';
	return true;
}

static bool line_read(const char *l, size_t n, struct fleet_tpm_resolve_entry *e)
{
	size_t i = 0, w = 0;
	int nth = 0;
	memset(e, 0, sizeof(*e));
	while (i < n) {
		while (i < n && (l[i] == ' ' || l[i] == '\t'))
			i++;
		if (i == n)
			break;
		w = i;
		while (i < n && l[i] != ' ' && l[i] != '\t')
			i++;
		const char *p = l + w;
		size_t len = i - w;
		if (nth++ == 0) {
			if (!hex64(p, len))
				return false;
			memcpy(e->ek_hash, p, 64);
		} else if (!word(p, len, "pool", e->pool, sizeof(e->pool)) &&
			   !word(p, len, "site", e->site, sizeof(e->site)) &&
			   !word(p, len, "node", e->node, sizeof(e->node))) {
			return false;
		}
	}
	return e->ek_hash[0] && e->pool[0];
}

static int by_ek(const void *a, const void *b)
{
	return strcmp(((const struct fleet_tpm_resolve_entry *)a)->ek_hash,
		      ((const struct fleet_tpm_resolve_entry *)b)->ek_hash);
}

fleet_err fleet_tpm_resolve_parse(const uint8_t *buf, size_t len, struct fleet_tpm_resolve *out,
				  struct fleet_errctx *ec)
{
	size_t cap = 0, line = 0;
	if (!out || (!buf && len))
		return FLEET_E_INVALID_ARG;
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < len;) {
		size_t j = i;
		while (j < len && buf[j] != '\n')
			j++;
		line++;
		const char *l = (const char *)buf + i;
		size_t n = j - i;
		i = j + 1;
		if (n && l[n - 1] == '\r')
			n--;
		if (n > LINE_MAX_LEN || memchr(l, '\0', n)) {
			fleet_tpm_resolve_free(out);
			return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "line %zu: too long or binary",
						line);
		}
		size_t k = 0;
		while (k < n && (l[k] == ' ' || l[k] == '\t'))
			k++;
		if (k == n || l[k] == '#')
			continue;
		if (out->n == FLEET_TPM_RESOLVE_MAX) {
			fleet_tpm_resolve_free(out);
			return fleet_errctx_msg(ec, FLEET_E_TOO_LARGE, "more than %d EKs",
						FLEET_TPM_RESOLVE_MAX);
		}
		if (out->n == cap) {
			size_t nc = cap ? cap * 2 : 64;
			void *p = realloc(out->e, nc * sizeof(*out->e));
			if (!p) {
				fleet_tpm_resolve_free(out);
				return fleet_errctx_msg(ec, FLEET_E_NOMEM, "out of memory");
			}
			out->e = p;
			cap = nc;
		}
		if (!line_read(l, n, &out->e[out->n])) {
			fleet_tpm_resolve_free(out);
			return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
						"line %zu: not \"<ek_hash> pool=<pool> [site=<site>] "
						"[node=<node>]\"",
						line);
		}
		out->n++;
	}
	if (out->n)
		qsort(out->e, out->n, sizeof(*out->e), by_ek);
	for (size_t i = 1; i < out->n; i++)
		if (!strcmp(out->e[i - 1].ek_hash, out->e[i].ek_hash)) {
			fleet_tpm_resolve_free(out);
			return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "an EK listed twice");
		}
	return FLEET_OK;
}

void fleet_tpm_resolve_free(struct fleet_tpm_resolve *r)
{
	if (!r)
		return;
	free(r->e);
	memset(r, 0, sizeof(*r));
}

const struct fleet_tpm_resolve_entry *fleet_tpm_resolve_find(const struct fleet_tpm_resolve *r,
							     const char *ek_hash)
{
	struct fleet_tpm_resolve_entry key;
	if (!r || !r->n || !ek_hash || strlen(ek_hash) != 64)
		return NULL;
	memcpy(key.ek_hash, ek_hash, 65);
	return bsearch(&key, r->e, r->n, sizeof(*r->e), by_ek);
}
