/*
 * fuzz_tpm_public.c: a TPM2B_PUBLIC from the wire, through everything fleetd
 * does with one: parse, name, OpenSSL key, SPKI hash, the AK rules. The
 * input, NUL-terminated, is also a PCR selection string.
 *
 * Seeds (tests/fuzz/corpus/fuzz_tpm_public/) are public areas tpm2-tools 5.4
 * wrote from swtpm 0.7.1: ECDSA and RSAPSS AKs (tpm2_createak -u), P-256 and
 * RSA signing keys (tpm2_create -u), the RSA and P-384 EKs (tpm2_readpublic).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/tpm.h"

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
