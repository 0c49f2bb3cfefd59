/*
 * test_attest_server.c: fleetd's side of the three rounds against evidence
 * a real TPM (swtpm) makes in the test: EK certificates from its NV, an AK
 * and an LDevID key it holds, its TPM2_Certify, TPM2_ActivateCredential of
 * fleetd's challenge, TPM2_Quote over PCRs extended with the digests of the
 * event log the test writes, and TPM2_Sign of the confirm statement.
 *
 * Every message passes through the wire encoder and decoder on its way.
 * Each refusal is checked for its reason AND for leaving the session as it
 * was, byte for byte (trust rule 4); the refused session then completes.
 */
#include "tests/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/x509.h>
#include <tss2/tss2_mu.h>

#include "fleetd/attest/attest_server.h"
#include "lib/eventlog_build.h"
#include "lib/hex.h"
#include "lib/tpm_credential.h"
#include "tests/tpm/swtpm_harness.h"
#include "tests/tpm/tpm_evidence.h"

#define BIOS "fleet-test-bios 1.0"

static const char report_doc[] =
	"{\"chassis_id\":\"00:1c:73:aa:bb:cc\",\"port_id\":\"Ethernet7\",\"system_name\":\"tor-a\"}";
static const char other_report_doc[] =
	"{\"chassis_id\":\"00:1c:73:aa:bb:cc\",\"port_id\":\"Ethernet8\",\"system_name\":\"tor-a\"}";

struct fx {
	struct swtpm a, b;
	ESYS_CONTEXT *e;
	ESYS_TR ak, ldevid;
	TPM2B_PUBLIC ak_pub, ldevid_pub;
	struct fleet_ek_roots *roots, *roots_b;
	struct fleet_ca *ca;
	char *ca_base;
	struct fleet_profile *profile;
	struct fleet_buf log;
	struct fleet_wire_bytes ek_rsa_pub, ek_rsa_cert, ek_ecc_pub, ek_ecc_cert, b_rsa_cert;
	struct fleet_attest_env env;
};
static struct fx F;

static struct fleet_wire_bytes copy_of(const void *p, size_t n)
{
	struct fleet_wire_bytes b = {malloc(n ? n : 1), n};
	assert_non_null(b.data);
	memcpy(b.data, p, n);
	return b;
}

/* The boot: an S-CRTM version, an EFI action, separators on 0..7, each
 * written to the log and extended into the TPM with the same digests. */
static void boot(void)
{
	static const uint16_t algs[] = {FLEET_ALG_SHA256};
	static const uint8_t sep[4] = {0};
	static const char crtm[] = "fleetd test firmware 1.0";
	static const char action[] = "Calling EFI Application from Boot Option";
	struct fleet_evlog_builder *b = NULL;
	const struct fleet_evlog_digest *d;
	size_t n;

	assert_int_equal(fleet_evlog_builder_new(algs, 1, &b), FLEET_OK);
	assert_int_equal(fleet_evlog_builder_add(b, 0, FLEET_EV_S_CRTM_VERSION, crtm, sizeof(crtm)),
			 FLEET_OK);
	assert_int_equal(fleet_evlog_builder_last_digests(b, &d, &n), FLEET_OK);
	tev_extend(F.e, 0, d, n);
	assert_int_equal(fleet_evlog_builder_add(b, 4, FLEET_EV_EFI_ACTION, action,
						 sizeof(action) - 1),
			 FLEET_OK);
	assert_int_equal(fleet_evlog_builder_last_digests(b, &d, &n), FLEET_OK);
	tev_extend(F.e, 4, d, n);
	for (uint32_t pcr = 0; pcr < 8; pcr++) {
		assert_int_equal(fleet_evlog_builder_add(b, pcr, FLEET_EV_SEPARATOR, sep, 4),
				 FLEET_OK);
		assert_int_equal(fleet_evlog_builder_last_digests(b, &d, &n), FLEET_OK);
		tev_extend(F.e, pcr, d, n);
	}
	fb_init(&F.log);
	assert_int_equal(fleet_evlog_builder_finish(b, &F.log), FLEET_OK);
	fleet_evlog_builder_free(b);
}

/* The class profile: PCR 0 pinned for BIOS, as the TPM now reads it. */
static void load_profile(void)
{
	TPML_PCR_SELECTION sel;
	struct fleet_pcr_value v;
	struct fleet_errctx perr = {0};
	char hex[65], yaml[512];

	assert_int_equal(fleet_pcr_selection_parse("sha256:0", &sel), FLEET_OK);
	assert_int_equal(tev_read_pcrs(F.e, &sel, &v, 1), 1);
	fleet_hex_encode(v.digest, 32, hex);
	snprintf(yaml, sizeof(yaml),
		 "version: 1\nclass: worker\nquote:\n  bank: sha256\n"
		 "  pcrs: [0, 1, 2, 3, 4, 5, 7]\npcr0_by_bios:\n  \"%s\": \"%s\"\n"
		 "secure_boot: any\n",
		 BIOS, hex);
	if (fleet_profile_parse((const uint8_t *)yaml, strlen(yaml), &F.profile, &perr) !=
	    FLEET_OK)
		fail_msg("profile %u:%u: %s", perr.line, perr.column, perr.detail);
}

