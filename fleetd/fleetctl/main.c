/* fleetctl: run fleetd's checks on files, and (later) inspect its state. */
#include <stdio.h>
#include <string.h>

#include "fleetd/fleetctl/fleetctl.h"

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *usage;
};

static const struct command commands[] = {
	{"eventlog", cmd_eventlog, "eventlog replay [--json] FILE | eventlog show FILE"},
	{"policy", cmd_policy,
	 "policy check --profile P --log FILE [--pcrs JSON] [--bios VERSION] [--json]"},
	{"ek", cmd_ek, "ek hash CERT | ek verify --roots DIR CERT"},
	{"ca", cmd_ca, "ca init DIR [--cn NAME] [--days N]"},
	{"quote", cmd_quote, "quote verify --ak PUB --attest MSG --sig SIG --nonce HEX ..."},
	{"certify", cmd_certify, "certify verify --ak PUB --key PUB --attest MSG --sig SIG ..."},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: fleetctl COMMAND ...\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  fleetctl %s\n", commands[i].usage);
}

int main(int argc, char **argv)
{
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
