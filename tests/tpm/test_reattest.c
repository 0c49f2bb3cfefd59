/*
 * test_reattest.c: fleetd's side of the hourly re-check
 * (fleetd/reattest/reattest.h, RA1-RA12) against a real TPM (swtpm) booted
 * by the firmware simulator (tests/fwsim/worker.events.yaml), with a real
 * CA (lib/ca.h) and a real store. Each test has its own store holding one
 * device, "worker-1", and its LAK certificate for the TPM's AK.
 *
 * The AK is a primary in the endorsement hierarchy (the clock fields are
 * not obfuscated); the report is signed as tpm-reattest signs it: a
 * restricted key signs only a digest the TPM hashed itself (TPM2_Hash's
 * ticket, then TPM2_Sign).
 */
#include "tests/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/x509.h>
#include <tss2/tss2_mu.h>

#include "fleetd/reattest/reattest.h"
#include "fleetd/store/store.h"
#include "lib/eventlog_build.h"
#include "lib/hex.h"
#include "lib/reattest_wire.h"
#include "tests/fwsim/fwsim.h"
#include "tests/tpm/swtpm_harness.h"
#include "tests/tpm/tpm_evidence.h"

#define DEVICE "worker-1"
#define SERIAL "FLEET-SIM-0001"
#define BIOS "fleetd-sim-1.0"
#define T0 1900000000 /* the tests' clock */
#define EK_HASH "1111111111111111111111111111111111111111111111111111111111111111"

static const char report_doc[] =
	"{\"chassis_id\":\"0c:42:a1:00:07:00\",\"port_id\":\"Ethernet12\","
	"\"system_name\":\"leaf-07.folly\"}";

static struct {
	struct swtpm t;
	ESYS_CONTEXT *e;
	ESYS_TR ak, other;
	TPM2B_PUBLIC ak_pub, other_pub, ldevid_pub, next_pub, restricted_pub;
	char *base;
	struct fleet_ca *ca;
	struct fleet_profile *profile;
	struct fleet_buf log;
	char profile_yaml[4096];
} G;

/* Per test. */
struct fx {
	char *dir;
	struct fleet_store *st;
	struct fleet_reattest_nonces *nonces;
	struct fleet_reattest_env env;
	struct fleet_wire_bytes lak; /* DER */
	char lak_sha1[41];
};

static void issue_cert(enum fleet_cert_kind kind, const TPM2B_PUBLIC *key, const char *device,
		       time_t nb, unsigned days, struct fleet_wire_bytes *out)
{
	struct fleet_issue_request req = {
		.kind = kind,
		.key = &key->publicArea,
		.device_name = device,
		.serial = SERIAL,
		.not_before = nb,
		.validity_days = days,
	};
	struct fleet_errctx ec = {0};
	unsigned char *der = NULL;
	X509 *x = NULL;
	assert_int_equal(fleet_ca_issue(G.ca, &req, &x, &ec), FLEET_OK);
	int n = i2d_X509(x, &der);
	assert_true(n > 0);
	out->data = malloc((size_t)n);
	assert_non_null(out->data);
	memcpy(out->data, der, (size_t)n);
	out->len = (size_t)n;
	OPENSSL_free(der);
	X509_free(x);
}

static void issue_lak(const TPM2B_PUBLIC *key, const char *device, time_t nb, unsigned days,
		      struct fleet_wire_bytes *out)
{
	issue_cert(FLEET_CERT_LAK, key, device, nb, days, out);
}

static void load_profile_text(const char *yaml, struct fleet_profile **out)
{
	struct fleet_errctx ec = {0};
	if (fleet_profile_parse((const uint8_t *)yaml, strlen(yaml), out, &ec) != FLEET_OK)
		fail_msg("profile %u:%u: %s", ec.line, ec.column, ec.detail);
}

/* The shipped worker profile with one string replaced. */
static struct fleet_profile *profile_with(const char *from, const char *to)
{
	char y[8192];
	const char *at = strstr(G.profile_yaml, from);
	struct fleet_profile *p = NULL;
	assert_non_null(at);
	snprintf(y, sizeof(y), "%.*s%s%s", (int)(at - G.profile_yaml), G.profile_yaml, to,
		 at + strlen(from));
	load_profile_text(y, &p);
	return p;
}

#define TAG_LDEVID 3
#define TAG_NEXT 4
#define TAG_RESTRICTED 5

/* An owner-hierarchy primary signing key: the same key for the same tag. */
static ESYS_TR owner_key(TPMA_OBJECT attrs, uint8_t tag, TPM2B_PUBLIC *pub)
{
	TPM2B_PUBLIC t = tev_ecc_template(attrs, TPM2_ALG_ECDSA, tag);
	return tev_primary(G.e, ESYS_TR_RH_OWNER, &t, pub);
}