static int setup(void **st)
{
	struct fleet_errctx ec = {0};
	char dir[600];
	(void)st;
	setenv("TSS2_LOG", "esys+none", 0);
	if (swtpm_start(&F.a, NULL) != 0 || !(F.e = swtpm_esys(&F.a)))
		return -1;
	if (swtpm_start(&F.b, NULL) != 0 || !swtpm_esys(&F.b))
		return -1;
	if (fleet_ek_roots_load(F.a.roots, &F.roots, &ec) != FLEET_OK ||
	    fleet_ek_roots_load(F.b.roots, &F.roots_b, &ec) != FLEET_OK)
		return -1;
	F.ca_base = make_temp_dir("attestca");
	snprintf(dir, sizeof(dir), "%s/ca", F.ca_base);
	if (fleet_ca_init(dir, "Test Identity CA", 3650, &ec) != FLEET_OK ||
	    fleet_ca_load(dir, &F.ca, &ec) != FLEET_OK)
		return -1;

	TPM2B_PUBLIC t = tev_ecc_template(TEV_AK_ATTRS, TPM2_ALG_ECDSA, 1);
	F.ak = tev_primary(F.e, ESYS_TR_RH_ENDORSEMENT, &t, &F.ak_pub);
	t = tev_ecc_template(TEV_LDEVID_ATTRS, TPM2_ALG_ECDSA, 2);
	F.ldevid = tev_primary(F.e, ESYS_TR_RH_OWNER, &t, &F.ldevid_pub);

	TPM2B_PUBLIC p;
	tev_read_public(F.e, TEV_EK_RSA_HANDLE, &p);
	tev_public_bytes(&p, &F.ek_rsa_pub);
	tev_read_public(F.e, TEV_EK_ECC_HANDLE, &p);
	tev_public_bytes(&p, &F.ek_ecc_pub);
	tev_nv_bytes(F.e, TEV_NV_EK_CERT_RSA, &F.ek_rsa_cert);
	tev_nv_bytes(F.e, TEV_NV_EK_CERT_ECC, &F.ek_ecc_cert);
	tev_nv_bytes(swtpm_esys(&F.b), TEV_NV_EK_CERT_RSA, &F.b_rsa_cert);

	boot();
	load_profile();
	F.env.roots = F.roots;
	F.env.profile = F.profile;
	F.env.ca = F.ca;
	return 0;
}

static int teardown(void **st)
{
	(void)st;
	swtpm_stop(&F.a);
	swtpm_stop(&F.b);
	fleet_ek_roots_free(F.roots);
	fleet_ek_roots_free(F.roots_b);
	fleet_ca_free(F.ca);
	if (F.ca_base) {
		rm_rf(F.ca_base);
		free(F.ca_base);
	}
	fleet_profile_free(F.profile);
	fb_free(&F.log);
	free(F.ek_rsa_pub.data);
	free(F.ek_rsa_cert.data);
	free(F.ek_ecc_pub.data);
	free(F.ek_ecc_cert.data);
	free(F.b_rsa_cert.data);
	return 0;
}

/* ---- building the client's messages ------------------------------------ */

/* The LDevID request for key, naming serial, and its certification by the
 * AK over exactly those bytes. */
static void ldevid_evidence(struct fleet_wire_intake *in, ESYS_TR key, const TPM2B_PUBLIC *pub,
			    const TPM2B_PUBLIC *spki_of, const char *serial)
{
	struct fleet_ldevid_request req = {0};
	struct fleet_buf b;
	uint8_t qual[32];

	snprintf(req.serial, sizeof(req.serial), "%s", serial);
	assert_int_equal(fleet_tpm_public_spki_sha256(&spki_of->publicArea, req.spki_sha256),
			 FLEET_OK);
	fb_init(&b);
	assert_int_equal(fleet_ldevid_request_encode(&req, &b), FLEET_OK);
	free(in->ldevid_request.data);
	in->ldevid_request = copy_of(b.data, b.len);
	fb_free(&b);
	assert_int_equal(fleet_wire_certify_qualifier(&in->ldevid_request, qual), FLEET_OK);
	free(in->ldevid_public.data);
	free(in->ldevid_certify_attest.data);
	free(in->ldevid_certify_sig.data);
	tev_public_bytes(pub, &in->ldevid_public);
	tev_certify(F.e, F.ak, key, qual, sizeof(qual), &in->ldevid_certify_attest,
		    &in->ldevid_certify_sig);
}

static void make_intake(struct fleet_wire_intake *in, const char *bios)
{
	memset(in, 0, sizeof(*in));
	strcpy(in->serial, "SN-TEST-0001");
	strcpy(in->product_uuid, "4c4c4544-0042-3510-8052-b4c04f334d32");
	snprintf(in->bios_version, sizeof(in->bios_version), "%s", bios);
	in->n_macs = 1;
	strcpy(in->macs[0], "52:54:00:12:34:56");
	in->network_report = copy_of(report_doc, sizeof(report_doc) - 1);
	in->ek_rsa.present = true;
	in->ek_rsa.pub = copy_of(F.ek_rsa_pub.data, F.ek_rsa_pub.len);
	in->ek_rsa.cert = copy_of(F.ek_rsa_cert.data, F.ek_rsa_cert.len);
	in->ek_ecc.present = true;
	in->ek_ecc.pub = copy_of(F.ek_ecc_pub.data, F.ek_ecc_pub.len);
	in->ek_ecc.cert = copy_of(F.ek_ecc_cert.data, F.ek_ecc_cert.len);
	tev_public_bytes(&F.ak_pub, &in->ak_public);
	ldevid_evidence(in, F.ldevid, &F.ldevid_pub, &F.ldevid_pub, in->serial);
}

