/*
 * tpm_public.c: TPM public areas (TPM2B_PUBLIC) from untrusted bytes, their
 * names, the OpenSSL keys behind them, and the attribute rules of an AK.
 *
 * The invariant the rest of fleetd leans on: every check (attributes, key
 * material) is made on the same TPMT_PUBLIC that fleet_tpm_name() hashes.
 * A TPM signs a name; Tss2_MU marshaling is injective, so if the name we
 * compute from our parsed struct equals the name the TPM signed, the struct
 * we checked is the object the TPM holds.
 */
#include "lib/tpm.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/param_build.h>
#include <openssl/x509.h>
#include <tss2/tss2_mu.h>

#include "lib/reader.h"

/* TPMA_OBJECT bits (TPM 2.0 Part 2, Table 31). */
#define ATTR_FIXEDTPM TPMA_OBJECT_FIXEDTPM
#define ATTR_FIXEDPARENT TPMA_OBJECT_FIXEDPARENT
#define ATTR_SDO TPMA_OBJECT_SENSITIVEDATAORIGIN
#define ATTR_RESTRICTED TPMA_OBJECT_RESTRICTED
#define ATTR_DECRYPT TPMA_OBJECT_DECRYPT
#define ATTR_SIGN TPMA_OBJECT_SIGN_ENCRYPT

/* Below 2048 bits an RSA key is not an attestation key we would trust;
 * TPM2B_PUBLIC_KEY_RSA caps the top end at 4096. */
#define RSA_MIN_BITS 2048

fleet_err fleet_tpm_public_parse(const uint8_t *buf, size_t len, TPM2B_PUBLIC *out,
				 struct fleet_errctx *ec)
{
	struct fleet_reader r, body;
	uint16_t size;
	size_t off = 0;
	TSS2_RC rc;

	if (!buf || !out)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG, "no input or output");
	memset(out, 0, sizeof(*out));
	fr_init(&r, buf, len);
	if (fr_u16be(&r, &size) != FLEET_OK)
		return fleet_errctx_set(ec, FLEET_E_TRUNCATED, 0,
					"TPM2B_PUBLIC shorter than its 2-byte size");
	if (size == 0)
		return fleet_errctx_set(ec, FLEET_E_MALFORMED, 0, "TPM2B_PUBLIC is empty");
	if (fr_sub(&r, size, &body) != FLEET_OK)
		return fleet_errctx_set(ec, FLEET_E_TRUNCATED, 2,
					"TPM2B_PUBLIC size %u but only %zu bytes follow",
					(unsigned)size, len - 2);
	if (!fr_at_end(&r))
		return fleet_errctx_set(ec, FLEET_E_MALFORMED, fr_offset(&r),
					"%zu trailing bytes after TPM2B_PUBLIC", fr_left(&r));

	/* Unmarshal the inner TPMT_PUBLIC over exactly `size` bytes, then insist
	 * every one of them was used: Tss2_MU_TPM2B_PUBLIC_Unmarshal itself does
	 * not check that the inner structure fills its declared size. */
	rc = Tss2_MU_TPMT_PUBLIC_Unmarshal(body.base, body.len, &off, &out->publicArea);
	if (rc != TSS2_RC_SUCCESS)
		return fleet_errctx_set(ec, FLEET_E_MALFORMED, 2,
					"TPMT_PUBLIC does not unmarshal (tss2 rc 0x%x)",
					(unsigned)rc);
	if (off != body.len)
		return fleet_errctx_set(ec, FLEET_E_MALFORMED, 2 + off,
					"%zu trailing bytes inside TPM2B_PUBLIC", body.len - off);
	out->size = size;

	if (out->publicArea.type != TPM2_ALG_RSA && out->publicArea.type != TPM2_ALG_ECC)
		return fleet_errctx_set(ec, FLEET_E_UNSUPPORTED, 2,
					"public area type 0x%04x is not RSA or ECC",
					(unsigned)out->publicArea.type);
	/* The name is the object's identity; without its hash there is none. */
	if (fleet_hash_alg_md(out->publicArea.nameAlg) == NULL)
		return fleet_errctx_set(ec, FLEET_E_UNSUPPORTED, 4,
					"nameAlg 0x%04x is not a hash fleetd can compute",
					(unsigned)out->publicArea.nameAlg);
	return FLEET_OK;
}

