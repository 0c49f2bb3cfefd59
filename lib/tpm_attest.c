/*
 * tpm_attest.c: quotes and certifications signed by an attestation key.
 *
 * Order of checks, and why: the AK's attributes first (a key that is not a
 * restricted signing key proves nothing about TPM_GENERATED structures),
 * then the signature over the raw TPMS_ATTEST bytes, and only then the
 * parse of those bytes. Authenticating before parsing keeps the unmarshal
 * code away from anything the AK did not sign; the parser is fuzzed on its
 * own all the same (tests/fuzz/fuzz_tpm_attest.c).
 */
#include "lib/tpm.h"

#include <string.h>

#include <openssl/crypto.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/rsa.h>
#include <tss2/tss2_mu.h>

fleet_err fleet_tpm_attest_parse(const uint8_t *buf, size_t len, TPMS_ATTEST *out,
				 struct fleet_errctx *ec)
{
	size_t off = 0;
	TSS2_RC rc;

	if (!buf || !out)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG, "no input or output");
	memset(out, 0, sizeof(*out));
	if (len == 0)
		return fleet_errctx_set(ec, FLEET_E_TRUNCATED, 0, "TPMS_ATTEST is empty");
	/* Tss2_MU does not say where it stopped on failure, so the offset is the
	 * start of the structure. */
	rc = Tss2_MU_TPMS_ATTEST_Unmarshal(buf, len, &off, out);
	if (rc != TSS2_RC_SUCCESS)
		return fleet_errctx_set(ec, FLEET_E_MALFORMED, 0,
					"TPMS_ATTEST does not unmarshal (tss2 rc 0x%x)",
					(unsigned)rc);
	if (off != len)
		return fleet_errctx_set(ec, FLEET_E_MALFORMED, off,
					"%zu trailing bytes after TPMS_ATTEST", len - off);
	return FLEET_OK;
}

fleet_err fleet_tpm_signature_parse(const uint8_t *buf, size_t len, TPMT_SIGNATURE *out,
				    struct fleet_errctx *ec)
{
	size_t off = 0;
	TSS2_RC rc;

	if (!buf || !out)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG, "no input or output");
	memset(out, 0, sizeof(*out));
	if (len < 2)
		return fleet_errctx_set(ec, FLEET_E_TRUNCATED, 0,
					"TPMT_SIGNATURE shorter than its algorithm");
	rc = Tss2_MU_TPMT_SIGNATURE_Unmarshal(buf, len, &off, out);
	if (rc != TSS2_RC_SUCCESS)
		return fleet_errctx_set(ec, FLEET_E_MALFORMED, 0,
					"TPMT_SIGNATURE does not unmarshal (tss2 rc 0x%x)",
					(unsigned)rc);
	if (off != len)
		return fleet_errctx_set(ec, FLEET_E_MALFORMED, off,
					"%zu trailing bytes after TPMT_SIGNATURE", len - off);
	switch (out->sigAlg) {
	case TPM2_ALG_RSASSA:
	case TPM2_ALG_RSAPSS:
	case TPM2_ALG_ECDSA:
		return FLEET_OK;
	default:
		return fleet_errctx_set(ec, FLEET_E_UNSUPPORTED, 0,
					"signature algorithm 0x%04x is not RSASSA, RSAPSS or ECDSA",
					(unsigned)out->sigAlg);
	}
}

/* The scheme the key itself fixes, or TPM2_ALG_NULL when it leaves the
 * choice to the caller of TPM2_Sign / TPM2_Quote. */
static void key_scheme(const TPMT_PUBLIC *key, uint16_t *alg, uint16_t *hash)
{
	if (key->type == TPM2_ALG_RSA) {
		*alg = key->parameters.rsaDetail.scheme.scheme;
		*hash = key->parameters.rsaDetail.scheme.details.anySig.hashAlg;
	} else {
		*alg = key->parameters.eccDetail.scheme.scheme;
		*hash = key->parameters.eccDetail.scheme.details.anySig.hashAlg;
	}
}

