/*
 * fuzz_render_check.c: fleet_render_check (fleetd/provision/render.h) on
 * any bytes, as talosctl's output is to fleetd. It returns; it passes only
 * a configuration that holds every expected value.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fleetd/provision/render.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fleet_render_expect x;
	memset(&x, 0, sizeof(x));
	x.role = FLEET_ROLE_WORKER;
	strcpy(x.image_ref, "ghcr.io/folly/installer@sha256:0123456789abcdef0123456789abcdef"
			    "0123456789abcdef0123456789abcdef");
	x.disk_serial = "S4EVNF0M123456";
	x.token = "abcdef.0123456789abcdef";
	x.hostname = "w1";
	x.endpoint = "https://folly.lan:6443";
	struct fleet_errctx ec;
	memset(&ec, 0, sizeof(ec));
	fleet_err e = fleet_render_check(data, size, &x, &ec);
	if (e == FLEET_OK) {
		/* A pass must hold each value somewhere in the bytes. */
		if (!memmem(data, size, x.token, strlen(x.token)) ||
		    !memmem(data, size, x.disk_serial, strlen(x.disk_serial)) ||
		    !memmem(data, size, "sha256:0123456789abcdef", 23))
			abort();
	} else if (!ec.reason) {
		abort(); /* every refusal names its reason */
	}
	return 0;
}
