/*
 * tpm_ops.c: the TPM commands of the protocol: certify, activate, quote,
 * sign. Each loads the keys it needs and flushes them before returning,
 * whatever happened.
 */
#include <string.h>

#include <tss2/tss2_mu.h>

#include "tink-attest/tpm_internal.h"

#include "lib/attest_wire.h"

/* PolicyC (SHA-384): PolicyAuthorizeNV(0x01C07F02), the second branch of the
 * high-range EK templates' PolicyOR. PolicyA's SHA-384 value is read back
 * from the session itself after PolicySecret. */
static const uint8_t policy_c_sha384[48] = {
	0xd6, 0x03, 0x2c, 0xe6, 0x1f, 0x2f, 0xb3, 0xc2, 0x40, 0xeb, 0x3c, 0xf6,
	0xa3, 0x32, 0x37, 0xef, 0x2b, 0x6a, 0x16, 0xf4, 0x29, 0x3c, 0x22, 0xb4,
	0x55, 0xe2, 0x61, 0xcf, 0xfd, 0x21, 0x7a, 0xd5, 0xb4, 0x94, 0x7c, 0x2d,
	0x73, 0xe6, 0x30, 0x05, 0xee, 0xd2, 0xdc, 0x2b, 0x35, 0x93, 0xd1, 0x65};

static int keep_signed(struct tink_tpm *t, const TPM2B_ATTEST *a, const TPMT_SIGNATURE *s,
		       struct fleet_buf *attest, struct fleet_buf *sig)
{
	uint8_t m[sizeof(TPMT_SIGNATURE)];
	size_t off = 0;
	TSS2_RC rc = Tss2_MU_TPMT_SIGNATURE_Marshal(s, m, sizeof(m), &off);
	if (rc != TSS2_RC_SUCCESS)
		return tink_tpm_fail(t, rc, "marshaling the TPM's signature");
	fb_put(attest, a->attestationData, a->size);
	fb_put(sig, m, off);
	if (fb_err(attest) != FLEET_OK || fb_err(sig) != FLEET_OK)
		return tink_tpm_fail(t, 0, "out of memory");
	return 0;
}

int tink_tpm_certify(struct tink_tpm *t, enum tink_key k, const uint8_t *q, size_t qlen,
		     struct fleet_buf *attest, struct fleet_buf *sig)
{
	ESYS_TR ak = ESYS_TR_NONE, key = ESYS_TR_NONE;
	TPM2B_DATA qual;
	TPMT_SIG_SCHEME scheme = {.scheme = TPM2_ALG_NULL}; /* the AK's own */
	TPM2B_ATTEST *a = NULL;
	TPMT_SIGNATURE *s = NULL;
	int r = -1;
	if (qlen > sizeof(qual.buffer))
		return tink_tpm_fail(t, 0, "certify qualifying data too long");
	memset(&qual, 0, sizeof(qual));
	qual.size = (UINT16)qlen;
	memcpy(qual.buffer, q, qlen);
	if (tink_tpm_load(t, TINK_KEY_AK, &ak, NULL) != 0 || tink_tpm_load(t, k, &key, NULL) != 0)
		goto out;
	TSS2_RC rc = Esys_Certify(t->esys, key, ak, ESYS_TR_PASSWORD, ESYS_TR_PASSWORD,
				  ESYS_TR_NONE, &qual, &scheme, &a, &s);
	if (rc != TSS2_RC_SUCCESS) {
		if (k == TINK_KEY_NODE)
			tink_tpm_fail(t, rc, "TPM2_Certify (node key generation %u by the AK)",
				      t->node_gen);
		else
			tink_tpm_fail(t, rc, "TPM2_Certify (LDevID key by the AK)");
		goto out;
	}
	r = keep_signed(t, a, s, attest, sig);
out:
	Esys_Free(a);
	Esys_Free(s);
	tink_tpm_unload(t, &key);
	tink_tpm_unload(t, &ak);
	return r;
}

int tink_tpm_certify_ldevid(struct tink_tpm *t, const uint8_t *q, size_t qlen,
			    struct fleet_buf *attest, struct fleet_buf *sig)
{
	return tink_tpm_certify(t, TINK_KEY_LDEVID, q, qlen, attest, sig);
}

