/* The harness itself: a manufactured swtpm answers, its EK certificates are
 * in NV, and its EKs are where the harness says. */
#include "tests/testutil.h"

#include <stdlib.h>

#include "tests/tpm/swtpm_harness.h"

static void manufactured_tpm_has_both_eks_and_certs(void **state)
{
	(void)state;
	struct swtpm t;
	assert_int_equal(swtpm_start(&t, NULL), 0);
	unsigned char *cert = NULL;
	size_t len = 0;
	assert_int_equal(swtpm_nv_read(&t, 0x01C00002, &cert, &len), 0);
	assert_true(len > 100 && cert[0] == 0x30); /* a DER SEQUENCE */
	free(cert);
	assert_int_equal(swtpm_nv_read(&t, 0x01C00016, &cert, &len), 0);
	assert_true(len > 100 && cert[0] == 0x30);
	free(cert);
	TPM2B_PUBLIC *pub = NULL;
	assert_int_equal(swtpm_read_public(&t, 0x81010001, &pub), 0);
	assert_int_equal(pub->publicArea.type, TPM2_ALG_RSA);
	Esys_Free(pub);
	assert_int_equal(swtpm_read_public(&t, 0x81010016, &pub), 0);
	assert_int_equal(pub->publicArea.type, TPM2_ALG_ECC);
	assert_int_equal(pub->publicArea.parameters.eccDetail.curveID, TPM2_ECC_NIST_P384);
	Esys_Free(pub);
	swtpm_stop(&t);
}

int main(void)
{
	swtpm_require_or_skip();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(manufactured_tpm_has_both_eks_and_certs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
