/*
 * profile.c: load a boot-policy profile from YAML.
 *
 * The strict reader every fleetd YAML file shares (lib/yaml_strict.h) loads
 * the one document and keeps each node's start mark, so every refusal names a
 * line and column. The schema walk is by hand: each mapping's keys are
 * checked against a fixed list, duplicates refused, and each node may be
 * reached once only, which refuses YAML aliases (an alias would let one
 * digest stand in two lists without the reader seeing it, and aliases to
 * aliases are the classic memory bomb); explicit tags are refused too.
 */
#include "policy/profile.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/file_read.h"
#include "lib/hex.h"
#include "lib/tpm_alg.h"
#include "lib/sanitize.h"
#include "lib/yaml_strict.h"

struct pctx {
	struct fleet_yaml *y;
	struct fleet_profile *p;
};

/* A name: 1..64 bytes of printable ASCII. These end up in logs and JSON, so
 * nothing else gets in. A class is an identifier (no spaces); a BIOS version
 * is what SMBIOS says, and vendors put spaces in it ("U23 Ver. 02.05.01"). */
static fleet_err get_name(struct pctx *c, const yaml_node_t *n, const char *what, bool spaces,
			  char *out)
{
	fleet_err e = fleet_yaml_want(c->y, n, YAML_SCALAR_NODE, what);
	if (e)
		return e;
	size_t len = n->data.scalar.length;
	if (len == 0 || len > FLEET_PROFILE_MAX_NAME)
		return fleet_yaml_fail(c->y, FLEET_E_MALFORMED, &n->start_mark,
				       "%s must be 1 to %d characters", what,
				       FLEET_PROFILE_MAX_NAME);
	if (!fleet_ascii_printable(n->data.scalar.value, len, spaces ? FLEET_ASCII_SPACE : 0))
		return fleet_yaml_fail(c->y, FLEET_E_MALFORMED, &n->start_mark,
				       "%s may hold printable ASCII%s only", what,
				       spaces ? "" : " without spaces");
	memcpy(out, n->data.scalar.value, len);
	out[len] = '\0';
	return FLEET_OK;
}

/* A PCR index 0..23, decimal, no sign and no leading zero (YAML 1.1 reads
 * "010" as octal 8; no reader should have to guess). */
