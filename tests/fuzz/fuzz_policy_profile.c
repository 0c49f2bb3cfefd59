/*
 * fuzz_policy_profile.c: the YAML profile parser, and every profile it
 * accepts evaluated once against a small fixed log, so odd-but-valid
 * profiles (sha1 banks, pins on PCR 23, empty allow-lists) reach the
 * evaluator too.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/eventlog.h"
#include "lib/eventlog_build.h"
#include "policy/evaluate.h"
#include "policy/profile.h"

static struct fleet_evlog *fixed_log;
static struct fleet_pcr_replay fixed_replay;

static void build_fixed_log(void)
{
	static const uint16_t algs[] = {FLEET_ALG_SHA1, FLEET_ALG_SHA256};
	static const uint8_t sep[4] = {0, 0, 0, 0};
	static const uint8_t guid[16] = {0x61, 0xdf, 0xe4, 0x8b, 0xca, 0x93, 0xd2, 0x11,
					 0xaa, 0x0d, 0x00, 0xe0, 0x98, 0x03, 0x2b, 0x8c};
	struct fleet_evlog_builder *b;
	struct fleet_buf var, raw;
	struct fleet_errctx ec;
	uint8_t on = 1;
	fb_init(&var);
	fb_init(&raw);
	if (fleet_evlog_builder_new(algs, 2, &b))
		abort();
	fleet_evlog_efi_variable_data(guid, "SecureBoot", &on, 1, &var);
	fleet_evlog_builder_add(b, 0, FLEET_EV_S_CRTM_VERSION, "v1", 2);
	fleet_evlog_builder_add(b, 7, FLEET_EV_EFI_VARIABLE_DRIVER_CONFIG, var.data, var.len);
	for (uint32_t pcr = 0; pcr <= 7; pcr++)
		fleet_evlog_builder_add(b, pcr, FLEET_EV_SEPARATOR, sep, 4);
	fleet_evlog_builder_add(b, 7, FLEET_EV_EFI_VARIABLE_AUTHORITY, var.data, var.len);
	fleet_evlog_builder_add_measured(b, 4, FLEET_EV_EFI_BOOT_SERVICES_APPLICATION, "app", 3,
					 "image", 5);
	if (fleet_evlog_builder_finish(b, &raw) || fleet_evlog_parse(raw.data, raw.len,
								       &fixed_log, &ec) ||
	    fleet_evlog_replay(fixed_log, &fixed_replay, &ec))
		abort();
	fleet_evlog_builder_free(b);
	fb_free(&var);
	fb_free(&raw);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!fixed_log)
		build_fixed_log();
	struct fleet_profile *p;
	struct fleet_errctx err;
	if (fleet_profile_parse(data, size, &p, &err) != FLEET_OK) {
		/* The message is always a terminated string. */
		if (strnlen(err.detail, sizeof(err.detail)) == sizeof(err.detail))
			abort();
		return 0;
	}
	struct fleet_policy_input in = {.log = fixed_log, .replay = &fixed_replay,
					.bios_version = "v1", .renewal = true};
	struct fleet_verdict v;
	if (fleet_policy_evaluate(p, &in, &v) != FLEET_OK)
		abort();
	if (v.pass != (v.n_reasons == 0 && v.n_dropped == 0))
		abort();
	fleet_profile_free(p);
	return 0;
}
