/*
 * test_fleet_err.c: the one error space of lib/fleet_err.h.
 *
 * A value carries its layer and its code; each code has one string in
 * every layer; a decision tells a refusal (the input's fault) from a
 * failure (this side's) by its outcome, never by the code; the context
 * carries errno and OpenSSL's reason, and empties OpenSSL's queue.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/err.h>
#include <openssl/x509.h>

#include "fleetd/inventory/inventory.h"
#include "fleetd/kube/kube.h"
#include "fleetd/spire/spire_nodes.h"
#include "fleetd/store/store.h"
#include "lib/fleet_err.h"

static void layer_and_code_are_two_fields(void **state)
{
	(void)state;
	assert_int_equal(fleet_err_layer(FLEET_STORE_E_BUSY), FLEET_LAYER_STORE);
	assert_int_equal(fleet_err_code(FLEET_STORE_E_BUSY), FLEET_CODE_BUSY);
	assert_int_equal(fleet_err_layer(FLEET_INV_UNAVAILABLE), FLEET_LAYER_INVENTORY);
	assert_int_equal(fleet_err_layer(FLEET_SPIRE_E_STATE), FLEET_LAYER_SPIRE);
	assert_int_equal(fleet_err_layer(FLEET_KUBE_E_EXISTS), FLEET_LAYER_KUBE);
	assert_string_equal(fleet_err_layer_str(FLEET_KUBE_E_AUTH), "kube");
	/* the Kubernetes client's two codes of its own, and the ones it shares */
	assert_string_equal(fleet_err_str(FLEET_KUBE_E_EXISTS), "already-exists");
	assert_string_equal(fleet_err_str(FLEET_KUBE_E_AUTH), "unauthorized");
	assert_string_equal(fleet_err_str(FLEET_KUBE_E_INVALID), "invalid-argument");
	assert_string_equal(fleet_err_str(FLEET_KUBE_E_CONFLICT), "conflict");
	assert_int_not_equal(FLEET_KUBE_E_EXISTS, FLEET_KUBE_E_CONFLICT);
	assert_int_not_equal(FLEET_KUBE_E_NOT_FOUND, FLEET_E_NOT_FOUND);
	assert_int_equal(FLEET_KUBE_OK, 0);
	assert_int_equal(fleet_err_layer(FLEET_E_MALFORMED), FLEET_LAYER_LIB);
	/* The same code in two layers is two values, one string. */
	assert_int_not_equal(FLEET_STORE_E_NOT_FOUND, FLEET_INV_NOT_FOUND);
	assert_int_not_equal(FLEET_STORE_E_NOT_FOUND, FLEET_E_NOT_FOUND);
	assert_string_equal(fleet_err_str(FLEET_STORE_E_NOT_FOUND), "not-found");
	assert_string_equal(fleet_err_str(FLEET_INV_NOT_FOUND), "not-found");
	assert_string_equal(fleet_err_str(FLEET_E_NOT_FOUND), "not-found");
	/* Out of memory is said as such in every layer, never "unavailable". */
	assert_string_equal(fleet_err_str(FLEET_INV_NOMEM), "out-of-memory");
	assert_int_not_equal(FLEET_INV_NOMEM, FLEET_INV_UNAVAILABLE);
	assert_string_equal(fleet_err_layer_str(FLEET_INV_NOMEM), "inventory");
	/* FLEET_OK is 0 in every layer. */
	assert_int_equal(FLEET_STORE_OK, 0);
	assert_int_equal(FLEET_INV_OK, 0);
	assert_int_equal(FLEET_SPIRE_OK, 0);
	assert_string_equal(fleet_err_str(FLEET_OK), "ok");
	assert_string_equal(fleet_err_layer_str(FLEET_OK), "");
}

