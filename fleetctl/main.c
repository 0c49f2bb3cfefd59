/* fleetctl: run fleetd's checks on files, and (later) inspect its state. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleetctl/fleetctl.h"

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *usage;
};

static const struct command commands[] = {
	{"eventlog", cmd_eventlog, "eventlog replay [--json] FILE | eventlog show FILE"},
	{"policy", cmd_policy,
	 "policy check --profile P --log FILE [--pcrs JSON] [--bios VERSION] [--renewal] "
	 "[--json] | policy create --from-log LOG --class C [--bios VERSION] [--bank B] "
	 "[--out FILE] | policy explain --profile P --log LOG [--pcrs JSON] [--bios VERSION] "
	 "[--json]"},
	{"ek", cmd_ek, "ek hash CERT | ek show CERT | ek verify --roots DIR [--at T] CERT"},
	{"ca", cmd_ca, "ca init DIR [--cn NAME] [--days N] | ca issue DIR --kind lak|ldevid ..."},
	{"quote", cmd_quote, "quote verify --ak PUB --attest MSG --sig SIG --nonce HEX ..."},
	{"certify", cmd_certify, "certify verify --ak PUB --key PUB --attest MSG --sig SIG ..."},
	{"claims", cmd_claims, "claims [--state-dir DIR] [--json]"},
	{"devices", cmd_devices, "devices [--state-dir DIR] [--json]"},
	{"provisional", cmd_provisional, "provisional [--state-dir DIR] [--json]"},
	{"verdicts", cmd_verdicts,
	 "verdicts [--device NAME] [--limit N] [--state-dir DIR] [--json]"},
	{"device", cmd_device, "device show NAME [--state-dir DIR] [--json]"},
	{"provisions", cmd_provisions, "provisions [--all] [--state-dir DIR] [--json]"},
	{"quarantine", cmd_quarantine,
	 "quarantine list [--state-dir DIR] [--json] | quarantine lift DEVICE --reason TEXT "
	 "[--state-dir DIR] [--json]"},
	{"join", cmd_join, "join init [--state-dir DIR]"},
	{"pool", cmd_pool,
	 "pool create ID --owner NAME [--join-attestors A,B] | pool list [--json]"},
	{"token", cmd_token,
	 "token create --pool ID --role ROLE [--site ID] [--uses N] [--ttl S] ... | token list | "
	 "token revoke ID | token inspect SEALED"},
	{"join-requests", cmd_join_requests,
	 "join-requests list [--json] | join-requests approve ID | join-requests deny ID"},
	{"site", cmd_site, "site lease SITE NODE [--json]"},
	{"node", cmd_node, "node list [--json] | node show ID [--json]"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: fleetctl COMMAND ...\n\ncommands:\n");
	/* `fleetctl GROUP` alone prints that group's full usage. */
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  fleetctl %s\n", commands[i].usage);
	fprintf(f, "\nexit codes: 0 success (a check passed); 1 refused or malformed input;\n"
		   "2 usage error or a file could not be read. quarantine lift also: 3 not\n"
		   "root; 4 no such device; 5 the device is not quarantined. A lifted device\n"
		   "is eligible again only after its next passing check. join, pool and\n"
		   "token: 3 not root; 4 no such pool or token; 5 it exists or is revoked\n"
		   "already. join-requests, site and node: 3 not root; 4 no such request or\n"
		   "node; 5 the request is not pending, or the node may not hold the lease.\n");
}

int main(int argc, char **argv)
{
	/* libtss2-mu writes an ERROR line to stderr for every malformed
	 * structure it is handed. The input is the machine's, not ours: fleetctl
	 * reports the refusal itself, once, with the offset. An operator who
	 * wants the library's view sets TSS2_LOG explicitly. */
	setenv("TSS2_LOG", "all+NONE", 0);
	if (argc < 2) {
		usage(stderr);
		return FLEETCTL_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return FLEETCTL_EXIT_OK;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "fleetctl: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return FLEETCTL_EXIT_USAGE;
}