/* SHA-1 is refused: a collision in the signed TPMS_ATTEST is an
 * attacker-chosen quote. */
static bool sig_hash_ok(uint16_t h)
{
	return h == FLEET_ALG_SHA256 || h == FLEET_ALG_SHA384 || h == FLEET_ALG_SHA512;
}

/* TPMS_SIGNATURE_ECDSA carries r and s as big-endian integers; OpenSSL
 * verifies the DER ECDSA-Sig-Value. */
static fleet_err ecdsa_der(const TPMS_SIGNATURE_ECDSA *e, unsigned char **der, int *der_len)
{
	ECDSA_SIG *s = ECDSA_SIG_new();
	BIGNUM *r = BN_bin2bn(e->signatureR.buffer, e->signatureR.size, NULL);
	BIGNUM *ss = BN_bin2bn(e->signatureS.buffer, e->signatureS.size, NULL);

	if (!s || !r || !ss || !ECDSA_SIG_set0(s, r, ss)) {
		ECDSA_SIG_free(s);
		BN_free(r);
		BN_free(ss);
		return FLEET_E_NOMEM;
	}
	*der = NULL;
	*der_len = i2d_ECDSA_SIG(s, der);
	ECDSA_SIG_free(s);
	return *der_len > 0 ? FLEET_OK : FLEET_E_CRYPTO;
}

fleet_err fleet_tpm_signature_verify(const TPMT_PUBLIC *key, const uint8_t *msg, size_t msg_len,
				     const TPMT_SIGNATURE *sig, const char **reason)
{
	uint16_t kalg, khash, hash;
	EVP_PKEY *pk = NULL;
	EVP_MD_CTX *mctx = NULL;
	EVP_PKEY_CTX *pctx = NULL;
	const unsigned char *sbytes;
	unsigned char *der = NULL;
	size_t slen;
	fleet_err e;
	const char *dummy;

	if (!reason)
		reason = &dummy;
	*reason = "ak-unsupported";
	if (!key || !msg || !sig)
		return FLEET_E_INVALID_ARG;
	hash = sig->signature.any.hashAlg;
	if (key->type != TPM2_ALG_RSA && key->type != TPM2_ALG_ECC)
		return FLEET_E_UNSUPPORTED;

	*reason = "signature-scheme";
	key_scheme(key, &kalg, &khash);
	if (key->type == TPM2_ALG_RSA && sig->sigAlg != TPM2_ALG_RSASSA &&
	    sig->sigAlg != TPM2_ALG_RSAPSS)
		return FLEET_E_VERIFY;
	if (key->type == TPM2_ALG_ECC && sig->sigAlg != TPM2_ALG_ECDSA)
		return FLEET_E_VERIFY;
	/* A key with a scheme signs only with that scheme; anything else was
	 * not made by this key's TPM, whatever the bytes say. */
	if (kalg != TPM2_ALG_NULL && (kalg != sig->sigAlg || khash != hash))
		return FLEET_E_VERIFY;
	if (!sig_hash_ok(hash))
		return FLEET_E_VERIFY;

	*reason = "ak-unsupported";
	e = fleet_tpm_public_to_pkey(key, &pk);
	if (e != FLEET_OK)
		return e;

	*reason = "signature-invalid";
	if (sig->sigAlg == TPM2_ALG_ECDSA) {
		int dl;
		e = ecdsa_der(&sig->signature.ecdsa, &der, &dl);
		if (e != FLEET_OK)
			goto out;
		sbytes = der;
		slen = (size_t)dl;
	} else {
		/* RSASSA and RSAPSS share one layout. */
		sbytes = sig->signature.rsassa.sig.buffer;
		slen = sig->signature.rsassa.sig.size;
	}

	e = FLEET_E_CRYPTO;
	mctx = EVP_MD_CTX_new();
	if (!mctx || EVP_DigestVerifyInit(mctx, &pctx, fleet_hash_alg_md(hash), NULL, pk) <= 0)
		goto out;
	if (sig->sigAlg == TPM2_ALG_RSASSA &&
	    EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PADDING) <= 0)
		goto out;
	/* TPMs differ on the PSS salt: the reference code uses the digest size,
	 * Part 1 (B.7) and older firmware the largest the key allows. The salt
	 * length is no security parameter for the verifier, so let OpenSSL
	 * recover it from the encoded message instead of refusing either. */
	if (sig->sigAlg == TPM2_ALG_RSAPSS &&
	    (EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) <= 0 ||
	     EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_AUTO) <= 0 ||
	     EVP_PKEY_CTX_set_rsa_mgf1_md(pctx, fleet_hash_alg_md(hash)) <= 0))
		goto out;
	e = EVP_DigestVerify(mctx, sbytes, slen, msg, msg_len) == 1 ? FLEET_OK : FLEET_E_VERIFY;