fleet_err fleet_tpm_name(const TPMT_PUBLIC *pub, uint8_t *name, size_t cap, size_t *name_len)
{
	/* The marshaled form is never larger than the in-memory struct: every
	 * union is stored at its largest member and sizes are stored as well. */
	uint8_t m[sizeof(TPMT_PUBLIC)];
	size_t mlen = 0, dlen;
	fleet_err e;

	if (!pub || !name || !name_len)
		return FLEET_E_INVALID_ARG;
	dlen = fleet_hash_alg_size(pub->nameAlg);
	if (dlen == 0)
		return FLEET_E_UNSUPPORTED;
	if (cap < 2 + dlen)
		return FLEET_E_TOO_LARGE;
	if (Tss2_MU_TPMT_PUBLIC_Marshal(pub, m, sizeof(m), &mlen) != TSS2_RC_SUCCESS)
		return FLEET_E_MALFORMED;
	e = fleet_hash(pub->nameAlg, m, mlen, name + 2);
	if (e != FLEET_OK)
		return e;
	name[0] = (uint8_t)(pub->nameAlg >> 8);
	name[1] = (uint8_t)(pub->nameAlg & 0xff);
	*name_len = 2 + dlen;
	return FLEET_OK;
}

static fleet_err rsa_to_pkey(const TPMT_PUBLIC *pub, EVP_PKEY **out)
{
	const TPMS_RSA_PARMS *p = &pub->parameters.rsaDetail;
	const TPM2B_PUBLIC_KEY_RSA *n = &pub->unique.rsa;
	/* A zero exponent in the public area means the default, 2^16 + 1. */
	uint32_t exp = p->exponent ? p->exponent : 65537;
	OSSL_PARAM_BLD *bld = NULL;
	OSSL_PARAM *params = NULL;
	EVP_PKEY_CTX *ctx = NULL;
	BIGNUM *bn_n = NULL, *bn_e = NULL;
	fleet_err e = FLEET_E_CRYPTO;

	if (p->keyBits < RSA_MIN_BITS || p->keyBits % 8 != 0)
		return FLEET_E_UNSUPPORTED;
	/* keyBits is what the TPM claims; the modulus must be exactly that long
	 * with its top byte set, or the two disagree about the key. */
	if (n->size != p->keyBits / 8 || n->size > sizeof(n->buffer) || n->buffer[0] == 0)
		return FLEET_E_MALFORMED;
	if ((n->buffer[n->size - 1] & 1) == 0 || exp < 3 || (exp & 1) == 0)
		return FLEET_E_MALFORMED;

	bn_n = BN_bin2bn(n->buffer, (int)n->size, NULL);
	bn_e = BN_new();
	bld = OSSL_PARAM_BLD_new();
	if (!bn_n || !bn_e || !bld || !BN_set_word(bn_e, exp))
		goto out;
	if (!OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn_n) ||
	    !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, bn_e))
		goto out;
	params = OSSL_PARAM_BLD_to_param(bld);
	ctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL);
	if (!params || !ctx || EVP_PKEY_fromdata_init(ctx) <= 0)
		goto out;
	if (EVP_PKEY_fromdata(ctx, out, EVP_PKEY_PUBLIC_KEY, params) <= 0) {
		e = FLEET_E_MALFORMED;
		goto out;
	}
	e = FLEET_OK;
out:
	EVP_PKEY_CTX_free(ctx);
	OSSL_PARAM_free(params);
	OSSL_PARAM_BLD_free(bld);
	BN_free(bn_n);
	BN_free(bn_e);
	return e;
}

