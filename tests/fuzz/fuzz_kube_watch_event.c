/*
 * fuzz_kube_watch_event.c: fleet_kube_watch_event_parse (fleetd/kube/
 * kube.h, K15) on any line, as an API server, or whatever answers in its
 * place, streams it. It returns; a success has a known type, an object,
 * and a resourceVersion K8 allows (or, for ERROR, a code); a refusal holds
 * no object.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fleetd/kube/kube.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fleet_kube_event ev;
	struct fleet_errctx ec;
	memset(&ec, 0, sizeof(ec));
	fleet_err e = fleet_kube_watch_event_parse((const char *)data, size, &ev, &ec);
	if (e == FLEET_OK) {
		if (!ev.object || !ev.type_str || ev.type < FLEET_KUBE_EV_ADDED ||
		    ev.type > FLEET_KUBE_EV_ERROR)
			abort();
		if (ev.type != FLEET_KUBE_EV_ERROR && !fleet_kube_rv_ok(ev.rv))
			abort();
		json_decref(ev.object);
	} else if (ev.object || ev.type || !fleet_err_valid(e)) {
		abort();
	}
	return 0;
}