static int group_setup(void **state)
{
	struct fleet_errctx ec = {0};
	struct fwsim_events *ev = NULL;
	struct fleet_buf pb;
	char err[300], path[700];
	(void)state;
	setenv("TSS2_LOG", "esys+none", 0);
	if (swtpm_start(&G.t, NULL) != 0 || !(G.e = swtpm_esys(&G.t)))
		return -1;
	snprintf(path, sizeof(path), "%s/tests/fwsim/worker.events.yaml", FLEET_SOURCE_DIR);
	assert_int_equal(fwsim_load(path, &ev, err, sizeof(err)), FLEET_OK);
	fb_init(&G.log);
	assert_int_equal(fwsim_apply(G.e, ev, &G.log, err, sizeof(err)), FLEET_OK);
	fwsim_free(ev);

	TPM2B_PUBLIC t = tev_ecc_template(TEV_AK_ATTRS, TPM2_ALG_ECDSA, 1);
	G.ak = tev_primary(G.e, ESYS_TR_RH_ENDORSEMENT, &t, &G.ak_pub);
	t = tev_ecc_template(TEV_AK_ATTRS, TPM2_ALG_ECDSA, 7);
	G.other = tev_primary(G.e, ESYS_TR_RH_ENDORSEMENT, &t, &G.other_pub);
	/* The admission's LDevID key, the next one a renewal proves, and a
	 * restricted key posing as one: primaries made again when used (the
	 * TPM holds three transient objects), so only their public areas. */
	Esys_FlushContext(G.e, owner_key(TEV_LDEVID_ATTRS, TAG_LDEVID, &G.ldevid_pub));
	Esys_FlushContext(G.e, owner_key(TEV_LDEVID_ATTRS, TAG_NEXT, &G.next_pub));
	Esys_FlushContext(G.e, owner_key(TEV_AK_ATTRS, TAG_RESTRICTED, &G.restricted_pub));

	G.base = make_temp_dir("reattest");
	snprintf(path, sizeof(path), "%s/ca", G.base);
	if (fleet_ca_init(path, "Test Identity CA", 3650, &ec) != FLEET_OK ||
	    fleet_ca_load(path, &G.ca, &ec) != FLEET_OK)
		return -1;
	snprintf(path, sizeof(path), "%s/tests/fwsim/worker.profile.yaml", FLEET_SOURCE_DIR);
	fb_init(&pb);
	read_file_or_fail(path, &pb);
	assert_true(pb.len < sizeof(G.profile_yaml));
	memcpy(G.profile_yaml, pb.data, pb.len);
	G.profile_yaml[pb.len] = '\0';
	fb_free(&pb);
	load_profile_text(G.profile_yaml, &G.profile);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	swtpm_stop(&G.t);
	fleet_ca_free(G.ca);
	fleet_profile_free(G.profile);
	fb_free(&G.log);
	rm_rf(G.base);
	free(G.base);
	return 0;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct fleet_errctx ec = {0};
	assert_non_null(f);
	f->dir = make_temp_dir("reattest-store");
	assert_int_equal(fleet_store_open(f->dir, FLEET_STORE_RW, &f->st, &ec), FLEET_OK);
	assert_int_equal(fleet_store_device_record_admission(f->st, DEVICE, SERIAL, 0, EK_HASH, "",
							     T0 - 86400),
			 FLEET_OK);
	issue_lak(&G.ak_pub, DEVICE, T0 - 86400, 365, &f->lak);
	assert_int_equal(fleet_store_cert_insert(f->st, DEVICE, FLEET_STORE_CERT_LAK, f->lak.data,
						 f->lak.len, T0 - 86400, f->lak_sha1),
			 FLEET_OK);
	assert_int_equal(fleet_reattest_nonces_new(0, &f->nonces), FLEET_OK);
	f->env.ca = G.ca;
	f->env.store = f->st;
	f->env.nonces = f->nonces;
	f->env.now = T0;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	fleet_reattest_nonces_free(f->nonces);
	fleet_store_close(f->st);
	free(f->lak.data);
	rm_rf(f->dir);
	free(f->dir);
	free(f);
	return 0;
}

static void dup_bytes(struct fleet_wire_bytes *dst, const void *p, size_t n)
{
	dst->data = malloc(n);
	assert_non_null(dst->data);
	memcpy(dst->data, p, n);
	dst->len = n;
}

/* TPM2_Hash (for its ticket), then TPM2_Sign by key: what a restricted key
 * signs. */
static void sign_report(ESYS_TR key, const void *msg, size_t len, struct fleet_wire_bytes *sig)
{
	TPM2B_MAX_BUFFER data = {.size = (UINT16)len};
	TPM2B_DIGEST *d = NULL;
	TPMT_TK_HASHCHECK *tk = NULL;
	TPMT_SIG_SCHEME scheme = {.scheme = TPM2_ALG_NULL};
	TPMT_SIGNATURE *s = NULL;
	uint8_t buf[sizeof(TPMT_SIGNATURE)];
	size_t off = 0;
	assert_true(len <= sizeof(data.buffer));
	memcpy(data.buffer, msg, len);
	assert_int_equal(Esys_Hash(G.e, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &data,
				   TPM2_ALG_SHA256, ESYS_TR_RH_OWNER, &d, &tk),
			 TSS2_RC_SUCCESS);
	assert_int_equal(Esys_Sign(G.e, key, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, d,
				   &scheme, tk, &s),
			 TSS2_RC_SUCCESS);
	assert_int_equal(Tss2_MU_TPMT_SIGNATURE_Marshal(s, buf, sizeof(buf), &off),
			 TSS2_RC_SUCCESS);
	dup_bytes(sig, buf, off);
	Esys_Free(d);
	Esys_Free(tk);
	Esys_Free(s);
}

static void get_nonce(struct fx *f, const struct fleet_wire_bytes *lak, uint8_t nonce[32])
{
	struct fleet_reattest_nonce_req req = {.lak_cert = *lak};
	struct fleet_reattest_nonce_reply rep;
	struct fleet_decision d = fleet_reattest_nonce(&f->env, &req, &rep);
	assert_int_equal(d.outcome, FLEET_PASSED);
	assert_int_equal(rep.expires_in, 60);
	memcpy(nonce, rep.nonce, 32);
}

struct how {
	ESYS_TR quote_key;  /* 0: the AK */
	ESYS_TR report_key; /* 0: the AK */
	bool wrong_qual;
	const char *bios;   /* NULL: BIOS */
};

/* A check message as tpm-reattest makes it. */
static void make_check(struct fx *f, const uint8_t nonce[32], const struct how *h,
		       struct fleet_reattest_check *m)
{
	struct fleet_wire_bytes rep = {(uint8_t *)report_doc, strlen(report_doc)};
	TPML_PCR_SELECTION sel;
	uint8_t qual[32];
	memset(m, 0, sizeof(*m));
	dup_bytes(&m->lak_cert, f->lak.data, f->lak.len);
	memcpy(m->nonce, nonce, 32);
	assert_int_equal(fleet_wire_quote_qualifier(nonce, &rep, qual), FLEET_OK);
	if (h && h->wrong_qual)
		qual[0] ^= 1;
	assert_int_equal(fleet_pcr_selection_parse("sha256:0,1,2,3,4,5,7", &sel), FLEET_OK);
	tev_quote(G.e, h && h->quote_key ? h->quote_key : G.ak, qual, sizeof(qual), &sel,
		  &m->quote_attest, &m->quote_sig);
	dup_bytes(&m->eventlog, G.log.data, G.log.len);
	snprintf(m->bios_version, sizeof(m->bios_version), "%s", h && h->bios ? h->bios : BIOS);
	dup_bytes(&m->report, report_doc, strlen(report_doc));
	sign_report(h && h->report_key ? h->report_key : G.ak, report_doc, strlen(report_doc),
		    &m->report_sig);
}

static struct fleet_decision run_check(struct fx *f, const struct fleet_reattest_check *m,
				       const struct fleet_profile *p,
				       struct fleet_reattest_result *res)
{
	struct fleet_reattest_input in = {.msg = m, .profile = p ? p : G.profile};
	struct fleet_decision d = fleet_reattest_check(&f->env, &in, res);
	printf("  check: outcome %d reason %s authenticated %d\n", d.outcome,
	       d.reason ? d.reason : "-", res->authenticated);
	return d;
}