static fleet_err ecc_to_pkey(const TPMT_PUBLIC *pub, EVP_PKEY **out)
{
	const TPMS_ECC_POINT *pt = &pub->unique.ecc;
	const char *group;
	size_t fsz;
	/* Uncompressed SEC1 point: 0x04 || X || Y, each padded to the field. */
	uint8_t oct[1 + 2 * 48];
	OSSL_PARAM params[3];
	EVP_PKEY_CTX *ctx = NULL;
	fleet_err e = FLEET_E_CRYPTO;

	switch (pub->parameters.eccDetail.curveID) {
	case TPM2_ECC_NIST_P256:
		group = "P-256";
		fsz = 32;
		break;
	case TPM2_ECC_NIST_P384:
		group = "P-384";
		fsz = 48;
		break;
	default:
		return FLEET_E_UNSUPPORTED;
	}
	/* A TPM writes coordinates at the field size, but the format allows
	 * leading zeros to be dropped; anything longer is not on this curve. */
	if (pt->x.size == 0 || pt->y.size == 0 || pt->x.size > fsz || pt->y.size > fsz)
		return FLEET_E_MALFORMED;
	memset(oct, 0, sizeof(oct));
	oct[0] = 0x04;
	memcpy(oct + 1 + (fsz - pt->x.size), pt->x.buffer, pt->x.size);
	memcpy(oct + 1 + fsz + (fsz - pt->y.size), pt->y.buffer, pt->y.size);

	params[0] = OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, (char *)group, 0);
	params[1] = OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, oct, 1 + 2 * fsz);
	params[2] = OSSL_PARAM_construct_end();
	ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
	if (!ctx || EVP_PKEY_fromdata_init(ctx) <= 0)
		goto out;
	/* Decoding the point checks that it lies on the curve. */
	if (EVP_PKEY_fromdata(ctx, out, EVP_PKEY_PUBLIC_KEY, params) <= 0) {
		e = FLEET_E_MALFORMED;
		goto out;
	}
	e = FLEET_OK;
out:
	EVP_PKEY_CTX_free(ctx);
	return e;
}

/*
 * Keys already converted, by the exact fields the conversion reads.
 *
 * One admission converts the same three or four public areas (AK, LDevID,
 * the EKs) about twelve times: at the intake, the challenge, the quote, the
 * certification, the issuing and the confirm, each costing EVP_PKEY_fromdata
 * and its checks (~60-100 us). The conversion is a pure function of the
 * fields copied into the tag below (type, curve or key size and exponent,
 * the key material), so a key found here is the key the conversion would
 * make again, checks included; only successful conversions are kept. The
 * cache is this process's memory only (never the store, never a sealed
 * session), holds public keys only, and is bounded: KEY_CACHE_SLOTS entries,
 * the least recently used replaced. An EVP_PKEY is handed out with a
 * reference of its own (EVP_PKEY_up_ref); OpenSSL allows one key to be used
 * from several threads at once as long as none modifies it, and no caller
 * does (they verify, encrypt to and derive with it).
 */
#define KEY_CACHE_SLOTS 64
#define KEY_TAG_MAX (2 + 2 + 4 + 2 + sizeof(((TPMU_PUBLIC_ID *)0)->rsa.buffer) + 2)

struct key_slot {
	size_t tag_len; /* 0: empty */
	uint64_t used;
	EVP_PKEY *key;
	uint8_t tag[KEY_TAG_MAX];
};

static struct {
	pthread_mutex_t lock;
	uint64_t clock;
	struct key_slot slot[KEY_CACHE_SLOTS];
} key_cache = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void tag_put(uint8_t *t, size_t *n, const void *p, size_t len)
{
	memcpy(t + *n, p, len);
	*n += len;
}

static void tag_put_u16(uint8_t *t, size_t *n, uint16_t v)
{
	uint8_t b[2] = {(uint8_t)(v >> 8), (uint8_t)v};
	tag_put(t, n, b, 2);
}

/* The fields the conversion reads, length-prefixed so no two areas share a
 * tag; 0 when the area is not one the conversion accepts (it then runs and
 * refuses as it always did, and nothing is cached). */
static size_t key_tag(const TPMT_PUBLIC *pub, uint8_t t[KEY_TAG_MAX])
{
	size_t n = 0;

	tag_put_u16(t, &n, pub->type);
	if (pub->type == TPM2_ALG_RSA) {
		const TPM2B_PUBLIC_KEY_RSA *m = &pub->unique.rsa;
		uint32_t exp = pub->parameters.rsaDetail.exponent;
		uint8_t e4[4] = {(uint8_t)(exp >> 24), (uint8_t)(exp >> 16), (uint8_t)(exp >> 8),
				 (uint8_t)exp};
		if (m->size > sizeof(m->buffer))
			return 0;
		tag_put_u16(t, &n, pub->parameters.rsaDetail.keyBits);
		tag_put(t, &n, e4, 4);
		tag_put_u16(t, &n, m->size);
		tag_put(t, &n, m->buffer, m->size);
	} else if (pub->type == TPM2_ALG_ECC) {
		const TPMS_ECC_POINT *pt = &pub->unique.ecc;
		if (pt->x.size > 48 || pt->y.size > 48)
			return 0;
		tag_put_u16(t, &n, pub->parameters.eccDetail.curveID);
		tag_put_u16(t, &n, pt->x.size);
		tag_put(t, &n, pt->x.buffer, pt->x.size);
		tag_put_u16(t, &n, pt->y.size);
		tag_put(t, &n, pt->y.buffer, pt->y.size);
	} else {
		return 0;
	}
	return n;
}

