/*
 * test_reattest_attack.c: adversarial review of fleetd's side of the
 * running node's re-check and renewal (fleetd/reattest/, RA1-RA12,
 * RN1-RN8), on the fixtures of tests/tpm/test_reattest.c (swtpm booted by
 * the firmware simulator, a real CA, a real store; included below, its
 * main() renamed).
 *
 * Naming: test_fixed_* FAIL on the code as reviewed (each says why);
 * test_held_* PASS and name what they prove; test_weak_* PASS and pin a
 * behaviour that is by the rules but weaker than it looks.
 */
#define main reattest_fixture_main_unused
int reattest_fixture_main_unused(void);
#include "tests/tpm/test_reattest.c"
#undef main

#include <pthread.h>

/* ---- helpers ----------------------------------------------------------- */

/* A check with renewal set for key tag, and the check's result. The caller
 * frees *m. */
static struct fleet_decision renewal_checked(struct fx *f, uint8_t tag,
					     const struct fleet_profile *p,
					     struct fleet_reattest_check *m,
					     struct fleet_reattest_input *in,
					     struct fleet_reattest_result *res)
{
	uint8_t nonce[32];
	struct renew_how h = {.key_tag = tag};
	get_nonce(f, &f->lak, nonce);
	make_check(f, nonce, NULL, m);
	add_renewal(m, &h);
	*in = (struct fleet_reattest_input){
		.msg = m, .profile = p ? p : G.profile, .inventory_status = "active", .renewal = true};
	return fleet_reattest_check(&f->env, in, res);
}

static size_t current_ldevids(struct fx *f)
{
	struct fleet_store_cert *c = NULL;
	size_t n = 0, k = 0;
	assert_int_equal(fleet_store_certs_for_device(f->st, DEVICE, &c, &n), FLEET_OK);
	for (size_t i = 0; i < n; i++)
		k += strcmp(c[i].kind, FLEET_STORE_CERT_LDEVID) == 0 && !c[i].revoked &&
		     c[i].not_after > f->env.now;
	fleet_store_certs_free(c, n);
	return k;
}

/* ---- 1. RN5: "renewal starts 30 days before expiry" ---------------------- */

/* HOLE. After a renewal the device's newest LAK and LDevID have 90 days:
 * nothing is due. But RN5 asks whether the *presented* LAK ends within 30
 * days, and RA5 keeps the old LAK valid: a node (a compromised one in
 * particular) that keeps its old lak.pem renews again at once with a fresh
 * key, and again, up to FLEET_REATTEST_RENEW_MAX_LDEVID current LDevID
 * certificates (4 TPM keys with SPIFFE-usable certificates at once), at
 * any time in the old LAK's last 30 days. Expected: "renew-not-due".
 * Fix: fleetd/reattest/renew.c due_and_new: judge RN5 by the store's
 * newest current LAK (and LDevID), not by the certificate presented. */
static void test_fixed_renew_due_by_old_lak(void **state)
{
	struct fx *f = *state;
	struct fleet_reattest_renewed out;
	renew_setup(f, 29);
	assert_int_equal(renew_once(f, NULL, NULL, "active", &out).outcome, FLEET_PASSED);
	assert_false(out.again);
	fleet_reattest_renewed_free(&out);
	f->env.now = T0 + 3600;
	/* f->lak is still the old (29-day) LAK: present it with a fresh key. */
	struct renew_how h = {.key_tag = 9};
	struct fleet_decision d = renew_once(f, &h, NULL, "active", &out);
	bool issued = d.outcome == FLEET_PASSED && !out.again;
	size_t n = current_ldevids(f);
	fleet_reattest_renewed_free(&out);
	if (issued)
		fail_msg("RN5 bypassed: an hour after a renewal (newest LAK and LDevID have 90 "
			 "days) the old LAK renewed a fresh key; the device now holds %zu current "
			 "LDevID certificates",
			 n);
	assert_string_equal(d.reason, "renew-not-due");
}

/* ---- 2. RN7: the transaction re-reads the device, not the LAK ------------- */