out:
	/* A refused signature leaves OpenSSL errors queued; they are not ours
	 * to report and must not leak into the next caller's error check. */
	ERR_clear_error();
	OPENSSL_free(der);
	EVP_MD_CTX_free(mctx);
	EVP_PKEY_free(pk);
	if (e == FLEET_OK)
		*reason = NULL;
	return e;
}

/* The checks a quote and a certification share: the AK, its signature over
 * the raw bytes, then magic, type and extraData of the parsed structure. */
static fleet_err attest_common(const TPMT_PUBLIC *ak, const uint8_t *attest, size_t attest_len,
			       const uint8_t *sig_buf, size_t sig_len, const uint8_t *extra,
			       size_t extra_len, TPM2_ST want_type, TPMS_ATTEST *a,
			       TPMT_SIGNATURE *sig, const char **reason)
{
	fleet_err e;

	e = fleet_tpm_ak_check(ak, reason);
	if (e != FLEET_OK)
		return e;
	*reason = "signature-malformed";
	e = fleet_tpm_signature_parse(sig_buf, sig_len, sig, NULL);
	if (e != FLEET_OK)
		return e;
	e = fleet_tpm_signature_verify(ak, attest, attest_len, sig, reason);
	if (e != FLEET_OK)
		return e;
	*reason = "attest-malformed";
	e = fleet_tpm_attest_parse(attest, attest_len, a, NULL);
	if (e != FLEET_OK)
		return e;
	/* The AK is restricted, so the TPM signed these bytes only if it built
	 * them itself; the magic is what says so. */
	*reason = "attest-magic";
	if (a->magic != TPM2_GENERATED_VALUE)
		return FLEET_E_VERIFY;
	*reason = "attest-type";
	if (a->type != want_type)
		return FLEET_E_VERIFY;
	*reason = "attest-extradata";
	if (a->extraData.size != extra_len ||
	    (extra_len && CRYPTO_memcmp(a->extraData.buffer, extra, extra_len) != 0))
		return FLEET_E_VERIFY;
	*reason = NULL;
	return FLEET_OK;
}

static bool pcr_selected(const TPMS_PCR_SELECTION *s, unsigned idx)
{
	unsigned n = s->sizeofSelect < sizeof(s->pcrSelect) ? s->sizeofSelect
							      : sizeof(s->pcrSelect);
	return idx / 8 < n && (s->pcrSelect[idx / 8] & (1u << (idx % 8)));
}

/* Same banks in the same order, same PCRs in each. sizeofSelect may differ
 * as long as the bits are the same: it is framing, not a selection. */
static bool selection_equal(const TPML_PCR_SELECTION *a, const TPML_PCR_SELECTION *b)
{
	if (a->count != b->count || a->count > TPM2_NUM_PCR_BANKS)
		return false;
	for (uint32_t i = 0; i < a->count; i++) {
		const TPMS_PCR_SELECTION *x = &a->pcrSelections[i], *y = &b->pcrSelections[i];
		if (x->hash != y->hash)
			return false;
		for (unsigned p = 0; p < 8 * TPM2_PCR_SELECT_MAX; p++)
			if (pcr_selected(x, p) != pcr_selected(y, p))
				return false;
	}
	return true;
}

