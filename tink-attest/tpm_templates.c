/*
 * tpm_templates.c: the templates tink-attest creates keys from.
 *
 * The EK templates are the TCG EK Credential Profile's (2.3, section 2.2.1):
 * a primary made from its template in the endorsement hierarchy is the key
 * the manufacturer certified, so the certificate in NV can be checked
 * against a key the TPM has just derived from its seed. The AK and LDevID
 * templates are fleetd's own; their unique fields name them, so they are
 * keys no other software derives by accident, and they never change (a
 * changed byte here would be a different key and void every certificate).
 */
#include "tink-attest/tpm_client.h"

#include <stdio.h>
#include <string.h>

/* PolicyA (SHA-256): PolicySecret(TPM_RH_ENDORSEMENT). */
static const uint8_t policy_a_sha256[32] = {
	0x83, 0x71, 0x97, 0x67, 0x44, 0x84, 0xb3, 0xf8, 0x1a, 0x90, 0xcc,
	0x8d, 0x46, 0xa5, 0xd7, 0x24, 0xfd, 0x52, 0xd7, 0x6e, 0x06, 0x52,
	0x0b, 0x64, 0xf2, 0xa1, 0xda, 0x1b, 0x33, 0x14, 0x69, 0xaa};
/* PolicyB (SHA-384): PolicyOR(PolicyA, PolicyC), the high-range templates'. */
static const uint8_t policy_b_sha384[48] = {
	0xb2, 0x6e, 0x7d, 0x28, 0xd1, 0x1a, 0x50, 0xbc, 0x53, 0xd8, 0x82, 0xbc,
	0xf5, 0xfd, 0x3a, 0x1a, 0x07, 0x41, 0x48, 0xbb, 0x35, 0xd3, 0xb4, 0xe4,
	0xcb, 0x1c, 0x0a, 0xd9, 0xbd, 0xe4, 0x19, 0xca, 0xcb, 0x47, 0xba, 0x09,
	0x69, 0x96, 0x46, 0x15, 0x0f, 0x9f, 0xc0, 0x00, 0xf3, 0xf8, 0x0e, 0x12};

#define EK_ATTRS                                                                         \
	(TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT | TPMA_OBJECT_SENSITIVEDATAORIGIN | \
	 TPMA_OBJECT_ADMINWITHPOLICY | TPMA_OBJECT_RESTRICTED | TPMA_OBJECT_DECRYPT)
#define SIGNER_ATTRS                                                                     \
	(TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT | TPMA_OBJECT_SENSITIVEDATAORIGIN | \
	 TPMA_OBJECT_USERWITHAUTH | TPMA_OBJECT_SIGN_ENCRYPT)

static const char ak_unique[] = "fleetd tink-attest AK v1";
static const char ldevid_unique[] = "fleetd tink-attest LDevID v1";

static TPM2B_PUBLIC ecc_signer(TPMA_OBJECT attrs, const char *unique)
{
	TPM2B_PUBLIC p;
	memset(&p, 0, sizeof(p));
	p.publicArea.type = TPM2_ALG_ECC;
	p.publicArea.nameAlg = TPM2_ALG_SHA256;
	p.publicArea.objectAttributes = attrs;
	TPMS_ECC_PARMS *c = &p.publicArea.parameters.eccDetail;
	c->symmetric.algorithm = TPM2_ALG_NULL;
	c->scheme.scheme = TPM2_ALG_ECDSA;
	c->scheme.details.ecdsa.hashAlg = TPM2_ALG_SHA256;
	c->curveID = TPM2_ECC_NIST_P256;
	c->kdf.scheme = TPM2_ALG_NULL;
	p.publicArea.unique.ecc.x.size = (UINT16)strlen(unique);
	memcpy(p.publicArea.unique.ecc.x.buffer, unique, strlen(unique));
	return p;
}

