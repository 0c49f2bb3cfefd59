/*
 * tpm_join.c: the TPM's part of fleet-join's tpm attestor (tpm_join.h): the
 * EK it sends, the node key made in the TPM and its CSR, the ES256 proofs
 * that key makes, and the challenge's answer.
 */
#include "tink-attest/tpm_join.h"

#include <string.h>

#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/x509.h>

#include <tss2/tss2_mu.h>

#include "lib/tpm_join_evidence.h"
#include "tink-attest/tpm_internal.h"

/* FJ1's subject (join_client.h FJ_CSR_CN). */
#define NODE_CSR_CN "fleet-join"

int tink_join_ek(struct tink_tpm *t, struct tink_ek *ek)
{
	if (tink_tpm_read_ek_rsa(t, ek) != 0)
		return -1;
	if (ek->present)
		return 0;
	tink_ek_free(ek);
	if (tink_tpm_read_ek_ecc(t, ek) != 0)
		return -1;
	if (ek->present)
		return 0;
	/* No manufacturer certificate at all (a lab's TPM): the RSA EK from
	 * its template, sent without one (tpm.allow_uncertified_ek). */
	tink_ek_free(ek);
	fb_init_capped(&ek->cert, 1);
	if (tink_tpm_public(t, TINK_KEY_EK_RSA, &ek->pub) != 0)
		return -1;
	ek->key = TINK_KEY_EK_RSA;
	ek->present = true;
	return 0;
}

int tink_public_marshal(struct tink_tpm *t, const TPM2B_PUBLIC *pub, struct fleet_buf *out)
{
	uint8_t m[sizeof(TPM2B_PUBLIC)];
	size_t off = 0;
	TSS2_RC rc = Tss2_MU_TPM2B_PUBLIC_Marshal(pub, m, sizeof(m), &off);

	if (rc != TSS2_RC_SUCCESS)
		return tink_tpm_fail(t, rc, "marshaling a public area");
	if (fb_put(out, m, off) != FLEET_OK)
		return tink_tpm_fail(t, 0, "out of memory");
	return 0;
}

int tink_ak_name(struct tink_tpm *t, TPM2B_PUBLIC *pub, uint8_t name[TINK_NAME_MAX],
		 size_t *name_len)
{
	if (tink_tpm_public(t, TINK_KEY_AK, pub) != 0)
		return -1;
	if (fleet_tpm_name(&pub->publicArea, name, TINK_NAME_MAX, name_len) != FLEET_OK)
		return tink_tpm_fail(t, 0, "the AK's TPM name cannot be computed");
	return 0;
}

int tink_node_public(struct tink_tpm *t, unsigned gen, TPM2B_PUBLIC *pub, EVP_PKEY **pkey)
{
	TPM2B_PUBLIC p;

	if (pkey)
		*pkey = NULL;
	if (gen > TINK_NODE_MAX_GEN)
		return tink_tpm_fail(t, 0, "node key generation %u is past the last (%u)", gen,
				     TINK_NODE_MAX_GEN);
	t->node_gen = gen;
	if (tink_tpm_public(t, TINK_KEY_NODE, &p) != 0)
		return -1;
	if (pkey && fleet_tpm_public_to_pkey(&p.publicArea, pkey) != FLEET_OK) {
		ERR_clear_error();
		return tink_tpm_fail(t, 0, "node key generation %u: the TPM's public area is not "
					   "a P-256 key",
				     gen);
	}
	if (pub)
		*pub = p;
	return 0;
}

/* An ECDSA TPMT_SIGNATURE's r and s, each left-padded to 32 bytes. */
static int ecdsa_rs(struct tink_tpm *t, const TPMT_SIGNATURE *s, uint8_t rs[64])
{
	const TPM2B_ECC_PARAMETER *r = &s->signature.ecdsa.signatureR;
	const TPM2B_ECC_PARAMETER *ss = &s->signature.ecdsa.signatureS;

	if (s->sigAlg != TPM2_ALG_ECDSA || s->signature.ecdsa.hash != TPM2_ALG_SHA256 ||
	    r->size > 32 || ss->size > 32)
		return tink_tpm_fail(t, 0, "the TPM's signature is not ECDSA P-256 / SHA-256");
	memset(rs, 0, 64);
	memcpy(rs + 32 - r->size, r->buffer, r->size);
	memcpy(rs + 64 - ss->size, ss->buffer, ss->size);
	return 0;
}

