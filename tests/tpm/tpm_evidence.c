/*
 * tpm_evidence.c: see tpm_evidence.h. The EK policy sessions follow
 * tests/tpm/test_activate_credential.c, which shows the TPM itself
 * checking them.
 */
#include "tests/testutil.h"

#include "tests/tpm/tpm_evidence.h"

#include <stdlib.h>
#include <string.h>

#include <tss2/tss2_mu.h>

#include "lib/tpm_alg.h"

/* TCG EK Credential Profile: PolicyC = PolicyAuthorizeNV(0x01C07F02) in
 * SHA-384, the second branch of the high-range templates' PolicyOR. */
static const uint8_t policy_c_sha384[48] = {
	0xd6, 0x03, 0x2c, 0xe6, 0x1f, 0x2f, 0xb3, 0xc2, 0x40, 0xeb, 0x3c, 0xf6,
	0xa3, 0x32, 0x37, 0xef, 0x2b, 0x6a, 0x16, 0xf4, 0x29, 0x3c, 0x22, 0xb4,
	0x55, 0xe2, 0x61, 0xcf, 0xfd, 0x21, 0x7a, 0xd5, 0xb4, 0x94, 0x7c, 0x2d,
	0x73, 0xe6, 0x30, 0x05, 0xee, 0xd2, 0xdc, 0x2b, 0x35, 0x93, 0xd1, 0x65};

static void take(struct fleet_wire_bytes *out, const void *p, size_t n)
{
	out->data = malloc(n ? n : 1);
	assert_non_null(out->data);
	memcpy(out->data, p, n);
	out->len = n;
}

TPM2B_PUBLIC tev_ecc_template(TPMA_OBJECT attrs, TPMI_ALG_ECC_SCHEME scheme, uint8_t tag)
{
	TPM2B_PUBLIC t;
	memset(&t, 0, sizeof(t));
	t.publicArea.type = TPM2_ALG_ECC;
	t.publicArea.nameAlg = TPM2_ALG_SHA256;
	t.publicArea.objectAttributes = attrs;
	TPMS_ECC_PARMS *c = &t.publicArea.parameters.eccDetail;
	c->symmetric.algorithm = TPM2_ALG_NULL;
	c->scheme.scheme = scheme;
	c->scheme.details.ecdsa.hashAlg = TPM2_ALG_SHA256;
	c->curveID = TPM2_ECC_NIST_P256;
	c->kdf.scheme = TPM2_ALG_NULL;
	t.publicArea.unique.ecc.x.size = 1;
	t.publicArea.unique.ecc.x.buffer[0] = tag;
	return t;
}

ESYS_TR tev_primary(ESYS_CONTEXT *e, ESYS_TR hierarchy, const TPM2B_PUBLIC *tmpl,
		    TPM2B_PUBLIC *out)
{
	TPM2B_SENSITIVE_CREATE sens = {0};
	TPM2B_DATA outside = {0};
	TPML_PCR_SELECTION none = {0};
	TPM2B_PUBLIC *pub = NULL;
	ESYS_TR h = ESYS_TR_NONE;
	assert_int_equal(Esys_CreatePrimary(e, hierarchy, ESYS_TR_PASSWORD, ESYS_TR_NONE,
					    ESYS_TR_NONE, &sens, tmpl, &outside, &none, &h, &pub,
					    NULL, NULL, NULL),
			 TSS2_RC_SUCCESS);
	*out = *pub;
	Esys_Free(pub);
	return h;
}

void tev_public_bytes(const TPM2B_PUBLIC *pub, struct fleet_wire_bytes *out)
{
	uint8_t buf[sizeof(TPM2B_PUBLIC)];
	size_t off = 0;
	assert_int_equal(Tss2_MU_TPM2B_PUBLIC_Marshal(pub, buf, sizeof(buf), &off),
			 TSS2_RC_SUCCESS);
	take(out, buf, off);
}