TPM2B_PUBLIC tink_key_template(enum tink_key k)
{
	TPM2B_PUBLIC p;
	memset(&p, 0, sizeof(p));
	switch (k) {
	case TINK_KEY_EK_RSA: /* L-1 */
		p.publicArea.type = TPM2_ALG_RSA;
		p.publicArea.nameAlg = TPM2_ALG_SHA256;
		p.publicArea.objectAttributes = EK_ATTRS;
		p.publicArea.authPolicy.size = sizeof(policy_a_sha256);
		memcpy(p.publicArea.authPolicy.buffer, policy_a_sha256, sizeof(policy_a_sha256));
		p.publicArea.parameters.rsaDetail.symmetric.algorithm = TPM2_ALG_AES;
		p.publicArea.parameters.rsaDetail.symmetric.keyBits.aes = 128;
		p.publicArea.parameters.rsaDetail.symmetric.mode.aes = TPM2_ALG_CFB;
		p.publicArea.parameters.rsaDetail.scheme.scheme = TPM2_ALG_NULL;
		p.publicArea.parameters.rsaDetail.keyBits = 2048;
		p.publicArea.parameters.rsaDetail.exponent = 0;
		p.publicArea.unique.rsa.size = 256; /* zeros */
		return p;
	case TINK_KEY_EK_ECC_P256: /* L-2 */
		p.publicArea.type = TPM2_ALG_ECC;
		p.publicArea.nameAlg = TPM2_ALG_SHA256;
		p.publicArea.objectAttributes = EK_ATTRS;
		p.publicArea.authPolicy.size = sizeof(policy_a_sha256);
		memcpy(p.publicArea.authPolicy.buffer, policy_a_sha256, sizeof(policy_a_sha256));
		p.publicArea.parameters.eccDetail.symmetric.algorithm = TPM2_ALG_AES;
		p.publicArea.parameters.eccDetail.symmetric.keyBits.aes = 128;
		p.publicArea.parameters.eccDetail.symmetric.mode.aes = TPM2_ALG_CFB;
		p.publicArea.parameters.eccDetail.scheme.scheme = TPM2_ALG_NULL;
		p.publicArea.parameters.eccDetail.curveID = TPM2_ECC_NIST_P256;
		p.publicArea.parameters.eccDetail.kdf.scheme = TPM2_ALG_NULL;
		p.publicArea.unique.ecc.x.size = 32; /* zeros */
		p.publicArea.unique.ecc.y.size = 32;
		return p;
	case TINK_KEY_EK_ECC_P384: /* H-3: userWithAuth, policy B, empty unique */
		p.publicArea.type = TPM2_ALG_ECC;
		p.publicArea.nameAlg = TPM2_ALG_SHA384;
		p.publicArea.objectAttributes = EK_ATTRS | TPMA_OBJECT_USERWITHAUTH;
		p.publicArea.authPolicy.size = sizeof(policy_b_sha384);
		memcpy(p.publicArea.authPolicy.buffer, policy_b_sha384, sizeof(policy_b_sha384));
		p.publicArea.parameters.eccDetail.symmetric.algorithm = TPM2_ALG_AES;
		p.publicArea.parameters.eccDetail.symmetric.keyBits.aes = 256;
		p.publicArea.parameters.eccDetail.symmetric.mode.aes = TPM2_ALG_CFB;
		p.publicArea.parameters.eccDetail.scheme.scheme = TPM2_ALG_NULL;
		p.publicArea.parameters.eccDetail.curveID = TPM2_ECC_NIST_P384;
		p.publicArea.parameters.eccDetail.kdf.scheme = TPM2_ALG_NULL;
		return p;
	case TINK_KEY_AK:
		return ecc_signer(SIGNER_ATTRS | TPMA_OBJECT_RESTRICTED, ak_unique);
	case TINK_KEY_LDEVID:
		return ecc_signer(SIGNER_ATTRS, ldevid_unique);
	case TINK_KEY_NODE:
		return tink_nodekey_template(0);
	}
	return p;
}

TPM2B_PUBLIC tink_ldevid_template(unsigned gen)
{
	char unique[32]; /* at most the curve's size: P-256's 32 bytes */

	if (gen == 0)
		return ecc_signer(SIGNER_ATTRS, ldevid_unique);
	snprintf(unique, sizeof(unique), "fleetd LDevID gen %u", gen);
	return ecc_signer(SIGNER_ATTRS, unique);
}

TPM2B_PUBLIC tink_nodekey_template(unsigned gen)
{
	char unique[32]; /* "fleetd node key gen 4294967295": 30 characters */

	snprintf(unique, sizeof(unique), "fleetd node key gen %u", gen);
	return ecc_signer(SIGNER_ATTRS | TPMA_OBJECT_NODA, unique);
}