static fleet_err get_pcr_index(struct pctx *c, const yaml_node_t *n, unsigned *out)
{
	fleet_err e = fleet_yaml_want(c->y, n, YAML_SCALAR_NODE, "a PCR index");
	if (e)
		return e;
	size_t len = n->data.scalar.length;
	const unsigned char *s = n->data.scalar.value;
	bool ok = len >= 1 && len <= 2 && !(len == 2 && s[0] == '0');
	unsigned v = 0;
	for (size_t i = 0; ok && i < len; i++) {
		ok = isdigit(s[i]);
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (!ok || v >= FLEET_PCR_COUNT)
		return fleet_yaml_fail(c->y, FLEET_E_MALFORMED, &n->start_mark,
				       "a PCR index must be a decimal number from 0 to %d",
				       FLEET_PCR_COUNT - 1);
	*out = v;
	return FLEET_OK;
}

static fleet_err get_digest(struct pctx *c, const yaml_node_t *n, uint8_t *out)
{
	fleet_err e = fleet_yaml_want(c->y, n, YAML_SCALAR_NODE, "a digest");
	if (e)
		return e;
	size_t len = n->data.scalar.length;
	if (len != 2u * c->p->size)
		return fleet_yaml_fail(c->y, FLEET_E_MALFORMED, &n->start_mark,
				       "a %s digest is %u hex digits, this one has %zu",
				       fleet_hash_alg_name(c->p->bank), 2u * c->p->size, len);
	if (fleet_hex_decode((const char *)n->data.scalar.value, len, out, c->p->size))
		return fleet_yaml_fail(c->y, FLEET_E_MALFORMED, &n->start_mark,
				       "a digest must be hex digits");
	return FLEET_OK;
}

static size_t pairs_len(const yaml_node_t *map)
{
	return (size_t)(map->data.mapping.pairs.top - map->data.mapping.pairs.start);
}

static fleet_err get_digest_list(struct pctx *c, int idx, const yaml_mark_t *key_mark,
				 const char *what, struct fleet_digest_list *out)
{
	yaml_node_t *n;
	fleet_err e = fleet_yaml_reach(c->y, idx, key_mark, &n);
	if (e || (e = fleet_yaml_want(c->y, n, YAML_SEQUENCE_NODE, what)))
		return e;
	size_t count = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	if (count > FLEET_PROFILE_MAX_DIGESTS)
		return fleet_yaml_fail(c->y, FLEET_E_TOO_LARGE, &n->start_mark,
				       "%s has %zu entries, at most %d", what, count,
				       FLEET_PROFILE_MAX_DIGESTS);
	out->present = true;
	out->n = 0;
	if (count && !(out->d = calloc(count, sizeof(*out->d))))
		return fleet_yaml_fail(c->y, FLEET_E_NOMEM, &n->start_mark, "out of memory");
	for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top;
	     it++) {
		yaml_node_t *item;
		if ((e = fleet_yaml_reach(c->y, *it, &n->start_mark, &item)) ||
		    (e = get_digest(c, item, out->d[out->n])))
			return e;
		/* A digest listed twice is a copy-paste slip that hides the
		 * one that was meant; refuse it rather than guess. */
		for (size_t j = 0; j < out->n; j++)
			if (!memcmp(out->d[j], out->d[out->n], c->p->size))
				return fleet_yaml_fail(c->y, FLEET_E_MALFORMED, &item->start_mark,
						       "%s lists the same digest twice", what);
		out->n++;
	}
	return FLEET_OK;
}

static fleet_err get_quote(struct pctx *c, int idx, const yaml_mark_t *key_mark)
{
	static const char *const keys[] = {"bank", "pcrs"};
	int vals[2];
	yaml_mark_t marks[2];
	yaml_node_t *n, *bank, *pcrs;
	fleet_err e = fleet_yaml_reach(c->y, idx, key_mark, &n);
	if (e || (e = fleet_yaml_want(c->y, n, YAML_MAPPING_NODE, "quote")) ||
	    (e = fleet_yaml_keys(c->y, n, keys, 2, vals, marks)))
		return e;
	if (!vals[0] || !vals[1])
		return fleet_yaml_fail(c->y, FLEET_E_MALFORMED, &n->start_mark,
				       "quote needs both bank and pcrs");
	if ((e = fleet_yaml_reach(c->y, vals[0], &marks[0], &bank)) ||
	    (e = fleet_yaml_want(c->y, bank, YAML_SCALAR_NODE, "quote.bank")))
		return e;
	char name[16] = "";
	if (bank->data.scalar.length < sizeof(name))
		memcpy(name, bank->data.scalar.value, bank->data.scalar.length);
	c->p->bank = fleet_hash_alg_from_name(name);
	c->p->size = (uint16_t)fleet_hash_alg_size(c->p->bank);
	char pb[48];
	if (!c->p->bank || !c->p->size || c->p->size > FLEET_DIGEST_MAX)
		return fleet_yaml_fail(c->y, FLEET_E_MALFORMED, &bank->start_mark,
				       "unknown bank '%s' (sha1, sha256, sha384, sha512, sm3_256)",
				       fleet_yaml_printable(bank, pb));
	if ((e = fleet_yaml_reach(c->y, vals[1], &marks[1], &pcrs)) ||
	    (e = fleet_yaml_want(c->y, pcrs, YAML_SEQUENCE_NODE, "quote.pcrs")))
		return e;
	for (yaml_node_item_t *it = pcrs->data.sequence.items.start;
	     it < pcrs->data.sequence.items.top; it++) {
		yaml_node_t *item;
		unsigned i;
		if ((e = fleet_yaml_reach(c->y, *it, &pcrs->start_mark, &item)) ||
		    (e = get_pcr_index(c, item, &i)))
			return e;
		if (c->p->quote_mask & (1u << i))
			return fleet_yaml_fail(c->y, FLEET_E_MALFORMED, &item->start_mark,
					       "quote.pcrs lists PCR %u twice", i);
		c->p->quote_mask |= 1u << i;
	}
	if (!c->p->quote_mask)
		return fleet_yaml_fail(c->y, FLEET_E_MALFORMED, &pcrs->start_mark,
				       "quote.pcrs is empty");
	return FLEET_OK;
}