void tev_nv_bytes(ESYS_CONTEXT *e, TPM2_HANDLE index, struct fleet_wire_bytes *out)
{
	ESYS_TR nv = ESYS_TR_NONE;
	TPM2B_NV_PUBLIC *pub = NULL;
	struct fleet_buf b;

	assert_int_equal(Esys_TR_FromTPMPublic(e, index, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE,
					       &nv),
			 TSS2_RC_SUCCESS);
	assert_int_equal(Esys_NV_ReadPublic(e, nv, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &pub,
					    NULL),
			 TSS2_RC_SUCCESS);
	fb_init(&b);
	for (UINT16 off = 0; off < pub->nvPublic.dataSize;) {
		TPM2B_MAX_NV_BUFFER *d = NULL;
		UINT16 n = (UINT16)(pub->nvPublic.dataSize - off);
		if (n > 512)
			n = 512;
		assert_int_equal(Esys_NV_Read(e, ESYS_TR_RH_OWNER, nv, ESYS_TR_PASSWORD,
					      ESYS_TR_NONE, ESYS_TR_NONE, n, off, &d),
				 TSS2_RC_SUCCESS);
		assert_int_equal(fb_put(&b, d->buffer, d->size), FLEET_OK);
		off = (UINT16)(off + d->size);
		Esys_Free(d);
	}
	Esys_Free(pub);
	Esys_TR_Close(e, &nv);
	take(out, b.data, b.len);
	fb_free(&b);
}

void tev_read_public(ESYS_CONTEXT *e, TPM2_HANDLE handle, TPM2B_PUBLIC *out)
{
	ESYS_TR tr = ESYS_TR_NONE;
	TPM2B_PUBLIC *pub = NULL;
	assert_int_equal(Esys_TR_FromTPMPublic(e, handle, ESYS_TR_NONE, ESYS_TR_NONE,
					       ESYS_TR_NONE, &tr),
			 TSS2_RC_SUCCESS);
	assert_int_equal(Esys_ReadPublic(e, tr, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &pub,
					 NULL, NULL),
			 TSS2_RC_SUCCESS);
	*out = *pub;
	Esys_Free(pub);
	Esys_TR_Close(e, &tr);
}

static void keep(const TPM2B_ATTEST *a, const TPMT_SIGNATURE *s, struct fleet_wire_bytes *attest,
		 struct fleet_wire_bytes *sig)
{
	uint8_t buf[sizeof(TPMT_SIGNATURE)];
	size_t off = 0;
	take(attest, a->attestationData, a->size);
	assert_int_equal(Tss2_MU_TPMT_SIGNATURE_Marshal(s, buf, sizeof(buf), &off),
			 TSS2_RC_SUCCESS);
	take(sig, buf, off);
}

void tev_certify(ESYS_CONTEXT *e, ESYS_TR ak, ESYS_TR obj, const uint8_t *qual, size_t qlen,
		 struct fleet_wire_bytes *attest, struct fleet_wire_bytes *sig)
{
	TPM2B_DATA q = {.size = (UINT16)qlen};
	TPMT_SIG_SCHEME scheme = {.scheme = TPM2_ALG_NULL};
	TPM2B_ATTEST *a = NULL;
	TPMT_SIGNATURE *s = NULL;
	assert_true(qlen <= sizeof(q.buffer));
	memcpy(q.buffer, qual, qlen);
	assert_int_equal(Esys_Certify(e, obj, ak, ESYS_TR_PASSWORD, ESYS_TR_PASSWORD, ESYS_TR_NONE,
				      &q, &scheme, &a, &s),
			 TSS2_RC_SUCCESS);
	keep(a, s, attest, sig);
	Esys_Free(a);
	Esys_Free(s);
}