static bool clock_recorded(struct fx *f, struct fleet_store_reattest_clock *c)
{
	struct fleet_store_reattest_clock tmp;
	return fleet_store_reattest_clock_get(f->st, DEVICE, c ? c : &tmp) == FLEET_STORE_OK;
}

/* An unauthenticated refusal: the reason, no verdict, nothing written. */
static void assert_unauthenticated(struct fx *f, struct fleet_decision d,
				   const struct fleet_reattest_result *res, const char *reason)
{
	assert_int_equal(d.outcome, FLEET_REFUSED);
	assert_string_equal(d.reason, reason);
	assert_false(res->authenticated);
	assert_false(clock_recorded(f, NULL));
}

/* One full check with a fresh nonce. */
static struct fleet_decision check_once(struct fx *f, const struct how *h,
					const struct fleet_profile *p,
					struct fleet_reattest_result *res)
{
	struct fleet_reattest_check m;
	uint8_t nonce[32];
	get_nonce(f, &f->lak, nonce);
	make_check(f, nonce, h, &m);
	struct fleet_decision d = run_check(f, &m, p, res);
	fleet_reattest_check_free(&m);
	return d;
}

/* RA4-RA10: the clean hourly check passes, authenticated, and records the
 * TPM's clock. */
static void test_pass(void **state)
{
	struct fx *f = *state;
	struct fleet_reattest_result res;
	struct fleet_store_reattest_clock c;
	struct fleet_decision d = check_once(f, NULL, NULL, &res);
	assert_int_equal(d.outcome, FLEET_PASSED);
	assert_true(res.authenticated);
	assert_true(res.verdict.pass);
	assert_true(res.verdict.quote_checked);
	assert_string_equal(res.device, DEVICE);
	assert_string_equal(res.report.port_id, "Ethernet12");
	assert_true(clock_recorded(f, &c));
	assert_int_equal(c.reset_count, res.clock.reset_count);
	assert_int_equal(c.restart_count, res.clock.restart_count);
	assert_int_equal(c.checked_at, T0);
	/* And the next hour's check passes again. */
	f->env.now = T0 + 3600;
	d = check_once(f, NULL, NULL, &res);
	assert_int_equal(d.outcome, FLEET_PASSED);
}

/* RA2, RA7, RA11: a nonce is used once; the replay is unauthenticated. */
static void test_nonce_replayed(void **state)
{
	struct fx *f = *state;
	struct fleet_reattest_result res;
	struct fleet_reattest_check m;
	struct fleet_store_reattest_clock c1, c2;
	uint8_t nonce[32];
	get_nonce(f, &f->lak, nonce);
	make_check(f, nonce, NULL, &m);
	assert_int_equal(run_check(f, &m, NULL, &res).outcome, FLEET_PASSED);
	assert_true(clock_recorded(f, &c1));
	f->env.now = T0 + 5;
	struct fleet_decision d = run_check(f, &m, NULL, &res);
	assert_int_equal(d.outcome, FLEET_REFUSED);
	assert_string_equal(d.reason, "nonce-replayed");
	assert_false(res.authenticated);
	assert_true(clock_recorded(f, &c2));
	assert_int_equal(c2.checked_at, c1.checked_at); /* nothing written */
	fleet_reattest_check_free(&m);
}

/* RA2, RA7: a nonce past its 60 seconds; a nonce never issued; a nonce
 * issued for another LAK certificate. */
static void test_nonce_expired_unknown(void **state)
{
	struct fx *f = *state;
	struct fleet_reattest_result res;
	struct fleet_reattest_check m;
	struct fleet_wire_bytes other = {0};
	uint8_t nonce[32];

	get_nonce(f, &f->lak, nonce);
	make_check(f, nonce, NULL, &m);
	f->env.now = T0 + FLEET_REATTEST_NONCE_TTL + 1;
	assert_unauthenticated(f, run_check(f, &m, NULL, &res), &res, "nonce-expired");
	fleet_reattest_check_free(&m);

	f->env.now = T0;
	memset(nonce, 0x5a, sizeof(nonce));
	make_check(f, nonce, NULL, &m);
	assert_unauthenticated(f, run_check(f, &m, NULL, &res), &res, "nonce-unknown");
	fleet_reattest_check_free(&m);

	/* Issued for another device's LAK (CA-signed), presented with ours. */
	issue_lak(&G.other_pub, "worker-2", T0 - 10, 30, &other);
	get_nonce(f, &other, nonce);
	make_check(f, nonce, NULL, &m);
	assert_unauthenticated(f, run_check(f, &m, NULL, &res), &res, "nonce-unknown");
	fleet_reattest_check_free(&m);
	free(other.data);
}

/* RA8, RA11: a quote (or report) by another key of the same TPM, and a
 * quote over other qualifying data: unauthenticated. */
static void test_other_key(void **state)
{
	struct fx *f = *state;
	struct fleet_reattest_result res;
	struct how h = {.quote_key = G.other};
	assert_unauthenticated(f, check_once(f, &h, NULL, &res), &res, "quote-signature");
	h = (struct how){.report_key = G.other};
	assert_unauthenticated(f, check_once(f, &h, NULL, &res), &res, "report-signature");
	h = (struct how){.wrong_qual = true};
	assert_unauthenticated(f, check_once(f, &h, NULL, &res), &res, "quote-extradata");
}

/* RA1, RA4, RA5: a LAK renewed for the same AK still works; one for another
 * key is no longer current; a revoked LAK; a certificate the store never
 * recorded; one from another CA. */
