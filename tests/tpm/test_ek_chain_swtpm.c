/*
 * test_ek_chain_swtpm.c: a real TPM's EK certificates, read from its NV,
 * verify against its manufacturer's CA (swtpm's local CA standing in for
 * one), and match the EK public areas the TPM reports.
 */
#include "tests/testutil.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/pem.h>
#include <openssl/x509.h>

#include "lib/x509_ek.h"
#include "tests/tpm/swtpm_harness.h"

#define NV_EK_CERT_RSA 0x01C00002
#define NV_EK_CERT_ECC 0x01C00016
#define EK_RSA 0x81010001
#define EK_ECC 0x81010016

static struct swtpm tpm;

static int setup(void **state)
{
	(void)state;
	return swtpm_start(&tpm, NULL) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	swtpm_stop(&tpm);
	return 0;
}

static X509 *ek_cert(TPM2_HANDLE index)
{
	unsigned char *buf = NULL;
	size_t len = 0;
	struct fleet_errctx ec = {0};
	X509 *x = NULL;

	assert_int_equal(swtpm_nv_read(&tpm, index, &buf, &len), 0);
	if (fleet_ek_cert_load(buf, len, &x, &ec) != FLEET_OK)
		fail_msg("EK certificate at 0x%08x: %s", (unsigned)index, ec.detail);
	free(buf);
	return x;
}

static void test_ek_certs_verify(void **state)
{
	(void)state;
	struct fleet_ek_roots *roots = NULL;
	struct fleet_errctx ec = {0};
	const char *reason = NULL;

	if (fleet_ek_roots_load(tpm.roots, &roots, &ec) != FLEET_OK)
		fail_msg("roots %s: %s", tpm.roots, ec.detail);
	assert_true(fleet_ek_roots_count(roots) >= 2);
	X509 *rsa = ek_cert(NV_EK_CERT_RSA), *ecc = ek_cert(NV_EK_CERT_ECC);
	assert_int_equal(fleet_ek_chain_verify(roots, rsa, 0, &reason), FLEET_OK);
	assert_int_equal(fleet_ek_chain_verify(roots, ecc, 0, &reason), FLEET_OK);
	/* Before the certificates were made, they were not valid. */
	assert_int_equal(fleet_ek_chain_verify(roots, rsa, 946684800 /* 2000 */, &reason),
			 FLEET_E_VERIFY);
	assert_string_equal(reason, "ek-chain-not-yet-valid");
	X509_free(rsa);
	X509_free(ecc);
	fleet_ek_roots_free(roots);
}

static void test_ek_certs_match_public(void **state)
{
	(void)state;
	X509 *rsa = ek_cert(NV_EK_CERT_RSA), *ecc = ek_cert(NV_EK_CERT_ECC);
	TPM2B_PUBLIC *rsa_pub = NULL, *ecc_pub = NULL;
	const char *reason = NULL;

	assert_int_equal(swtpm_read_public(&tpm, EK_RSA, &rsa_pub), 0);
	assert_int_equal(swtpm_read_public(&tpm, EK_ECC, &ecc_pub), 0);
	assert_int_equal(fleet_ek_cert_matches_public(rsa, &rsa_pub->publicArea, &reason),
			 FLEET_OK);
	assert_int_equal(fleet_ek_cert_matches_public(ecc, &ecc_pub->publicArea, &reason),
			 FLEET_OK);
	/* Each certificate against the other EK. */
	assert_int_equal(fleet_ek_cert_matches_public(rsa, &ecc_pub->publicArea, &reason),
			 FLEET_E_VERIFY);
	assert_string_equal(reason, "ek-key-mismatch");
	assert_int_equal(fleet_ek_cert_matches_public(ecc, &rsa_pub->publicArea, &reason),
			 FLEET_E_VERIFY);
	assert_string_equal(reason, "ek-key-mismatch");
	/* One bit of the RSA modulus changed. */
	rsa_pub->publicArea.unique.rsa.buffer[10] ^= 0x01;
	assert_int_equal(fleet_ek_cert_matches_public(rsa, &rsa_pub->publicArea, &reason),
			 FLEET_E_VERIFY);
	Esys_Free(rsa_pub);
	Esys_Free(ecc_pub);
	X509_free(rsa);
	X509_free(ecc);
}

/* Copy only the self-signed certificates of t.roots: the issuer is gone. */
static void test_roots_without_issuer(void **state)
{
	(void)state;
	char *dir = make_temp_dir("ekrootonly");
	struct fleet_ek_roots *roots = NULL;
	struct dirent *de;
	const char *reason = NULL;
	int copied = 0;
	DIR *d = opendir(tpm.roots);

	assert_non_null(dir);
	assert_non_null(d);
	while ((de = readdir(d)) != NULL) {
		char src[700], dst[700];
		if (de->d_name[0] == '.')
			continue;
		snprintf(src, sizeof(src), "%s/%s", tpm.roots, de->d_name);
		FILE *f = fopen(src, "r");
		if (!f)
			continue;
		X509 *x;
		while ((x = PEM_read_X509(f, NULL, NULL, NULL)) != NULL) {
			if (X509_self_signed(x, 0) == 1) {
				snprintf(dst, sizeof(dst), "%s/root%d.pem", dir, copied++);
				FILE *o = fopen(dst, "w");
				assert_non_null(o);
				PEM_write_X509(o, x);
				fclose(o);
			}
			X509_free(x);
		}
		fclose(f);
	}
	closedir(d);
	assert_true(copied >= 1);
	assert_int_equal(fleet_ek_roots_load(dir, &roots, NULL), FLEET_OK);
	X509 *rsa = ek_cert(NV_EK_CERT_RSA);
	assert_int_equal(fleet_ek_chain_verify(roots, rsa, 0, &reason), FLEET_E_VERIFY);
	assert_string_equal(reason, "ek-chain-untrusted");
	X509_free(rsa);
	fleet_ek_roots_free(roots);
	rm_rf(dir);
	free(dir);
}

int main(void)
{
	swtpm_require_or_skip();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ek_certs_verify),
		cmocka_unit_test(test_ek_certs_match_public),
		cmocka_unit_test(test_roots_without_issuer),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
