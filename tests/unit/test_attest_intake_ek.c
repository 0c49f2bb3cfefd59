/*
 * test_attest_intake_ek.c: the EK stage of fleet_attest_intake with EK
 * certificates minted here, for the cases no swtpm certificate shows: an
 * RSA EK certificate that labels its key id-RSAES-OAEP (as some real ones
 * do), one whose rsaEncryption SPKI omits its NULL parameters (so its
 * ek_hash is not the key's canonical SPKI hash), and public areas whose
 * attributes are not an EK's.
 *
 * The intake carries a one-byte AK, so an intake whose EKs pass stops at
 * "ak-malformed": that reason says the EK stage let it through.
 */
#include "tests/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/pem.h>
#include <tss2/tss2_mu.h>

#include "lib/attest_server.h"
#include "lib/hex.h"
#include "tests/unit/x509_mint.h"

#define EK_ATTRS                                                                         \
	(TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT | TPMA_OBJECT_SENSITIVEDATAORIGIN | \
	 TPMA_OBJECT_ADMINWITHPOLICY | TPMA_OBJECT_RESTRICTED | TPMA_OBJECT_DECRYPT)

static const time_t NOW = 1796018400; /* 2026-11-30 */
#define YEAR (365 * 24 * 3600)

struct fx {
	EVP_PKEY *root_key, *ek_key;
	X509 *root;
	char *dir;
	struct fleet_ek_roots *roots;
	struct fleet_attest_env env;
};
static struct fx F;

static int setup(void **st)
{
	char path[600];
	FILE *f;
	(void)st;
	F.root_key = mint_key_ec();
	F.ek_key = mint_key_rsa();
	struct mint r = {.key = F.root_key, .cn = "Mint Attest EK Root", .ca = 1,
			 .not_before = NOW - YEAR, .not_after = NOW + 10 * YEAR};
	F.root = mint_cert(&r);
	F.dir = make_temp_dir("attestek");
	snprintf(path, sizeof(path), "%s/root.pem", F.dir);
	if (!(f = fopen(path, "w")) || PEM_write_X509(f, F.root) != 1)
		return -1;
	fclose(f);
	if (fleet_ek_roots_load(F.dir, &F.roots, NULL) != FLEET_OK)
		return -1;
	F.env.roots = F.roots;
	F.env.now = NOW;
	return 0;
}

static int teardown(void **st)
{
	(void)st;
	fleet_ek_roots_free(F.roots);
	rm_rf(F.dir);
	free(F.dir);
	X509_free(F.root);
	EVP_PKEY_free(F.root_key);
	EVP_PKEY_free(F.ek_key);
	return 0;
}

/* An intake with this RSA EK certificate and public area and nothing
 * else that is valid. */
static void intake_with_spki(struct fleet_wire_intake *in, int oaep, const char *spki_oid,
			     TPMA_OBJECT attrs)
{
	struct mint m = {.key = F.ek_key, .issuer = F.root, .issuer_key = F.root_key,
			 .not_before = NOW - YEAR, .not_after = NOW + YEAR, .tcg_san = 1,
			 .oaep_spki = oaep, .spki_oid = spki_oid};
	X509 *x = mint_cert(&m);
	TPM2B_PUBLIC pub = {0};
	uint8_t buf[sizeof(TPM2B_PUBLIC)];
	size_t off = 0;

	memset(in, 0, sizeof(*in));
	strcpy(in->serial, "SN-1");
	in->ek_rsa.present = true;
	in->ek_rsa.cert.data = mint_der(x, &in->ek_rsa.cert.len);
	X509_free(x);
	mint_tpm_public(F.ek_key, attrs, &pub.publicArea);
	/* An EK template's symmetric definition (AES-128-CFB). */
	pub.publicArea.parameters.rsaDetail.symmetric.algorithm = TPM2_ALG_AES;
	pub.publicArea.parameters.rsaDetail.symmetric.keyBits.aes = 128;
	pub.publicArea.parameters.rsaDetail.symmetric.mode.aes = TPM2_ALG_CFB;
	assert_int_equal(Tss2_MU_TPM2B_PUBLIC_Marshal(&pub, buf, sizeof(buf), &off), 0);
	in->ek_rsa.pub.data = malloc(off);
	memcpy(in->ek_rsa.pub.data, buf, off);
	in->ek_rsa.pub.len = off;
	in->ak_public.data = malloc(1);
	in->ak_public.data[0] = 0;
	in->ak_public.len = 1;
}

static void intake_with(struct fleet_wire_intake *in, int oaep, TPMA_OBJECT attrs)
{
	intake_with_spki(in, oaep, NULL, attrs);
}

