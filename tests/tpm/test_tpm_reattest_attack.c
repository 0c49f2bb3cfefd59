/*
 * test_tpm_reattest_attack.c: adversarial review of the node's side of a
 * renewal (tpm-reattest/renew.c, run.c): what a confused or malicious
 * fleetd answer, or a kill -9, leaves on the node. On the fixtures of
 * tests/tpm/test_tpm_reattest.c (swtpm, fleetd's component in-process;
 * included below, its main() renamed).
 *
 * test_fixed_* FAIL on the code as reviewed (each says why); test_held_*
 * PASS and name what they prove.
 */
#define main tpm_reattest_fixture_main_unused
int tpm_reattest_fixture_main_unused(void);
#include "tests/tpm/test_tpm_reattest.c"
#undef main

#include <sys/stat.h>
#include <unistd.h>

/* What the tampering post does to a "renewed" answer. */
enum tamper { T_NONE, T_FOREIGN_CA, T_EXPIRED };
static struct {
	enum tamper how;
	struct fleet_ca *ca2; /* another CA: "Test Identity CA" too */
} A;

static void der_of(const struct fleet_ca *ca, enum fleet_cert_kind kind, const TPM2B_PUBLIC *key,
		   time_t nb, unsigned days, struct fleet_wire_bytes *out)
{
	struct fleet_issue_request req = {
		.kind = kind,
		.key = &key->publicArea,
		.device_name = DEVICE,
		.serial = SERIAL,
		.not_before = nb,
		.validity_days = days,
	};
	struct fleet_errctx ec = {0};
	X509 *x = NULL;
	unsigned char *d = NULL;
	assert_int_equal(fleet_ca_issue(ca, &req, &x, &ec), FLEET_OK);
	int n = i2d_X509(x, &d);
	assert_true(n > 0);
	out->data = malloc((size_t)n);
	assert_non_null(out->data);
	memcpy(out->data, d, (size_t)n);
	out->len = (size_t)n;
	OPENSSL_free(d);
	X509_free(x);
}

/* fleetd's component answers; then a "renewed" answer is replaced by two
 * certificates for the very keys the node asked for and its very subject,
 * but from another CA (a fleetd restored with another CA directory, or
 * whoever holds the pinned TLS key), or already expired (fleetd's clock a
 * year off). */
static enum tink_tx_result tamper_post(void *ctx, const char *path, const struct fleet_buf *body,
				       size_t max_reply, struct fleet_buf *reply, long *st,
				       struct fleet_errctx *ec)
{
	enum tink_tx_result r = srv_post(ctx, path, body, max_reply, reply, st, ec);
	struct fleet_reattest_check_reply cr;
	struct fleet_errctx dec = {0};
	if (A.how == T_NONE || strcmp(path, "/v1/reattest/renew") != 0)
		return r;
	assert_int_equal(fleet_reattest_check_reply_decode(reply->data, reply->len, &cr, &dec),
			 FLEET_OK);
	if (cr.status == FLEET_REATTEST_RENEWED) {
		struct fleet_reattest_check_reply t = {.status = FLEET_REATTEST_RENEWED};
		const struct fleet_ca *ca = A.how == T_FOREIGN_CA ? A.ca2 : G.ca;
		time_t nb = A.how == T_EXPIRED ? time(NULL) - 400 * 86400 : time(NULL);
		unsigned days = 90;
		der_of(ca, FLEET_CERT_LAK, &G.ak_pub, nb, days, &t.lak_cert);
		der_of(ca, FLEET_CERT_LDEVID, &G.ldevid1_pub, nb, days, &t.ldevid_cert);
		fb_reset(reply);
		assert_int_equal(fleet_reattest_check_reply_encode(&t, reply), FLEET_OK);
		free(t.lak_cert.data);
		free(t.ldevid_cert.data);
	}
	fleet_reattest_check_reply_free(&cr);
	return r;
}

static size_t store_ldevids(struct fx *f)
{
	struct fleet_store_cert *c = NULL;
	size_t n = 0, k = 0;
	assert_int_equal(fleet_store_certs_for_device(f->st, DEVICE, &c, &n), FLEET_OK);
	for (size_t i = 0; i < n; i++)
		k += strcmp(c[i].kind, FLEET_STORE_CERT_LDEVID) == 0;
	fleet_store_certs_free(c, n);
	return k;
}

