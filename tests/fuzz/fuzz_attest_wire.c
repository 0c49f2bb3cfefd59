/*
 * fuzz_attest_wire.c: every decoder of the attestation protocol
 * (lib/attest_wire.h) on arbitrary bytes.
 *
 * Input: [kind:1][body]. kind % 8 selects the decoder: 0 intake, 1 intake
 * reply, 2 answer, 3 verdict, 4 confirm, 5 confirm reply, 6 network
 * report, 7 LDevID request.
 *
 * What must hold: a refusal names its field (ec.detail is never empty);
 * an accepted message encodes again, and that encoding decodes again and
 * encodes to the same bytes (one spelling per message, nothing the decoder
 * accepts that the encoder cannot write).
 *
 * Seeds (tests/fuzz/corpus/fuzz_attest_wire/) are valid messages of each
 * kind, written by this code's encoders, with the kind byte in front.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/attest_wire.h"

static void same(const struct fleet_buf *a, const struct fleet_buf *b)
{
	if (a->len != b->len || memcmp(a->data, b->data, a->len) != 0)
		abort();
}

#define MESSAGE(type, body, len)                                                      \
	do {                                                                          \
		struct fleet_wire_##type m1_, m2_;                                    \
		struct fleet_errctx ec_ = {0};                                        \
		struct fleet_buf b1_, b2_;                                            \
		fb_init(&b1_);                                                        \
		fb_init(&b2_);                                                        \
		if (fleet_wire_##type##_decode(body, len, &m1_, &ec_) != FLEET_OK) {  \
			if (ec_.detail[0] == '\0')                                    \
				abort();                                              \
			break;                                                        \
		}                                                                     \
		if (fleet_wire_##type##_encode(&m1_, &b1_) != FLEET_OK ||             \
		    fleet_wire_##type##_decode(b1_.data, b1_.len, &m2_, &ec_) != FLEET_OK || \
		    fleet_wire_##type##_encode(&m2_, &b2_) != FLEET_OK)               \
			abort();                                                      \
		same(&b1_, &b2_);                                                     \
		fleet_wire_##type##_free(&m1_);                                       \
		fleet_wire_##type##_free(&m2_);                                       \
		fb_free(&b1_);                                                        \
		fb_free(&b2_);                                                        \
	} while (0)

#define DOCUMENT(type, body, len)                                                     \
	do {                                                                          \
		struct fleet_##type d1_, d2_;                                         \
		struct fleet_wire_bytes w_ = {(uint8_t *)(body), len};                \
		struct fleet_errctx ec_ = {0};                                        \
		struct fleet_buf b_;                                                  \
		if (fleet_##type##_parse(&w_, &d1_, &ec_) != FLEET_OK) {              \
			if (ec_.detail[0] == '\0')                                    \
				abort();                                              \
			break;                                                        \
		}                                                                     \
		fb_init(&b_);                                                         \
		if (fleet_##type##_encode(&d1_, &b_) != FLEET_OK)                     \
			abort();                                                      \
		w_.data = b_.data;                                                    \
		w_.len = b_.len;                                                      \
		if (fleet_##type##_parse(&w_, &d2_, &ec_) != FLEET_OK ||              \
		    memcmp(&d1_, &d2_, sizeof(d1_)) != 0)                             \
			abort();                                                      \
		fb_free(&b_);                                                         \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *body;
	size_t len;

	if (size < 1)
		return 0;
	body = data + 1;
	len = size - 1;
	switch (data[0] % 8) {
	case 0: MESSAGE(intake, body, len); break;
	case 1: MESSAGE(intake_reply, body, len); break;
	case 2: MESSAGE(answer, body, len); break;
	case 3: MESSAGE(verdict, body, len); break;
	case 4: MESSAGE(confirm, body, len); break;
	case 5: MESSAGE(confirm_reply, body, len); break;
	case 6: DOCUMENT(network_report, body, len); break;
	case 7: DOCUMENT(ldevid_request, body, len); break;
	}
	return 0;
}