static EVP_PKEY *key_cache_get(const uint8_t *tag, size_t n)
{
	EVP_PKEY *k = NULL;

	pthread_mutex_lock(&key_cache.lock);
	for (size_t i = 0; i < KEY_CACHE_SLOTS; i++) {
		struct key_slot *s = &key_cache.slot[i];
		if (s->tag_len == n && memcmp(s->tag, tag, n) == 0) {
			if (EVP_PKEY_up_ref(s->key) == 1) {
				k = s->key;
				s->used = ++key_cache.clock;
			}
			break;
		}
	}
	pthread_mutex_unlock(&key_cache.lock);
	return k;
}

static void key_cache_put(const uint8_t *tag, size_t n, EVP_PKEY *k)
{
	struct key_slot *victim = NULL;

	if (EVP_PKEY_up_ref(k) != 1)
		return;
	pthread_mutex_lock(&key_cache.lock);
	for (size_t i = 0; i < KEY_CACHE_SLOTS; i++) {
		struct key_slot *s = &key_cache.slot[i];
		if (s->tag_len == n && memcmp(s->tag, tag, n) == 0) {
			/* Another thread converted it meanwhile. */
			pthread_mutex_unlock(&key_cache.lock);
			EVP_PKEY_free(k);
			return;
		}
		if (!victim || s->tag_len == 0 || (victim->tag_len != 0 && s->used < victim->used))
			victim = s;
	}
	EVP_PKEY *old = victim->tag_len ? victim->key : NULL;
	memcpy(victim->tag, tag, n);
	victim->tag_len = n;
	victim->key = k;
	victim->used = ++key_cache.clock;
	pthread_mutex_unlock(&key_cache.lock);
	EVP_PKEY_free(old);
}

static fleet_err to_pkey_uncached(const TPMT_PUBLIC *pub, EVP_PKEY **out);

fleet_err fleet_tpm_public_to_pkey(const TPMT_PUBLIC *pub, EVP_PKEY **out)
{
	uint8_t tag[KEY_TAG_MAX];
	size_t n;
	fleet_err e;

	if (!pub || !out)
		return FLEET_E_INVALID_ARG;
	*out = NULL;
	n = key_tag(pub, tag);
	if (n && (*out = key_cache_get(tag, n)) != NULL)
		return FLEET_OK;
	e = to_pkey_uncached(pub, out);
	if (e == FLEET_OK && n)
		key_cache_put(tag, n, *out);
	return e;
}

static fleet_err to_pkey_uncached(const TPMT_PUBLIC *pub, EVP_PKEY **out)
{
	EVP_PKEY *k = NULL;
	EVP_PKEY_CTX *chk = NULL;
	fleet_err e;

	if (pub->type == TPM2_ALG_RSA)
		e = rsa_to_pkey(pub, &k);
	else if (pub->type == TPM2_ALG_ECC)
		e = ecc_to_pkey(pub, &k);
	else
		e = FLEET_E_UNSUPPORTED;
	if (e != FLEET_OK) {
		/* Refused input leaves OpenSSL errors queued; they are ours, not
		 * the next caller's. */
		ERR_clear_error();
		return e;
	}
	/* For ECC, decoding already put the point on the curve; the quick
	 * check also refuses the point at infinity, and with cofactor 1 on
	 * P-256/P-384 that leaves only points of prime order. For RSA the full
	 * OpenSSL check (a Miller-Rabin round on the modulus) costs ~4 ms a
	 * key, 200 times the verification, and protects nothing here: a bad
	 * modulus only lets its owner sign for a key that is his anyway. The
	 * cheap structural checks in rsa_to_pkey are the ones that matter. */
	if (pub->type == TPM2_ALG_ECC) {
		chk = EVP_PKEY_CTX_new_from_pkey(NULL, k, NULL);
		if (!chk) {
			EVP_PKEY_free(k);
			return FLEET_E_NOMEM;
		}
		if (EVP_PKEY_public_check_quick(chk) != 1) {
			ERR_clear_error();
			EVP_PKEY_CTX_free(chk);
			EVP_PKEY_free(k);
			return FLEET_E_MALFORMED;
		}
		EVP_PKEY_CTX_free(chk);
	}
	*out = k;
	return FLEET_OK;
}