/* What fleetd receives: the message after the encoder and the decoder. */
#define THROUGH_WIRE(type, msg)                                                         \
	do {                                                                            \
		struct fleet_buf b_;                                                    \
		struct fleet_errctx ec_ = {0};                                          \
		fb_init(&b_);                                                           \
		assert_int_equal(fleet_wire_##type##_encode(msg, &b_), FLEET_OK);       \
		fleet_wire_##type##_free(msg);                                          \
		if (fleet_wire_##type##_decode(b_.data, b_.len, msg, &ec_) != FLEET_OK) \
			fail_msg("decode: %s", ec_.detail);                             \
		fb_free(&b_);                                                           \
	} while (0)

/*
 * The judging rounds return a struct fleet_decision. These wrappers check
 * the decision is one of the three and consistent (a pass has no reason
 * and no error, a refusal a reason, a failure no reason and an error that
 * does not blame the input), then hand back the error and the reason, so
 * the assertions below read as before: FLEET_OK is a pass,
 * FLEET_E_VERIFY + reason a refusal.
 */
static fleet_err decided(struct fleet_decision d, const char **reason)
{
	switch (d.outcome) {
	case FLEET_PASSED:
		assert_int_equal(d.err, FLEET_OK);
		assert_null(d.reason);
		break;
	case FLEET_REFUSED:
		assert_non_null(d.reason);
		assert_true(fleet_err_blames_input(d.err));
		break;
	case FLEET_FAILED:
		assert_null(d.reason);
		assert_int_not_equal(d.err, FLEET_OK);
		assert_false(fleet_err_blames_input(d.err));
		break;
	default:
		fail_msg("a decision that is none of the three: %d", (int)d.outcome);
	}
	*reason = d.reason;
	return d.outcome == FLEET_PASSED ? FLEET_OK : d.err;
}
#define attest_intake(env, in, s, reason) decided(fleet_attest_intake(env, in, s), reason)
#define attest_answer(env, s, a, v, reason) decided(fleet_attest_answer(env, s, a, v), reason)
#define attest_confirm(env, s, c, reason) decided(fleet_attest_confirm(env, s, c), reason)

/* One machine's session, from intake through activation. */
struct run {
	struct fleet_wire_intake in;
	struct fleet_attest_session s;
	struct fleet_wire_intake_reply reply;
	uint8_t secret_rsa[32], secret_ecc[32];
	TPML_PCR_SELECTION sel;
};

static void start(struct run *r, const char *bios)
{
	const char *reason = NULL;

	memset(r, 0, sizeof(*r));
	make_intake(&r->in, bios);
	THROUGH_WIRE(intake, &r->in);
	if (attest_intake(&F.env, &r->in, &r->s, &reason) != FLEET_OK)
		fail_msg("intake refused: %s", reason ? reason : "(none)");
	assert_int_equal(fleet_attest_challenge(&F.env, &r->in, &r->s, &r->reply), FLEET_OK);
	assert_int_equal(r->s.state, FLEET_SESSION_CHALLENGED);
	THROUGH_WIRE(intake_reply, &r->reply);
	assert_int_equal(r->reply.status, FLEET_WIRE_CHALLENGE);
	assert_string_equal(r->reply.pcr_selection, "sha256:0,1,2,3,4,5,7");
	assert_int_equal(fleet_pcr_selection_parse(r->reply.pcr_selection, &r->sel), FLEET_OK);
	/* The TPM opens both blobs: it holds both EKs and this AK. */
	assert_int_equal(tev_activate(F.e, F.ak, TEV_EK_RSA_HANDLE, &r->reply.cred_rsa,
				      r->secret_rsa),
			 TSS2_RC_SUCCESS);
	assert_int_equal(tev_activate(F.e, F.ak, TEV_EK_ECC_HANDLE, &r->reply.cred_ecc,
				      r->secret_ecc),
			 TSS2_RC_SUCCESS);
}

static void finish(struct run *r)
{
	fleet_wire_intake_free(&r->in);
	fleet_wire_intake_reply_free(&r->reply);
	fleet_attest_session_wipe(&r->s);
}

/* An answer to session_id: a quote over nonce and report, the TPM's PCRs,
 * the log, and a proof with the given secrets. */
static void answer_with(struct fleet_wire_answer *a, const uint8_t *session_id,
			const uint8_t *nonce, const char *quoted_report, const char *sent_report,
			const uint8_t *srsa, const uint8_t *secc, const TPML_PCR_SELECTION *sel)
{
	struct fleet_wire_bytes qr = {(uint8_t *)quoted_report, strlen(quoted_report)};
	uint8_t qual[32];

	memset(a, 0, sizeof(*a));
	memcpy(a->session, session_id, 32);
	assert_int_equal(fleet_wire_quote_qualifier(nonce, &qr, qual), FLEET_OK);
	tev_quote(F.e, F.ak, qual, sizeof(qual), sel, &a->quote_attest, &a->quote_sig);
	a->n_pcrs = tev_read_pcrs(F.e, sel, a->pcrs, sizeof(a->pcrs) / sizeof(a->pcrs[0]));
	a->event_log = copy_of(F.log.data, F.log.len);
	a->network_report = copy_of(sent_report, strlen(sent_report));
	assert_int_equal(fleet_wire_answer_proof(srsa, secc, session_id, &a->quote_attest,
						 a->proof),
			 FLEET_OK);
	THROUGH_WIRE(answer, a);
}

static void honest_answer(struct run *r, struct fleet_wire_answer *a)
{
	answer_with(a, r->reply.session, r->reply.nonce, report_doc, report_doc, r->secret_rsa,
		    r->secret_ecc, &r->sel);
}

/* The call fails with want_e and reason want, and s is as it was. */
static void expect_refused_answer(struct run *r, const struct fleet_wire_answer *a,
				  fleet_err want_e, const char *want)
{
	struct fleet_attest_session before = r->s;
	struct fleet_verdict v;
	const char *reason = NULL;
	fleet_err e = attest_answer(&F.env, &r->s, a, &v, &reason);
	if (e != want_e || !reason || strcmp(reason, want) != 0)
		fail_msg("want %s (%s), got %s (%s)", want, fleet_err_str(want_e),
			 reason ? reason : "(null)", fleet_err_str(e));
	assert_memory_equal(&before, &r->s, sizeof(before));
}

static void expect_pass(struct run *r, const struct fleet_wire_answer *a)
{
	struct fleet_verdict v;
	const char *reason = NULL;
	fleet_err e = attest_answer(&F.env, &r->s, a, &v, &reason);
	if (e != FLEET_OK)
		fail_msg("answer refused: %s (%s)", reason ? reason : "(null)", fleet_err_str(e));
	if (!v.pass)
		fail_msg("verdict failed: %s %s", v.n_reasons ? v.reasons[0].reason : "",
			 v.n_reasons ? v.reasons[0].detail : "");
	assert_true(v.quote_checked);
	assert_int_equal(r->s.state, FLEET_SESSION_VERIFIED);
}


/* ---- round 1 ------------------------------------------------------------ */

static void test_intake_accepted(void **st)
{
	struct fleet_wire_intake in;
	struct fleet_attest_session s;
	const char *reason = "unset";
	uint8_t h[32];
	char hex[65];
	(void)st;

	make_intake(&in, BIOS);
	THROUGH_WIRE(intake, &in);
	memset(&s, 0, sizeof(s));
	assert_int_equal(attest_intake(&F.env, &in, &s, &reason), FLEET_OK);
	assert_null(reason);
	assert_string_equal(s.serial, "SN-TEST-0001");
	assert_string_equal(s.bios_version, BIOS);
	assert_string_equal(s.report.port_id, "Ethernet7");
	assert_true(s.has_ecc);
	assert_int_equal(s.state, 0); /* the challenge sets CHALLENGED */
	/* ek_hash is SHA-256 of the certificate's SPKI, computed here by
	 * OpenSSL's own encoder of the certificate's key. */
	for (int i = 0; i < 2; i++) {
		const struct fleet_wire_bytes *c = i ? &F.ek_ecc_cert : &F.ek_rsa_cert;
		X509 *x = NULL;
		unsigned char *der = NULL;
		assert_int_equal(fleet_ek_cert_load(c->data, c->len, &x, NULL), FLEET_OK);
		int n = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(x), &der);
		assert_true(n > 0);
		assert_int_equal(fleet_hash(FLEET_ALG_SHA256, der, (size_t)n, h), FLEET_OK);
		fleet_hex_encode(h, 32, hex);
		assert_string_equal(i ? s.ek_hash_ecc : s.ek_hash, hex);
		OPENSSL_free(der);
		X509_free(x);
	}
	assert_int_equal(fleet_hash(FLEET_ALG_SHA256, report_doc, sizeof(report_doc) - 1, h),
			 FLEET_OK);
	assert_memory_equal(s.report_hash, h, 32);
	assert_memory_equal(&s.ak, &F.ak_pub, sizeof(F.ak_pub));
	fleet_wire_intake_free(&in);
	fleet_attest_session_wipe(&s);
}

/* Intake refused for want, and the caller's session untouched. */
static void expect_refused_intake(const struct fleet_wire_intake *in, fleet_err want_e,
				  const char *want)
{
	struct fleet_attest_session s, before;
	const char *reason = NULL;
	memset(&s, 0xee, sizeof(s));
	before = s;
	fleet_err e = attest_intake(&F.env, in, &s, &reason);
	if (e != want_e || !reason || strcmp(reason, want) != 0)
		fail_msg("want %s (%s), got %s (%s)", want, fleet_err_str(want_e),
			 reason ? reason : "(null)", fleet_err_str(e));
	assert_memory_equal(&s, &before, sizeof(s));
}

static void test_intake_refusals(void **st)
{
	struct fleet_wire_intake in;
	TPM2B_PUBLIC p;
	(void)st;

	/* A byte of the EK certificate's signature. */
	make_intake(&in, BIOS);
	in.ek_rsa.cert.data[in.ek_rsa.cert.len - 20] ^= 0x01;
	expect_refused_intake(&in, FLEET_E_VERIFY, "ek-chain-signature");
	fleet_wire_intake_free(&in);

	/* A genuine EK certificate of another TPM (its own manufacturer's
	 * roots trusted, so only the key can be wrong). */
	make_intake(&in, BIOS);
	free(in.ek_rsa.cert.data);
	in.ek_rsa.cert = copy_of(F.b_rsa_cert.data, F.b_rsa_cert.len);
	F.env.roots = F.roots_b;
	expect_refused_intake(&in, FLEET_E_VERIFY, "ek-key-mismatch");
	F.env.roots = F.roots;
	/* The same certificate with this TPM's roots: not even trusted. */
	expect_refused_intake(&in, FLEET_E_VERIFY, "ek-chain-untrusted");
	fleet_wire_intake_free(&in);

	/* The ECC EK offered as the RSA one. */
	make_intake(&in, BIOS);
	free(in.ek_rsa.pub.data);
	free(in.ek_rsa.cert.data);
	in.ek_rsa.pub = copy_of(F.ek_ecc_pub.data, F.ek_ecc_pub.len);
	in.ek_rsa.cert = copy_of(F.ek_ecc_cert.data, F.ek_ecc_cert.len);
	expect_refused_intake(&in, FLEET_E_VERIFY, "ek-wrong-type");
	fleet_wire_intake_free(&in);

	/* No RSA EK at all. */
	make_intake(&in, BIOS);
	free(in.ek_rsa.pub.data);
	free(in.ek_rsa.cert.data);
	memset(&in.ek_rsa, 0, sizeof(in.ek_rsa));
	expect_refused_intake(&in, FLEET_E_VERIFY, "ek-rsa-missing");
	fleet_wire_intake_free(&in);

	/* The EK public area claims it may sign: not the certified key's
	 * public area any more, and not a storage key. The key parameters
	 * still match the certificate, so the attribute rule is what refuses. */
	make_intake(&in, BIOS);
	assert_int_equal(fleet_tpm_public_parse(in.ek_rsa.pub.data, in.ek_rsa.pub.len, &p, NULL),
			 FLEET_OK);
	p.publicArea.objectAttributes |= TPMA_OBJECT_SIGN_ENCRYPT;
	free(in.ek_rsa.pub.data);
	tev_public_bytes(&p, &in.ek_rsa.pub);
	expect_refused_intake(&in, FLEET_E_VERIFY, "ek-sign-set");
	p.publicArea.objectAttributes &= ~(TPMA_OBJECT_SIGN_ENCRYPT | TPMA_OBJECT_RESTRICTED);
	free(in.ek_rsa.pub.data);
	tev_public_bytes(&p, &in.ek_rsa.pub);
	expect_refused_intake(&in, FLEET_E_VERIFY, "ek-not-restricted");
	fleet_wire_intake_free(&in);

	/* This TPM's own EK public areas, their keys (so the certificates'
	 * match) unchanged, with what MakeCredential cannot wrap to: refused
	 * at intake, with the reason the challenge would have failed with. */
	static const struct {
		int ecc;
		uint16_t name_alg;      /* 0: unchanged */
		uint16_t sym_alg, mode; /* 0: unchanged */
		uint16_t scheme;        /* 0: unchanged */
		const char *reason;
	} ek_cases[] = {
		{0, TPM2_ALG_SHA1, 0, 0, 0, "ek-name-alg-unsupported"},
		{1, TPM2_ALG_SHA1, 0, 0, 0, "ek-name-alg-unsupported"},
		{0, 0, TPM2_ALG_NULL, 0, 0, "ek-symmetric-unsupported"},
		{1, 0, 0, TPM2_ALG_CTR, 0, "ek-symmetric-unsupported"},
		{0, 0, 0, 0, TPM2_ALG_OAEP, "ek-scheme-unsupported"},
		{1, 0, 0, 0, TPM2_ALG_ECDH, "ek-scheme-unsupported"},
	};
	for (size_t i = 0; i < sizeof(ek_cases) / sizeof(ek_cases[0]); i++) {
		struct fleet_wire_ek *ek;
		TPMT_SYM_DEF_OBJECT *sym;
		const char *why = NULL;
		make_intake(&in, BIOS);
		ek = ek_cases[i].ecc ? &in.ek_ecc : &in.ek_rsa;
		assert_int_equal(fleet_tpm_public_parse(ek->pub.data, ek->pub.len, &p, NULL),
				 FLEET_OK);
		sym = &p.publicArea.parameters.asymDetail.symmetric;
		if (ek_cases[i].name_alg)
			p.publicArea.nameAlg = ek_cases[i].name_alg;
		if (ek_cases[i].sym_alg) {
			memset(sym, 0, sizeof(*sym));
			sym->algorithm = ek_cases[i].sym_alg;
		}
		if (ek_cases[i].mode)
			sym->mode.aes = ek_cases[i].mode;
		if (ek_cases[i].scheme) {
			/* The scheme's hash, as a TPM would fill it. */
			p.publicArea.parameters.asymDetail.scheme.scheme = ek_cases[i].scheme;
			p.publicArea.parameters.asymDetail.scheme.details.anySig.hashAlg =
				TPM2_ALG_SHA256;
		}
		free(ek->pub.data);
		tev_public_bytes(&p, &ek->pub);
		expect_refused_intake(&in, FLEET_E_VERIFY, ek_cases[i].reason);
		assert_int_not_equal(fleet_credential_ek_supported(&p.publicArea, &why), FLEET_OK);
		assert_string_equal(why, ek_cases[i].reason);
		fleet_wire_intake_free(&in);
	}

	/* The AK without restricted: it could sign a forged quote. */
	make_intake(&in, BIOS);
	p = F.ak_pub;
	p.publicArea.objectAttributes &= ~TPMA_OBJECT_RESTRICTED;
	free(in.ak_public.data);
	tev_public_bytes(&p, &in.ak_public);
	expect_refused_intake(&in, FLEET_E_VERIFY, "ak-not-restricted");
	fleet_wire_intake_free(&in);

	/* A real TPM key that signs and decrypts, honestly certified. */
	make_intake(&in, BIOS);
	TPM2B_PUBLIC t = tev_ecc_template(TEV_LDEVID_ATTRS | TPMA_OBJECT_DECRYPT, TPM2_ALG_NULL, 3);
	ESYS_TR bad = tev_primary(F.e, ESYS_TR_RH_OWNER, &t, &p);
	ldevid_evidence(&in, bad, &p, &p, in.serial);
	Esys_FlushContext(F.e, bad);
	expect_refused_intake(&in, FLEET_E_VERIFY, "key-decrypt-set");
	fleet_wire_intake_free(&in);

	/* The AK presented as the LDevID, certifying itself: a restricted key,
	 * refused at intake before a challenge is spent (found in review). */
	make_intake(&in, BIOS);
	ldevid_evidence(&in, F.ak, &F.ak_pub, &F.ak_pub, in.serial);
	expect_refused_intake(&in, FLEET_E_VERIFY, "ldevid-restricted");
	fleet_wire_intake_free(&in);

	/* A request naming another machine, certified all the same. */
	make_intake(&in, BIOS);
	ldevid_evidence(&in, F.ldevid, &F.ldevid_pub, &F.ldevid_pub, "SN-SOMEONE-ELSE");
	expect_refused_intake(&in, FLEET_E_VERIFY, "ldevid-request-serial");
	fleet_wire_intake_free(&in);

	/* A request naming another key than the one certified. */
	make_intake(&in, BIOS);
	ldevid_evidence(&in, F.ldevid, &F.ldevid_pub, &F.ak_pub, in.serial);
	expect_refused_intake(&in, FLEET_E_VERIFY, "ldevid-request-key");
	fleet_wire_intake_free(&in);

	/* The request changed after the AK certified it. */
	make_intake(&in, BIOS);
	{
		struct fleet_ldevid_request q;
		struct fleet_buf b;
		assert_int_equal(fleet_ldevid_request_parse(&in.ldevid_request, &q, NULL), FLEET_OK);
		fb_init(&b);
		fb_put(&b, " ", 1); /* same document, other bytes */
		assert_int_equal(fleet_ldevid_request_encode(&q, &b), FLEET_OK);
		free(in.ldevid_request.data);
		in.ldevid_request = copy_of(b.data, b.len);
		fb_free(&b);
	}
	expect_refused_intake(&in, FLEET_E_VERIFY, "attest-extradata");
	fleet_wire_intake_free(&in);

	/* A network report that is not one. */
	make_intake(&in, BIOS);
	free(in.network_report.data);
	in.network_report = copy_of("{\"port_id\":\"x\"}", 15);
	expect_refused_intake(&in, FLEET_E_MALFORMED, "network-report-malformed");
	fleet_wire_intake_free(&in);
}

/* ---- rounds 2 and 3 ----------------------------------------------------- */

static void check_cert(const struct fleet_wire_bytes *der, const TPM2B_PUBLIC *key)
{
	const unsigned char *p = der->data;
	X509 *x = d2i_X509(NULL, &p, (long)der->len);
	unsigned char *spki = NULL;
	uint8_t h[32], want[32];
	assert_non_null(x);
	assert_int_equal(X509_verify(x, X509_get0_pubkey(fleet_ca_cert(F.ca))), 1);
	int n = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(x), &spki);
	assert_true(n > 0);
	assert_int_equal(fleet_hash(FLEET_ALG_SHA256, spki, (size_t)n, h), FLEET_OK);
	assert_int_equal(fleet_tpm_public_spki_sha256(&key->publicArea, want), FLEET_OK);
	assert_memory_equal(h, want, 32);
	OPENSSL_free(spki);
	X509_free(x);
}

