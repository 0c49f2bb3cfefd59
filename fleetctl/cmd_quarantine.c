/*
 * cmd_quarantine.c: fleetctl quarantine list | quarantine lift.
 *
 * The owner's lift (docs/reattest.md, "Identity owns the renewal and the
 * lift"): root only; the reason is required; the device must exist and be
 * quarantined. The store clears the quarantine in one transaction
 * (fleet_store_device_lift_quarantine, on a FLEET_STORE_OPERATOR handle:
 * the daemon's file, never created or migrated), and the lift is journaled
 * at notice, FLEET_EVENT=quarantine-lifted, with who (FLEET_OPERATOR), why
 * (FLEET_REASON), the device (FLEET_DEVICE) and the quarantine it replaced
 * (FLEET_QUARANTINE_REASON, FLEET_QUARANTINED_AT). The journal is the
 * record of who and why; the store keeps no history of lifts.
 *
 * A lift makes nothing eligible by itself: SPIRE eligibility needs a
 * passing verdict, and the device's last one is the failure that
 * quarantined it; the next passing check restores it.
 */
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "fleetctl/fleetctl.h"
#include "fleetctl/util.h"
#include "fleetd/obs/journal.h"
#include "fleetd/store/store.h"
#include "lib/sanitize.h"

#define DEFAULT_STATE_DIR "/var/lib/fleetd"

static const char *const usage_text =
	"usage: fleetctl quarantine list [--state-dir DIR] [--json]\n"
	"       fleetctl quarantine lift DEVICE --reason TEXT [--state-dir DIR] [--json]\n"
	"\n"
	"lift (root only) clears DEVICE's quarantine and journals who and why\n"
	"(FLEET_EVENT=quarantine-lifted). It does not make the device eligible:\n"
	"its next passing check does. Exit codes: 0 lifted; 2 usage (no or bad\n"
	"--reason) or the store could not be opened; 3 not root; 4 no such\n"
	"device; 5 the device is not quarantined.\n";

static void when(int64_t t, char out[32])
{
	time_t tt = (time_t)t;
	struct tm tm;
	if (t <= 0 || !gmtime_r(&tt, &tm) || !strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(out, 32, "-");
}

static struct fleet_store *open_store(const char *dir, enum fleet_store_mode mode)
{
	return fleetctl_open_store("quarantine", dir ? dir : DEFAULT_STATE_DIR, (int)mode);
}

static int quarantine_list(int argc, char **argv)
{
	const char *dir = NULL;
	int json = 0;
	const struct fleetctl_opt opts[] = {{"--state-dir", &dir}};
	if (fleetctl_parse_opts("quarantine", argc, argv, 2, opts, 1, &json))
		return FLEETCTL_EXIT_USAGE;
	struct fleet_store *st = open_store(dir, FLEET_STORE_READONLY);
	if (!st)
		return FLEETCTL_EXIT_USAGE;
	struct fleet_store_device *d;
	size_t n;
	fleet_err e = fleet_store_devices_list(st, &d, &n);
	if (e) {
		fprintf(stderr, "fleetctl: quarantine: %s (%s)\n", fleet_store_errmsg(st),
			fleet_err_str(e));
		fleet_store_close(st);
		return FLEETCTL_EXIT_USAGE;
	}
	json_t *arr = json ? json_array() : NULL;
	if (!json)
		printf("%-20s %-24s %-13s %-20s %s\n", "NAME", "SERIAL", "STATE", "SINCE",
		       "REASON");
	for (size_t i = 0; i < n; i++) {
		if (!d[i].quarantined)
			continue;
		char since[32];
		when(d[i].quarantined_at, since);
		if (json)
			json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:s, s:s}", "name",
							     d[i].name, "serial", d[i].serial,
							     "state", d[i].state, "reason",
							     d[i].quarantine_reason, "since", since));
		else
			printf("%-20s %-24s %-13s %-20s %s\n", d[i].name, d[i].serial, d[i].state,
			       since, d[i].quarantine_reason);
	}
	if (json)
		fleetctl_print_json(json_pack("{s:o}", "quarantined", arr));
	free(d);
	fleet_store_close(st);
	return FLEETCTL_EXIT_OK;
}


/* 1..FLEET_STORE_QREASON_MAX bytes of printable ASCII, spaces allowed but
 * not only spaces: refused, never rewritten, so what is journaled is what
 * the operator typed. */
static bool reason_ok(const char *r, char *why, size_t len)
{
	size_t n = strlen(r);
	if (n == 0 || n > FLEET_STORE_QREASON_MAX) {
		snprintf(why, len, "--reason must be 1 to %d characters (it is %zu)",
			 FLEET_STORE_QREASON_MAX, n);
		return false;
	}
	for (size_t i = 0; i < n; i++)
		if (!fleet_ascii_printable(r + i, 1, FLEET_ASCII_SPACE)) {
			snprintf(why, len,
				 "--reason must be printable ASCII: byte %zu is 0x%02x", i,
				 (unsigned)(unsigned char)r[i]);
			return false;
		}
	if (strspn(r, " ") == n) {
		snprintf(why, len, "--reason must say something: it is only spaces");
		return false;
	}
	return true;
}

