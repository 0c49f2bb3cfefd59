/* tpm_internal.h: shared by tpm_client.c and tpm_ops.c only. */
#ifndef TINK_TPM_INTERNAL_H
#define TINK_TPM_INTERNAL_H

#include "tink-attest/tpm_client.h"

/* Set t->err to "WHAT failed: 0xRC (decoded)" (or WHAT alone for rc 0); -1. */
int tink_tpm_fail(struct tink_tpm *t, TSS2_RC rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* CreatePrimary from k's template in its hierarchy; pub may be NULL. */
int tink_tpm_load(struct tink_tpm *t, enum tink_key k, ESYS_TR *h, TPM2B_PUBLIC *pub);
void tink_tpm_unload(struct tink_tpm *t, ESYS_TR *h);

#endif