int tink_tpm_prove_ldevid(struct tink_tpm *t, const char *serial, TPM2B_PUBLIC *pub,
			  struct fleet_buf *request, struct fleet_buf *attest,
			  struct fleet_buf *sig)
{
	struct fleet_ldevid_request req;
	uint8_t q[32];

	memset(&req, 0, sizeof(req));
	if (!serial || strlen(serial) >= sizeof(req.serial))
		return tink_tpm_fail(t, 0, "the LDevID request's serial is too long");
	memcpy(req.serial, serial, strlen(serial));
	if (tink_tpm_public(t, TINK_KEY_LDEVID, pub) != 0)
		return -1;
	if (fleet_tpm_public_spki_sha256(&pub->publicArea, req.spki_sha256) != FLEET_OK ||
	    fleet_ldevid_request_encode(&req, request) != FLEET_OK)
		return tink_tpm_fail(t, 0, "the LDevID key's public area cannot be encoded");
	struct fleet_wire_bytes reqb = {.data = request->data, .len = request->len};
	if (fleet_wire_certify_qualifier(&reqb, q) != FLEET_OK)
		return tink_tpm_fail(t, 0, "hashing the LDevID request failed");
	return tink_tpm_certify_ldevid(t, q, sizeof(q), attest, sig);
}

/* A policy session satisfying the EK's authPolicy: PolicySecret on the
 * endorsement hierarchy, then for the high-range (SHA-384) template
 * PolicyOR(PolicyA, PolicyC). */
static int ek_session(struct tink_tpm *t, const TPMT_PUBLIC *ek, ESYS_TR *s)
{
	TPMT_SYM_DEF sym = {.algorithm = TPM2_ALG_NULL};
	TPM2B_DIGEST *d = NULL;
	TSS2_RC rc;
	*s = ESYS_TR_NONE;
	rc = Esys_StartAuthSession(t->esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE,
				   ESYS_TR_NONE, NULL, TPM2_SE_POLICY, &sym, ek->nameAlg, s);
	if (rc != TSS2_RC_SUCCESS)
		return tink_tpm_fail(t, rc, "TPM2_StartAuthSession (EK policy)");
	rc = Esys_TRSess_SetAttributes(t->esys, *s, TPMA_SESSION_CONTINUESESSION, 0xff);
	if (rc == TSS2_RC_SUCCESS)
		rc = Esys_PolicySecret(t->esys, ESYS_TR_RH_ENDORSEMENT, *s, ESYS_TR_PASSWORD,
				       ESYS_TR_NONE, ESYS_TR_NONE, NULL, NULL, NULL, 0, NULL, NULL);
	if (rc != TSS2_RC_SUCCESS) {
		tink_tpm_unload(t, s);
		return tink_tpm_fail(t, rc, "TPM2_PolicySecret (endorsement hierarchy)");
	}
	if (ek->nameAlg != TPM2_ALG_SHA384)
		return 0;
	rc = Esys_PolicyGetDigest(t->esys, *s, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &d);
	if (rc == TSS2_RC_SUCCESS) {
		TPML_DIGEST list;
		memset(&list, 0, sizeof(list));
		list.count = 2;
		list.digests[0] = *d;
		list.digests[1].size = sizeof(policy_c_sha384);
		memcpy(list.digests[1].buffer, policy_c_sha384, sizeof(policy_c_sha384));
		rc = Esys_PolicyOR(t->esys, *s, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &list);
	}
	Esys_Free(d);
	if (rc != TSS2_RC_SUCCESS) {
		tink_tpm_unload(t, s);
		return tink_tpm_fail(t, rc, "TPM2_PolicyOR (high-range EK policy)");
	}
	return 0;
}

