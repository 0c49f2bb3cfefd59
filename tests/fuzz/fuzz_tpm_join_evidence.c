/*
 * fuzz_tpm_join_evidence.c: every decoder of lib/tpm_join_evidence.h on
 * arbitrary bytes, and the AK statement's parser.
 *
 * Input: [kind:1][bytes]. kind % 3 selects: 0 the evidence (either round),
 * 1 the challenge, 2 a urn:bc:tpm-ak: statement (NUL-terminated copy).
 *
 * What must hold (TE1, TE2, TE4): a refusal names its field (ec.detail is
 * never empty) and leaves OpenSSL's queue empty; an accepted message
 * encodes again, and that encoding decodes again to the same bytes; an
 * accepted statement writes back to exactly its input.
 *
 * Seeds (tests/fuzz/corpus/fuzz_tpm_join_evidence/): round 1 with and
 * without an EK certificate, round 2 with and without node_key and
 * event_log, a challenge, a statement.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>

#include "lib/tpm_join_evidence.h"

static void same(const struct fleet_buf *a, const struct fleet_buf *b)
{
	if (a->len != b->len || memcmp(a->data, b->data, a->len) != 0)
		abort();
}

#define MESSAGE(type, fn, body, len)                                                      \
	do {                                                                              \
		struct type m1_, m2_;                                                     \
		struct fleet_errctx ec_ = {0};                                            \
		struct fleet_buf b1_, b2_;                                                \
		fb_init(&b1_);                                                            \
		fb_init(&b2_);                                                            \
		if (fn##_decode(body, len, &m1_, &ec_) != FLEET_OK) {                     \
			if (ec_.detail[0] == '\0' || ERR_peek_error() != 0)               \
				abort();                                                  \
			break;                                                            \
		}                                                                         \
		if (fn##_encode(&m1_, &b1_) != FLEET_OK ||                                \
		    fn##_decode(b1_.data, b1_.len, &m2_, &ec_) != FLEET_OK ||             \
		    fn##_encode(&m2_, &b2_) != FLEET_OK)                                  \
			abort();                                                          \
		same(&b1_, &b2_);                                                         \
		fn##_free(&m1_);                                                          \
		fn##_free(&m2_);                                                          \
		fb_free(&b1_);                                                            \
		fb_free(&b2_);                                                            \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const uint8_t *body = data + 1;
	size_t len = size - 1;
	switch (data[0] % 3) {
	case 0:
		MESSAGE(fleet_tpm_evidence, fleet_tpm_evidence, body, len);
		break;
	case 1:
		MESSAGE(fleet_tpm_challenge, fleet_tpm_challenge, body, len);
		break;
	default: {
		char s[FLEET_TPM_AK_URI_MAX + 2], back[FLEET_TPM_AK_URI_MAX + 1];
		uint8_t name[2 + 64];
		size_t n = 0, k = len < sizeof(s) - 1 ? len : sizeof(s) - 1;
		memcpy(s, body, k);
		s[k] = '\0';
		if (fleet_tpm_ak_uri_parse(s, name, sizeof(name), &n) != FLEET_OK)
			break;
		if (fleet_tpm_ak_uri(name, n, back, sizeof(back)) != FLEET_OK || strcmp(back, s))
			abort();
	}
	}
	return 0;
}