/* HOLE (a narrow window, but a bad outcome). Between the check (RA5: the
 * presented LAK is the device's current AK) and the renewal's transaction,
 * the device is re-admitted with another TPM (its newest LAK is now for
 * another AK). The renewal still issues a LAK for the old AK, and being the
 * newest it makes the old AK current again: the old TPM (the board taken
 * out, perhaps by the attacker) owns the name, the new TPM is locked out
 * ("lak-not-current"). Expected: refused. Fix:
 * fleetd/store/store_reattest.c renewal_issue (inside the transaction):
 * the presented LAK is unrevoked and its key is the newest unrevoked LAK's
 * (pass its SHA-1/DER in fleet_store_renew_in); or renew.c renew_judge
 * re-runs RA5 and the transaction compares the newest LAK's id. */
static void test_fixed_renew_after_ak_changed(void **state)
{
	struct fx *f = *state;
	struct fleet_reattest_check m;
	struct fleet_reattest_input in;
	struct fleet_reattest_result res;
	struct fleet_reattest_renewed out;
	struct fleet_wire_bytes lak_b = {0};
	renew_setup(f, 29);
	assert_int_equal(renewal_checked(f, TAG_NEXT, NULL, &m, &in, &res).outcome, FLEET_PASSED);
	/* Meanwhile: re-admitted with TPM B (G.other's AK). */
	issue_lak(&G.other_pub, DEVICE, T0, 90, &lak_b);
	assert_int_equal(fleet_store_cert_insert(f->st, DEVICE, FLEET_STORE_CERT_LAK, lak_b.data,
						 lak_b.len, T0, NULL),
			 FLEET_OK);
	f->env.now = T0 + 1;
	struct fleet_decision d = fleet_reattest_renew(&f->env, &in, &res, &out);
	fleet_reattest_check_free(&m);
	bool issued = d.outcome == FLEET_PASSED;
	fleet_reattest_renewed_free(&out);
	/* The consequence: TPM B's LAK is no longer current. */
	struct fleet_wire_bytes old = f->lak;
	f->lak = lak_b;
	struct how hb = {.quote_key = G.other, .report_key = G.other};
	struct fleet_decision b = check_once(f, &hb, NULL, &res);
	f->lak = old;
	free(lak_b.data);
	if (issued)
		fail_msg("a renewal by the old AK was issued after the device's AK changed; the "
			 "new TPM's check is now %s (%s)",
			 b.outcome == FLEET_PASSED ? "passed" : "refused", b.reason ? b.reason : "-");
}

/* HOLE, the same window: the presented LAK is revoked between the check
 * and the renewal's transaction; the renewal still issues a fresh,
 * unrevoked LAK for the key, undoing the revocation. Expected: refused.
 * Fix: as above (renewal_issue checks the presented LAK is unrevoked). */
static void test_fixed_renew_after_lak_revoked(void **state)
{
	struct fx *f = *state;
	struct fleet_reattest_check m;
	struct fleet_reattest_input in;
	struct fleet_reattest_result res;
	struct fleet_reattest_renewed out;
	renew_setup(f, 29);
	assert_int_equal(renewal_checked(f, TAG_NEXT, NULL, &m, &in, &res).outcome, FLEET_PASSED);
	/* Revoke every LAK of the device (the operator means: this AK). */
	struct fleet_store_cert *c = NULL;
	size_t n = 0;
	assert_int_equal(fleet_store_certs_for_device(f->st, DEVICE, &c, &n), FLEET_OK);
	for (size_t i = 0; i < n; i++)
		if (strcmp(c[i].kind, FLEET_STORE_CERT_LAK) == 0)
			assert_int_equal(fleet_store_cert_revoke(f->st, c[i].sha1, T0), FLEET_OK);
	fleet_store_certs_free(c, n);
	struct fleet_decision d = fleet_reattest_renew(&f->env, &in, &res, &out);
	fleet_reattest_check_free(&m);
	bool issued = d.outcome == FLEET_PASSED;
	fleet_reattest_renewed_free(&out);
	if (issued)
		fail_msg("every LAK of the device was revoked after its check; the renewal still "
			 "issued a fresh unrevoked LAK for the same AK");
}

/* ---- 3. RA3: a LAK certificate is not a secret --------------------------- */