static fleet_err get_bios(struct pctx *c, int idx, const yaml_mark_t *key_mark)
{
	yaml_node_t *n;
	fleet_err e = fleet_yaml_reach(c->y, idx, key_mark, &n);
	if (e || (e = fleet_yaml_want(c->y, n, YAML_MAPPING_NODE, "pcr0_by_bios")))
		return e;
	size_t count = pairs_len(n);
	if (count > FLEET_PROFILE_MAX_BIOS)
		return fleet_yaml_fail(c->y, FLEET_E_TOO_LARGE, &n->start_mark,
				       "pcr0_by_bios has %zu entries, at most %d", count,
				       FLEET_PROFILE_MAX_BIOS);
	/* Empty would make every machine "pcr0-unknown-bios": surely a slip. */
	if (count == 0)
		return fleet_yaml_fail(
			c->y, FLEET_E_MALFORMED, &n->start_mark,
			"pcr0_by_bios is empty; leave it out to skip the PCR 0 check");
	if (!(c->p->bios = calloc(count, sizeof(*c->p->bios))))
		return fleet_yaml_fail(c->y, FLEET_E_NOMEM, &n->start_mark, "out of memory");
	c->p->has_pcr0_by_bios = true;
	for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top;
	     pr++) {
		yaml_node_t *k, *v;
		struct fleet_profile_bios *b = &c->p->bios[c->p->n_bios];
		if ((e = fleet_yaml_reach(c->y, pr->key, &n->start_mark, &k)) ||
		    (e = get_name(c, k, "a BIOS version", true, b->version)))
			return e;
		if (fleet_profile_pcr0_for_bios(c->p, b->version))
			return fleet_yaml_fail(c->y, FLEET_E_MALFORMED, &k->start_mark,
					       "duplicate key '%s' in pcr0_by_bios", b->version);
		if ((e = fleet_yaml_reach(c->y, pr->value, &k->start_mark, &v)) ||
		    (e = get_digest(c, v, b->pcr0)))
			return e;
		c->p->n_bios++;
	}
	return FLEET_OK;
}

static fleet_err get_pinned(struct pctx *c, int idx, const yaml_mark_t *key_mark)
{
	yaml_node_t *n;
	fleet_err e = fleet_yaml_reach(c->y, idx, key_mark, &n);
	if (e || (e = fleet_yaml_want(c->y, n, YAML_MAPPING_NODE, "pcrs")))
		return e;
	if (pairs_len(n) > FLEET_PCR_COUNT)
		return fleet_yaml_fail(c->y, FLEET_E_TOO_LARGE, &n->start_mark,
				       "pcrs has more than %d entries", FLEET_PCR_COUNT);
	for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top;
	     pr++) {
		yaml_node_t *k, *v;
		unsigned i;
		if ((e = fleet_yaml_reach(c->y, pr->key, &n->start_mark, &k)) ||
		    (e = get_pcr_index(c, k, &i)))
			return e;
		if (c->p->pinned_mask & (1u << i))
			return fleet_yaml_fail(c->y, FLEET_E_MALFORMED, &k->start_mark,
					       "duplicate key '%u' in pcrs", i);
		/* A pin on a PCR the quote leaves out would be checked against
		 * nothing the TPM signed. */
		if (!(c->p->quote_mask & (1u << i)))
			return fleet_yaml_fail(
				c->y, FLEET_E_MALFORMED, &k->start_mark,
				"pcrs pins PCR %u, which quote.pcrs does not include", i);
		if ((e = fleet_yaml_reach(c->y, pr->value, &k->start_mark, &v)) ||
		    (e = get_digest(c, v, c->p->pinned[i])))
			return e;
		c->p->pinned_mask |= 1u << i;
	}
	return FLEET_OK;
}

