/*
 * fuzz_join_evidence.c: every decoder of lib/join_evidence.h on arbitrary
 * bytes.
 *
 * Input: [kind:1][bytes]. kind % 4 selects the decoder: 0 x509pop evidence,
 * 1 a signed discovery assertion (whose body, once accepted, also goes
 * through the body's decoder, as an attestor's would after verifying it),
 * 2 an assertion's body, 3 a renew request.
 *
 * What must hold (JE1, JE3): a refusal names its field (ec.detail is never
 * empty) and leaves OpenSSL's queue empty; an accepted message encodes
 * again, and that encoding decodes again and encodes to the same bytes.
 *
 * Seeds (tests/fuzz/corpus/fuzz_join_evidence/): a valid message of each
 * kind with the kind byte in front: x509pop with one and with two
 * certificates, a signed assertion, a full and a least body, a renew
 * request.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>

#include "lib/join_evidence.h"

static void same(const struct fleet_buf *a, const struct fleet_buf *b)
{
	if (a->len != b->len || memcmp(a->data, b->data, a->len) != 0)
		abort();
}

/* type: the struct; fn: the functions' stem (fn_encode, fn_decode); fr:
 * its free function; then: a statement run on an accepted message (m1_). */
#define MESSAGE(type, fn, fr, body, len, then)                                              \
	do {                                                                                \
		struct type m1_, m2_;                                                       \
		struct fleet_errctx ec_ = {0};                                              \
		struct fleet_buf b1_, b2_;                                                  \
		fb_init(&b1_);                                                              \
		fb_init(&b2_);                                                              \
		if (fn##_decode(body, len, &m1_, &ec_) != FLEET_OK) {                       \
			if (ec_.detail[0] == '\0' || ERR_peek_error() != 0)                 \
				abort();                                                    \
			break;                                                              \
		}                                                                           \
		if (fn##_encode(&m1_, &b1_) != FLEET_OK ||                                  \
		    fn##_decode(b1_.data, b1_.len, &m2_, &ec_) != FLEET_OK ||               \
		    fn##_encode(&m2_, &b2_) != FLEET_OK)                                    \
			abort();                                                            \
		same(&b1_, &b2_);                                                           \
		then;                                                                       \
		fr(&m1_);                                                                   \
		fr(&m2_);                                                                   \
		fb_free(&b1_);                                                              \
		fb_free(&b2_);                                                              \
	} while (0)

/* The body has no byte fields: nothing to free. */
static void body_free(struct fleet_discovery_assertion *m)
{
	(void)m;
}

static void body_check(const uint8_t *body, size_t len)
{
	MESSAGE(fleet_discovery_assertion, fleet_discovery_body, body_free, body, len, (void)0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const uint8_t *msg = data + 1;
	size_t len = size - 1;
	switch (data[0] % 4) {
	case 0:
		MESSAGE(fleet_x509pop_evidence, fleet_x509pop, fleet_x509pop_free, msg, len,
			(void)0);
		break;
	case 1:
		MESSAGE(fleet_discovery_signed, fleet_discovery_signed, fleet_discovery_signed_free,
			msg, len, body_check(m1_.body.data, m1_.body.len));
		break;
	case 2:
		body_check(msg, len);
		break;
	default:
		MESSAGE(fleet_renew_request, fleet_renew_request, fleet_renew_request_free, msg, len,
			(void)0);
		break;
	}
	return 0;
}
