/*
 * fuzz_spire_nodes_head.c: the writer's bounded reader of a previous
 * spire-nodes.json's head (fleet_spire_nodes_head, lib/spire_nodes_format.h),
 * which decides, with a byte comparison, whether a 12 MB file is decoded at
 * all. Whatever it reads must be exactly the encoder's head: the bytes up to
 * *body are the canonical head rebuilt from the values read, within the
 * first FLEET_SPIRE_HEAD_SCAN bytes, the serial within the format's range;
 * and when the decoder also accepts the whole input, it reads the very same
 * serial and time (so the writer's shortcut never disagrees with a decode).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/spire_nodes_format.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int64_t serial = -1, at = -1;
	size_t body = (size_t)-1;
	/* A copy of exactly size bytes: the reader must not look past them. */
	char *buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	bool ok = fleet_spire_nodes_head(buf, size, &serial, &at, &body);
	if (!ok) {
		if (serial != -1 || at != -1 || body != (size_t)-1)
			abort(); /* nothing set on a refusal */
		free(buf);
		return 0;
	}
	if (body > size || body > FLEET_SPIRE_HEAD_SCAN || serial < 0 ||
	    serial > FLEET_SPIRE_SERIAL_MAX)
		abort();
	char t[21], head[FLEET_SPIRE_HEAD_SCAN + 1];
	if (!fleet_spire_time_format(at, t))
		abort();
	int n = snprintf(head, sizeof(head),
			 "{\n  \"version\": 1,\n  \"serial\": %lld,\n  \"generated_at\": \"%s\",\n",
			 (long long)serial, t);
	if (n < 0 || (size_t)n != body || memcmp(head, buf, body) != 0)
		abort();
	struct fleet_spire_nodes f;
	if (fleet_spire_nodes_decode(data, size, &f, NULL) == FLEET_OK) {
		if (f.serial != serial || f.generated_at != at)
			abort();
		fleet_spire_nodes_free(&f);
	}
	free(buf);
	return 0;
}