static const char *intake_reason(const struct fleet_wire_intake *in)
{
	struct fleet_attest_session s;
	const char *reason = NULL;
	memset(&s, 0, sizeof(s));
	assert_int_not_equal(fleet_attest_intake(&F.env, in, &s, &reason), FLEET_OK);
	assert_non_null(reason);
	return reason;
}

static void test_plain_ek_passes(void **st)
{
	struct fleet_wire_intake in;
	(void)st;
	intake_with(&in, 0, EK_ATTRS);
	assert_string_equal(intake_reason(&in), "ak-malformed");
	fleet_wire_intake_free(&in);
}

/* The OAEP-labelled SPKI hashes to another ek_hash than the public area's
 * rsaEncryption SPKI; the key parameters match, so it is the same key. */
static void test_oaep_labelled_ek_passes(void **st)
{
	struct fleet_wire_intake in;
	X509 *x = NULL;
	char cert_hash[65], pub_hex[65];
	uint8_t pub_hash[32];
	TPM2B_PUBLIC pub;
	(void)st;
	intake_with(&in, 1, EK_ATTRS);
	assert_int_equal(fleet_ek_cert_load(in.ek_rsa.cert.data, in.ek_rsa.cert.len, &x, NULL),
			 FLEET_OK);
	assert_int_equal(fleet_ek_hash(x, cert_hash), FLEET_OK);
	X509_free(x);
	assert_int_equal(fleet_tpm_public_parse(in.ek_rsa.pub.data, in.ek_rsa.pub.len, &pub, NULL),
			 FLEET_OK);
	assert_int_equal(fleet_tpm_public_spki_sha256(&pub.publicArea, pub_hash), FLEET_OK);
	fleet_hex_encode(pub_hash, 32, pub_hex);
	assert_string_not_equal(cert_hash, pub_hex); /* the case under test */
	assert_string_equal(intake_reason(&in), "ak-malformed");
	fleet_wire_intake_free(&in);
}

/* rsaEncryption without its NULL parameters: OpenSSL reads the same key,
 * but the certificate's SPKI bytes (ek_hash) are not the key's canonical
 * SPKI, which is what SPIRE's pub_hash and fleetd's own SPKI of the public
 * area are. Two hashes for one key would make the binding ambiguous. */
static void test_ek_hash_mismatch(void **st)
{
	struct fleet_wire_intake in;
	(void)st;
	intake_with_spki(&in, 0, "1.2.840.113549.1.1.1", EK_ATTRS);
	assert_string_equal(intake_reason(&in), "ek-hash-mismatch");
	fleet_wire_intake_free(&in);
}

static void test_ek_attributes(void **st)
{
	static const struct {
		TPMA_OBJECT attrs;
		const char *reason;
	} cases[] = {
		{EK_ATTRS & ~TPMA_OBJECT_RESTRICTED, "ek-not-restricted"},
		{EK_ATTRS & ~TPMA_OBJECT_DECRYPT, "ek-not-decrypt"},
		{EK_ATTRS | TPMA_OBJECT_SIGN_ENCRYPT, "ek-sign-set"},
		{EK_ATTRS & ~TPMA_OBJECT_FIXEDTPM, "ek-not-fixedtpm"},
		{EK_ATTRS & ~TPMA_OBJECT_FIXEDPARENT, "ek-not-fixedparent"},
	};
	(void)st;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fleet_wire_intake in;
		intake_with(&in, 1, cases[i].attrs);
		assert_string_equal(intake_reason(&in), cases[i].reason);
		fleet_wire_intake_free(&in);
	}
}

/* A certificate for another key than the public area's. */
static void test_ek_key_mismatch(void **st)
{
	struct fleet_wire_intake in;
	EVP_PKEY *other = mint_key_rsa();
	TPM2B_PUBLIC pub = {0};
	uint8_t buf[sizeof(TPM2B_PUBLIC)];
	size_t off = 0;
	(void)st;
	intake_with(&in, 0, EK_ATTRS);
	mint_tpm_public(other, EK_ATTRS, &pub.publicArea);
	assert_int_equal(Tss2_MU_TPM2B_PUBLIC_Marshal(&pub, buf, sizeof(buf), &off), 0);
	free(in.ek_rsa.pub.data);
	in.ek_rsa.pub.data = malloc(off);
	memcpy(in.ek_rsa.pub.data, buf, off);
	in.ek_rsa.pub.len = off;
	assert_string_equal(intake_reason(&in), "ek-key-mismatch");
	fleet_wire_intake_free(&in);
	EVP_PKEY_free(other);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_ek_passes),
		cmocka_unit_test(test_oaep_labelled_ek_passes),
		cmocka_unit_test(test_ek_hash_mismatch),
		cmocka_unit_test(test_ek_attributes),
		cmocka_unit_test(test_ek_key_mismatch),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
