/*
 * fuzz_config_query.c: GET /config's query rule
 * (fleetd/provision/deliver.h, fleet_deliver_parse_query). The input is a
 * query string, split as libmicrohttpd splits one (at '&', then at the
 * first '='; a key without '=' has no value), at most FLEET_HTTP_MAX_ARGS
 * arguments with the rest flagged. Whatever the bytes, the parser returns,
 * and what it accepts is exactly one argument "code" of 64 lowercase hex
 * digits whose bytes it decoded.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fleetd/provision/deliver.h"
#include "lib/hex.h"

#define MAX_ARGS 8

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 4096)
		return 0;
	char *q = malloc(size + 1);
	if (!q)
		return 0;
	memcpy(q, data, size);
	q[size] = '\0';
	struct fleet_deliver_arg args[MAX_ARGS];
	size_t n = 0;
	bool more = false;
	for (char *p = q, *next; p && *p; p = next) {
		next = strchr(p, '&');
		if (next)
			*next++ = '\0';
		if (!*p)
			continue; /* libmicrohttpd skips an empty piece */
		if (n == MAX_ARGS) {
			more = true;
			break;
		}
		char *eq = strchr(p, '=');
		if (eq)
			*eq++ = '\0';
		args[n++] = (struct fleet_deliver_arg){p, eq};
	}
	uint8_t code[32];
	memset(code, 0xa5, sizeof(code));
	if (fleet_deliver_parse_query(args, n, more, code) == FLEET_OK) {
		char back[65];
		fleet_hex_encode(code, 32, back);
		if (more || n != 1 || strcmp(args[0].key, "code") != 0 || !args[0].value ||
		    strcmp(args[0].value, back) != 0)
			abort();
	}
	free(q);
	return 0;
}