void tev_quote(ESYS_CONTEXT *e, ESYS_TR ak, const uint8_t *qual, size_t qlen,
	       const TPML_PCR_SELECTION *sel, struct fleet_wire_bytes *attest,
	       struct fleet_wire_bytes *sig)
{
	TPM2B_DATA q = {.size = (UINT16)qlen};
	TPMT_SIG_SCHEME scheme = {.scheme = TPM2_ALG_NULL};
	TPM2B_ATTEST *a = NULL;
	TPMT_SIGNATURE *s = NULL;
	assert_true(qlen <= sizeof(q.buffer));
	memcpy(q.buffer, qual, qlen);
	assert_int_equal(Esys_Quote(e, ak, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &q,
				    &scheme, sel, &a, &s),
			 TSS2_RC_SUCCESS);
	keep(a, s, attest, sig);
	Esys_Free(a);
	Esys_Free(s);
}

size_t tev_read_pcrs(ESYS_CONTEXT *e, const TPML_PCR_SELECTION *sel, struct fleet_pcr_value *v,
		     size_t cap)
{
	size_t n = 0;
	for (uint32_t b = 0; b < sel->count; b++)
		for (unsigned p = 0; p < FLEET_PCR_COUNT; p++) {
			TPML_PCR_SELECTION one = {.count = 1};
			TPML_PCR_SELECTION *out = NULL;
			TPML_DIGEST *d = NULL;
			UINT32 ctr;
			if (!(sel->pcrSelections[b].pcrSelect[p / 8] & (1u << (p % 8))))
				continue;
			assert_true(n < cap);
			one.pcrSelections[0].hash = sel->pcrSelections[b].hash;
			one.pcrSelections[0].sizeofSelect = 3;
			one.pcrSelections[0].pcrSelect[p / 8] = (uint8_t)(1u << (p % 8));
			assert_int_equal(Esys_PCR_Read(e, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE,
						       &one, &ctr, &out, &d),
					 TSS2_RC_SUCCESS);
			assert_int_equal(d->count, 1);
			memset(&v[n], 0, sizeof(v[n]));
			v[n].alg = sel->pcrSelections[b].hash;
			v[n].index = (uint8_t)p;
			v[n].size = (uint8_t)d->digests[0].size;
			memcpy(v[n].digest, d->digests[0].buffer, d->digests[0].size);
			n++;
			Esys_Free(out);
			Esys_Free(d);
		}
	return n;
}

void tev_extend(ESYS_CONTEXT *e, uint32_t pcr, const struct fleet_evlog_digest *d, size_t n)
{
	TPML_DIGEST_VALUES dv;
	memset(&dv, 0, sizeof(dv));
	assert_true(n <= TPM2_NUM_PCR_BANKS && pcr < FLEET_PCR_COUNT);
	dv.count = (UINT32)n;
	for (size_t i = 0; i < n; i++) {
		dv.digests[i].hashAlg = d[i].alg;
		memcpy(&dv.digests[i].digest, d[i].bytes, d[i].size);
	}
	assert_int_equal(Esys_PCR_Extend(e, ESYS_TR_PCR0 + pcr, ESYS_TR_PASSWORD, ESYS_TR_NONE,
					 ESYS_TR_NONE, &dv),
			 TSS2_RC_SUCCESS);
}

/* PolicySecret(TPM_RH_ENDORSEMENT) in the EK's nameAlg; for a SHA-384 EK
 * (high range) then PolicyOR(that, PolicyC). */