static int attack_setup(void **state)
{
	struct fleet_errctx ec = {0};
	char path[700];
	int r = setup(state);
	struct fx *f = *state;
	A.how = T_NONE;
	if (!A.ca2) {
		snprintf(path, sizeof(path), "%s/ca2", G.base);
		if (fleet_ca_init(path, "Test Identity CA", 3650, &ec) != FLEET_OK ||
		    fleet_ca_load(path, &A.ca2, &ec) != FLEET_OK)
			return -1;
	}
	(void)f;
	return r;
}

static int attack_group_teardown(void **state)
{
	fleet_ca_free(A.ca2);
	A.ca2 = NULL;
	return group_teardown(state);
}

/* The run after a tampered renewal, with fleetd's real component: does the
 * node still check? */
static const char *next_run(struct fx *f, int *rc)
{
	struct tpm_reattest_result res;
	A.how = T_NONE;
	*rc = run(f, srv_post, &res);
	return f->last.reason ? f->last.reason : "-";
}

/* HOLE (outage). The client checks that the renewed certificates are for
 * its keys and subject, not that they are from the CA that issued the
 * ones it replaces: an answer from another CA (same subject, same keys)
 * overwrites lak.pem and ldevid.pem, and the next run is refused
 * ("lak-unknown"): the node is out of the fleet until it proves itself
 * again from HookOS, though its old certificates had 29 days left.
 * Expected: nothing written (exit 14), files kept.
 * Fix: tpm-reattest/renew.c tpm_reattest_store_renewal: require both new
 * certificates to verify under the old LAK's issuer (the client can check
 * X509_check_issued against the old chain, or ship fleetd's CA certificate
 * with the node and X509_verify both); and keep lak.pem.prev/ldevid.pem.prev
 * to fall back to when fleetd refuses the new LAK as unknown. */
static void test_fixed_client_writes_foreign_ca_certs(void **state)
{
	struct fx *f = *state;
	struct tpm_reattest_result res;
	struct kept k;
	int rc;
	renew_setup(f);
	keep_files(f, &k);
	A.how = T_FOREIGN_CA;
	int first = run(f, tamper_post, &res);
	bool kept = same_file(f->lak_path, &k.lak) && same_file(f->ldevid_path, &k.ld);
	const char *why = next_run(f, &rc);
	fb_free(&k.lak);
	fb_free(&k.ld);
	if (!kept)
		fail_msg("certificates from another CA replaced the node's (exit %d); the next run "
			 "exits %d, fleetd: %s",
			 first, rc, why);
}

/* HOLE (outage), the same check missing: certificates already past their
 * notAfter (fleetd's clock a year off, or a replayed old answer) replace
 * working ones; the next run is refused "lak-expired". Expected: nothing
 * written. Fix: tpm_reattest_store_renewal: notBefore <= now + skew <
 * notAfter, and the new notAfter later than the old one. */
static void test_fixed_client_writes_expired_certs(void **state)
{
	struct fx *f = *state;
	struct tpm_reattest_result res;
	struct kept k;
	int rc;
	renew_setup(f);
	keep_files(f, &k);
	A.how = T_EXPIRED;
	int first = run(f, tamper_post, &res);
	bool kept = same_file(f->lak_path, &k.lak) && same_file(f->ldevid_path, &k.ld);
	const char *why = next_run(f, &rc);
	fb_free(&k.lak);
	fb_free(&k.ld);
	if (!kept)
		fail_msg("expired certificates replaced the node's (exit %d); the next run exits "
			 "%d, fleetd: %s",
			 first, rc, why);
}

/* HOLE (weak: it recovers, at a cost). kill -9 between the two renames
 * (ldevid.pem is written first) leaves the new LDevID (key N+1) with the
 * old LAK. The next run is due by the old LAK, finds generation N+1 from
 * ldevid.pem and proves N+2: fleetd issues a third LDevID certificate for
 * a fresh key instead of answering the lost one again, and a generation
 * (of TINK_LDEVID_MAX_GEN) and a slot (of FLEET_REATTEST_RENEW_MAX_LDEVID)
 * are spent; two such crashes before the old one expires and the cap
 * refuses ("renew-too-many") while the old LAK runs out. Expected: the
 * recovery gets "again" for key N+1, no new certificate.
 * Fix: tpm-reattest/renew.c tpm_reattest_store_renewal: write lak.pem
 * first, then ldevid.pem (a crash between leaves the old LDevID, so the
 * next run proves the same N+1 and fleetd answers it again: RN6's lost
 * answer path); or find the generation by the LAK's notAfter. */
