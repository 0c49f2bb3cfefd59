/*
 * test_quote_certify.c: quotes and certifications made by a real TPM
 * (swtpm), checked by fleet_quote_verify / fleet_certify_verify, then
 * tampered with one field at a time; each tamper must be refused for its
 * own reason.
 */
#include "tests/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tss2/tss2_mu.h>

#include "lib/hex.h"
#include "lib/tpm.h"
#include "tests/tpm/swtpm_harness.h"

static struct swtpm T;

enum ak_kind { AK_ECDSA, AK_RSASSA, AK_RSAPSS };

#define AK_ATTRS                                                                         \
	(TPMA_OBJECT_RESTRICTED | TPMA_OBJECT_SIGN_ENCRYPT | TPMA_OBJECT_FIXEDTPM |      \
	 TPMA_OBJECT_FIXEDPARENT | TPMA_OBJECT_SENSITIVEDATAORIGIN | TPMA_OBJECT_USERWITHAUTH)
#define LDEVID_ATTRS                                                                     \
	(TPMA_OBJECT_SIGN_ENCRYPT | TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT |     \
	 TPMA_OBJECT_SENSITIVEDATAORIGIN | TPMA_OBJECT_USERWITHAUTH)

static TPM2B_PUBLIC ecc_template(TPMA_OBJECT attrs, TPMI_ALG_ECC_SCHEME scheme)
{
	TPM2B_PUBLIC t;
	memset(&t, 0, sizeof(t));
	t.publicArea.type = TPM2_ALG_ECC;
	t.publicArea.nameAlg = TPM2_ALG_SHA256;
	t.publicArea.objectAttributes = attrs;
	t.publicArea.parameters.eccDetail.symmetric.algorithm = TPM2_ALG_NULL;
	t.publicArea.parameters.eccDetail.scheme.scheme = scheme;
	t.publicArea.parameters.eccDetail.scheme.details.ecdsa.hashAlg = TPM2_ALG_SHA256;
	t.publicArea.parameters.eccDetail.curveID = TPM2_ECC_NIST_P256;
	t.publicArea.parameters.eccDetail.kdf.scheme = TPM2_ALG_NULL;
	return t;
}

static TPM2B_PUBLIC rsa_template(TPMI_ALG_RSA_SCHEME scheme)
{
	TPM2B_PUBLIC t;
	memset(&t, 0, sizeof(t));
	t.publicArea.type = TPM2_ALG_RSA;
	t.publicArea.nameAlg = TPM2_ALG_SHA256;
	t.publicArea.objectAttributes = AK_ATTRS;
	t.publicArea.parameters.rsaDetail.symmetric.algorithm = TPM2_ALG_NULL;
	t.publicArea.parameters.rsaDetail.scheme.scheme = scheme;
	t.publicArea.parameters.rsaDetail.scheme.details.rsassa.hashAlg = TPM2_ALG_SHA256;
	t.publicArea.parameters.rsaDetail.keyBits = 2048;
	return t;
}

/* A primary key in the endorsement hierarchy from tmpl; the TPM's public
 * area out. Endorsement, as for AKs made under the EK: for a signer in the
 * owner hierarchy the TPM obfuscates resetCount, restartCount and
 * firmwareVersion in what it signs (Part 1, "Privacy"), and the clock check
 * below would be comparing noise. */
static ESYS_TR create_key(const TPM2B_PUBLIC *tmpl, TPM2B_PUBLIC *out)
{
	TPM2B_SENSITIVE_CREATE sens = {0};
	TPM2B_DATA outside = {0};
	TPML_PCR_SELECTION none = {0};
	TPM2B_PUBLIC *pub = NULL;
	ESYS_TR h = ESYS_TR_NONE;
	TSS2_RC rc = Esys_CreatePrimary(swtpm_esys(&T), ESYS_TR_RH_ENDORSEMENT, ESYS_TR_PASSWORD,
					ESYS_TR_NONE, ESYS_TR_NONE, &sens, tmpl, &outside, &none,
					&h, &pub, NULL, NULL, NULL);
	assert_int_equal(rc, TSS2_RC_SUCCESS);
	*out = *pub;
	Esys_Free(pub);
	return h;
}

