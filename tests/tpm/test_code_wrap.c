/*
 * test_code_wrap.c: fleetd/provision/code.h D2 against a real TPM (swtpm):
 * the code fleet_code_wrap wraps for a confirmed session opens, through
 * tink-attest's own activation (tink_tpm_activate, what store_provision
 * runs), to the same 32 bytes in the TPM that holds the session's RSA EK
 * and AK; wrapped to another key's name it does not open there; and only a
 * confirmed session gets a code.
 */
#include "tests/testutil.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "fleetd/provision/code.h"
#include "lib/hex.h"
#include "tests/tpm/swtpm_harness.h"
#include "tink-attest/tpm_client.h"

struct fx {
	struct swtpm t;
	struct tink_tpm tpm;
	struct tink_ek ek;
	struct fleet_attest_session s;
	TPM2B_PUBLIC ldevid;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	if (swtpm_start(&f->t, NULL) != 0)
		return -1;
	if (tink_tpm_open(&f->tpm, f->t.tcti) != 0)
		fail_msg("%s", f->tpm.err);
	if (tink_tpm_read_ek_rsa(&f->tpm, &f->ek) != 0 || !f->ek.present)
		fail_msg("RSA EK: %s", f->tpm.err);
	/* The session as the confirm round leaves it: the EK and AK intake
	 * verified. */
	f->s.state = FLEET_SESSION_CONFIRMED;
	f->s.ek_rsa = f->ek.pub;
	if (tink_tpm_public(&f->tpm, TINK_KEY_AK, &f->s.ak) != 0 ||
	    tink_tpm_public(&f->tpm, TINK_KEY_LDEVID, &f->ldevid) != 0)
		fail_msg("%s", f->tpm.err);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	tink_ek_free(&f->ek);
	tink_tpm_close(&f->tpm);
	swtpm_stop(&f->t);
	fleet_attest_session_wipe(&f->s);
	free(f);
	return 0;
}

static int activate(struct fx *f, const struct fleet_wire_credential *c, uint8_t *got,
		    size_t *n)
{
	return tink_tpm_activate(&f->tpm, &f->ek, c->id_object.data, c->id_object.len,
				 c->enc_secret.data, c->enc_secret.len, got, 64, n);
}

static void free_cred(struct fleet_wire_credential *c)
{
	free(c->id_object.data);
	free(c->enc_secret.data);
	memset(c, 0, sizeof(*c));
}

static void code_opens_in_its_tpm(void **state)
{
	struct fx *f = *state;
	uint8_t code[FLEET_CODE_LEN], hash[32], again[32], got[64];
	char hex[2 * FLEET_CODE_LEN + 1], got_hex[2 * FLEET_CODE_LEN + 1];
	struct fleet_wire_credential c;
	struct fleet_errctx ec = {0};
	size_t n = 0;

	assert_int_equal(fleet_code_new(code, hex, hash), FLEET_OK);
	assert_int_equal(fleet_code_wrap(&f->s, code, &c, &ec), FLEET_OK);
	assert_true(c.present);
	if (activate(f, &c, got, &n) != 0)
		fail_msg("ActivateCredential: %s", f->tpm.err);
	assert_int_equal(n, FLEET_CODE_LEN);
	assert_memory_equal(got, code, FLEET_CODE_LEN);
	/* What tink-attest writes (hex) hashes to what fleetd keeps. */
	fleet_hex_encode(got, FLEET_CODE_LEN, got_hex);
	assert_string_equal(got_hex, hex);
	assert_int_equal(fleet_code_hash_hex(got_hex, again), FLEET_OK);
	assert_memory_equal(again, hash, 32);
	free_cred(&c);
	OPENSSL_cleanse(code, sizeof(code));
}

/* Bound to another key's name (the LDevID's, in the same TPM under the
 * same EK), the code does not open with the AK loaded; the same test's
 * unaltered wrap does, so the refusal is the name's doing. */
static void code_for_another_name_does_not_open(void **state)
{
	struct fx *f = *state;
	uint8_t code[FLEET_CODE_LEN], hash[32], got[64];
	char hex[2 * FLEET_CODE_LEN + 1];
	struct fleet_wire_credential c;
	struct fleet_attest_session other = f->s;
	struct fleet_errctx ec = {0};
	size_t n = 0;

	other.ak = f->ldevid;
	assert_int_equal(fleet_code_new(code, hex, hash), FLEET_OK);
	assert_int_equal(fleet_code_wrap(&other, code, &c, &ec), FLEET_OK);
	assert_int_not_equal(activate(f, &c, got, &n), 0);
	free_cred(&c);
	assert_int_equal(fleet_code_wrap(&f->s, code, &c, &ec), FLEET_OK);
	assert_int_equal(activate(f, &c, got, &n), 0);
	assert_memory_equal(got, code, FLEET_CODE_LEN);
	free_cred(&c);
	fleet_attest_session_wipe(&other);
}

static void only_a_confirmed_session(void **state)
{
	struct fx *f = *state;
	uint8_t code[FLEET_CODE_LEN] = {1};
	struct fleet_wire_credential c;
	struct fleet_errctx ec = {0};
	static const enum fleet_session_state not_yet[] = {
		0, FLEET_SESSION_CHALLENGED, FLEET_SESSION_VERIFIED, FLEET_SESSION_ISSUED,
		FLEET_SESSION_CLOSED};
	struct fleet_attest_session s = f->s;
	for (size_t i = 0; i < sizeof(not_yet) / sizeof(not_yet[0]); i++) {
		s.state = not_yet[i];
		assert_int_equal(fleet_code_wrap(&s, code, &c, &ec), FLEET_E_INVALID_ARG);
		assert_false(c.present);
		assert_null(c.id_object.data);
	}
	fleet_attest_session_wipe(&s);
}

int main(void)
{
	swtpm_require_or_skip();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(code_opens_in_its_tpm, setup, teardown),
		cmocka_unit_test_setup_teardown(code_for_another_name_does_not_open, setup,
						teardown),
		cmocka_unit_test_setup_teardown(only_a_confirmed_session, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