static int lift_refused(int json, int code, const char *reason, const char *detail)
{
	if (json)
		fleetctl_print_json(json_pack("{s:s, s:s, s:s}", "result", "refused", "reason",
					      reason, "detail", detail));
	fprintf(stderr, "fleetctl: quarantine lift: %s\n", detail);
	return code;
}

static int quarantine_lift(int argc, char **argv)
{
	if (argc < 3 || argv[2][0] == '-') {
		fputs(usage_text, stderr);
		return FLEETCTL_EXIT_USAGE;
	}
	const char *device = argv[2];
	const char *dir = NULL, *reason = NULL;
	int json = 0;
	const struct fleetctl_opt opts[] = {{"--state-dir", &dir}, {"--reason", &reason}};
	if (fleetctl_parse_opts("quarantine", argc, argv, 3, opts, 2, &json))
		return FLEETCTL_EXIT_USAGE;
	char why[160];
	if (!reason)
		return lift_refused(json, FLEETCTL_EXIT_USAGE, "no-reason",
				    "--reason TEXT is required: say why the quarantine is lifted");
	if (!reason_ok(reason, why, sizeof(why)))
		return lift_refused(json, FLEETCTL_EXIT_USAGE, "bad-reason", why);
	if (!fleet_ascii_printable(device, strlen(device), 0) ||
	    strlen(device) > FLEET_STORE_NAME_MAX)
		return lift_refused(json, FLEETCTL_EXIT_USAGE, "bad-device",
				    "DEVICE must be 1 to 127 printable characters");
	if (geteuid() != 0)
		return lift_refused(json, FLEETCTL_EXIT_PERMISSION, "not-root",
				    "only root may lift a quarantine (run it with sudo)");
	char who[FLEETCTL_OPERATOR_MAX];
	fleetctl_operator_name(who);
	struct fleet_store *st = open_store(dir, FLEET_STORE_OPERATOR);
	if (!st)
		return FLEETCTL_EXIT_USAGE;
	char prev[FLEET_STORE_QREASON_MAX + 1] = "";
	int64_t prev_at = 0;
	fleet_err e = fleet_store_device_lift_quarantine(st, device, prev, &prev_at);
	if (e) {
		snprintf(why, sizeof(why), "%s: %s", device, fleet_store_errmsg(st));
		fleet_store_close(st);
		if (e == FLEET_STORE_E_NOT_FOUND)
			return lift_refused(json, FLEETCTL_EXIT_NOT_FOUND, "unknown-device", why);
		if (e == FLEET_STORE_E_STATE)
			return lift_refused(json, FLEETCTL_EXIT_STATE, "not-quarantined", why);
		fprintf(stderr, "fleetctl: quarantine lift: %s (%s)\n", why, fleet_err_str(e));
		return FLEETCTL_EXIT_USAGE;
	}
	fleet_store_close(st);
	char since[32], uid[24];
	when(prev_at, since);
	snprintf(uid, sizeof(uid), "%u", (unsigned)getuid());
	fleet_log_set_identifier("fleetctl");
	fleet_log(LOG_NOTICE, "quarantine-lifted",
		  FLEET_LOG_FIELDS({"FLEET_DEVICE", device}, {"FLEET_OPERATOR", who},
				   {"FLEET_UID", uid}, {"FLEET_REASON", reason},
				   {"FLEET_QUARANTINE_REASON", prev},
				   {"FLEET_QUARANTINED_AT", since}),
		  "quarantine of %s lifted by %s: %s (it was quarantined since %s: %s); it is "
		  "eligible again only after its next passing check",
		  device, who, reason, since, prev);
	if (json)
		fleetctl_print_json(json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:b}", "result",
					      "lifted", "device", device, "operator", who, "reason",
					      reason, "previous_reason", prev, "quarantined_since",
					      since, "eligible", 0));
	else
		printf("quarantine lift: %s: lifted (quarantined since %s: %s)\n"
		       "%s is not eligible yet: its next passing check restores it.\n",
		       device, since, prev, device);
	return FLEETCTL_EXIT_OK;
}

int cmd_quarantine(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "list"))
		return quarantine_list(argc, argv);
	if (argc >= 2 && !strcmp(argv[1], "lift"))
		return quarantine_lift(argc, argv);
	fputs(usage_text, argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))
				  ? stdout
				  : stderr);
	return argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))
		       ? FLEETCTL_EXIT_OK
		       : FLEETCTL_EXIT_USAGE;
}
