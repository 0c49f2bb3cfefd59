/*
 * fuzz_tpm_public.c: a TPM2B_PUBLIC from the wire, through everything fleetd
 * does with one: parse, name, OpenSSL key, SPKI hash, the AK rules, the EK
 * rule of MakeCredential. The input, NUL-terminated, is also a PCR
 * selection string.
 *
 * What must hold for the EK rule: a refusal names its reason, and an EK
 * fleet_credential_ek_supported accepts (as intake does) is one
 * fleet_make_credential wraps to (the challenge cannot fail on it).
 *
 * Seeds (tests/fuzz/corpus/fuzz_tpm_public/) are public areas tpm2-tools 5.4
 * wrote from swtpm 0.7.1: ECDSA and RSAPSS AKs (tpm2_createak -u), P-256 and
 * RSA signing keys (tpm2_create -u), the RSA and P-384 EKs (tpm2_readpublic);
 * and the RSA EK with what MakeCredential cannot use: nameAlg SHA-1
 * (ek_sha1_pub), symmetric NULL (ek_symnull_pub), AES-128-CTR
 * (ek_ctr_pub), an OAEP scheme (ek_oaep_pub).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/tpm.h"
#include "lib/tpm_credential.h"

/* The EK rule on a parsed public area (see the top). */
static void ek_rule(const TPMT_PUBLIC *pub)
{
	static const uint8_t name[34] = {0x00, 0x0b};
	static const uint8_t secret[32] = {1};
	struct fleet_buf id, es;
	const char *reason = NULL;
	fleet_err e = fleet_credential_ek_supported(pub, &reason);

	if (e != FLEET_OK) {
		if (!reason && e != FLEET_E_NOMEM && e != FLEET_E_CRYPTO)
			abort();
		return;
	}
	fb_init(&id);
	fb_init(&es);
	if (fleet_make_credential(pub, secret, sizeof(secret), name, sizeof(name), &id, &es,
				  &reason) != FLEET_OK)
		abort();
	fb_free(&id);
	fb_free(&es);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	TPM2B_PUBLIC pub;
	TPML_PCR_SELECTION sel;
	struct fleet_errctx ec = {0};
	uint8_t name[2 + FLEET_DIGEST_MAX], spki[32];
	size_t name_len = 0;
	const char *reason = NULL;
	EVP_PKEY *k = NULL;
	char *s;

	if (fleet_tpm_public_parse(data, size, &pub, &ec) == FLEET_OK) {
		/* A parsed public area always has a name: parse refuses unknown
		 * nameAlgs, so a failure here is a bug worth a crash. */
		if (fleet_tpm_name(&pub.publicArea, name, sizeof(name), &name_len) != FLEET_OK)
			abort();
		if (fleet_tpm_public_to_pkey(&pub.publicArea, &k) == FLEET_OK) {
			EVP_PKEY_free(k);
			if (fleet_tpm_public_spki_sha256(&pub.publicArea, spki) != FLEET_OK)
				abort();
		}
		if (fleet_tpm_ak_check(&pub.publicArea, &reason) != FLEET_OK && !reason)
			abort();
		ek_rule(&pub.publicArea);
	} else if (ec.detail[0] == '\0') {
		abort(); /* every refusal explains itself */
	}

	s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	(void)fleet_pcr_selection_parse(s, &sel);
	free(s);
	return 0;
}