static void confirm_with(struct run *r, const uint8_t *session_in_stmt,
			 const struct fleet_wire_verdict *v, struct fleet_wire_confirm *c)
{
	struct fleet_buf stmt;
	memset(c, 0, sizeof(*c));
	memcpy(c->session, r->reply.session, 32);
	fb_init(&stmt);
	assert_int_equal(fleet_wire_confirm_statement(session_in_stmt, &v->lak_cert,
						      &v->ldevid_cert, &stmt),
			 FLEET_OK);
	tev_sign(F.e, F.ldevid, stmt.data, stmt.len, &c->signature);
	fb_free(&stmt);
	THROUGH_WIRE(confirm, c);
}

static void test_admission(void **st)
{
	struct run r;
	struct fleet_wire_answer a;
	struct fleet_wire_verdict v;
	struct fleet_wire_confirm c;
	const char *reason = NULL;
	(void)st;

	start(&r, BIOS);
	honest_answer(&r, &a);
	/* Not before the answer: issue refuses a CHALLENGED session. */
	assert_int_equal(fleet_attest_issue(&F.env, &r.s, "node-1", &v), FLEET_E_INVALID_ARG);
	expect_pass(&r, &a);
	/* The activation secrets do not outlive the proof. */
	static const uint8_t zero[FLEET_WIRE_ID_LEN];
	assert_memory_equal(r.s.secret_rsa, zero, sizeof(zero));
	assert_memory_equal(r.s.secret_ecc, zero, sizeof(zero));
	/* The same answer again: the session has moved on. */
	expect_refused_answer(&r, &a, FLEET_E_VERIFY, "session-state");
	fleet_wire_answer_free(&a);
	assert_int_equal(r.s.state, FLEET_SESSION_VERIFIED);

	assert_int_equal(fleet_attest_issue(&F.env, &r.s, "node-1", &v), FLEET_OK);
	assert_int_equal(r.s.state, FLEET_SESSION_ISSUED);
	THROUGH_WIRE(verdict, &v);
	assert_int_equal(v.status, FLEET_WIRE_ADMITTED);
	check_cert(&v.lak_cert, &F.ak_pub);
	check_cert(&v.ldevid_cert, &F.ldevid_pub);
	{
		unsigned char *der = NULL;
		int n = i2d_X509(fleet_ca_cert(F.ca), &der);
		assert_int_equal((size_t)n, v.ca_cert.len);
		assert_memory_equal(der, v.ca_cert.data, v.ca_cert.len);
		OPENSSL_free(der);
	}
	/* Issued once: a second issue is refused. */
	struct fleet_wire_verdict v2;
	assert_int_equal(fleet_attest_issue(&F.env, &r.s, "node-1", &v2), FLEET_E_INVALID_ARG);

	/* A real LDevID signature over another session's statement. */
	uint8_t other[32];
	memcpy(other, r.reply.session, 32);
	other[0] ^= 1;
	confirm_with(&r, other, &v, &c);
	struct fleet_attest_session before = r.s;
	assert_int_equal(attest_confirm(&F.env, &r.s, &c, &reason), FLEET_E_VERIFY);
	assert_string_equal(reason, "confirm-signature");
	assert_memory_equal(&before, &r.s, sizeof(before));
	fleet_wire_confirm_free(&c);
	/* A confirm for an unknown session. */
	confirm_with(&r, r.reply.session, &v, &c);
	c.session[5] ^= 1;
	assert_int_equal(attest_confirm(&F.env, &r.s, &c, &reason), FLEET_E_VERIFY);
	assert_string_equal(reason, "session-unknown");
	c.session[5] ^= 1;
	assert_int_equal(r.s.state, FLEET_SESSION_ISSUED);
	/* The real one. */
	assert_int_equal(attest_confirm(&F.env, &r.s, &c, &reason), FLEET_OK);
	assert_null(reason);
	assert_int_equal(r.s.state, FLEET_SESSION_CONFIRMED);
	assert_int_equal(attest_confirm(&F.env, &r.s, &c, &reason), FLEET_E_VERIFY);
	assert_string_equal(reason, "session-state");
	fleet_wire_confirm_free(&c);
	fleet_wire_verdict_free(&v);
	finish(&r);
}