/* HOLE (availability). Anyone holding a copy of the victim's LAK
 * certificate (lak.pem is world-readable on the node, and sent in every
 * request) and no TPM asks for many nonces (then: 4 were enough) while
 * the victim's TPM quotes: the victim's nonce is dropped and its check
 * refused "nonce-unknown" (and its renewal with it). Every hour, until the
 * certificates expire: the node drops out of the fleet. No nonce request
 * proves anything, so it must not be able to cost another's nonce.
 * Fix: fleetd/reattest/reattest.c nonce_judge/slot_for: stateless nonces
 * (HMAC(server key, lak_hash || issued_at || random), checked for TTL on
 * use) with a used-set written only after RA8 passed; or at least never
 * evict an unused unexpired nonce for a request of the same LAK (refuse the
 * new request instead, which an attacker then holds for 60 s at most). */
static void test_fixed_nonce_evicted_by_lak_copy(void **state)
{
	struct fx *f = *state;
	struct fleet_reattest_check m;
	struct fleet_reattest_result res;
	uint8_t victim[32], junk[32];
	get_nonce(f, &f->lak, victim);
	/* The attacker: the LAK certificate's bytes, nothing else. */
	for (int i = 0; i < 64; i++)
		get_nonce(f, &f->lak, junk);
	make_check(f, victim, NULL, &m);
	struct fleet_decision d = run_check(f, &m, NULL, &res);
	fleet_reattest_check_free(&m);
	if (d.outcome != FLEET_PASSED)
		fail_msg("a TPM-less holder of the LAK certificate evicted the node's nonce: its "
			 "check was refused (%s)",
			 d.reason ? d.reason : "-");
}

/* ---- 4. RA10/RN3: renew authorities overflowing the verdict --------------- */

/* HOLE (edge; outage). renew_required_authorities "decide the renewal
 * only" (RA10). But policy/evaluate.c adds one reason per missing one, and
 * past FLEET_VERDICT_MAX_REASONS (32) they are counted in n_dropped, which
 * split_renewal (reattest.c) cannot tell from real failures: with 33
 * missing, the renewal's *check* fails ("boot-policy", authenticated), and
 * the daemon writes a failed verdict and quarantines a worker whose
 * boot its class allows. Expected: the check passes, renewal refused.
 * Fix: policy/evaluate.c check_events: report missing renew authorities in
 * their own field (a count or flag in struct fleet_verdict), never as
 * reasons; or cap renew_required_authorities at the profile parser
 * (policy/profile.c) below FLEET_VERDICT_MAX_REASONS. */
static void test_fixed_renew_authorities_overflow_quarantine(void **state)
{
	struct fx *f = *state;
	struct fleet_reattest_check m;
	struct fleet_reattest_input in;
	struct fleet_reattest_result res;
	char allowed[8192], renew[8192];
	size_t ao = 0, ro = 0;
	const char *keep = "  - \"21125a8885e79205fdf981f935051ef6fce15260f44267f37db8ec292803f500\"\n";
	ao += (size_t)snprintf(allowed + ao, sizeof(allowed) - ao, "%s", keep);
	ro += (size_t)snprintf(renew + ro, sizeof(renew) - ro, "renew_required_authorities:\n");
	/* 33 would overflow a verdict: the profile refuses more than 16 now
	 * (policy/profile.h); 16, all missing, must not fail the check. */
	for (int i = 0; i < FLEET_PROFILE_MAX_RENEW_AUTHORITIES; i++) {
		ao += (size_t)snprintf(allowed + ao, sizeof(allowed) - ao,
				       "  - \"%062x%02x\"\n", 0xeu, (unsigned)i);
		ro += (size_t)snprintf(renew + ro, sizeof(renew) - ro, "  - \"%062x%02x\"\n", 0xeu,
				       (unsigned)i);
	}
	char to[16384];
	snprintf(to, sizeof(to), "%s%.*s", allowed, (int)(ro - 1), renew); /* drop the last \n */
	struct fleet_profile *p = profile_with(
		"  - \"21125a8885e79205fdf981f935051ef6fce15260f44267f37db8ec292803f500\"\n"
		"renew_required_authorities: []",
		to);
	renew_setup(f, 29);
	struct fleet_decision d = renewal_checked(f, TAG_NEXT, p, &m, &in, &res);
	fleet_reattest_check_free(&m);
	fleet_profile_free(p);
	assert_int_equal(res.verdict.n_dropped, 0);
	if (d.outcome != FLEET_PASSED)
		fail_msg("a renewal's check failed authenticated (%s, %zu reasons, %zu dropped): "
			 "the daemon would quarantine a node whose boot passes, for missing renew "
			 "authorities",
			 d.reason ? d.reason : "-", res.verdict.n_reasons, res.verdict.n_dropped);
	assert_true(res.renew_authority_missing);
}