static void test_lak(void **state)
{
	struct fx *f = *state;
	struct fleet_reattest_result res;
	struct fleet_wire_bytes newer = {0}, unrecorded = {0};
	struct fleet_reattest_check m;
	uint8_t nonce[32];

	/* A newer LAK for the same AK (a renewal's): ours still works. */
	issue_lak(&G.ak_pub, DEVICE, T0 - 200, 365, &newer);
	assert_int_equal(fleet_store_cert_insert(f->st, DEVICE, FLEET_STORE_CERT_LAK, newer.data,
						 newer.len, T0 - 200, NULL),
			 FLEET_OK);
	assert_int_equal(check_once(f, NULL, NULL, &res).outcome, FLEET_PASSED);
	free(newer.data);
	/* A newer LAK for another key (the device re-admitted with another
	 * AK): ours is not current. */
	issue_lak(&G.other_pub, DEVICE, T0 - 100, 365, &newer);
	assert_int_equal(fleet_store_cert_insert(f->st, DEVICE, FLEET_STORE_CERT_LAK, newer.data,
						 newer.len, T0 - 100, NULL),
			 FLEET_OK);
	/* (not assert_unauthenticated: the pass above recorded a clock) */
	struct fleet_decision dn = check_once(f, NULL, NULL, &res);
	assert_int_equal(dn.outcome, FLEET_REFUSED);
	assert_string_equal(dn.reason, "lak-not-current");
	assert_false(res.authenticated);

	/* Revoked (the newest then is the other one anyway). */
	assert_int_equal(fleet_store_cert_revoke(f->st, f->lak_sha1, T0 - 50), FLEET_OK);
	dn = check_once(f, NULL, NULL, &res);
	assert_int_equal(dn.outcome, FLEET_REFUSED);
	assert_string_equal(dn.reason, "lak-revoked");
	assert_false(res.authenticated);

	/* CA-signed but never recorded for the device. */
	issue_lak(&G.ak_pub, DEVICE, T0 - 10, 365, &unrecorded);
	free(f->lak.data);
	f->lak = unrecorded;
	dn = check_once(f, NULL, NULL, &res);
	assert_int_equal(dn.outcome, FLEET_REFUSED);
	assert_string_equal(dn.reason, "lak-unknown");
	assert_false(res.authenticated);
	free(newer.data);

	/* Not fleetd's CA: no nonce (RA1), and no check (RA4). */
	struct fleet_errctx ec = {0};
	struct fleet_ca *ca2 = NULL;
	char dir[700];
	snprintf(dir, sizeof(dir), "%s/ca2", f->dir);
	assert_int_equal(fleet_ca_init(dir, "Test Identity CA", 3650, &ec), FLEET_OK);
	assert_int_equal(fleet_ca_load(dir, &ca2, &ec), FLEET_OK);
	struct fleet_reattest_env env2 = f->env;
	env2.ca = ca2;
	struct fleet_reattest_nonce_req req = {.lak_cert = f->lak};
	struct fleet_reattest_nonce_reply rep;
	struct fleet_decision d = fleet_reattest_nonce(&env2, &req, &rep);
	assert_int_equal(d.outcome, FLEET_REFUSED);
	assert_string_equal(d.reason, "lak-unknown");
	assert_int_equal(fleet_reattest_nonces_count(f->nonces), 1); /* the one proven check above */
	get_nonce(f, &f->lak, nonce);
	make_check(f, nonce, NULL, &m);
	struct fleet_reattest_input in = {.msg = &m, .profile = G.profile};
	d = fleet_reattest_check(&env2, &in, &res);
	assert_int_equal(d.outcome, FLEET_REFUSED);
	assert_string_equal(d.reason, "lak-unknown");
	assert_false(res.authenticated);
	fleet_reattest_check_free(&m);
	fleet_ca_free(ca2);
}

/* RA4: a LAK past its notAfter. */
static void test_lak_expired(void **state)
{
	struct fx *f = *state;
	struct fleet_reattest_nonce_req req = {.lak_cert = f->lak};
	struct fleet_reattest_nonce_reply rep;
	f->env.now = T0 + 400 * 86400;
	struct fleet_decision d = fleet_reattest_nonce(&f->env, &req, &rep);
	assert_int_equal(d.outcome, FLEET_REFUSED);
	assert_string_equal(d.reason, "lak-expired");
}

/* RA6: a planned device (the inventory's status), a retired one. */
static void test_device_planned(void **state)
{
	struct fx *f = *state;
	struct fleet_reattest_result res;
	struct fleet_reattest_check m;
	uint8_t nonce[32];
	get_nonce(f, &f->lak, nonce);
	make_check(f, nonce, NULL, &m);
	struct fleet_reattest_input in = {.msg = &m, .profile = G.profile,
					  .inventory_status = "planned"};
	struct fleet_decision d = fleet_reattest_check(&f->env, &in, &res);
	assert_unauthenticated(f, d, &res, "device-planned");
	fleet_reattest_check_free(&m);

	assert_int_equal(fleet_store_device_set_state(f->st, DEVICE, FLEET_STORE_STATE_RETIRED),
			 FLEET_OK);
	assert_unauthenticated(f, check_once(f, NULL, NULL, &res), &res, "device-retired");
}

/* RA9, RA11: resetCount below the recorded one is refused, authenticated,
 * and the recorded clock stays. */
static void test_clock_backwards(void **state)
{
	struct fx *f = *state;
	struct fleet_reattest_result res;
	struct fleet_store_reattest_clock c;
	assert_int_equal(check_once(f, NULL, NULL, &res).outcome, FLEET_PASSED);
	struct fleet_store_reattest_clock high = {
		.reset_count = res.clock.reset_count + 1,
		.restart_count = 0,
		.clock = 1,
		.checked_at = T0,
	};
	assert_int_equal(fleet_store_reattest_clock_record(f->st, DEVICE, &high), FLEET_OK);
	f->env.now = T0 + 3600;
	struct fleet_decision d = check_once(f, NULL, NULL, &res);
	assert_int_equal(d.outcome, FLEET_REFUSED);
	assert_string_equal(d.reason, "clock-backwards");
	assert_true(res.authenticated);
	assert_true(clock_recorded(f, &c));
	assert_int_equal(c.reset_count, high.reset_count);
	assert_int_equal(c.checked_at, T0);

	/* restartCount alone going back, with resetCount equal. */
	high.reset_count = res.clock.reset_count;
	high.restart_count = res.clock.restart_count + 1;
	assert_int_equal(fleet_store_reattest_clock_record(f->st, DEVICE, &high),
			 FLEET_STORE_E_CONFLICT); /* the store refuses to go back itself */
}

/* The store's half of RA9: forwards only, known devices only. */
static void test_store_clock(void **state)
{
	struct fx *f = *state;
	struct fleet_store_reattest_clock c = {.reset_count = 5, .restart_count = 2, .clock = 9,
					       .checked_at = T0},
					  got;
	assert_int_equal(fleet_store_reattest_clock_get(f->st, DEVICE, &got),
			 FLEET_STORE_E_NOT_FOUND);
	assert_int_equal(fleet_store_reattest_clock_record(f->st, "nobody", &c),
			 FLEET_STORE_E_NOT_FOUND);
	assert_int_equal(fleet_store_reattest_clock_record(f->st, DEVICE, &c), FLEET_OK);
	c.restart_count = 1;
	assert_int_equal(fleet_store_reattest_clock_record(f->st, DEVICE, &c),
			 FLEET_STORE_E_CONFLICT);
	c.reset_count = 4;
	c.restart_count = 9;
	assert_int_equal(fleet_store_reattest_clock_record(f->st, DEVICE, &c),
			 FLEET_STORE_E_CONFLICT);
	c.reset_count = 6;
	c.restart_count = 0;
	c.checked_at = T0 + 1;
	assert_int_equal(fleet_store_reattest_clock_record(f->st, DEVICE, &c), FLEET_OK);
	assert_int_equal(fleet_store_reattest_clock_get(f->st, DEVICE, &got), FLEET_OK);
	assert_int_equal(got.reset_count, 6);
	assert_int_equal(got.restart_count, 0);
	assert_int_equal(got.checked_at, T0 + 1);
	c.clock = (uint64_t)INT64_MAX + 1;
	assert_int_equal(fleet_store_reattest_clock_record(f->st, DEVICE, &c),
			 FLEET_STORE_E_INVALID);
}