static void test_unproven_answers_displace_nothing(void **st)
{
	struct run r1, r2;
	struct fleet_wire_answer a;
	(void)st;

	start(&r1, BIOS);
	start(&r2, BIOS);

	/* A proof keyed with a secret from the wrong EK (the two swapped),
	 * and one keyed with another session's secrets. */
	answer_with(&a, r1.reply.session, r1.reply.nonce, report_doc, report_doc, r1.secret_ecc,
		    r1.secret_rsa, &r1.sel);
	expect_refused_answer(&r1, &a, FLEET_E_VERIFY, "proof-invalid");
	fleet_wire_answer_free(&a);
	answer_with(&a, r1.reply.session, r1.reply.nonce, report_doc, report_doc, r2.secret_rsa,
		    r2.secret_ecc, &r1.sel);
	expect_refused_answer(&r1, &a, FLEET_E_VERIFY, "proof-invalid");
	fleet_wire_answer_free(&a);

	/* A quote over another nonce (the other session's), proof and all. */
	answer_with(&a, r1.reply.session, r2.reply.nonce, report_doc, report_doc, r1.secret_rsa,
		    r1.secret_ecc, &r1.sel);
	expect_refused_answer(&r1, &a, FLEET_E_VERIFY, "attest-extradata");
	fleet_wire_answer_free(&a);

	/* The network report changed after the quote; and changed before it. */
	answer_with(&a, r1.reply.session, r1.reply.nonce, report_doc, other_report_doc,
		    r1.secret_rsa, r1.secret_ecc, &r1.sel);
	expect_refused_answer(&r1, &a, FLEET_E_VERIFY, "network-report-changed");
	fleet_wire_answer_free(&a);
	answer_with(&a, r1.reply.session, r1.reply.nonce, other_report_doc, other_report_doc,
		    r1.secret_rsa, r1.secret_ecc, &r1.sel);
	expect_refused_answer(&r1, &a, FLEET_E_VERIFY, "network-report-changed");
	fleet_wire_answer_free(&a);

	/* A quote over fewer PCRs than the profile asks for. */
	TPML_PCR_SELECTION fewer;
	assert_int_equal(fleet_pcr_selection_parse("sha256:0,1,2,3,4,5", &fewer), FLEET_OK);
	answer_with(&a, r1.reply.session, r1.reply.nonce, report_doc, report_doc, r1.secret_rsa,
		    r1.secret_ecc, &fewer);
	expect_refused_answer(&r1, &a, FLEET_E_VERIFY, "quote-selection");
	fleet_wire_answer_free(&a);

	/* Session 2's complete, valid answer replayed into session 1: as
	 * sent, and with its session id rewritten to session 1's. */
	honest_answer(&r2, &a);
	expect_refused_answer(&r1, &a, FLEET_E_VERIFY, "session-unknown");
	memcpy(a.session, r1.reply.session, 32);
	expect_refused_answer(&r1, &a, FLEET_E_VERIFY, "proof-invalid");
	fleet_wire_answer_free(&a);

	/* After the deadline; then the clock back where it was. */
	honest_answer(&r1, &a);
	F.env.now = r1.s.deadline + 1;
	expect_refused_answer(&r1, &a, FLEET_E_VERIFY, "session-expired");
	F.env.now = 0;

	/* None of it displaced anything: both sessions complete. */
	expect_pass(&r1, &a);
	fleet_wire_answer_free(&a);
	honest_answer(&r2, &a);
	expect_pass(&r2, &a);
	fleet_wire_answer_free(&a);
	finish(&r1);
	finish(&r2);
}