/* ---- 5. concurrency: two renewals of one node ---------------------------- */

struct racer {
	struct fx *f;
	struct fleet_reattest_input in;
	struct fleet_reattest_result res;
	struct fleet_reattest_renewed out;
	struct fleet_decision d;
	pthread_barrier_t *go;
};

static void *race_one(void *arg)
{
	struct racer *r = arg;
	pthread_barrier_wait(r->go);
	r->d = fleet_reattest_renew(&r->f->env, &r->in, &r->res, &r->out);
	return NULL;
}

/* n renewals, each after its own passing check, run at once; keys[i] the
 * key tag of the i-th. Returns how many issued something new. */
static int race(struct fx *f, int n, const uint8_t *keys, struct racer *r)
{
	struct fleet_reattest_check m[8];
	pthread_t th[8];
	pthread_barrier_t go;
	int fresh = 0;
	assert_true(n <= 8);
	pthread_barrier_init(&go, NULL, (unsigned)n);
	for (int i = 0; i < n; i++) {
		memset(&r[i], 0, sizeof(r[i]));
		r[i].f = f;
		r[i].go = &go;
		assert_int_equal(renewal_checked(f, keys[i], NULL, &m[i], &r[i].in, &r[i].res).outcome,
				 FLEET_PASSED);
	}
	for (int i = 0; i < n; i++)
		assert_int_equal(pthread_create(&th[i], NULL, race_one, &r[i]), 0);
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&go);
	for (int i = 0; i < n; i++) {
		fresh += r[i].d.outcome == FLEET_PASSED && !r[i].out.again;
		fleet_reattest_check_free(&m[i]);
	}
	return fresh;
}

/* HOLE (weak: the cap still holds). Two renewals of the same next key at
 * once (the node's retry racing its first attempt; or a compromised node
 * on purpose): both read the store before either commits, neither sees a
 * certificate for the key, both issue. RN6 ("a key that has a current
 * certificate is answered again") is decided outside the transaction: one
 * key gets two LDevID and two LAK certificates and spends two of the four
 * slots. Expected: exactly one issued, the other "again" (or refused).
 * Fix: fleetd/store/store_reattest.c renewal_issue: inside the transaction
 * refuse (FLEET_STORE_E_CONFLICT -> answer again) when the device already
 * has an LDevID certificate for the same SPKI (store the SPKI hash in a
 * column with a UNIQUE (device_id, spki_sha256) index). */
static void test_fixed_renew_race_same_key(void **state)
{
	struct fx *f = *state;
	struct racer r[2];
	int worst = 0;
	renew_setup(f, 29);
	for (int round = 0; round < 8 && worst < 2; round++) {
		uint8_t k = (uint8_t)(40 + round), keys[2] = {k, k};
		int fresh = race(f, 2, keys, r);
		if (fresh > worst)
			worst = fresh;
		for (int i = 0; i < 2; i++) {
			if (r[i].d.outcome == FLEET_PASSED)
				(void)fleet_store_cert_revoke(f->st, r[i].out.ldevid_sha1, f->env.now);
			fleet_reattest_renewed_free(&r[i].out);
		}
		printf("  round %d: %d fresh issuance(s) for one key\n", round, fresh);
	}
	if (worst > 1)
		fail_msg("two concurrent renewals of one key both issued new certificates");
}

/* HELD. The cap is decided inside the store's transaction: five
 * concurrent renewals with five fresh keys, at a device holding one
 * current LDevID, issue at most three; the device never holds more than
 * FLEET_REATTEST_RENEW_MAX_LDEVID current LDevID certificates, the rest
 * are "renew-too-many". */