static void every_code_has_one_string(void **state)
{
	(void)state;
	for (unsigned l = FLEET_LAYER_LIB; l < FLEET_LAYER__COUNT; l++)
		for (unsigned c = 1; c < FLEET_CODE__COUNT; c++) {
			fleet_err e = FLEET_ERR(l, c);
			assert_true(fleet_err_valid(e));
			assert_string_equal(fleet_err_str(e), fleet_err_str(FLEET_ERR(FLEET_LAYER_LIB, c)));
			assert_string_not_equal(fleet_err_str(e), "unknown-error");
			/* Stable strings: lowercase and hyphens only. */
			for (const char *p = fleet_err_str(e); *p; p++)
				assert_true((*p >= 'a' && *p <= 'z') || *p == '-');
		}
	/* Values no layer defines. */
	assert_false(fleet_err_valid(FLEET_ERR(FLEET_LAYER__COUNT, FLEET_CODE_IO)));
	assert_false(fleet_err_valid(FLEET_ERR(FLEET_LAYER_STORE, FLEET_CODE__COUNT)));
	assert_false(fleet_err_valid(FLEET_ERR(FLEET_LAYER_STORE, 0)));
	assert_false(fleet_err_valid((fleet_err)FLEET_CODE_IO)); /* no layer */
	assert_false(fleet_err_valid(0x01000000u | FLEET_E_IO));  /* reserved bits */
	assert_string_equal(fleet_err_str(0x01000000u | FLEET_E_IO), "unknown-error");
	assert_string_equal(fleet_err_layer_str(FLEET_ERR(99, FLEET_CODE_IO)), "unknown");
}

static void blame_is_the_inputs_only_for_input_codes(void **state)
{
	(void)state;
	assert_true(fleet_err_blames_input(FLEET_E_VERIFY));
	assert_true(fleet_err_blames_input(FLEET_E_MALFORMED));
	assert_true(fleet_err_blames_input(FLEET_E_TRUNCATED));
	assert_true(fleet_err_blames_input(FLEET_E_TOO_LARGE));
	assert_true(fleet_err_blames_input(FLEET_E_UNSUPPORTED));
	assert_true(fleet_err_blames_input(FLEET_STORE_E_EK_MISMATCH));
	assert_false(fleet_err_blames_input(FLEET_OK));
	assert_false(fleet_err_blames_input(FLEET_E_NOMEM));
	assert_false(fleet_err_blames_input(FLEET_E_CRYPTO));
	assert_false(fleet_err_blames_input(FLEET_E_IO));
	assert_false(fleet_err_blames_input(FLEET_E_INVALID_ARG));
	assert_false(fleet_err_blames_input(FLEET_STORE_E_BUSY));
	assert_false(fleet_err_blames_input(FLEET_INV_UNAVAILABLE));
	assert_false(fleet_err_blames_input(FLEET_INV_NOMEM));
	/* a refusal of our credentials, or a create of what exists, is not
	 * the input's fault */
	assert_false(fleet_err_blames_input(FLEET_KUBE_E_AUTH));
	assert_false(fleet_err_blames_input(FLEET_KUBE_E_EXISTS));
	assert_true(fleet_err_blames_input(FLEET_KUBE_E_MALFORMED));
}

static void decisions_are_told_apart_by_outcome(void **state)
{
	(void)state;
	struct fleet_decision d = fleet_decide(FLEET_OK, NULL);
	assert_int_equal(d.outcome, FLEET_PASSED);
	assert_null(d.reason);

	d = fleet_decide(FLEET_E_VERIFY, "proof-invalid");
	assert_int_equal(d.outcome, FLEET_REFUSED);
	assert_string_equal(d.reason, "proof-invalid");
	assert_int_equal(d.err, FLEET_E_VERIFY);

	/* A refusal always names a reason. */
	d = fleet_decide(FLEET_E_MALFORMED, NULL);
	assert_int_equal(d.outcome, FLEET_REFUSED);
	assert_string_equal(d.reason, "malformed");

	/* Out of memory after a check set its reason is this side's trouble:
	 * a failure, never a refusal of the machine. */
	d = fleet_decide(FLEET_E_NOMEM, "ek-chain-untrusted");
	assert_int_equal(d.outcome, FLEET_FAILED);
	assert_null(d.reason);
	assert_int_equal(d.err, FLEET_E_NOMEM);
	d = fleet_decide(FLEET_E_CRYPTO, NULL);
	assert_int_equal(d.outcome, FLEET_FAILED);

	/* A check that named a reason and then said yes is not a pass. */
	d = fleet_decide(FLEET_OK, "session-state");
	assert_int_equal(d.outcome, FLEET_REFUSED);
	assert_string_equal(d.reason, "session-state");

	/* A decision never made is none of the three. */
	struct fleet_decision none;
	memset(&none, 0, sizeof(none));
	assert_int_not_equal(none.outcome, FLEET_PASSED);
	assert_int_not_equal(none.outcome, FLEET_REFUSED);
	assert_int_not_equal(none.outcome, FLEET_FAILED);
}