static ESYS_TR ek_policy_session(ESYS_CONTEXT *e, const TPMT_PUBLIC *ek)
{
	ESYS_TR s = ESYS_TR_NONE;
	TPMT_SYM_DEF sym = {.algorithm = TPM2_ALG_NULL};
	TPM2B_DIGEST *d = NULL;
	assert_int_equal(Esys_StartAuthSession(e, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE,
					       ESYS_TR_NONE, ESYS_TR_NONE, NULL, TPM2_SE_POLICY,
					       &sym, ek->nameAlg, &s),
			 TSS2_RC_SUCCESS);
	assert_int_equal(Esys_PolicySecret(e, ESYS_TR_RH_ENDORSEMENT, s, ESYS_TR_PASSWORD,
					   ESYS_TR_NONE, ESYS_TR_NONE, NULL, NULL, NULL, 0, NULL,
					   NULL),
			 TSS2_RC_SUCCESS);
	if (ek->nameAlg == TPM2_ALG_SHA384) {
		TPML_DIGEST list = {.count = 2};
		assert_int_equal(Esys_PolicyGetDigest(e, s, ESYS_TR_NONE, ESYS_TR_NONE,
						      ESYS_TR_NONE, &d),
				 TSS2_RC_SUCCESS);
		list.digests[0] = *d;
		Esys_Free(d);
		list.digests[1].size = sizeof(policy_c_sha384);
		memcpy(list.digests[1].buffer, policy_c_sha384, sizeof(policy_c_sha384));
		assert_int_equal(Esys_PolicyOR(e, s, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE,
					       &list),
				 TSS2_RC_SUCCESS);
	}
	return s;
}

TSS2_RC tev_activate(ESYS_CONTEXT *e, ESYS_TR ak, TPM2_HANDLE ek_handle,
		     const struct fleet_wire_credential *c, uint8_t secret[32])
{
	TPM2B_ID_OBJECT id;
	TPM2B_ENCRYPTED_SECRET es;
	TPM2B_PUBLIC ekpub;
	TPM2B_DIGEST *out = NULL;
	ESYS_TR ek = ESYS_TR_NONE, s;
	size_t off = 0;
	TSS2_RC rc;

	memset(&id, 0, sizeof(id));
	memset(&es, 0, sizeof(es));
	assert_int_equal(Tss2_MU_TPM2B_ID_OBJECT_Unmarshal(c->id_object.data, c->id_object.len,
							   &off, &id),
			 TSS2_RC_SUCCESS);
	off = 0;
	assert_int_equal(Tss2_MU_TPM2B_ENCRYPTED_SECRET_Unmarshal(c->enc_secret.data,
								  c->enc_secret.len, &off, &es),
			 TSS2_RC_SUCCESS);
	tev_read_public(e, ek_handle, &ekpub);
	assert_int_equal(Esys_TR_FromTPMPublic(e, ek_handle, ESYS_TR_NONE, ESYS_TR_NONE,
					       ESYS_TR_NONE, &ek),
			 TSS2_RC_SUCCESS);
	s = ek_policy_session(e, &ekpub.publicArea);
	rc = Esys_ActivateCredential(e, ak, ek, ESYS_TR_PASSWORD, s, ESYS_TR_NONE, &id, &es, &out);
	Esys_FlushContext(e, s);
	Esys_TR_Close(e, &ek);
	if (rc == TSS2_RC_SUCCESS) {
		assert_int_equal(out->size, 32);
		memcpy(secret, out->buffer, 32);
	}
	Esys_Free(out);
	return rc;
}

void tev_sign(ESYS_CONTEXT *e, ESYS_TR key, const uint8_t *msg, size_t len,
	      struct fleet_wire_bytes *sig)
{
	TPM2B_DIGEST d = {.size = 32};
	TPMT_SIG_SCHEME scheme = {.scheme = TPM2_ALG_NULL};
	TPMT_TK_HASHCHECK ticket = {.tag = TPM2_ST_HASHCHECK, .hierarchy = TPM2_RH_NULL};
	TPMT_SIGNATURE *s = NULL;
	uint8_t buf[sizeof(TPMT_SIGNATURE)];
	size_t off = 0;

	assert_int_equal(fleet_hash(FLEET_ALG_SHA256, msg, len, d.buffer), FLEET_OK);
	assert_int_equal(Esys_Sign(e, key, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &d,
				   &scheme, &ticket, &s),
			 TSS2_RC_SUCCESS);
	assert_int_equal(Tss2_MU_TPMT_SIGNATURE_Marshal(s, buf, sizeof(buf), &off),
			 TSS2_RC_SUCCESS);
	Esys_Free(s);
	take(sig, buf, off);
}