fleet_err fleet_tpm_ak_check(const TPMT_PUBLIC *ak, const char **reason)
{
	static const struct {
		TPMA_OBJECT bit;
		bool want;
		const char *reason;
	} rules[] = {
		{ATTR_RESTRICTED, true, "ak-not-restricted"},
		{ATTR_SIGN, true, "ak-not-sign"},
		{ATTR_DECRYPT, false, "ak-decrypt-set"},
		{ATTR_FIXEDTPM, true, "ak-not-fixedtpm"},
		{ATTR_FIXEDPARENT, true, "ak-not-fixedparent"},
		{ATTR_SDO, true, "ak-not-sensitivedataorigin"},
	};
	const char *dummy;

	if (!reason)
		reason = &dummy;
	*reason = NULL;
	if (!ak)
		return FLEET_E_INVALID_ARG;
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
		bool has = (ak->objectAttributes & rules[i].bit) != 0;
		if (has != rules[i].want) {
			*reason = rules[i].reason;
			return FLEET_E_VERIFY;
		}
	}
	return FLEET_OK;
}

/* A decimal PCR index 0..23, digits only: no sign, no spaces, no hex. */
static fleet_err parse_index(const char *s, size_t n, unsigned *out)
{
	unsigned v = 0;
	if (n == 0 || n > 2)
		return FLEET_E_MALFORMED;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return FLEET_E_MALFORMED;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v >= FLEET_PCR_COUNT)
		return FLEET_E_MALFORMED;
	*out = v;
	return FLEET_OK;
}

/* One "alg:i,j,k" bank, [s, s+n). */
static fleet_err parse_bank(const char *s, size_t n, TPMS_PCR_SELECTION *sel)
{
	const char *colon = memchr(s, ':', n);
	char alg[16];
	size_t alen, pos;
	uint16_t id;

	if (!colon)
		return FLEET_E_MALFORMED;
	alen = (size_t)(colon - s);
	if (alen == 0 || alen >= sizeof(alg))
		return FLEET_E_MALFORMED;
	memcpy(alg, s, alen);
	alg[alen] = '\0';
	id = fleet_hash_alg_from_name(alg);
	if (id == 0)
		return FLEET_E_UNSUPPORTED;
	memset(sel, 0, sizeof(*sel));
	sel->hash = id;
	sel->sizeofSelect = 3;
	pos = alen + 1;
	if (pos >= n)
		return FLEET_E_MALFORMED; /* "sha256:" selects nothing */
	while (pos < n) {
		const char *comma = memchr(s + pos, ',', n - pos);
		size_t end = comma ? (size_t)(comma - s) : n;
		unsigned idx;
		if (parse_index(s + pos, end - pos, &idx) != FLEET_OK)
			return FLEET_E_MALFORMED;
		/* Naming a PCR twice is an operator's typo, not a wish. */
		if (sel->pcrSelect[idx / 8] & (1u << (idx % 8)))
			return FLEET_E_MALFORMED;
		sel->pcrSelect[idx / 8] |= (uint8_t)(1u << (idx % 8));
		if (comma && end + 1 == n)
			return FLEET_E_MALFORMED; /* trailing comma */
		pos = end + 1;
	}
	return FLEET_OK;
}

fleet_err fleet_pcr_selection_parse(const char *s, TPML_PCR_SELECTION *out)
{
	size_t len, pos = 0;

	if (!s || !out)
		return FLEET_E_INVALID_ARG;
	memset(out, 0, sizeof(*out));
	len = strlen(s);
	if (len == 0 || len > 1024)
		return FLEET_E_MALFORMED;
	while (pos <= len) {
		const char *plus = memchr(s + pos, '+', len - pos);
		size_t end = plus ? (size_t)(plus - s) : len;
		TPMS_PCR_SELECTION bank;
		fleet_err e;

		if (out->count >= TPM2_NUM_PCR_BANKS)
			return FLEET_E_TOO_LARGE;
		e = parse_bank(s + pos, end - pos, &bank);
		if (e != FLEET_OK)
			return e;
		for (uint32_t i = 0; i < out->count; i++)
			if (out->pcrSelections[i].hash == bank.hash)
				return FLEET_E_MALFORMED; /* one bank listed twice */
		out->pcrSelections[out->count++] = bank;
		if (!plus)
			break;
		if (end + 1 == len)
			return FLEET_E_MALFORMED; /* trailing '+' */
		pos = end + 1;
	}
	return FLEET_OK;
}