static ESYS_TR create_ak(enum ak_kind kind, TPM2B_PUBLIC *out)
{
	TPM2B_PUBLIC t = kind == AK_ECDSA    ? ecc_template(AK_ATTRS, TPM2_ALG_ECDSA)
			 : kind == AK_RSASSA ? rsa_template(TPM2_ALG_RSASSA)
					     : rsa_template(TPM2_ALG_RSAPSS);
	return create_key(&t, out);
}

struct signed_blob {
	uint8_t attest[sizeof(TPMS_ATTEST)];
	size_t attest_len;
	uint8_t sig[sizeof(TPMT_SIGNATURE)];
	size_t sig_len;
};

static void keep(const TPM2B_ATTEST *a, const TPMT_SIGNATURE *s, struct signed_blob *b)
{
	memcpy(b->attest, a->attestationData, a->size);
	b->attest_len = a->size;
	b->sig_len = 0;
	assert_int_equal(Tss2_MU_TPMT_SIGNATURE_Marshal(s, b->sig, sizeof(b->sig), &b->sig_len),
			 TSS2_RC_SUCCESS);
}

static void quote(ESYS_TR ak, const uint8_t *nonce, size_t nlen, const TPML_PCR_SELECTION *sel,
		  struct signed_blob *b)
{
	TPM2B_DATA q = {.size = (UINT16)nlen};
	TPMT_SIG_SCHEME scheme = {.scheme = TPM2_ALG_NULL}; /* the AK's own */
	TPM2B_ATTEST *a = NULL;
	TPMT_SIGNATURE *s = NULL;
	memcpy(q.buffer, nonce, nlen);
	assert_int_equal(Esys_Quote(swtpm_esys(&T), ak, ESYS_TR_PASSWORD, ESYS_TR_NONE,
				    ESYS_TR_NONE, &q, &scheme, sel, &a, &s),
			 TSS2_RC_SUCCESS);
	keep(a, s, b);
	Esys_Free(a);
	Esys_Free(s);
}

