/*
 * fuzz_reattest_wire.c: every decoder of the re-check messages
 * (lib/reattest_wire.h) on arbitrary bytes.
 *
 * Input: [kind:1][body]. kind % 4 selects the decoder: 0 nonce request,
 * 1 nonce reply, 2 check, 3 check reply.
 *
 * What must hold: a refusal names its field (ec.detail is never empty); an
 * accepted message encodes again, and that encoding decodes again and
 * encodes to the same bytes.
 *
 * Seeds (tests/fuzz/corpus/fuzz_reattest_wire/): a valid message of each
 * kind with the kind byte in front, a renewal's check (with "ldevid") and
 * a "renewed" reply with both certificates among them.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/reattest_wire.h"

static void same(const struct fleet_buf *a, const struct fleet_buf *b)
{
	if (a->len != b->len || memcmp(a->data, b->data, a->len) != 0)
		abort();
}

#define MESSAGE(type, body, len)                                                          \
	do {                                                                              \
		struct fleet_reattest_##type m1_, m2_;                                    \
		struct fleet_errctx ec_ = {0};                                            \
		struct fleet_buf b1_, b2_;                                                \
		fb_init(&b1_);                                                            \
		fb_init(&b2_);                                                            \
		if (fleet_reattest_##type##_decode(body, len, &m1_, &ec_) != FLEET_OK) {  \
			if (ec_.detail[0] == '\0')                                        \
				abort();                                                  \
			break;                                                            \
		}                                                                         \
		if (fleet_reattest_##type##_encode(&m1_, &b1_) != FLEET_OK ||             \
		    fleet_reattest_##type##_decode(b1_.data, b1_.len, &m2_, &ec_) !=      \
			    FLEET_OK ||                                                   \
		    fleet_reattest_##type##_encode(&m2_, &b2_) != FLEET_OK)               \
			abort();                                                          \
		same(&b1_, &b2_);                                                         \
		fleet_reattest_##type##_free(&m1_);                                       \
		fleet_reattest_##type##_free(&m2_);                                       \
		fb_free(&b1_);                                                            \
		fb_free(&b2_);                                                            \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const uint8_t *body = data + 1;
	size_t len = size - 1;
	switch (data[0] % 4) {
	case 0:
		MESSAGE(nonce_req, body, len);
		break;
	case 1:
		MESSAGE(nonce_reply, body, len);
		break;
	case 2:
		MESSAGE(check, body, len);
		break;
	default:
		MESSAGE(check_reply, body, len);
		break;
	}
	return 0;
}