static fleet_err get_secure_boot(struct pctx *c, int idx, const yaml_mark_t *key_mark)
{
	yaml_node_t *n;
	fleet_err e = fleet_yaml_reach(c->y, idx, key_mark, &n);
	if (e || (e = fleet_yaml_want(c->y, n, YAML_SCALAR_NODE, "secure_boot")))
		return e;
	/* Plain style only: a quoted "true" is a string to YAML, and the
	 * operator meant one thing or the other. */
	if (fleet_yaml_is_plain(n) && fleet_yaml_is(n, "true"))
		c->p->secure_boot = FLEET_SECURE_BOOT_ON;
	else if (fleet_yaml_is_plain(n) && fleet_yaml_is(n, "false"))
		c->p->secure_boot = FLEET_SECURE_BOOT_OFF;
	else if (fleet_yaml_is_plain(n) && fleet_yaml_is(n, "any"))
		c->p->secure_boot = FLEET_SECURE_BOOT_ANY;
	else
		return fleet_yaml_fail(c->y, FLEET_E_MALFORMED, &n->start_mark,
				       "secure_boot must be true, false or any");
	return FLEET_OK;
}

enum { K_VERSION, K_CLASS, K_QUOTE, K_BIOS, K_SB, K_ALLOWED, K_RENEW, K_APPS, K_PCRS, K__N };
static const char *const top_keys[K__N] = {
	"version",     "class", "quote", "pcr0_by_bios", "secure_boot", "allowed_authorities",
	"renew_required_authorities", "boot_applications", "pcrs",
};

/* Rules that tie keys together; each refusal names the later key's line. */
static fleet_err cross_checks(struct pctx *c, const yaml_mark_t *marks, const int *vals)
{
	struct fleet_profile *p = c->p;
	if (vals[K_BIOS] && !(p->quote_mask & 1u))
		return fleet_yaml_fail(c->y, FLEET_E_MALFORMED, &marks[K_BIOS],
				       "pcr0_by_bios needs PCR 0 in quote.pcrs");
	if (vals[K_BIOS] && (p->pinned_mask & 1u))
		return fleet_yaml_fail(
			c->y, FLEET_E_MALFORMED, &marks[K_PCRS],
			"PCR 0 is set by pcr0_by_bios; do not pin it in pcrs as well");
	if (p->secure_boot != FLEET_SECURE_BOOT_ANY && !(p->quote_mask & (1u << 7)))
		return fleet_yaml_fail(c->y, FLEET_E_MALFORMED, &marks[K_SB],
				       "secure_boot needs PCR 7 in quote.pcrs");
	if (vals[K_ALLOWED] && !(p->quote_mask & (1u << 7)))
		return fleet_yaml_fail(c->y, FLEET_E_MALFORMED, &marks[K_ALLOWED],
				       "allowed_authorities needs PCR 7 in quote.pcrs");
	if (vals[K_RENEW] && !(p->quote_mask & (1u << 7)))
		return fleet_yaml_fail(c->y, FLEET_E_MALFORMED, &marks[K_RENEW],
				       "renew_required_authorities needs PCR 7 in quote.pcrs");
	if (vals[K_APPS] && !(p->quote_mask & (1u << 4)))
		return fleet_yaml_fail(c->y, FLEET_E_MALFORMED, &marks[K_APPS],
				       "boot_applications needs PCR 4 in quote.pcrs");
	if (vals[K_APPS] && p->boot_applications.n == 0)
		return fleet_yaml_fail(
			c->y, FLEET_E_MALFORMED, &marks[K_APPS],
			"boot_applications is empty; leave it out to skip the check");
	/* A required authority the allow-list refuses could never pass. */
	if (vals[K_RENEW] && vals[K_ALLOWED])
		for (size_t i = 0; i < p->renew_required_authorities.n; i++)
			if (!fleet_digest_list_has(p, &p->allowed_authorities,
						   p->renew_required_authorities.d[i]))
				return fleet_yaml_fail(
					c->y, FLEET_E_MALFORMED, &marks[K_RENEW],
					"renew_required_authorities entry %zu is not in "
					"allowed_authorities",
					i + 1);
	return FLEET_OK;
}