static void test_fixed_client_crash_between_renames(void **state)
{
	struct fx *f = *state;
	struct tpm_reattest_result res;
	struct fleet_buf old_ld;
	renew_setup(f);
	snapshot(f->ldevid_path, &old_ld);
	assert_int_equal(run(f, srv_post, &res), TPM_REATTEST_EXIT_PASS);
	assert_true(res.renewed);
	assert_int_equal(store_ldevids(f), 2);
	/* kill -9 after rename(lak.pem.new, lak.pem), before ldevid.pem's (the
	 * LAK goes first now): the old LDevID is back */
	write_file(f->ldevid_path, old_ld.data, old_ld.len);
	fb_free(&old_ld);
	assert_true(file_key_is(f->ldevid_path, &G.ldevid0_pub, NULL));
	assert_int_equal(run(f, srv_post, &res), TPM_REATTEST_EXIT_PASS);
	size_t n = store_ldevids(f);
	bool gen1 = file_key_is(f->ldevid_path, &G.ldevid1_pub, NULL);
	if (n != 2 || !gen1)
		fail_msg("after a crash between the renames the next run did not get key 1's "
			 "certificate again (ldevid.pem %s key 1; the store has %zu LDevID "
			 "certificates, not 2)",
			 gen1 ? "is" : "is not", n);
	assert_true(f->renew.outcome == FLEET_PASSED);
}

/* HELD. A planted symlink at ldevid.pem.new (a local attacker with write
 * access to the directory, or a crash's leftover) is removed, not
 * followed: the file it points at is untouched, and only the two
 * configured paths change. */
static void test_held_client_new_symlink_not_followed(void **state)
{
	struct fx *f = *state;
	struct tpm_reattest_result res;
	char victim[800], link[800];
	static const char canary[] = "do not touch\n";
	renew_setup(f);
	snprintf(victim, sizeof(victim), "%s/victim", f->dir);
	snprintf(link, sizeof(link), "%s.new", f->ldevid_path);
	write_file(victim, canary, strlen(canary));
	assert_int_equal(symlink(victim, link), 0);
	assert_int_equal(run(f, srv_post, &res), TPM_REATTEST_EXIT_PASS);
	assert_true(res.renewed);
	struct fleet_buf v;
	snapshot(victim, &v);
	assert_int_equal(v.len, strlen(canary));
	assert_memory_equal(v.data, canary, v.len);
	fb_free(&v);
	struct stat sb;
	assert_int_equal(lstat(f->ldevid_path, &sb), 0);
	assert_true(S_ISREG(sb.st_mode));
	assert_int_not_equal(lstat(link, &sb), 0);
}

/* HELD. A "renewed" answer to a plain hourly check (nothing asked) is not
 * written: exit 14 ("renewed what was not asked"). */
static enum tink_tx_result renewed_to_check(void *ctx, const char *path,
					    const struct fleet_buf *body, size_t max_reply,
					    struct fleet_buf *reply, long *st, struct fleet_errctx *ec)
{
	enum tink_tx_result r = srv_post(ctx, path, body, max_reply, reply, st, ec);
	if (strcmp(path, "/v1/reattest/check") == 0) {
		struct fleet_reattest_check_reply t = {.status = FLEET_REATTEST_RENEWED};
		der_of(G.ca, FLEET_CERT_LAK, &G.ak_pub, time(NULL), 90, &t.lak_cert);
		der_of(G.ca, FLEET_CERT_LDEVID, &G.ldevid1_pub, time(NULL), 90, &t.ldevid_cert);
		fb_reset(reply);
		assert_int_equal(fleet_reattest_check_reply_encode(&t, reply), FLEET_OK);
		free(t.lak_cert.data);
		free(t.ldevid_cert.data);
	}
	return r;
}

static void test_held_client_unasked_renewal(void **state)
{
	struct fx *f = *state;
	struct tpm_reattest_result res;
	struct fleet_buf was;
	snapshot(f->lak_path, &was);
	snprintf(f->ldevid_path, sizeof(f->ldevid_path), "%s/ldevid.pem", f->dir);
	assert_int_equal(run(f, renewed_to_check, &res), TPM_REATTEST_EXIT_LOCAL);
	assert_false(res.renewed);
	assert_true(same_file(f->lak_path, &was));
	fb_free(&was);
	assert_int_not_equal(access(f->ldevid_path, F_OK), 0);
}

int main(void)
{
	swtpm_require_or_skip();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_fixed_client_writes_foreign_ca_certs, attack_setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_fixed_client_writes_expired_certs, attack_setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_fixed_client_crash_between_renames, attack_setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_held_client_new_symlink_not_followed,
						attack_setup, teardown),
		cmocka_unit_test_setup_teardown(test_held_client_unasked_renewal, attack_setup,
						teardown),
	};
	return cmocka_run_group_tests(tests, group_setup, attack_group_teardown);
}