int tink_node_es256(struct tink_tpm *t, unsigned gen, const uint8_t *msg, size_t len,
		    uint8_t sig[64])
{
	TPMT_SIGNATURE s;

	if (gen > TINK_NODE_MAX_GEN)
		return tink_tpm_fail(t, 0, "node key generation %u is past the last (%u)", gen,
				     TINK_NODE_MAX_GEN);
	t->node_gen = gen;
	if (tink_tpm_sign(t, TINK_KEY_NODE, msg, len, &s) != 0)
		return -1;
	return ecdsa_rs(t, &s, sig);
}

/* The ECDSA-Sig-Value DER of r || s (OPENSSL_free it). */
static int rs_der(const uint8_t rs[64], unsigned char **der)
{
	ECDSA_SIG *es = ECDSA_SIG_new();
	BIGNUM *r = BN_bin2bn(rs, 32, NULL), *s = BN_bin2bn(rs + 32, 32, NULL);
	int n = -1;

	*der = NULL;
	if (es && r && s && ECDSA_SIG_set0(es, r, s) == 1) {
		r = s = NULL; /* es's now */
		n = i2d_ECDSA_SIG(es, der);
	}
	BN_free(r);
	BN_free(s);
	ECDSA_SIG_free(es);
	return n;
}

int tink_node_csr(struct tink_tpm *t, unsigned gen, struct fleet_buf *csr, EVP_PKEY **pkey)
{
	X509_REQ *req = NULL;
	X509_NAME *name;
	X509_ALGOR *alg = NULL;
	ASN1_BIT_STRING *bits = NULL;
	EVP_PKEY *key = NULL;
	unsigned char *tbs = NULL, *sigder = NULL, *der = NULL;
	uint8_t rs[64];
	int ntbs = 0, nsig = 0, n = 0, r = -1;

	if (pkey)
		*pkey = NULL;
	if (tink_node_public(t, gen, NULL, &key) != 0)
		return -1;
	/* FJ1: a constant subject, no attribute or extension asked for. */
	if (!(req = X509_REQ_new()) || X509_REQ_set_version(req, X509_REQ_VERSION_1) != 1 ||
	    !(name = X509_REQ_get_subject_name(req)) ||
	    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
				       (const unsigned char *)NODE_CSR_CN, -1, -1, 0) != 1 ||
	    X509_REQ_set_pubkey(req, key) != 1 || (ntbs = i2d_re_X509_REQ_tbs(req, &tbs)) <= 0) {
		tink_tpm_fail(t, 0, "the node key's CSR cannot be built (OpenSSL)");
		goto out;
	}
	if (tink_node_es256(t, gen, tbs, (size_t)ntbs, rs) != 0)
		goto out;
	if ((nsig = rs_der(rs, &sigder)) <= 0 || !(alg = X509_ALGOR_new()) ||
	    X509_ALGOR_set0(alg, OBJ_nid2obj(NID_ecdsa_with_SHA256), V_ASN1_UNDEF, NULL) != 1 ||
	    X509_REQ_set1_signature_algo(req, alg) != 1 || !(bits = ASN1_BIT_STRING_new()) ||
	    ASN1_BIT_STRING_set(bits, sigder, nsig) != 1) {
		tink_tpm_fail(t, 0, "the node key's signature cannot be put in its CSR (OpenSSL)");
		goto out;
	}
	/* No unused bits: a whole DER signature. */
	bits->flags &= ~(ASN1_STRING_FLAG_BITS_LEFT | 0x07);
	bits->flags |= ASN1_STRING_FLAG_BITS_LEFT;
	X509_REQ_set0_signature(req, bits);
	bits = NULL;
	/* Only a CSR the key's own signature verifies is sent. */
	if (X509_REQ_verify(req, key) != 1) {
		tink_tpm_fail(t, 0, "the CSR signed by node key generation %u does not verify",
			      gen);
		goto out;
	}
	if ((n = i2d_X509_REQ(req, &der)) <= 0) {
		tink_tpm_fail(t, 0, "the node key's CSR cannot be encoded (OpenSSL)");
		goto out;
	}
	if (fb_put(csr, der, (size_t)n) != FLEET_OK) {
		tink_tpm_fail(t, 0, "out of memory for the CSR");
		goto out;
	}
	if (pkey) {
		*pkey = key;
		key = NULL;
	}
	r = 0;