static void context_carries_errno(void **state)
{
	(void)state;
	struct fleet_errctx ec;
	char msg[512];
	memset(&ec, 0, sizeof(ec));
	fleet_err e = fleet_errctx_errno(&ec, FLEET_E_IO, ENOENT, "opening %s", "the CA");
	assert_int_equal(e, FLEET_E_IO);
	assert_int_equal(ec.err, FLEET_E_IO);
	assert_int_equal(ec.sys_errno, ENOENT);
	fleet_errctx_format(&ec, e, msg, sizeof(msg));
	assert_string_equal(msg, "io-error: opening the CA: No such file or directory");
	/* The next setter starts afresh: no errno, reason or OpenSSL text left over. */
	ec.reason = "symlink";
	fleet_errctx_set(&ec, FLEET_E_TRUNCATED, 7, "short");
	assert_int_equal(ec.sys_errno, 0);
	assert_null(ec.reason);
	fleet_errctx_format(&ec, FLEET_E_TRUNCATED, msg, sizeof(msg));
	assert_string_equal(msg, "truncated at byte 7: short");
	/* A text input's place. */
	fleet_errctx_msg(&ec, FLEET_E_MALFORMED, "unknown key");
	ec.line = 3;
	ec.column = 5;
	fleet_errctx_format(&ec, FLEET_E_MALFORMED, msg, sizeof(msg));
	assert_string_equal(msg, "malformed at line 3, column 5: unknown key");
	fleet_errctx_msg(&ec, FLEET_E_MALFORMED, "x");
	assert_int_equal(ec.line, 0); /* cleared by the next setter */
	/* A NULL context is allowed: the setters only return the code. */
	assert_int_equal(fleet_errctx_errno(NULL, FLEET_E_IO, EIO, "x"), FLEET_E_IO);
}

static void context_takes_and_empties_the_openssl_queue(void **state)
{
	(void)state;
	struct fleet_errctx ec;
	memset(&ec, 0, sizeof(ec));
	const unsigned char junk[] = {0x30, 0x03, 0x02, 0x01};
	const unsigned char *p = junk;
	ERR_clear_error();
	assert_null(d2i_X509(NULL, &p, sizeof(junk)));
	assert_int_not_equal(ERR_peek_error(), 0);
	fleet_errctx_openssl(&ec, FLEET_E_CRYPTO, "parsing a certificate");
	assert_int_equal(ERR_peek_error(), 0); /* emptied: nothing left for a later failure */
	assert_true(strncmp(ec.ossl, "error:", 6) == 0);
	char msg[512];
	fleet_errctx_format(&ec, FLEET_E_CRYPTO, msg, sizeof(msg));
	assert_non_null(strstr(msg, "crypto-error: parsing a certificate (openssl: error:"));
	/* An empty queue leaves the reason empty. */
	fleet_errctx_openssl(&ec, FLEET_E_CRYPTO, "again");
	assert_string_equal(ec.ossl, "");
	/* Without a context the queue is still emptied. */
	p = junk;
	assert_null(d2i_X509(NULL, &p, sizeof(junk)));
	fleet_errctx_openssl(NULL, FLEET_E_CRYPTO, "x");
	assert_int_equal(ERR_peek_error(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(layer_and_code_are_two_fields),
		cmocka_unit_test(every_code_has_one_string),
		cmocka_unit_test(blame_is_the_inputs_only_for_input_codes),
		cmocka_unit_test(decisions_are_told_apart_by_outcome),
		cmocka_unit_test(context_carries_errno),
		cmocka_unit_test(context_takes_and_empties_the_openssl_queue),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