/* RA10, RA11: a boot application the profile does not allow is refused
 * with the profile's reason, authenticated, and the clock recorded. */
static void test_boot_application(void **state)
{
	struct fx *f = *state;
	struct fleet_reattest_result res;
	struct fleet_profile *p = profile_with(
		"1a8efbe3a5cf66bee3e538abfe89135d38b7510b1b8a6f2b5e105fe83d6c7d82",
		"0000000000000000000000000000000000000000000000000000000000000000");
	struct fleet_decision d = check_once(f, NULL, p, &res);
	assert_int_equal(d.outcome, FLEET_REFUSED);
	assert_string_equal(d.reason, "boot-application-not-allowed");
	assert_true(res.authenticated);
	assert_false(res.verdict.pass);
	assert_true(fleet_verdict_has(&res.verdict, "boot-application-not-allowed"));
	assert_true(clock_recorded(f, NULL));
	fleet_profile_free(p);
}

/* RA10: a BIOS update whose PCR 0 is in pcr0_by_bios passes; a version
 * the profile does not list is refused, authenticated. */
static void test_bios_update(void **state)
{
	struct fx *f = *state;
	struct fleet_reattest_result res;
	/* 1.0's old PCR 0 becomes some other digest; 2.0 carries the one the
	 * TPM now shows. */
	struct fleet_profile *p = profile_with(
		"  \"fleetd-sim-1.0\": \"b89b",
		"  \"fleetd-sim-1.0\": \"0000000000000000000000000000000000000000000000000000000000000000\"\n"
		"  \"fleetd-sim-2.0\": \"b89b");
	struct how h = {.bios = "fleetd-sim-2.0"};
	assert_int_equal(check_once(f, &h, p, &res).outcome, FLEET_PASSED);
	assert_true(res.authenticated);
	h.bios = "fleetd-sim-1.0";
	struct fleet_decision d = check_once(f, &h, p, &res);
	assert_int_equal(d.outcome, FLEET_REFUSED);
	assert_string_equal(d.reason, "pcr0-mismatch");
	assert_true(res.authenticated);
	h.bios = "fleetd-sim-3.0";
	d = check_once(f, &h, p, &res);
	assert_int_equal(d.outcome, FLEET_REFUSED);
	assert_string_equal(d.reason, "pcr0-unknown-bios");
	assert_true(res.authenticated);
	fleet_profile_free(p);
}

/* RA10: a log that does not replay to what the TPM quoted is a failed
 * verdict (authenticated), and an unreadable one too. */
static void test_log_mismatch(void **state)
{
	static const uint16_t algs[] = {FLEET_ALG_SHA256};
	static const uint8_t sep[4] = {0};
	struct fx *f = *state;
	struct fleet_reattest_result res;
	struct fleet_reattest_check m;
	struct fleet_evlog_builder *b = NULL;
	struct fleet_buf other;
	uint8_t nonce[32];

	/* A well-formed log of another boot: separators only. */
	assert_int_equal(fleet_evlog_builder_new(algs, 1, &b), FLEET_OK);
	for (uint32_t pcr = 0; pcr < 8; pcr++)
		assert_int_equal(fleet_evlog_builder_add(b, pcr, FLEET_EV_SEPARATOR, sep, 4),
				 FLEET_OK);
	fb_init(&other);
	assert_int_equal(fleet_evlog_builder_finish(b, &other), FLEET_OK);
	fleet_evlog_builder_free(b);

	get_nonce(f, &f->lak, nonce);
	make_check(f, nonce, NULL, &m);
	free(m.eventlog.data);
	dup_bytes(&m.eventlog, other.data, other.len);
	struct fleet_decision d = run_check(f, &m, NULL, &res);
	assert_int_equal(d.outcome, FLEET_REFUSED);
	assert_string_equal(d.reason, "log-quote-mismatch");
	assert_true(res.authenticated);
	assert_false(res.verdict.pass);
	fleet_reattest_check_free(&m);
	fb_free(&other);

	get_nonce(f, &f->lak, nonce);
	make_check(f, nonce, NULL, &m);
	m.eventlog.len = 3;
	d = run_check(f, &m, NULL, &res);
	assert_int_equal(d.outcome, FLEET_REFUSED);
	assert_string_equal(d.reason, "event-log-malformed");
	assert_true(res.authenticated);
	fleet_reattest_check_free(&m);
}

/* RA2, RA3: issuing writes nothing; an unproven check spends nothing; a
 * proven one spends its nonce once; another process's nonce is unknown;
 * a full used set fails (retry), never evicts, and frees itself after the
 * nonces' minute. */
