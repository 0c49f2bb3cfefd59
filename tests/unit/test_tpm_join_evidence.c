/*
 * test_tpm_join_evidence.c: the tpm attestor's messages (lib/
 * tpm_join_evidence.h, TE1..TE5), one test per rule, named after it; the
 * fuzz target's seeds are checked to be what their names say.
 */
#include "tests/testutil.h"
#include "tests/unit/wire_test.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lib/file_read.h"
#include "lib/join_evidence.h"
#include "lib/tpm_alg.h"
#include "lib/tpm_join_evidence.h"

static bool all_zero(const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

static void round1(struct fleet_tpm_evidence *ev, bool cert)
{
	memset(ev, 0, sizeof(*ev));
	ev->round = 1;
	ev->ek_public = blob(90, 1);
	if (cert)
		ev->ek_cert = blob(700, 2);
	ev->ak_public = blob(88, 3);
}

static void round2(struct fleet_tpm_evidence *ev, size_t n_pcrs, bool node_key, bool log)
{
	memset(ev, 0, sizeof(*ev));
	ev->round = 2;
	ev->state = blob(200, 4);
	ev->secret = blob(32, 5);
	ev->quote = blob(145, 6);
	ev->quote_sig = blob(72, 7);
	ev->n_pcr_values = n_pcrs;
	for (size_t i = 0; i < n_pcrs; i++)
		ev->pcr_values[i] = blob(32, (uint8_t)(8 + i));
	if (log)
		ev->event_log = blob(3000, 9);
	if (node_key) {
		ev->has_node_key = true;
		ev->node_key.key_public = blob(88, 10);
		ev->node_key.certify_info = blob(150, 11);
		ev->node_key.signature = blob(72, 12);
	}
}

static fleet_err decode(const char *s, struct fleet_tpm_evidence *out, struct fleet_errctx *ec)
{
	return fleet_tpm_evidence_decode((const uint8_t *)s, strlen(s), out, ec);
}

/* TE2: each shape encodes, decodes to the same fields, and re-encodes to
 * the same bytes. */
static void test_TE2_round_trips(void **state)
{
	(void)state;
	struct fleet_tpm_evidence shapes[4], back;
	struct fleet_errctx ec = {0};
	round1(&shapes[0], true);
	round1(&shapes[1], false);
	round2(&shapes[2], 8, true, true);
	round2(&shapes[3], 1, false, false);
	for (int i = 0; i < 4; i++) {
		struct fleet_buf a, b;
		fb_init(&a);
		fb_init(&b);
		assert_int_equal(fleet_tpm_evidence_encode(&shapes[i], &a), FLEET_OK);
		if (fleet_tpm_evidence_decode(a.data, a.len, &back, &ec))
			fail_msg("shape %d: %s", i, ec.detail);
		assert_int_equal(back.round, shapes[i].round);
		bytes_eq(&back.ek_public, &shapes[i].ek_public);
		bytes_eq(&back.ek_cert, &shapes[i].ek_cert);
		bytes_eq(&back.state, &shapes[i].state);
		bytes_eq(&back.secret, &shapes[i].secret);
		assert_int_equal(back.n_pcr_values, shapes[i].n_pcr_values);
		for (size_t k = 0; k < back.n_pcr_values; k++)
			bytes_eq(&back.pcr_values[k], &shapes[i].pcr_values[k]);
		bytes_eq(&back.event_log, &shapes[i].event_log);
		assert_int_equal(back.has_node_key, shapes[i].has_node_key);
		bytes_eq(&back.node_key.certify_info, &shapes[i].node_key.certify_info);
		assert_int_equal(fleet_tpm_evidence_encode(&back, &b), FLEET_OK);
		same_bytes(&a, &b);
		fleet_tpm_evidence_free(&back);
		fleet_tpm_evidence_free(&shapes[i]);
		fb_free(&a);
		fb_free(&b);
	}
}

/* TE1: one round's keys only, v 1, round 1 or 2, known keys only. */
static void test_TE1_round_keys(void **state)
{
	(void)state;
	struct fleet_tpm_evidence ev;
	struct fleet_errctx ec = {0};
	assert_int_equal(decode("{\"v\":1,\"round\":1,\"ek_public\":\"AAAA\",\"ak_public\":\"AAAA\"}",
				&ev, &ec),
			 FLEET_OK);
	fleet_tpm_evidence_free(&ev);
	/* a round-2 key in round 1 */
	assert_int_equal(decode("{\"v\":1,\"round\":1,\"ek_public\":\"AAAA\",\"ak_public\":\"AAAA\","
				"\"secret\":\"AAAA\"}",
				&ev, &ec),
			 FLEET_E_MALFORMED);
	assert_true(all_zero(&ev, sizeof(ev)));
	assert_int_equal(decode("{\"v\":1,\"round\":3,\"ek_public\":\"AAAA\",\"ak_public\":\"AAAA\"}",
				&ev, &ec),
			 FLEET_E_MALFORMED);
	assert_int_equal(decode("{\"v\":2,\"round\":1,\"ek_public\":\"AAAA\",\"ak_public\":\"AAAA\"}",
				&ev, &ec),
			 FLEET_E_MALFORMED);
	assert_int_equal(decode("{\"v\":1,\"round\":1,\"ek_public\":\"AAAA\",\"ak_public\":\"AAAA\","
				"\"extra\":1}",
				&ev, &ec),
			 FLEET_E_MALFORMED);
	/* round 1 needs its AK */
	assert_int_equal(decode("{\"v\":1,\"round\":1,\"ek_public\":\"AAAA\"}", &ev, &ec),
			 FLEET_E_MALFORMED);
	assert_non_null(strstr(ec.detail, "ak_public"));
	/* node_key's own keys only */
	assert_int_equal(decode("{\"v\":1,\"round\":2,\"state\":\"AAAA\",\"secret\":\"AAAA\","
				"\"quote\":\"AAAA\",\"quote_sig\":\"AAAA\",\"pcr_values\":[\"AAAA\"],"
				"\"node_key\":{\"public\":\"AAAA\",\"certify_info\":\"AAAA\","
				"\"signature\":\"AAAA\",\"x\":\"AAAA\"}}",
				&ev, &ec),
			 FLEET_E_MALFORMED);
}

/* TE1: the caps, TOO_LARGE over, MALFORMED under. */
static void test_TE1_caps(void **state)
{
	(void)state;
	struct fleet_tpm_evidence ev;
	struct fleet_buf b;
	struct fleet_errctx ec = {0};
	fb_init(&b);
	/* 25 PCR values */
	round2(&ev, 8, false, false);
	struct fleet_buf ok;
	fb_init(&ok);
	assert_int_equal(fleet_tpm_evidence_encode(&ev, &ok), FLEET_OK);
	fleet_tpm_evidence_free(&ev);
	json_t *o = json_loadb((const char *)ok.data, ok.len, 0, NULL);
	json_t *arr = json_object_get(o, "pcr_values");
	while (json_array_size(arr) <= FLEET_TPM_MAX_PCRS)
		json_array_append(arr, json_array_get(arr, 0));
	char *s = json_dumps(o, JSON_COMPACT);
	assert_int_equal(decode(s, &ev, &ec), FLEET_E_TOO_LARGE);
	free(s);
	/* an empty list */
	json_array_clear(arr);
	s = json_dumps(o, JSON_COMPACT);
	assert_int_equal(decode(s, &ev, &ec), FLEET_E_MALFORMED);
	free(s);
	json_decref(o);
	/* a secret over FLEET_TPM_MAX_SECRET */
	char *big = with_b64("{\"v\":1,\"round\":2,\"state\":\"AAAA\",\"secret\":\"",
			     FLEET_TPM_MAX_SECRET + 1,
			     "\",\"quote\":\"AAAA\",\"quote_sig\":\"AAAA\",\"pcr_values\":[\"AAAA\"]}");
	assert_int_equal(decode(big, &ev, &ec), FLEET_E_TOO_LARGE);
	free(big);
	/* a digest over FLEET_DIGEST_MAX */
	big = with_b64("{\"v\":1,\"round\":2,\"state\":\"AAAA\",\"secret\":\"AAAA\",\"quote\":\"AAAA\","
		       "\"quote_sig\":\"AAAA\",\"pcr_values\":[\"",
		       FLEET_DIGEST_MAX + 1, "\"]}");
	assert_int_equal(decode(big, &ev, &ec), FLEET_E_TOO_LARGE);
	free(big);
	/* a public area over FLEET_TPM_MAX_PUBLIC */
	big = with_b64("{\"v\":1,\"round\":1,\"ek_public\":\"", FLEET_TPM_MAX_PUBLIC + 1,
		       "\",\"ak_public\":\"AAAA\"}");
	assert_int_equal(decode(big, &ev, &ec), FLEET_E_TOO_LARGE);
	free(big);
	/* the whole attestation */
	uint8_t *huge = malloc(FLEET_JOIN_MAX_ATTESTATION + 1);
	memset(huge, ' ', FLEET_JOIN_MAX_ATTESTATION + 1);
	assert_int_equal(fleet_tpm_evidence_decode(huge, FLEET_JOIN_MAX_ATTESTATION + 1, &ev, &ec),
			 FLEET_E_TOO_LARGE);
	free(huge);
	fb_free(&ok);
	fb_free(&b);
}

/* TE2: an encoder refuses what its decoder would, out unchanged. */
static void test_TE2_encoders_refuse(void **state)
{
	(void)state;
	struct fleet_tpm_evidence ev;
	struct fleet_buf out;
	fb_init(&out);
	round2(&ev, 8, true, false);
	free(ev.secret.data);
	ev.secret = blob(FLEET_TPM_MAX_SECRET + 1, 1);
	assert_int_equal(fleet_tpm_evidence_encode(&ev, &out), FLEET_E_INVALID_ARG);
	assert_int_equal(out.len, 0);
	fleet_tpm_evidence_free(&ev);
	round1(&ev, true);
	ev.round = 3;
	assert_int_equal(fleet_tpm_evidence_encode(&ev, &out), FLEET_E_INVALID_ARG);
	fleet_tpm_evidence_free(&ev);
	struct fleet_tpm_challenge ch = {0};
	ch.id_object = blob(68, 1);
	ch.enc_secret = blob(258, 2);
	ch.state = blob(100, 3);
	snprintf(ch.pcrs, sizeof(ch.pcrs), "sha256:0,1 7"); /* a space: no selection */
	assert_int_equal(fleet_tpm_challenge_encode(&ch, &out), FLEET_E_INVALID_ARG);
	snprintf(ch.pcrs, sizeof(ch.pcrs), "sha256:0,1,7");
	assert_int_equal(fleet_tpm_challenge_encode(&ch, &out), FLEET_OK);
	struct fleet_tpm_challenge back;
	struct fleet_errctx ec = {0};
	assert_int_equal(fleet_tpm_challenge_decode(out.data, out.len, &back, &ec), FLEET_OK);
	assert_string_equal(back.pcrs, "sha256:0,1,7");
	bytes_eq(&back.state, &ch.state);
	fleet_tpm_challenge_free(&back);
	fleet_tpm_challenge_free(&ch);
	fb_free(&out);
}

/* The renewal's key_attestation rides in the renew request (JE1 + TE1). */
static void test_renew_key_attestation(void **state)
{
	(void)state;
	struct fleet_renew_request rq = {0}, back;
	struct fleet_buf out;
	struct fleet_errctx ec = {0};
	fb_init(&out);
	rq.cert = blob(400, 1);
	rq.csr = blob(200, 2);
	rq.has_key_attestation = true;
	rq.key_attestation.ak_public = blob(88, 3);
	rq.key_attestation.cert.key_public = blob(88, 4);
	rq.key_attestation.cert.certify_info = blob(150, 5);
	rq.key_attestation.cert.signature = blob(72, 6);
	assert_int_equal(fleet_renew_request_encode(&rq, &out), FLEET_OK);
	assert_int_equal(fleet_renew_request_decode(out.data, out.len, &back, &ec), FLEET_OK);
	assert_true(back.has_key_attestation);
	bytes_eq(&back.key_attestation.ak_public, &rq.key_attestation.ak_public);
	bytes_eq(&back.key_attestation.cert.certify_info, &rq.key_attestation.cert.certify_info);
	fleet_renew_request_free(&back);
	/* one unknown key inside it refuses the request */
	assert_int_equal(fb_put(&out, "", 1), FLEET_OK);
	char *s = edited((const char *)out.data, "\"signature\"", "\"sig2\"");
	assert_int_equal(fleet_renew_request_decode((const uint8_t *)s, strlen(s), &back, &ec),
			 FLEET_E_MALFORMED);
	assert_true(all_zero(&back, sizeof(back)));
	free(s);
	/* an encoder with a broken attestation writes nothing */
	fb_reset(&out);
	rq.key_attestation.cert.signature.len = 0;
	assert_int_equal(fleet_renew_request_encode(&rq, &out), FLEET_E_INVALID_ARG);
	assert_int_equal(out.len, 0);
	rq.key_attestation.cert.signature.len = 72;
	fleet_renew_request_free(&rq);
	fb_free(&out);
}

/* TE3: SHA-256(secret || csr_sha256), a known answer. */
static void test_TE3_quote_nonce(void **state)
{
	(void)state;
	uint8_t secret[32], csr[32], out[32], buf[64], want[32];
	for (int i = 0; i < 32; i++) {
		secret[i] = (uint8_t)i;
		csr[i] = (uint8_t)(0xa0 + i);
	}
	memcpy(buf, secret, 32);
	memcpy(buf + 32, csr, 32);
	assert_int_equal(fleet_hash(FLEET_ALG_SHA256, buf, 64, want), FLEET_OK);
	assert_int_equal(fleet_tpm_quote_nonce(secret, 32, csr, out), FLEET_OK);
	assert_memory_equal(out, want, 32);
	/* the known answer, from sha256sum over the same 64 bytes */
	char hex[65];
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", out[i]);
	FILE *p = popen("printf '"
			"\\000\\001\\002\\003\\004\\005\\006\\007\\010\\011\\012\\013\\014\\015\\016\\017"
			"\\020\\021\\022\\023\\024\\025\\026\\027\\030\\031\\032\\033\\034\\035\\036\\037"
			"\\240\\241\\242\\243\\244\\245\\246\\247\\250\\251\\252\\253\\254\\255\\256\\257"
			"\\260\\261\\262\\263\\264\\265\\266\\267\\270\\271\\272\\273\\274\\275\\276\\277"
			"' | sha256sum",
			"r");
	char line[128] = "";
	assert_non_null(p);
	assert_non_null(fgets(line, sizeof(line), p));
	pclose(p);
	assert_memory_equal(line, hex, 64);
	assert_int_equal(fleet_tpm_quote_nonce(secret, 0, csr, out), FLEET_E_INVALID_ARG);
	assert_int_equal(fleet_tpm_quote_nonce(secret, FLEET_TPM_MAX_SECRET + 1, csr, out),
			 FLEET_E_INVALID_ARG);
}

/* TE4: the statement written and read back; every other spelling refused. */
static void test_TE4_ak_uri(void **state)
{
	(void)state;
	uint8_t name[34], back[66];
	char uri[FLEET_TPM_AK_URI_MAX + 1];
	size_t n;
	name[0] = 0x00;
	name[1] = 0x0b; /* SHA-256 */
	for (int i = 2; i < 34; i++)
		name[i] = (uint8_t)(0xf0 + (i & 15));
	assert_int_equal(fleet_tpm_ak_uri(name, 34, uri, sizeof(uri)), FLEET_OK);
	assert_int_equal(strlen(uri), strlen(FLEET_TPM_AK_URI_PREFIX) + 68);
	assert_int_equal(strncmp(uri, "urn:bc:tpm-ak:000b", 18), 0);
	assert_int_equal(fleet_tpm_ak_uri_parse(uri, back, sizeof(back), &n), FLEET_OK);
	assert_int_equal(n, 34);
	assert_memory_equal(back, name, 34);
	const char *bad[] = {
		"urn:bc:tpm-ak:",                         /* no name */
		"urn:bc:tpm-AK:000b00",                   /* another prefix */
		"urn:bc:tpm-ak:000B",                     /* upper case */
		"urn:bc:tpm-ak:000b0",                    /* odd */
		"urn:bc:tpm-ak:0004" "00112233445566778899aabbccddeeff00112233", /* SHA-1 */
		"urn:bc:tpm-ak:000b00",                   /* SHA-256 of 1 byte */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (fleet_tpm_ak_uri_parse(bad[i], back, sizeof(back), &n) != FLEET_E_MALFORMED)
			fail_msg("accepted %s", bad[i]);
	/* SHA-384 names are names too */
	uint8_t n384[50] = {0x00, 0x0c};
	assert_int_equal(fleet_tpm_ak_uri(n384, 50, uri, sizeof(uri)), FLEET_OK);
	assert_int_equal(fleet_tpm_ak_uri_parse(uri, back, sizeof(back), &n), FLEET_OK);
	assert_int_equal(n, 50);
	assert_int_equal(fleet_tpm_ak_uri(name, 33, uri, sizeof(uri)), FLEET_E_INVALID_ARG);
}

/* TE5: free wipes and zeroes; NULL and a zeroed struct are no-ops. */
static void test_TE5_free(void **state)
{
	(void)state;
	struct fleet_tpm_evidence ev;
	round2(&ev, 3, true, true);
	fleet_tpm_evidence_free(&ev);
	assert_true(all_zero(&ev, sizeof(ev)));
	fleet_tpm_evidence_free(&ev);
	fleet_tpm_evidence_free(NULL);
	fleet_tpm_challenge_free(NULL);
	fleet_tpm_key_attestation_free(NULL);
}

/* The fuzz target's seeds decode (the corpus is what its names say). */
static void test_corpus_seeds(void **state)
{
	(void)state;
	const char *ok[] = {"round1", "round1_uncertified", "round2", "round2_bare", "challenge"};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		char path[512];
		struct fleet_buf b;
		struct fleet_errctx ec = {0};
		fb_init(&b);
		snprintf(path, sizeof(path), "%s/tests/fuzz/corpus/fuzz_tpm_join_evidence/%s",
			 FLEET_SOURCE_DIR, ok[i]);
		assert_int_equal(fleet_file_read_data(path, 1 << 20, &b, &ec), FLEET_OK);
		fleet_err e;
		if (b.data[0] % 3 == 0) {
			struct fleet_tpm_evidence ev;
			e = fleet_tpm_evidence_decode(b.data + 1, b.len - 1, &ev, &ec);
			fleet_tpm_evidence_free(&ev);
		} else {
			struct fleet_tpm_challenge ch;
			e = fleet_tpm_challenge_decode(b.data + 1, b.len - 1, &ch, &ec);
			fleet_tpm_challenge_free(&ch);
		}
		if (e)
			fail_msg("seed %s: %s", ok[i], ec.detail);
		fb_free(&b);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_TE2_round_trips),    cmocka_unit_test(test_TE1_round_keys),
		cmocka_unit_test(test_TE1_caps),           cmocka_unit_test(test_TE2_encoders_refuse),
		cmocka_unit_test(test_renew_key_attestation), cmocka_unit_test(test_TE3_quote_nonce),
		cmocka_unit_test(test_TE4_ak_uri),         cmocka_unit_test(test_TE5_free),
		cmocka_unit_test(test_corpus_seeds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
