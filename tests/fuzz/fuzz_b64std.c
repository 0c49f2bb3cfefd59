/*
 * fuzz_b64std.c: standard base64 as Kubernetes serialises bytes (a CSR's
 * spec.request, its status.certificate), lib/attest_b64.c
 * fleet_b64std_decode. Whatever the bytes, the decoder returns within its
 * cap, and what it accepts is the one canonical spelling of what it
 * decoded: encoded again (base64url, then the standard alphabet and its
 * padding) it gives the input back.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/attest_wire.h"
#include "lib/buf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 8192)
		return 0;
	struct fleet_wire_bytes w = {0};
	fleet_err e = fleet_b64std_decode((const char *)data, size, 4096, &w);
	if (e != FLEET_OK) {
		if (w.data)
			abort(); /* nothing is handed out on a refusal */
		return 0;
	}
	if (w.len > 4096)
		abort();
	struct fleet_buf b;
	fb_init(&b);
	if (fleet_b64url_encode(w.data, w.len, &b) != FLEET_OK)
		abort();
	while (b.len % 4)
		fb_put_u8(&b, '=');
	for (size_t i = 0; i < b.len; i++)
		if (b.data[i] == '-')
			b.data[i] = '+';
		else if (b.data[i] == '_')
			b.data[i] = '/';
	if (b.len != size || (size && memcmp(b.data, data, size) != 0))
		abort(); /* accepted a spelling that is not the canonical one */
	fb_free(&b);
	free(w.data);
	return 0;
}
