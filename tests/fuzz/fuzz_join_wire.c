/*
 * fuzz_join_wire.c: every decoder of the join service's messages
 * (lib/join_wire.h) on arbitrary bytes.
 *
 * Input: [kind:1][bytes]. kind % 3 selects the decoder: 0 request, 1 body,
 * 2 envelope (whose body, once accepted, also goes through the body's
 * check, as a client's would after verifying it).
 *
 * What must hold (JW1, JW12): a refusal names its field (ec.detail is never
 * empty); an accepted message encodes again, and that encoding decodes
 * again and encodes to the same bytes.
 *
 * Seeds (tests/fuzz/corpus/fuzz_join_wire/): a valid message of each kind
 * with the kind byte in front: a full and a least request, a body of each
 * status, an envelope.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/join_wire.h"

static void same(const struct fleet_buf *a, const struct fleet_buf *b)
{
	if (a->len != b->len || memcmp(a->data, b->data, a->len) != 0)
		abort();
}

/* type: the struct; fn: the functions' stem; fr: its free function; then:
 * a statement run on an accepted message (m1_). */
#define MESSAGE(type, fn, fr, body, len, then)                                      \
	do {                                                                                \
		struct type m1_, m2_;                                                       \
		struct fleet_errctx ec_ = {0};                                              \
		struct fleet_buf b1_, b2_;                                                  \
		fb_init(&b1_);                                                              \
		fb_init(&b2_);                                                              \
		if (fn##_decode(body, len, &m1_, &ec_) != FLEET_OK) {                       \
			if (ec_.detail[0] == '\0')                                          \
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

static void body_check(const uint8_t *body, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const uint8_t *msg = data + 1;
	size_t len = size - 1;
	switch (data[0] % 3) {
	case 0:
		MESSAGE(fleet_join_request, fleet_join_request, fleet_join_request_free, msg, len,
			(void)0);
		break;
	case 1:
		body_check(msg, len);
		break;
	default:
		MESSAGE(fleet_join_envelope, fleet_join_envelope, fleet_join_envelope_free, msg, len,
			body_check(m1_.body.data, m1_.body.len));
		break;
	}
	return 0;
}

static void body_check(const uint8_t *body, size_t len)
{
	MESSAGE(fleet_join_response, fleet_join_body, fleet_join_response_free, body, len, (void)0);
}