static void test_nonce_cap(void **state)
{
	struct fx *f = *state;
	struct fleet_reattest_nonces *small = NULL, *earlier = NULL;
	struct fleet_reattest_result res;
	struct fleet_reattest_check m;
	uint8_t first[32], n[3][32], junk[32];

	assert_int_equal(fleet_reattest_nonces_new(FLEET_REATTEST_MAX_NONCES + 1, &small),
			 FLEET_E_INVALID_ARG);
	/* RA3: issuing writes nothing, so a hundred requests for the same LAK
	 * cost the first nonce nothing. */
	get_nonce(f, &f->lak, first);
	for (int i = 0; i < 100; i++)
		get_nonce(f, &f->lak, junk);
	assert_int_equal(fleet_reattest_nonces_count(f->nonces), 0);
	/* An unproven check (another key's quote) spends nothing either... */
	struct how h = {.quote_key = G.other};
	make_check(f, first, &h, &m);
	assert_unauthenticated(f, run_check(f, &m, NULL, &res), &res, "quote-signature");
	fleet_reattest_check_free(&m);
	assert_int_equal(fleet_reattest_nonces_count(f->nonces), 0);
	/* ...and the TPM's own answer to it passes, once. */
	make_check(f, first, NULL, &m);
	assert_int_equal(run_check(f, &m, NULL, &res).outcome, FLEET_PASSED);
	assert_int_equal(fleet_reattest_nonces_count(f->nonces), 1);
	assert_int_equal(run_check(f, &m, NULL, &res).outcome, FLEET_REFUSED);
	fleet_reattest_check_free(&m);

	/* A nonce of an earlier fleetd process (another key): unknown. */
	assert_int_equal(fleet_reattest_nonces_new(0, &earlier), FLEET_OK);
	f->env.nonces = earlier;
	get_nonce(f, &f->lak, n[0]);
	f->env.nonces = f->nonces;
	make_check(f, n[0], NULL, &m);
	struct fleet_decision d = run_check(f, &m, NULL, &res);
	assert_int_equal(d.outcome, FLEET_REFUSED);
	assert_string_equal(d.reason, "nonce-unknown");
	fleet_reattest_check_free(&m);
	fleet_reattest_nonces_free(earlier);

	/* A used set of 2: two proven checks fill it for a minute; a third is
	 * fleetd's trouble (FAILED: retry), never an eviction; a minute later
	 * the expired entries make room. */
	assert_int_equal(fleet_reattest_nonces_new(2, &small), FLEET_OK);
	f->env.nonces = small;
	for (int i = 0; i < 3; i++)
		get_nonce(f, &f->lak, n[i]);
	for (int i = 0; i < 3; i++) {
		make_check(f, n[i], NULL, &m);
		d = run_check(f, &m, NULL, &res);
		fleet_reattest_check_free(&m);
		assert_int_equal(d.outcome, i < 2 ? FLEET_PASSED : FLEET_FAILED);
	}
	assert_int_equal(fleet_reattest_nonces_count(small), 2);
	f->env.now = T0 + FLEET_REATTEST_NONCE_TTL + 5;
	get_nonce(f, &f->lak, n[0]);
	make_check(f, n[0], NULL, &m);
	assert_int_equal(run_check(f, &m, NULL, &res).outcome, FLEET_PASSED);
	fleet_reattest_check_free(&m);
	f->env.nonces = f->nonces;
	fleet_reattest_nonces_free(small);
}


/* ---- renewal (RN1-RN8) ---------------------------------------------------- */

/* The device's certificates as a renewal finds them: a LAK and a LDevID
 * certificate (for G.ldevid) ending days_left days after T0. */
static void renew_setup(struct fx *f, int days_left)
{
	struct fleet_wire_bytes ld = {0};
	time_t nb = T0 + (time_t)days_left * 86400 - 365 * 86400;
	free(f->lak.data);
	issue_lak(&G.ak_pub, DEVICE, nb, 365, &f->lak);
	assert_int_equal(fleet_store_cert_insert(f->st, DEVICE, FLEET_STORE_CERT_LAK, f->lak.data,
						 f->lak.len, nb, f->lak_sha1),
			 FLEET_OK);
	issue_cert(FLEET_CERT_LDEVID, &G.ldevid_pub, DEVICE, nb, 365, &ld);
	assert_int_equal(fleet_store_cert_insert(f->st, DEVICE, FLEET_STORE_CERT_LDEVID, ld.data,
						 ld.len, nb, NULL),
			 FLEET_OK);
	free(ld.data);
	f->env.cert_validity_days = 90;
}

struct renew_how {
	uint8_t key_tag;      /* 0: TAG_NEXT */
	TPMA_OBJECT key_attrs; /* 0: TEV_LDEVID_ATTRS */
	ESYS_TR certifier;    /* 0: the AK */
	const char *serial;   /* NULL: SERIAL */
	bool request_other;   /* certify a request other than the one sent */
};

/* The renewal's part of the message, as tpm-reattest makes it. */
static void add_renewal(struct fleet_reattest_check *m, const struct renew_how *h)
{
	TPM2B_PUBLIC kp;
	const TPM2B_PUBLIC *pub = &kp;
	ESYS_TR key = owner_key(h && h->key_attrs ? h->key_attrs : TEV_LDEVID_ATTRS,
				h && h->key_tag ? h->key_tag : TAG_NEXT, &kp);
	struct fleet_ldevid_request req;
	struct fleet_buf rq;
	uint8_t qual[32];
	memset(&req, 0, sizeof(req));
	snprintf(req.serial, sizeof(req.serial), "%s", h && h->serial ? h->serial : SERIAL);
	assert_int_equal(fleet_tpm_public_spki_sha256(&pub->publicArea, req.spki_sha256), FLEET_OK);
	fb_init(&rq);
	assert_int_equal(fleet_ldevid_request_encode(&req, &rq), FLEET_OK);
	dup_bytes(&m->renew_request, rq.data, rq.len);
	fb_free(&rq);
	struct fleet_wire_bytes certified = m->renew_request;
	uint8_t other[] = "{\"v\":1}";
	if (h && h->request_other)
		certified = (struct fleet_wire_bytes){other, sizeof(other) - 1};
	assert_int_equal(fleet_wire_certify_qualifier(&certified, qual), FLEET_OK);
	tev_certify(G.e, h && h->certifier ? h->certifier : G.ak, key, qual, sizeof(qual),
		    &m->renew_certify_attest, &m->renew_certify_sig);
	Esys_FlushContext(G.e, key);
	tev_public_bytes(pub, &m->renew_public);
	m->has_renew = true;
}

/* A check with renewal set, then the renewal when the check passed. */
static struct fleet_decision renew_once(struct fx *f, const struct renew_how *h,
					const struct fleet_profile *p, const char *status,
					struct fleet_reattest_renewed *out)
{
	struct fleet_reattest_check m;
	struct fleet_reattest_result res;
	uint8_t nonce[32];
	memset(out, 0, sizeof(*out)); /* a refused check never reaches the renewal */
	get_nonce(f, &f->lak, nonce);
	make_check(f, nonce, NULL, &m);
	add_renewal(&m, h);
	struct fleet_reattest_input in = {
		.msg = &m, .profile = p ? p : G.profile, .inventory_status = status, .renewal = true};
	struct fleet_decision d = fleet_reattest_check(&f->env, &in, &res);
	if (d.outcome == FLEET_PASSED)
		d = fleet_reattest_renew(&f->env, &in, &res, out);
	printf("  renew: outcome %d reason %s\n", d.outcome, d.reason ? d.reason : "-");
	fleet_reattest_check_free(&m);
	return d;
}

static size_t count_certs(struct fx *f, const char *kind)
{
	struct fleet_store_cert *c = NULL;
	size_t n = 0, k = 0;
	assert_int_equal(fleet_store_certs_for_device(f->st, DEVICE, &c, &n), FLEET_OK);
	for (size_t i = 0; i < n; i++)
		k += strcmp(c[i].kind, kind) == 0;
	fleet_store_certs_free(c, n);
	return k;
}