/* Read the selected PCRs one at a time (PCR_Read returns at most 8). */
static size_t read_pcrs(const TPML_PCR_SELECTION *sel, struct fleet_pcr_value *v)
{
	size_t n = 0;
	for (uint32_t b = 0; b < sel->count; b++)
		for (unsigned p = 0; p < 24; p++) {
			TPML_PCR_SELECTION one = {.count = 1};
			TPML_PCR_SELECTION *out = NULL;
			TPML_DIGEST *d = NULL;
			UINT32 ctr;
			if (!(sel->pcrSelections[b].pcrSelect[p / 8] & (1u << (p % 8))))
				continue;
			one.pcrSelections[0].hash = sel->pcrSelections[b].hash;
			one.pcrSelections[0].sizeofSelect = 3;
			one.pcrSelections[0].pcrSelect[p / 8] = (uint8_t)(1u << (p % 8));
			assert_int_equal(Esys_PCR_Read(swtpm_esys(&T), ESYS_TR_NONE, ESYS_TR_NONE,
						       ESYS_TR_NONE, &one, &ctr, &out, &d),
					 TSS2_RC_SUCCESS);
			assert_int_equal(d->count, 1);
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

static void extend(unsigned pcr, uint8_t fill)
{
	TPML_DIGEST_VALUES dv = {.count = 1};
	dv.digests[0].hashAlg = TPM2_ALG_SHA256;
	memset(dv.digests[0].digest.sha256, fill, 32);
	assert_int_equal(Esys_PCR_Extend(swtpm_esys(&T), ESYS_TR_PCR0 + pcr, ESYS_TR_PASSWORD,
					 ESYS_TR_NONE, ESYS_TR_NONE, &dv),
			 TSS2_RC_SUCCESS);
}

static int group_setup(void **st)
{
	(void)st;
	if (swtpm_start(&T, NULL) != 0 || !swtpm_esys(&T))
		return -1;
	/* PCRs that are not all zero, so a wrong value is visibly wrong. */
	extend(7, 0x07);
	extend(16, 0x16);
	return 0;
}

static int group_teardown(void **st)
{
	(void)st;
	swtpm_stop(&T);
	return 0;
}

static void expect(fleet_err got, const char *reason, fleet_err want_e, const char *want)
{
	if (reason == NULL || strcmp(reason, want) != 0 || got != want_e)
		print_error("want %s (%s), got %s (%s)\n", want, fleet_err_str(want_e),
			    reason ? reason : "(null)", fleet_err_str(got));
	assert_int_equal(got, want_e);
	assert_non_null(reason);
	assert_string_equal(reason, want);
}

/* The call first, then its reason: argument order is unspecified in C. */
#define EXPECT(call, want_e, want)                                                       \
	do {                                                                             \
		fleet_err got_ = (call);                                                 \
		expect(got_, reason, want_e, want);                                      \
	} while (0)

static void test_quote(void **st)
{
	enum ak_kind kind = *(enum ak_kind *)*st;
	static const uint8_t nonce[16] = "fleetd-nonce-01";
	uint8_t other_nonce[16];
	TPM2B_PUBLIC akpub, other;
	TPML_PCR_SELECTION sel, fewer;
	struct fleet_pcr_value v[8];
	struct signed_blob b;
	struct fleet_tpm_clock clock;
	TPMS_TIME_INFO *now = NULL;
	const char *reason = NULL;
	ESYS_TR ak = create_ak(kind, &akpub);

	assert_int_equal(fleet_pcr_selection_parse("sha256:0,1,2,7,16", &sel), FLEET_OK);
	quote(ak, nonce, sizeof(nonce), &sel, &b);
	size_t n = read_pcrs(&sel, v);
	assert_int_equal(n, 5);

	struct fleet_quote_check q = {
		.ak = &akpub.publicArea, .attest = b.attest, .attest_len = b.attest_len,
		.sig = b.sig, .sig_len = b.sig_len, .extra_data = nonce,
		.extra_data_len = sizeof(nonce), .selection = &sel, .values = v, .n_values = n,
	};
	assert_int_equal(fleet_quote_verify(&q, &clock, &reason), FLEET_OK);
	assert_null(reason);

	/* The clock the quote carries is the TPM's own. */
	assert_int_equal(Esys_ReadClock(swtpm_esys(&T), ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE,
					&now),
			 TSS2_RC_SUCCESS);
	assert_int_equal(clock.reset_count, now->clockInfo.resetCount);
	assert_int_equal(clock.restart_count, now->clockInfo.restartCount);
	assert_int_equal(clock.safe, now->clockInfo.safe == TPM2_YES);
	assert_true(clock.clock <= now->clockInfo.clock);
	Esys_Free(now);

	/* One byte of the signature. */
	b.sig[b.sig_len - 1] ^= 0x01;
	EXPECT(fleet_quote_verify(&q, NULL, &reason), FLEET_E_VERIFY, "signature-invalid");
	b.sig[b.sig_len - 1] ^= 0x01;

	/* One byte of the signed structure (inside the clock). */
	b.attest[b.attest_len / 2] ^= 0x01;
	EXPECT(fleet_quote_verify(&q, NULL, &reason), FLEET_E_VERIFY, "signature-invalid");
	b.attest[b.attest_len / 2] ^= 0x01;

	/* The nonce fleetd expected is not the one quoted. */
	memcpy(other_nonce, nonce, sizeof(nonce));
	other_nonce[0] ^= 0x01;
	q.extra_data = other_nonce;
	EXPECT(fleet_quote_verify(&q, NULL, &reason), FLEET_E_VERIFY, "attest-extradata");
	q.extra_data_len = sizeof(nonce) - 1;
	q.extra_data = nonce;
	EXPECT(fleet_quote_verify(&q, NULL, &reason), FLEET_E_VERIFY, "attest-extradata");
	q.extra_data_len = sizeof(nonce);

	/* One claimed PCR value. */
	v[3].digest[5] ^= 0x01;
	EXPECT(fleet_quote_verify(&q, NULL, &reason), FLEET_E_VERIFY, "quote-pcr-digest");
	v[3].digest[5] ^= 0x01;
	/* Values not lined up with the selection are malformed evidence. */
	q.n_values = n - 1;
	EXPECT(fleet_quote_verify(&q, NULL, &reason), FLEET_E_MALFORMED,
	       "quote-pcr-values");
	q.n_values = n;
	v[0].index = 9;
	EXPECT(fleet_quote_verify(&q, NULL, &reason), FLEET_E_MALFORMED,
	       "quote-pcr-values");
	v[0].index = 0;

	/* A selection other than the one fleetd asked for. */
	assert_int_equal(fleet_pcr_selection_parse("sha256:0,1,2,7", &fewer), FLEET_OK);
	q.selection = &fewer;
	q.n_values = n - 1;
	EXPECT(fleet_quote_verify(&q, NULL, &reason), FLEET_E_VERIFY, "quote-selection");
	q.selection = &sel;
	q.n_values = n;

	/* Each AK attribute rule, on the real AK's public area. */
	static const struct {
		TPMA_OBJECT bit;
		const char *reason;
	} rules[] = {
		{TPMA_OBJECT_RESTRICTED, "ak-not-restricted"},
		{TPMA_OBJECT_SIGN_ENCRYPT, "ak-not-sign"},
		{TPMA_OBJECT_DECRYPT, "ak-decrypt-set"},
		{TPMA_OBJECT_FIXEDTPM, "ak-not-fixedtpm"},
		{TPMA_OBJECT_FIXEDPARENT, "ak-not-fixedparent"},
		{TPMA_OBJECT_SENSITIVEDATAORIGIN, "ak-not-sensitivedataorigin"},
	};
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
		TPMT_PUBLIC changed = akpub.publicArea;
		changed.objectAttributes ^= rules[i].bit;
		q.ak = &changed;
		EXPECT(fleet_quote_verify(&q, NULL, &reason), FLEET_E_VERIFY,
		       rules[i].reason);
	}
	q.ak = &akpub.publicArea;

	/* Another real AK of the same kind did not sign it. */
	TPM2B_PUBLIC t = kind == AK_ECDSA ? ecc_template(AK_ATTRS, TPM2_ALG_ECDSA)
					  : rsa_template(kind == AK_RSASSA ? TPM2_ALG_RSASSA
									   : TPM2_ALG_RSAPSS);
	/* Different unique bytes: a different primary from the same seed. */
	if (kind == AK_ECDSA) {
		t.publicArea.unique.ecc.x.size = 1;
		t.publicArea.unique.ecc.x.buffer[0] = 0x42;
	} else {
		t.publicArea.unique.rsa.size = 1;
		t.publicArea.unique.rsa.buffer[0] = 0x42;
	}
	ESYS_TR ak2 = create_key(&t, &other);
	Esys_FlushContext(swtpm_esys(&T), ak2);
	q.ak = &other.publicArea;
	EXPECT(fleet_quote_verify(&q, NULL, &reason), FLEET_E_VERIFY, "signature-invalid");
	q.ak = &akpub.publicArea;

	/* A signature relabelled to another scheme or hash than the AK's. */
	TPMT_SIGNATURE sig;
	uint8_t relabel[sizeof(TPMT_SIGNATURE)];
	size_t off = 0;
	assert_int_equal(fleet_tpm_signature_parse(b.sig, b.sig_len, &sig, NULL), FLEET_OK);
	if (kind == AK_RSASSA)
		sig.sigAlg = TPM2_ALG_RSAPSS;
	else if (kind == AK_RSAPSS)
		sig.sigAlg = TPM2_ALG_RSASSA;
	else
		sig.signature.ecdsa.hash = TPM2_ALG_SHA384;
	assert_int_equal(Tss2_MU_TPMT_SIGNATURE_Marshal(&sig, relabel, sizeof(relabel), &off), 0);
	q.sig = relabel;
	q.sig_len = off;
	EXPECT(fleet_quote_verify(&q, NULL, &reason), FLEET_E_VERIFY, "signature-scheme");
	/* A trailing byte after the signature. */
	memcpy(relabel, b.sig, b.sig_len);
	relabel[b.sig_len] = 0;
	q.sig_len = b.sig_len + 1;
	EXPECT(fleet_quote_verify(&q, NULL, &reason), FLEET_E_MALFORMED,
	       "signature-malformed");
	q.sig = b.sig;
	q.sig_len = b.sig_len;

	/* The PCR moves after the quote: the old quote no longer matches. */
	extend(16, 0x61);
	n = read_pcrs(&sel, v);
	EXPECT(fleet_quote_verify(&q, NULL, &reason), FLEET_E_VERIFY, "quote-pcr-digest");

	Esys_FlushContext(swtpm_esys(&T), ak);
}

static void certify(ESYS_TR ak, ESYS_TR obj, const uint8_t *nonce, size_t nlen,
		    struct signed_blob *b)
{
	TPM2B_DATA q = {.size = (UINT16)nlen};
	TPMT_SIG_SCHEME scheme = {.scheme = TPM2_ALG_NULL};
	TPM2B_ATTEST *a = NULL;
	TPMT_SIGNATURE *s = NULL;
	memcpy(q.buffer, nonce, nlen);
	assert_int_equal(Esys_Certify(swtpm_esys(&T), obj, ak, ESYS_TR_PASSWORD, ESYS_TR_PASSWORD,
				      ESYS_TR_NONE, &q, &scheme, &a, &s),
			 TSS2_RC_SUCCESS);
	keep(a, s, b);
	Esys_Free(a);
	Esys_Free(s);
}

/* The SPKI hash as tpm2-tools and openssl compute it, not as we do. */
static int spki_by_tools(const TPM2B_PUBLIC *pub, char hex[65])
{
	uint8_t m[sizeof(TPM2B_PUBLIC)];
	size_t off = 0;
	char *dir = make_temp_dir("spki"), path[512], cmd[1200];
	struct fleet_buf out;
	FILE *f;
	int rc;

	assert_int_equal(Tss2_MU_TPM2B_PUBLIC_Marshal(pub, m, sizeof(m), &off), 0);
	snprintf(path, sizeof(path), "%s/key.pub", dir);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(m, 1, off, f), off);
	fclose(f);
	snprintf(cmd, sizeof(cmd),
		 "tpm2_print -t TPM2B_PUBLIC -f pem %s | openssl pkey -pubin -outform DER | "
		 "sha256sum | cut -c1-64",
		 path);
	fb_init(&out);
	rc = run_capture(cmd, &out);
	rm_rf(dir);
	free(dir);
	if (rc != 0 || out.len < 64) {
		fb_free(&out);
		return -1;
	}
	memcpy(hex, out.data, 64);
	hex[64] = '\0';
	fb_free(&out);
	return 0;
}