static fleet_err walk(struct pctx *c, yaml_node_t *root)
{
	int vals[K__N];
	yaml_mark_t marks[K__N];
	memset(marks, 0, sizeof(marks));
	fleet_err e;
	if ((e = fleet_yaml_want(c->y, root, YAML_MAPPING_NODE, "a profile")) ||
	    (e = fleet_yaml_keys(c->y, root, top_keys, K__N, vals, marks)))
		return e;
	for (int k = K_VERSION; k <= K_SB; k++)
		if (!vals[k] && k != K_BIOS)
			return fleet_yaml_fail(c->y, FLEET_E_MALFORMED, &root->start_mark,
					       "missing key '%s'", top_keys[k]);
	yaml_node_t *n;
	if ((e = fleet_yaml_reach(c->y, vals[K_VERSION], &marks[K_VERSION], &n)))
		return e;
	if (!(n->type == YAML_SCALAR_NODE && fleet_yaml_is_plain(n) && fleet_yaml_is(n, "1")))
		return fleet_yaml_fail(
			c->y, FLEET_E_MALFORMED, &n->start_mark,
			"version must be %d (the only profile version this fleetd reads)",
			FLEET_PROFILE_VERSION);
	if ((e = fleet_yaml_reach(c->y, vals[K_CLASS], &marks[K_CLASS], &n)) ||
	    (e = get_name(c, n, "class", false, c->p->class_name)))
		return e;
	/* quote first: it fixes the digest size every other key is read in. */
	if ((e = get_quote(c, vals[K_QUOTE], &marks[K_QUOTE])) ||
	    (e = get_secure_boot(c, vals[K_SB], &marks[K_SB])))
		return e;
	if (vals[K_BIOS] && (e = get_bios(c, vals[K_BIOS], &marks[K_BIOS])))
		return e;
	if (vals[K_ALLOWED] && (e = get_digest_list(c, vals[K_ALLOWED], &marks[K_ALLOWED],
						    "allowed_authorities",
						    &c->p->allowed_authorities)))
		return e;
	if (vals[K_RENEW] && (e = get_digest_list(c, vals[K_RENEW], &marks[K_RENEW],
						  "renew_required_authorities",
						  &c->p->renew_required_authorities)))
		return e;
	if (c->p->renew_required_authorities.n > FLEET_PROFILE_MAX_RENEW_AUTHORITIES)
		return fleet_yaml_fail(c->y, FLEET_E_TOO_LARGE, &marks[K_RENEW],
				       "renew_required_authorities has %zu entries, at most %d",
				       c->p->renew_required_authorities.n,
				       FLEET_PROFILE_MAX_RENEW_AUTHORITIES);
	if (vals[K_APPS] && (e = get_digest_list(c, vals[K_APPS], &marks[K_APPS],
						 "boot_applications", &c->p->boot_applications)))
		return e;
	if (vals[K_PCRS] && (e = get_pinned(c, vals[K_PCRS], &marks[K_PCRS])))
		return e;
	return cross_checks(c, marks, vals);
}

