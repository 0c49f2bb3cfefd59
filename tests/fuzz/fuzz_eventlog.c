/*
 * fuzz_eventlog.c: the event log parser, replay, describe and JSON render
 * on arbitrary bytes. Beyond not crashing it checks what must hold for any
 * input: a refusal always names an offset inside the input (or the cap),
 * and every parsed event lies inside the input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/eventlog.h"

/* Types with a decoder, to run describe over the raw input as event data
 * too, so device paths and variables get fuzzed even when the log around
 * them would not parse. */
static const uint32_t decoded_types[] = {
	FLEET_EV_EFI_VARIABLE_BOOT,        FLEET_EV_EFI_BOOT_SERVICES_APPLICATION,
	FLEET_EV_EFI_PLATFORM_FIRMWARE_BLOB2, FLEET_EV_S_CRTM_VERSION,
	FLEET_EV_SEPARATOR,                FLEET_EV_NO_ACTION,
	FLEET_EV_EFI_ACTION,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char desc[512];
	struct fleet_evlog *log = NULL;
	struct fleet_errctx ec = {0};
	fleet_err e = fleet_evlog_parse(data, size, &log, &ec);
	if (e != FLEET_OK) {
		if (e != FLEET_E_NOMEM && (!ec.has_offset || (ec.offset > size &&
							       ec.offset != FLEET_EVLOG_MAX_SIZE)))
			abort();
	} else {
		for (size_t i = 0; i < log->n_events; i++) {
			const struct fleet_evlog_event *ev = &log->events[i];
			if (ev->offset >= size || ev->data < log->raw ||
			    (size_t)(ev->data - log->raw) + ev->data_len > log->raw_len)
				abort();
			fleet_evlog_describe(ev, desc, sizeof(desc));
			struct fleet_efi_var v;
			(void)fleet_evlog_efi_variable(ev, &v);
			(void)fleet_evlog_type_name(ev->type);
			(void)fleet_evlog_event_data_matches(ev);
			for (uint32_t k = 0; k < log->n_algs && k < FLEET_EVLOG_MAX_BANKS; k++) {
				enum fleet_evlog_bound bound;
				/* Only bound fields are given: an unbound name is
				 * never handed out. */
				if (fleet_evlog_efi_variable_bound(ev, log->algs[k].alg, &v,
								   &bound) == FLEET_OK &&
				    (bound == FLEET_EVLOG_BOUND_NONE ||
				     (bound != FLEET_EVLOG_BOUND_ALL && v.name[0])))
					abort();
			}
		}
		struct fleet_pcr_replay r;
		if (fleet_evlog_replay(log, &r, &ec) == FLEET_OK) {
			char *j = fleet_evlog_replay_json_str(&r, log->format);
			free(j);
		}
		fleet_evlog_free(log);
	}
	if (size <= UINT32_MAX) {
		for (size_t i = 0; i < sizeof(decoded_types) / sizeof(decoded_types[0]); i++) {
			struct fleet_evlog_event ev;
			memset(&ev, 0, sizeof(ev));
			ev.type = decoded_types[i];
			ev.data = data;
			ev.data_len = (uint32_t)size;
			fleet_evlog_describe(&ev, desc, sizeof(desc));
		}
	}
	return 0;
}