static void assert_renew_refused(struct fx *f, const struct renew_how *h,
				 const struct fleet_profile *p, const char *status,
				 const char *reason)
{
	struct fleet_reattest_renewed out;
	size_t lak = count_certs(f, FLEET_STORE_CERT_LAK), ld = count_certs(f, FLEET_STORE_CERT_LDEVID);
	struct fleet_decision d = renew_once(f, h, p, status, &out);
	assert_int_equal(d.outcome, FLEET_REFUSED);
	assert_string_equal(d.reason, reason);
	assert_null(out.lak_cert.data);
	assert_null(out.ldevid_cert.data);
	/* RN8: nothing issued, nothing recorded */
	assert_int_equal(count_certs(f, FLEET_STORE_CERT_LAK), lak);
	assert_int_equal(count_certs(f, FLEET_STORE_CERT_LDEVID), ld);
}

/* RN1-RN7: at 29 days a key the LAK certified renews both certificates;
 * the old ones stay current (listed until their notAfter) and the old LAK
 * still checks (RA5); the new LAK checks; the same key again (a lost
 * answer) gets the same certificates; once revoked, the key is spent. */
static void test_renew_at_29_days(void **state)
{
	struct fx *f = *state;
	struct fleet_reattest_renewed out;
	struct fleet_reattest_result res;
	renew_setup(f, 29);
	struct fleet_decision d = renew_once(f, NULL, NULL, "active", &out);
	assert_int_equal(d.outcome, FLEET_PASSED);
	assert_non_null(out.lak_cert.data);
	assert_non_null(out.ldevid_cert.data);

	/* The certificates: the LDevID for G.next, the LAK for the AK, both
	 * for this device, 90 days from now. */
	const unsigned char *p = out.ldevid_cert.data;
	X509 *x = d2i_X509(NULL, &p, (long)out.ldevid_cert.len);
	EVP_PKEY *k = NULL;
	assert_non_null(x);
	assert_int_equal(fleet_tpm_public_to_pkey(&G.next_pub.publicArea, &k), FLEET_OK);
	assert_int_equal(EVP_PKEY_eq(X509_get0_pubkey(x), k), 1);
	assert_int_equal(ASN1_TIME_cmp_time_t(X509_get0_notAfter(x), T0 + 90 * 86400), 0);
	EVP_PKEY_free(k);
	X509_free(x);
	p = out.lak_cert.data;
	x = d2i_X509(NULL, &p, (long)out.lak_cert.len);
	assert_non_null(x);
	assert_int_equal(fleet_tpm_public_to_pkey(&G.ak_pub.publicArea, &k), FLEET_OK);
	assert_int_equal(EVP_PKEY_eq(X509_get0_pubkey(x), k), 1);
	EVP_PKEY_free(k);
	X509_free(x);

	/* The store: two LAKs, the old LDevID and the new one, all current. */
	struct fleet_store_cert *c = NULL;
	size_t n = 0, current_ldevid = 0;
	assert_int_equal(fleet_store_certs_for_device(f->st, DEVICE, &c, &n), FLEET_OK);
	for (size_t i = 0; i < n; i++)
		if (strcmp(c[i].kind, FLEET_STORE_CERT_LDEVID) == 0 && !c[i].revoked &&
		    c[i].not_after > T0)
			current_ldevid++;
	fleet_store_certs_free(c, n);
	assert_int_equal(current_ldevid, 2);
	assert_int_equal(count_certs(f, FLEET_STORE_CERT_LAK), 3); /* setup's, renew_setup's, new */

	/* The old LAK checks; the new one too. */
	f->env.now = T0 + 3600;
	assert_int_equal(check_once(f, NULL, NULL, &res).outcome, FLEET_PASSED);
	struct fleet_wire_bytes old = f->lak;
	f->lak = out.lak_cert;
	assert_int_equal(check_once(f, NULL, NULL, &res).outcome, FLEET_PASSED);

	/* With the new LAK nothing is due (a fresh key is refused); with the
	 * old one (due) the key that now has a certificate is not new. */
	struct renew_how h = {.key_tag = 9};
	assert_renew_refused(f, &h, NULL, "active", "renew-not-due");
	/* The node lost the answer: it asks again with its old LAK and the
	 * same key, and gets the same two certificates, nothing new issued. */
	f->lak = old;
	struct fleet_reattest_renewed again;
	size_t laks = count_certs(f, FLEET_STORE_CERT_LAK), lds = count_certs(f, FLEET_STORE_CERT_LDEVID);
	assert_int_equal(renew_once(f, NULL, NULL, "active", &again).outcome, FLEET_PASSED);
	assert_true(again.again);
	assert_int_equal(again.ldevid_cert.len, out.ldevid_cert.len);
	assert_memory_equal(again.ldevid_cert.data, out.ldevid_cert.data, out.ldevid_cert.len);
	assert_int_equal(again.lak_cert.len, out.lak_cert.len);
	assert_memory_equal(again.lak_cert.data, out.lak_cert.data, out.lak_cert.len);
	assert_int_equal(count_certs(f, FLEET_STORE_CERT_LAK), laks);
	assert_int_equal(count_certs(f, FLEET_STORE_CERT_LDEVID), lds);
	fleet_reattest_renewed_free(&again);
	/* Once that certificate is revoked, its key is spent. */
	assert_int_equal(fleet_store_cert_revoke(f->st, out.ldevid_sha1, T0 + 3600), FLEET_OK);
	assert_renew_refused(f, NULL, NULL, "active", "renew-key-reused");
	fleet_reattest_renewed_free(&out);
	free(old.data);
	f->lak = (struct fleet_wire_bytes){0};
}

/* RN5: 31 days before the end is not due; a device with no current
 * LDevID certificate is. */
static void test_renew_not_due(void **state)
{
	struct fx *f = *state;
	struct fleet_reattest_renewed out;
	renew_setup(f, 31);
	assert_renew_refused(f, NULL, NULL, "active", "renew-not-due");
	/* RN5's other arm: the LAK has 31 days, the LDevID has 29. */
	struct fleet_wire_bytes ld = {0};
	issue_cert(FLEET_CERT_LDEVID, &G.ldevid_pub, DEVICE, T0 + 29 * 86400 - 365 * 86400, 365, &ld);
	/* (the setup's LDevID has 31 days and is newer: revoke it) */
	struct fleet_store_cert *c = NULL;
	size_t n = 0;
	assert_int_equal(fleet_store_certs_for_device(f->st, DEVICE, &c, &n), FLEET_OK);
	for (size_t i = 0; i < n; i++)
		if (strcmp(c[i].kind, FLEET_STORE_CERT_LDEVID) == 0)
			assert_int_equal(fleet_store_cert_revoke(f->st, c[i].sha1, T0), FLEET_OK);
	fleet_store_certs_free(c, n);
	assert_int_equal(fleet_store_cert_insert(f->st, DEVICE, FLEET_STORE_CERT_LDEVID, ld.data,
						 ld.len, T0 - 10, NULL),
			 FLEET_OK);
	free(ld.data);
	assert_int_equal(renew_once(f, NULL, NULL, "active", &out).outcome, FLEET_PASSED);
	fleet_reattest_renewed_free(&out);
}