fleet_err fleet_profile_parse(const uint8_t *buf, size_t len, struct fleet_profile **out,
			      struct fleet_errctx *ec)
{
	if (ec)
		memset(ec, 0, sizeof(*ec));
	*out = NULL;
	/* The refusals before parsing, in the profile's own words (no place
	 * in the file: line and column 0). */
	if (!buf && len)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG, "no input");
	if (len > FLEET_PROFILE_MAX_SIZE)
		return fleet_errctx_msg(ec, FLEET_E_TOO_LARGE, "profile is %zu bytes, at most %u",
					len, FLEET_PROFILE_MAX_SIZE);
	/* The shared reader's refusals go in ec word for word. */
	struct fleet_yaml y;
	fleet_err e = fleet_yaml_load(&y, buf, len, FLEET_PROFILE_MAX_SIZE, "a profile", ec);
	if (e) {
		/* No document at all (the one malformed refusal without a
		 * place, yaml_strict.h): the profile's words for it. */
		if (e == FLEET_E_MALFORMED && ec && ec->line == 0)
			fleet_errctx_msg(ec, e, "empty profile");
		return e;
	}
	struct pctx c = {.y = &y, .p = calloc(1, sizeof(*c.p))};
	if (!c.p)
		e = fleet_yaml_fail(&y, FLEET_E_NOMEM, NULL, "out of memory");
	else
		e = walk(&c, y.root);
	if (e == FLEET_OK) {
		*out = c.p;
		c.p = NULL;
	}
	fleet_profile_free(c.p);
	fleet_yaml_free(&y);
	return e;
}

fleet_err fleet_profile_load(const char *path, struct fleet_profile **out,
			     struct fleet_errctx *ec)
{
	struct fleet_buf b;
	fb_init(&b);
	*out = NULL;
	if (ec)
		memset(ec, 0, sizeof(*ec));
	/* Configuration: it decides which boots are admitted, so owned by
	 * root or us and writable by nobody else (docs/files.md). */
	static const struct fleet_file_policy policy =
		FLEET_FILE_POLICY_CONFIG("the profile", FLEET_PROFILE_MAX_SIZE);
	fleet_err e = fleet_file_read(AT_FDCWD, path, &policy, &b, ec);
	if (e)
		fleet_errctx_wrap(ec, e, "cannot read ", NULL);
	else
		e = fleet_profile_parse(b.data, b.len, out, ec);
	fb_free(&b);
	return e;
}

void fleet_profile_free(struct fleet_profile *p)
{
	if (!p)
		return;
	free(p->bios);
	free(p->allowed_authorities.d);
	free(p->renew_required_authorities.d);
	free(p->boot_applications.d);
	free(p);
}

const uint8_t *fleet_profile_pcr0_for_bios(const struct fleet_profile *p, const char *version)
{
	if (!version)
		return NULL;
	for (size_t i = 0; i < p->n_bios; i++)
		if (!strcmp(p->bios[i].version, version))
			return p->bios[i].pcr0;
	return NULL;
}

bool fleet_digest_list_has(const struct fleet_profile *p, const struct fleet_digest_list *list,
			   const uint8_t *digest)
{
	for (size_t i = 0; i < list->n; i++)
		if (!memcmp(list->d[i], digest, p->size))
			return true;
	return false;
}

fleet_err fleet_profile_selection(const struct fleet_profile *p, char *out, size_t cap)
{
	const char *bank = fleet_hash_alg_name(p->bank);
	size_t n;

	if (!bank || cap < 2 || (p->quote_mask & ((1u << FLEET_PCR_COUNT) - 1)) == 0)
		return FLEET_E_INVALID_ARG;
	n = (size_t)snprintf(out, cap, "%s:", bank);
	for (unsigned i = 0; i < FLEET_PCR_COUNT && n < cap; i++)
		if (p->quote_mask & (1u << i))
			n += (size_t)snprintf(out + n, cap - n, "%s%u",
					      out[n - 1] == ':' ? "" : ",", i);
	return n < cap ? FLEET_OK : FLEET_E_TOO_LARGE;
}