static void test_held_cap_under_concurrency(void **state)
{
	struct fx *f = *state;
	struct racer r[5];
	uint8_t keys[5] = {60, 61, 62, 63, 64};
	renew_setup(f, 29);
	int fresh = race(f, 5, keys, r);
	for (int i = 0; i < 5; i++) {
		/* due is judged by the store (RN5): once one committed, the others
		 * are not due, or past the cap; the cap holds either way */
		if (r[i].d.outcome != FLEET_PASSED && strcmp(r[i].d.reason, "renew-too-many") != 0)
			assert_string_equal(r[i].d.reason, "renew-not-due");
		fleet_reattest_renewed_free(&r[i].out);
	}
	assert_true(fresh >= 1 && fresh <= FLEET_REATTEST_RENEW_MAX_LDEVID - 1);
	assert_true(current_ldevids(f) <= FLEET_REATTEST_RENEW_MAX_LDEVID);
}

/* ---- 6. held: nothing unauthenticated writes ---------------------------- */

/* HELD. An attacker with no TPM but the victim's LAK certificate gets a
 * real nonce (RA1 needs only a CA-signed LAK) and sends a check quoted and
 * signed by another key, and the same as a renewal: refused
 * "quote-signature", not authenticated, no clock, no verdict; the renewal
 * cannot run on such a result (RN1: not even attempted, FAILED / invalid
 * argument); nothing issued. */
static void test_held_no_tpm_writes_nothing(void **state)
{
	struct fx *f = *state;
	struct fleet_reattest_check m;
	struct fleet_reattest_result res;
	struct fleet_reattest_renewed out;
	uint8_t nonce[32];
	renew_setup(f, 29);
	size_t laks = count_certs(f, FLEET_STORE_CERT_LAK), lds = count_certs(f, FLEET_STORE_CERT_LDEVID);
	get_nonce(f, &f->lak, nonce);
	struct how h = {.quote_key = G.other, .report_key = G.other};
	make_check(f, nonce, &h, &m);
	add_renewal(&m, NULL); /* the certify by the real AK: a proof the attacker replays */
	struct fleet_reattest_input in = {
		.msg = &m, .profile = G.profile, .inventory_status = "active", .renewal = true};
	struct fleet_decision d = fleet_reattest_check(&f->env, &in, &res);
	assert_unauthenticated(f, d, &res, "quote-signature");
	d = fleet_reattest_renew(&f->env, &in, &res, &out);
	assert_int_not_equal(d.outcome, FLEET_PASSED);
	assert_null(out.lak_cert.data);
	/* and a forged "authenticated" result with a failing verdict: still no */
	res.authenticated = true;
	res.verdict.pass = false;
	assert_int_not_equal(fleet_reattest_renew(&f->env, &in, &res, &out).outcome, FLEET_PASSED);
	fleet_reattest_check_free(&m);
	assert_int_equal(count_certs(f, FLEET_STORE_CERT_LAK), laks);
	assert_int_equal(count_certs(f, FLEET_STORE_CERT_LDEVID), lds);
}

/* HELD (RA5). After re-admission with another TPM (the device's newest
 * LAK is for another AK), the old TPM's LAK, unrevoked and unexpired, is
 * "lak-not-current": the relaxation is for the same AK key only; no
 * renewal through it either. */
static void test_held_old_tpm_after_readmission(void **state)
{
	struct fx *f = *state;
	struct fleet_reattest_result res;
	struct fleet_wire_bytes lak_b = {0};
	renew_setup(f, 29);
	issue_lak(&G.other_pub, DEVICE, T0, 90, &lak_b);
	assert_int_equal(fleet_store_cert_insert(f->st, DEVICE, FLEET_STORE_CERT_LAK, lak_b.data,
						 lak_b.len, T0, NULL),
			 FLEET_OK);
	free(lak_b.data);
	assert_unauthenticated(f, check_once(f, NULL, NULL, &res), &res, "lak-not-current");
	size_t lds = count_certs(f, FLEET_STORE_CERT_LDEVID);
	struct fleet_reattest_check m;
	struct fleet_reattest_input in;
	struct fleet_decision d = renewal_checked(f, TAG_NEXT, NULL, &m, &in, &res);
	fleet_reattest_check_free(&m);
	assert_int_equal(d.outcome, FLEET_REFUSED);
	assert_string_equal(d.reason, "lak-not-current");
	assert_false(res.authenticated);
	assert_int_equal(count_certs(f, FLEET_STORE_CERT_LDEVID), lds);
}

/* WEAK SPOT (by RA5's letter). Revoking the device's newest LAK
 * certificate does not stop its AK: an older unrevoked certificate of the
 * same key becomes "the newest unrevoked" and checks, and renews (RN5 due
 * by that old LAK), minting a fresh unrevoked LAK for the same AK. A
 * revocation is per certificate, never per key; with renewals a device
 * has several. (No production code revokes a LAK today; whoever adds one
 * must revoke every LAK of the key.) */