int tink_tpm_activate(struct tink_tpm *t, const struct tink_ek *ek, const uint8_t *id_object,
		      size_t id_len, const uint8_t *enc_secret, size_t es_len, uint8_t *secret,
		      size_t cap, size_t *secret_len)
{
	TPM2B_ID_OBJECT id;
	TPM2B_ENCRYPTED_SECRET es;
	size_t off = 0;
	ESYS_TR ak = ESYS_TR_NONE, key = ESYS_TR_NONE, s = ESYS_TR_NONE;
	TPM2B_DIGEST *out = NULL;
	int r = -1;

	memset(&id, 0, sizeof(id));
	memset(&es, 0, sizeof(es));
	if (Tss2_MU_TPM2B_ID_OBJECT_Unmarshal(id_object, id_len, &off, &id) != TSS2_RC_SUCCESS ||
	    off != id_len)
		return tink_tpm_fail(t, 0, "fleetd's credential blob is not a TPM2B_ID_OBJECT");
	off = 0;
	if (Tss2_MU_TPM2B_ENCRYPTED_SECRET_Unmarshal(enc_secret, es_len, &off, &es) !=
		    TSS2_RC_SUCCESS ||
	    off != es_len)
		return tink_tpm_fail(t, 0,
				     "fleetd's encrypted secret is not a TPM2B_ENCRYPTED_SECRET");
	if (tink_tpm_load(t, TINK_KEY_AK, &ak, NULL) != 0 ||
	    tink_tpm_load(t, ek->key, &key, NULL) != 0 ||
	    ek_session(t, &ek->pub.publicArea, &s) != 0)
		goto done;
	TSS2_RC rc = Esys_ActivateCredential(t->esys, ak, key, ESYS_TR_PASSWORD, s, ESYS_TR_NONE,
					     &id, &es, &out);
	if (rc != TSS2_RC_SUCCESS) {
		tink_tpm_fail(t, rc, "TPM2_ActivateCredential (%s)",
			      ek->key == TINK_KEY_EK_RSA ? "RSA EK" : "ECC EK");
		goto done;
	}
	if (out->size > cap) {
		tink_tpm_fail(t, 0, "the activated secret is %u bytes; at most %zu expected",
			      out->size, cap);
		goto done;
	}
	memcpy(secret, out->buffer, out->size);
	*secret_len = out->size;
	r = 0;
done:
	if (out) {
		memset(out->buffer, 0, sizeof(out->buffer));
		Esys_Free(out);
	}
	tink_tpm_unload(t, &s);
	tink_tpm_unload(t, &key);
	tink_tpm_unload(t, &ak);
	return r;
}

static int read_pcrs(struct tink_tpm *t, const TPML_PCR_SELECTION *sel,
		     struct fleet_pcr_value *v, size_t max, size_t *n)
{
	*n = 0;
	for (UINT32 b = 0; b < sel->count; b++) {
		const TPMS_PCR_SELECTION *ps = &sel->pcrSelections[b];
		for (unsigned p = 0; p < FLEET_PCR_COUNT && p / 8 < ps->sizeofSelect; p++) {
			if (!(ps->pcrSelect[p / 8] & (1u << (p % 8))))
				continue;
			TPML_PCR_SELECTION one;
			TPML_PCR_SELECTION *got = NULL;
			TPML_DIGEST *d = NULL;
			UINT32 counter;
			memset(&one, 0, sizeof(one));
			one.count = 1;
			one.pcrSelections[0].hash = ps->hash;
			one.pcrSelections[0].sizeofSelect = 3;
			one.pcrSelections[0].pcrSelect[p / 8] = (uint8_t)(1u << (p % 8));
			TSS2_RC rc = Esys_PCR_Read(t->esys, ESYS_TR_NONE, ESYS_TR_NONE,
						   ESYS_TR_NONE, &one, &counter, &got, &d);
			if (rc != TSS2_RC_SUCCESS)
				return tink_tpm_fail(t, rc, "TPM2_PCR_Read (PCR %u)", p);
			if (*n >= max) {
				Esys_Free(got);
				Esys_Free(d);
				return tink_tpm_fail(t, 0, "the selection has more than %zu PCRs",
						     max);
			}
			int ok = d->count == 1 && d->digests[0].size <= FLEET_DIGEST_MAX;
			if (ok) {
				v[*n].alg = ps->hash;
				v[*n].index = (uint8_t)p;
				v[*n].size = (uint8_t)d->digests[0].size;
				memcpy(v[*n].digest, d->digests[0].buffer, d->digests[0].size);
				(*n)++;
			}
			Esys_Free(got);
			Esys_Free(d);
			if (!ok)
				return tink_tpm_fail(t, 0, "the TPM has no bank 0x%04x value for "
							   "PCR %u",
						     ps->hash, p);
		}
	}
	return 0;
}