static void test_certify(void **st)
{
	static const uint8_t nonce[8] = {0xde, 0xad, 0xbe, 0xef, 0, 1, 2, 3};
	TPM2B_PUBLIC akpub, keypub, badpub;
	TPM2B_PUBLIC kt = ecc_template(LDEVID_ATTRS, TPM2_ALG_ECDSA);
	/* sign and decrypt together require the scheme to be left open. */
	TPM2B_PUBLIC dt = ecc_template(LDEVID_ATTRS | TPMA_OBJECT_DECRYPT, TPM2_ALG_NULL);
	struct signed_blob b, bad;
	uint8_t spki[32];
	char spki_hex[65], tools_hex[65];
	const char *reason = NULL;
	(void)st;

	ESYS_TR ak = create_ak(AK_ECDSA, &akpub);
	ESYS_TR key = create_key(&kt, &keypub);
	certify(ak, key, nonce, sizeof(nonce), &b);
	Esys_FlushContext(swtpm_esys(&T), key);

	struct fleet_certify_check c = {
		.ak = &akpub.publicArea, .attest = b.attest, .attest_len = b.attest_len,
		.sig = b.sig, .sig_len = b.sig_len, .extra_data = nonce,
		.extra_data_len = sizeof(nonce), .object = &keypub.publicArea,
	};
	assert_int_equal(fleet_certify_verify(&c, spki, &reason), FLEET_OK);
	assert_null(reason);
	fleet_hex_encode(spki, 32, spki_hex);
	assert_int_equal(spki_by_tools(&keypub, tools_hex), 0);
	assert_string_equal(spki_hex, tools_hex);

	/* One byte of the signature; the nonce; the AK's restricted bit. */
	b.sig[b.sig_len - 1] ^= 0x80;
	EXPECT(fleet_certify_verify(&c, NULL, &reason), FLEET_E_VERIFY,
	       "signature-invalid");
	b.sig[b.sig_len - 1] ^= 0x80;
	c.extra_data_len = 4;
	EXPECT(fleet_certify_verify(&c, NULL, &reason), FLEET_E_VERIFY,
	       "attest-extradata");
	c.extra_data_len = sizeof(nonce);
	TPMT_PUBLIC akc = akpub.publicArea;
	akc.objectAttributes &= ~TPMA_OBJECT_RESTRICTED;
	c.ak = &akc;
	EXPECT(fleet_certify_verify(&c, NULL, &reason), FLEET_E_VERIFY,
	       "ak-not-restricted");
	c.ak = &akpub.publicArea;

	/* Any change to the certified public area changes its name: an
	 * attribute the rules do not even look at, or the key itself. */
	TPMT_PUBLIC obj = keypub.publicArea;
	obj.objectAttributes ^= TPMA_OBJECT_NODA;
	c.object = &obj;
	EXPECT(fleet_certify_verify(&c, NULL, &reason), FLEET_E_VERIFY, "certify-name");
	obj = keypub.publicArea;
	obj.objectAttributes |= TPMA_OBJECT_DECRYPT;
	EXPECT(fleet_certify_verify(&c, NULL, &reason), FLEET_E_VERIFY, "certify-name");
	obj = keypub.publicArea;
	obj.unique.ecc.x.buffer[0] ^= 0x01;
	EXPECT(fleet_certify_verify(&c, NULL, &reason), FLEET_E_VERIFY, "certify-name");
	/* The AK's own public area is not the certified object. */
	c.object = &akpub.publicArea;
	EXPECT(fleet_certify_verify(&c, NULL, &reason), FLEET_E_VERIFY, "certify-name");
	c.object = &keypub.publicArea;

	/* A real TPM key that can both sign and decrypt, honestly certified:
	 * the name matches, the rule refuses it. */
	ESYS_TR dk = create_key(&dt, &badpub);
	certify(ak, dk, nonce, sizeof(nonce), &bad);
	Esys_FlushContext(swtpm_esys(&T), dk);
	struct fleet_certify_check d = c;
	d.attest = bad.attest;
	d.attest_len = bad.attest_len;
	d.sig = bad.sig;
	d.sig_len = bad.sig_len;
	d.object = &badpub.publicArea;
	EXPECT(fleet_certify_verify(&d, NULL, &reason), FLEET_E_VERIFY, "key-decrypt-set");

	/* A quote is not a certification, though the same AK signed it. */
	TPML_PCR_SELECTION sel;
	assert_int_equal(fleet_pcr_selection_parse("sha256:0", &sel), FLEET_OK);
	quote(ak, nonce, sizeof(nonce), &sel, &bad);
	d = c;
	d.attest = bad.attest;
	d.attest_len = bad.attest_len;
	d.sig = bad.sig;
	d.sig_len = bad.sig_len;
	EXPECT(fleet_certify_verify(&d, NULL, &reason), FLEET_E_VERIFY, "attest-type");

	Esys_FlushContext(swtpm_esys(&T), ak);
}

int main(void)
{
	static enum ak_kind ecdsa = AK_ECDSA, rsassa = AK_RSASSA, rsapss = AK_RSAPSS;
	swtpm_require_or_skip();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_prestate(test_quote, &ecdsa),
		cmocka_unit_test_prestate(test_quote, &rsassa),
		cmocka_unit_test_prestate(test_quote, &rsapss),
		cmocka_unit_test(test_certify),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