static void test_weak_revoking_newest_lak_stops_nothing(void **state)
{
	struct fx *f = *state;
	struct fleet_reattest_renewed out;
	struct fleet_reattest_result res;
	renew_setup(f, 29);
	assert_int_equal(renew_once(f, NULL, NULL, "active", &out).outcome, FLEET_PASSED);
	assert_int_equal(fleet_store_cert_revoke(f->st, out.lak_sha1, T0 + 60), FLEET_OK);
	fleet_reattest_renewed_free(&out);
	f->env.now = T0 + 120;
	assert_int_equal(check_once(f, NULL, NULL, &res).outcome, FLEET_PASSED);
	/* Since RN5 is judged by the store, the older LAK no longer renews at
	 * once (the renewed LDevID is fresh); it still checks, by RA5. */
	struct renew_how h = {.key_tag = 11};
	struct fleet_decision d = renew_once(f, &h, NULL, "active", &out);
	assert_int_equal(d.outcome, FLEET_REFUSED);
	assert_string_equal(d.reason, "renew-not-due");
	fleet_reattest_renewed_free(&out);
}

/* ---- 7. held: the wire decoder on mangled bodies (ASan) ------------------- */

/* HELD. A real renewal body, each byte changed (and every prefix cut),
 * decoded: nothing crashes or leaks under ASan/LSan, and whatever decodes
 * re-encodes (no half-filled message is accepted). */
static void test_held_wire_mangled(void **state)
{
	struct fx *f = *state;
	struct fleet_reattest_check m, d;
	struct fleet_buf body, re;
	uint8_t nonce[32] = {1};
	size_t ok = 0;
	make_check(f, nonce, NULL, &m);
	add_renewal(&m, NULL);
	fb_init(&body);
	assert_int_equal(fleet_reattest_check_encode(&m, &body), FLEET_OK);
	fleet_reattest_check_free(&m);
	uint8_t *b = malloc(body.len);
	assert_non_null(b);
	static const uint8_t subst[] = {'"', '\\', '{', '}', ':', ',', 0, 0xff, 'A', '1'};
	for (size_t i = 0; i < body.len; i++) {
		memcpy(b, body.data, body.len);
		b[i] = subst[i % sizeof(subst)];
		struct fleet_errctx ec = {0};
		if (fleet_reattest_check_decode(b, body.len, &d, &ec) == FLEET_OK) {
			ok++;
			fb_init(&re);
			assert_int_equal(fleet_reattest_check_encode(&d, &re), FLEET_OK);
			fb_free(&re);
		}
		fleet_reattest_check_free(&d);
		if (fleet_reattest_check_decode(body.data, i, &d, &ec) == FLEET_OK)
			fail_msg("a prefix of %zu bytes decoded", i);
		fleet_reattest_check_free(&d);
		struct fleet_reattest_check_reply cr;
		(void)fleet_reattest_check_reply_decode(b, body.len, &cr, &ec);
		fleet_reattest_check_reply_free(&cr);
		struct fleet_reattest_nonce_reply nr;
		(void)fleet_reattest_nonce_reply_decode(b, body.len, &nr, &ec);
		fleet_reattest_nonce_reply_free(&nr);
	}
	printf("  %zu of %zu one-byte changes still decode (inside base64 payloads)\n", ok,
	       body.len);
	free(b);
	fb_free(&body);
}

int main(void)
{
	swtpm_require_or_skip();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_fixed_renew_due_by_old_lak, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fixed_renew_after_ak_changed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fixed_renew_after_lak_revoked, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fixed_nonce_evicted_by_lak_copy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fixed_renew_authorities_overflow_quarantine, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_fixed_renew_race_same_key, setup, teardown),
		cmocka_unit_test_setup_teardown(test_held_cap_under_concurrency, setup, teardown),
		cmocka_unit_test_setup_teardown(test_held_no_tpm_writes_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_held_old_tpm_after_readmission, setup, teardown),
		cmocka_unit_test_setup_teardown(test_weak_revoking_newest_lak_stops_nothing, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_held_wire_mangled, setup, teardown),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