static void test_failed_verdicts(void **st)
{
	struct run r;
	struct fleet_wire_answer a;
	struct fleet_wire_verdict v;
	struct fleet_verdict verdict;
	const char *reason = NULL;
	(void)st;

	/* A BIOS the profile does not know: authenticated, and refused by
	 * the profile. A verdict, not an error; and nothing is issued. */
	start(&r, "some other bios");
	honest_answer(&r, &a);
	assert_int_equal(attest_answer(&F.env, &r.s, &a, &verdict, &reason), FLEET_OK);
	assert_false(verdict.pass);
	assert_true(fleet_verdict_has(&verdict, "pcr0-unknown-bios"));
	assert_int_equal(r.s.state, FLEET_SESSION_VERIFIED);
	assert_int_equal(fleet_attest_issue(&F.env, &r.s, "node-1", &v), FLEET_E_INVALID_ARG);
	assert_int_equal(r.s.state, FLEET_SESSION_VERIFIED);
	fleet_wire_answer_free(&a);
	finish(&r);

	/* A log fleetd cannot read, from a TPM that proved its quote. */
	start(&r, BIOS);
	honest_answer(&r, &a);
	a.event_log.len = 20; /* inside the Spec ID header */
	assert_int_equal(attest_answer(&F.env, &r.s, &a, &verdict, &reason), FLEET_OK);
	assert_false(verdict.pass);
	assert_int_equal(verdict.n_reasons, 1);
	assert_string_equal(verdict.reasons[0].reason, "event-log-malformed");
	assert_int_equal(r.s.state, FLEET_SESSION_VERIFIED);
	assert_int_equal(fleet_attest_issue(&F.env, &r.s, "node-1", &v), FLEET_E_INVALID_ARG);
	fleet_wire_answer_free(&a);
	finish(&r);

	/* The same unreadable log with a forged quote is no verdict at all. */
	start(&r, BIOS);
	honest_answer(&r, &a);
	a.event_log.len = 20;
	a.quote_sig.data[a.quote_sig.len - 1] ^= 1;
	assert_int_equal(fleet_wire_answer_proof(r.secret_rsa, r.secret_ecc, r.reply.session,
						 &a.quote_attest, a.proof),
			 FLEET_OK);
	expect_refused_answer(&r, &a, FLEET_E_VERIFY, "signature-invalid");
	fleet_wire_answer_free(&a);
	finish(&r);
}

int main(void)
{
	swtpm_require_or_skip();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_intake_accepted),
		cmocka_unit_test(test_intake_refusals),
		cmocka_unit_test(test_admission),
		cmocka_unit_test(test_unproven_answers_displace_nothing),
		cmocka_unit_test(test_failed_verdicts),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