out:
	ERR_clear_error();
	OPENSSL_free(tbs);
	OPENSSL_free(sigder);
	OPENSSL_free(der);
	ASN1_BIT_STRING_free(bits);
	X509_ALGOR_free(alg);
	X509_REQ_free(req);
	EVP_PKEY_free(key);
	return r;
}

int tink_node_certify(struct tink_tpm *t, unsigned gen, const uint8_t *q, size_t qlen,
		      struct fleet_buf *key_public, struct fleet_buf *attest,
		      struct fleet_buf *sig)
{
	TPM2B_PUBLIC pub;

	if (tink_node_public(t, gen, &pub, NULL) != 0 ||
	    tink_public_marshal(t, &pub, key_public) != 0)
		return -1;
	return tink_tpm_certify(t, TINK_KEY_NODE, q, qlen, attest, sig);
}

void tink_answer_init(struct tink_answer *a)
{
	memset(a, 0, sizeof(*a));
	fb_init_secret(&a->secret, FLEET_TPM_MAX_SECRET);
	fb_init(&a->quote);
	fb_init(&a->quote_sig);
	fb_init(&a->node_public);
	fb_init(&a->certify_info);
	fb_init(&a->certify_sig);
}

void tink_answer_free(struct tink_answer *a)
{
	fb_free(&a->secret); /* wiped */
	fb_free(&a->quote);
	fb_free(&a->quote_sig);
	fb_free(&a->node_public);
	fb_free(&a->certify_info);
	fb_free(&a->certify_sig);
	OPENSSL_cleanse(a, sizeof(*a));
}

int tink_answer_challenge(struct tink_tpm *t, const struct tink_ek *ek, unsigned gen,
			  const uint8_t *id_object, size_t id_len, const uint8_t *enc_secret,
			  size_t es_len, const char *pcrs, const uint8_t csr_sha256[32],
			  struct tink_answer *out)
{
	TPML_PCR_SELECTION sel;
	uint8_t secret[FLEET_TPM_MAX_SECRET], nonce[32];
	size_t secret_len = 0;
	int r = -1;

	if (!pcrs || fleet_pcr_selection_parse(pcrs, &sel) != FLEET_OK)
		return tink_tpm_fail(t, 0, "the challenge's PCR selection \"%s\" does not parse",
				     pcrs ? pcrs : "");
	if (tink_tpm_activate(t, ek, id_object, id_len, enc_secret, es_len, secret,
			      sizeof(secret), &secret_len) != 0)
		goto out;
	if (secret_len == 0) {
		tink_tpm_fail(t, 0, "TPM2_ActivateCredential returned an empty secret");
		goto out;
	}
	if (fb_put(&out->secret, secret, secret_len) != FLEET_OK) {
		tink_tpm_fail(t, 0, "out of memory for the activated secret");
		goto out;
	}
	/* lib/tpm_join_evidence.h TE3: SHA-256(secret || SHA-256(csr)). */
	if (fleet_tpm_quote_nonce(secret, secret_len, csr_sha256, nonce) != FLEET_OK) {
		tink_tpm_fail(t, 0, "the quote's nonce cannot be made of a %zu-byte secret",
			      secret_len);
		goto out;
	}
	if (tink_tpm_quote(t, &sel, nonce, sizeof(nonce), &out->quote, &out->quote_sig,
			   out->values, FLEET_TPM_MAX_PCRS, &out->n_values) != 0)
		goto out;
	if (out->n_values == 0) {
		tink_tpm_fail(t, 0, "the challenge's PCR selection \"%s\" selects no PCR", pcrs);
		goto out;
	}
	r = tink_node_certify(t, gen, csr_sha256, 32, &out->node_public, &out->certify_info,
			      &out->certify_sig);
out:
	OPENSSL_cleanse(secret, sizeof(secret));
	OPENSSL_cleanse(nonce, sizeof(nonce));
	if (r != 0)
		fb_reset(&out->secret);
	return r;
}