/* The digest TPM2_Quote computes: H(values in selection order), with the
 * signing scheme's hash. Each claimed value must be the PCR the selection
 * names at that position, with that bank's digest size. */
static fleet_err pcr_composite(const struct fleet_quote_check *q, uint16_t hash, uint8_t *out,
			       size_t *out_len)
{
	const TPML_PCR_SELECTION *sel = q->selection;
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	unsigned int n = 0;
	size_t k = 0;
	fleet_err e = FLEET_E_MALFORMED;

	if (!c)
		return FLEET_E_NOMEM;
	if (EVP_DigestInit_ex(c, fleet_hash_alg_md(hash), NULL) != 1) {
		e = FLEET_E_CRYPTO;
		goto out;
	}
	for (uint32_t b = 0; b < sel->count && b < TPM2_NUM_PCR_BANKS; b++) {
		const TPMS_PCR_SELECTION *s = &sel->pcrSelections[b];
		size_t dsz = fleet_hash_alg_size(s->hash);
		for (unsigned p = 0; p < 8 * TPM2_PCR_SELECT_MAX; p++) {
			const struct fleet_pcr_value *v;
			if (!pcr_selected(s, p))
				continue;
			if (k >= q->n_values || dsz == 0)
				goto out;
			v = &q->values[k++];
			if (v->alg != s->hash || v->index != p || v->size != dsz ||
			    v->size > sizeof(v->digest))
				goto out;
			if (EVP_DigestUpdate(c, v->digest, v->size) != 1) {
				e = FLEET_E_CRYPTO;
				goto out;
			}
		}
	}
	if (k != q->n_values)
		goto out;
	if (EVP_DigestFinal_ex(c, out, &n) != 1) {
		e = FLEET_E_CRYPTO;
		goto out;
	}
	*out_len = n;
	e = FLEET_OK;
out:
	EVP_MD_CTX_free(c);
	return e;
}

static void fill_clock(const TPMS_ATTEST *a, struct fleet_tpm_clock *clock)
{
	if (!clock)
		return;
	clock->clock = a->clockInfo.clock;
	clock->reset_count = a->clockInfo.resetCount;
	clock->restart_count = a->clockInfo.restartCount;
	clock->safe = a->clockInfo.safe == TPM2_YES;
	clock->firmware_version = a->firmwareVersion;
}

fleet_err fleet_quote_authenticate(const struct fleet_quote_check *q,
				   struct fleet_tpm_clock *clock, const char **reason)
{
	TPMS_ATTEST a;
	TPMT_SIGNATURE sig;
	fleet_err e;
	const char *dummy;

	if (!reason)
		reason = &dummy;
	*reason = "attest-malformed";
	if (clock)
		memset(clock, 0, sizeof(*clock));
	if (!q || !q->ak || !q->attest || !q->sig || (q->extra_data_len && !q->extra_data))
		return FLEET_E_INVALID_ARG;
	e = attest_common(q->ak, q->attest, q->attest_len, q->sig, q->sig_len, q->extra_data,
			  q->extra_data_len, TPM2_ST_ATTEST_QUOTE, &a, &sig, reason);
	if (e != FLEET_OK)
		return e;
	fill_clock(&a, clock);
	*reason = NULL;
	return FLEET_OK;
}