/* RN6: a key the LAK did not certify (another AK signed the certify: the
 * AK of another TPM as far as fleetd can tell), a certify over another
 * request, another serial, a restricted key; RA6: a planned device. Each
 * refused, nothing issued. */
static void test_renew_key_refused(void **state)
{
	struct fx *f = *state;
	renew_setup(f, 29);
	struct renew_how h = {.certifier = G.other};
	assert_renew_refused(f, &h, NULL, "active", "signature-invalid");
	h = (struct renew_how){.request_other = true};
	assert_renew_refused(f, &h, NULL, "active", "attest-extradata");
	h = (struct renew_how){.serial = "FLEET-SIM-9999"};
	assert_renew_refused(f, &h, NULL, "active", "ldevid-request-serial");
	h = (struct renew_how){.key_tag = TAG_RESTRICTED, .key_attrs = TEV_AK_ATTRS};
	assert_renew_refused(f, &h, NULL, "active", "ldevid-restricted");
	/* A planned device cannot renew (nor be checked: RA6); nor one the
	 * inventory is retiring, or whose status it does not give (RN4). */
	assert_renew_refused(f, NULL, NULL, "planned", "device-planned");
	assert_renew_refused(f, NULL, NULL, "decommissioning", "renew-inventory-status");
	assert_renew_refused(f, NULL, NULL, NULL, "renew-inventory-status");
	struct fleet_reattest_renewed out;
	assert_int_equal(renew_once(f, NULL, NULL, "staged", &out).outcome, FLEET_PASSED);
	fleet_reattest_renewed_free(&out);
}

/* RN4: a quarantined worker cannot renew; nor a retired device, nor one
 * whose EK no confirm recorded. The check itself still passes. */
static void test_renew_quarantined(void **state)
{
	struct fx *f = *state;
	renew_setup(f, 29);
	assert_int_equal(fleet_store_device_set_quarantine(f->st, DEVICE, true, "reattest: test", T0),
			 FLEET_OK);
	assert_renew_refused(f, NULL, NULL, "active", "renew-quarantined");
	assert_int_equal(fleet_store_device_set_quarantine(f->st, DEVICE, false, NULL, T0),
			 FLEET_OK);
	struct fleet_reattest_renewed out;
	assert_int_equal(renew_once(f, NULL, NULL, "active", &out).outcome, FLEET_PASSED);
	fleet_reattest_renewed_free(&out);
}

/* RN7: at FLEET_REATTEST_RENEW_MAX_LDEVID current LDevID certificates the
 * store refuses another ("renew-too-many"), in its own transaction. */
static void test_renew_too_many(void **state)
{
	struct fx *f = *state;
	renew_setup(f, 29);
	for (int i = 1; i < FLEET_REATTEST_RENEW_MAX_LDEVID; i++) {
		struct fleet_wire_bytes ld = {0};
		TPM2B_PUBLIC pub;
		Esys_FlushContext(G.e, owner_key(TEV_LDEVID_ATTRS, (uint8_t)(20 + i), &pub));
		issue_cert(FLEET_CERT_LDEVID, &pub, DEVICE, T0 - 10, 20, &ld);
		assert_int_equal(fleet_store_cert_insert(f->st, DEVICE, FLEET_STORE_CERT_LDEVID,
							 ld.data, ld.len, T0 - 10, NULL),
				 FLEET_OK);
		free(ld.data);
	}
	assert_renew_refused(f, NULL, NULL, "active", "renew-too-many");
}

/* RN3 / RA10: a renew-required authority missing from the log refuses the
 * renewal, never the check (the verdict passes). */
static void test_renew_authority_missing(void **state)
{
	struct fx *f = *state;
	struct fleet_reattest_result res;
	struct fleet_reattest_check m;
	uint8_t nonce[32];
	struct fleet_profile *p = profile_with(
		"  - \"21125a8885e79205fdf981f935051ef6fce15260f44267f37db8ec292803f500\"\n"
		"renew_required_authorities: []",
		"  - \"21125a8885e79205fdf981f935051ef6fce15260f44267f37db8ec292803f500\"\n"
		"  - \"ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff\"\n"
		"renew_required_authorities:\n"
		"  - \"ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff\"");
	renew_setup(f, 29);
	assert_renew_refused(f, NULL, p, "active", "renew-authority-missing");
	/* the same message as a renewal: the check passed, the verdict too */
	get_nonce(f, &f->lak, nonce);
	make_check(f, nonce, NULL, &m);
	add_renewal(&m, NULL);
	struct fleet_reattest_input in = {
		.msg = &m, .profile = p, .inventory_status = "active", .renewal = true};
	assert_int_equal(fleet_reattest_check(&f->env, &in, &res).outcome, FLEET_PASSED);
	assert_true(res.verdict.pass);
	assert_int_equal(res.verdict.n_reasons, 0);
	assert_true(res.renew_authority_missing);
	fleet_reattest_check_free(&m);
	fleet_profile_free(p);
}

int main(void)
{
	swtpm_require_or_skip();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_pass, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nonce_replayed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nonce_expired_unknown, setup, teardown),
		cmocka_unit_test_setup_teardown(test_other_key, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lak, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lak_expired, setup, teardown),
		cmocka_unit_test_setup_teardown(test_device_planned, setup, teardown),
		cmocka_unit_test_setup_teardown(test_clock_backwards, setup, teardown),
		cmocka_unit_test_setup_teardown(test_store_clock, setup, teardown),
		cmocka_unit_test_setup_teardown(test_boot_application, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bios_update, setup, teardown),
		cmocka_unit_test_setup_teardown(test_log_mismatch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nonce_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_renew_at_29_days, setup, teardown),
		cmocka_unit_test_setup_teardown(test_renew_not_due, setup, teardown),
		cmocka_unit_test_setup_teardown(test_renew_key_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_renew_quarantined, setup, teardown),
		cmocka_unit_test_setup_teardown(test_renew_too_many, setup, teardown),
		cmocka_unit_test_setup_teardown(test_renew_authority_missing, setup, teardown),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