int tink_tpm_quote(struct tink_tpm *t, const TPML_PCR_SELECTION *sel, const uint8_t *q,
		   size_t qlen, struct fleet_buf *attest, struct fleet_buf *sig,
		   struct fleet_pcr_value *values, size_t max_values, size_t *n_values)
{
	ESYS_TR ak = ESYS_TR_NONE;
	TPM2B_DATA qual;
	TPMT_SIG_SCHEME scheme = {.scheme = TPM2_ALG_NULL};
	TPM2B_ATTEST *a = NULL;
	TPMT_SIGNATURE *s = NULL;
	int r = -1;
	if (qlen > sizeof(qual.buffer))
		return tink_tpm_fail(t, 0, "quote qualifying data too long");
	memset(&qual, 0, sizeof(qual));
	qual.size = (UINT16)qlen;
	memcpy(qual.buffer, q, qlen);
	if (tink_tpm_load(t, TINK_KEY_AK, &ak, NULL) != 0)
		return -1;
	TSS2_RC rc = Esys_Quote(t->esys, ak, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &qual,
				&scheme, sel, &a, &s);
	if (rc != TSS2_RC_SUCCESS) {
		tink_tpm_fail(t, rc, "TPM2_Quote");
		goto out;
	}
	if (keep_signed(t, a, s, attest, sig) != 0)
		goto out;
	r = read_pcrs(t, sel, values, max_values, n_values);
out:
	Esys_Free(a);
	Esys_Free(s);
	tink_tpm_unload(t, &ak);
	return r;
}

int tink_tpm_sign(struct tink_tpm *t, enum tink_key k, const uint8_t *msg, size_t len,
		  TPMT_SIGNATURE *sig)
{
	ESYS_TR key = ESYS_TR_NONE;
	TPM2B_DIGEST digest;
	TPMT_SIG_SCHEME scheme;
	TPMT_TK_HASHCHECK ticket;
	TPMT_SIGNATURE *s = NULL;

	memset(&digest, 0, sizeof(digest));
	memset(&scheme, 0, sizeof(scheme));
	memset(&ticket, 0, sizeof(ticket));
	digest.size = 32;
	if (fleet_hash(FLEET_ALG_SHA256, msg, len, digest.buffer) != FLEET_OK)
		return tink_tpm_fail(t, 0, "SHA-256 of the message to sign failed");
	scheme.scheme = TPM2_ALG_ECDSA;
	scheme.details.ecdsa.hashAlg = TPM2_ALG_SHA256;
	/* A null ticket: allowed because the key is not restricted. */
	ticket.tag = TPM2_ST_HASHCHECK;
	ticket.hierarchy = TPM2_RH_NULL;
	if (tink_tpm_load(t, k, &key, NULL) != 0)
		return -1;
	TSS2_RC rc = Esys_Sign(t->esys, key, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE,
			       &digest, &scheme, &ticket, &s);
	tink_tpm_unload(t, &key);
	if (rc != TSS2_RC_SUCCESS) {
		if (k == TINK_KEY_NODE)
			return tink_tpm_fail(t, rc, "TPM2_Sign (node key generation %u)",
					     t->node_gen);
		return tink_tpm_fail(t, rc, "TPM2_Sign (LDevID key)");
	}
	*sig = *s;
	Esys_Free(s);
	return 0;
}

int tink_tpm_sign_ldevid(struct tink_tpm *t, const uint8_t *msg, size_t len,
			 struct fleet_buf *sig)
{
	TPMT_SIGNATURE s;
	uint8_t m[sizeof(TPMT_SIGNATURE)];
	size_t off = 0;

	if (tink_tpm_sign(t, TINK_KEY_LDEVID, msg, len, &s) != 0)
		return -1;
	TSS2_RC rc = Tss2_MU_TPMT_SIGNATURE_Marshal(&s, m, sizeof(m), &off);
	if (rc != TSS2_RC_SUCCESS)
		return tink_tpm_fail(t, rc, "marshaling the LDevID signature");
	if (fb_put(sig, m, off) != FLEET_OK)
		return tink_tpm_fail(t, 0, "out of memory");
	return 0;
}