fleet_err fleet_quote_verify(const struct fleet_quote_check *q, struct fleet_tpm_clock *clock,
			     const char **reason)
{
	TPMS_ATTEST a;
	TPMT_SIGNATURE sig;
	uint8_t want[FLEET_DIGEST_MAX];
	size_t want_len = 0;
	const TPMS_QUOTE_INFO *qi;
	fleet_err e;
	const char *dummy;

	if (!reason)
		reason = &dummy;
	*reason = "attest-malformed";
	if (clock)
		memset(clock, 0, sizeof(*clock));
	if (!q || !q->ak || !q->attest || !q->sig || !q->selection ||
	    (q->n_values && !q->values) || (q->extra_data_len && !q->extra_data))
		return FLEET_E_INVALID_ARG;

	e = attest_common(q->ak, q->attest, q->attest_len, q->sig, q->sig_len, q->extra_data,
			  q->extra_data_len, TPM2_ST_ATTEST_QUOTE, &a, &sig, reason);
	if (e != FLEET_OK)
		return e;
	qi = &a.attested.quote;
	*reason = "quote-selection";
	if (!selection_equal(&qi->pcrSelect, q->selection))
		return FLEET_E_VERIFY;
	/* TPM2_Quote hashes the PCRs with the signing scheme's hash, which
	 * fleet_tpm_signature_verify has tied to the AK's own scheme. */
	*reason = "quote-pcr-values";
	e = pcr_composite(q, sig.signature.any.hashAlg, want, &want_len);
	if (e != FLEET_OK)
		return e;
	*reason = "quote-pcr-digest";
	if (qi->pcrDigest.size != want_len ||
	    CRYPTO_memcmp(qi->pcrDigest.buffer, want, want_len) != 0)
		return FLEET_E_VERIFY;
	fill_clock(&a, clock);
	*reason = NULL;
	return FLEET_OK;
}

fleet_err fleet_certify_verify(const struct fleet_certify_check *c, uint8_t spki_sha256[32],
			       const char **reason)
{
	static const struct {
		TPMA_OBJECT bit;
		bool want;
		const char *reason;
	} rules[] = {
		{TPMA_OBJECT_FIXEDTPM, true, "key-not-fixedtpm"},
		{TPMA_OBJECT_FIXEDPARENT, true, "key-not-fixedparent"},
		{TPMA_OBJECT_SENSITIVEDATAORIGIN, true, "key-not-sensitivedataorigin"},
		{TPMA_OBJECT_SIGN_ENCRYPT, true, "key-not-sign"},
		{TPMA_OBJECT_DECRYPT, false, "key-decrypt-set"},
	};
	TPMS_ATTEST a;
	TPMT_SIGNATURE sig;
	uint8_t name[2 + FLEET_DIGEST_MAX];
	size_t name_len = 0;
	const TPM2B_NAME *signed_name;
	fleet_err e;
	const char *dummy;

	if (!reason)
		reason = &dummy;
	*reason = "attest-malformed";
	if (!c || !c->ak || !c->attest || !c->sig || !c->object ||
	    (c->extra_data_len && !c->extra_data))
		return FLEET_E_INVALID_ARG;

	e = attest_common(c->ak, c->attest, c->attest_len, c->sig, c->sig_len, c->extra_data,
			  c->extra_data_len, TPM2_ST_ATTEST_CERTIFY, &a, &sig, reason);
	if (e != FLEET_OK)
		return e;
	/* The name binds every attribute and the key itself: once it matches,
	 * the attributes checked below are the certified object's own. */
	*reason = "key-unsupported";
	e = fleet_tpm_name(c->object, name, sizeof(name), &name_len);
	if (e != FLEET_OK)
		return e;
	*reason = "certify-name";
	signed_name = &a.attested.certify.name;
	if (signed_name->size != name_len ||
	    CRYPTO_memcmp(signed_name->name, name, name_len) != 0)
		return FLEET_E_VERIFY;
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
		bool has = (c->object->objectAttributes & rules[i].bit) != 0;
		if (has != rules[i].want) {
			*reason = rules[i].reason;
			return FLEET_E_VERIFY;
		}
	}
	if (spki_sha256) {
		*reason = "key-unsupported";
		e = fleet_tpm_public_spki_sha256(c->object, spki_sha256);
		if (e != FLEET_OK)
			return e;
	}
	*reason = NULL;
	return FLEET_OK;
}
