/*
 * main.c: spire-server-fleet-entries, the root program on the SPIRE host
 * that applies fleetd's spire-nodes.json to the SPIRE server through its
 * CLI (docs/spire.md). Options only; the run is apply.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spire-server-fleet-entries/apply.h"

static int usage(FILE *to)
{
	fprintf(to, "usage: spire-server-fleet-entries [--file PATH] [--spire-server PATH]\n"
		    "         [--socket PATH] [--config PATH] [--dry-run] [--allow-removals N]\n"
		    "  --file            spire-nodes.json (default " APPLIER_DEFAULT_FILE ")\n"
		    "  --spire-server    the SPIRE server CLI (default spire-server on PATH)\n"
		    "  --socket          the server's admin socket (-socketPath)\n"
		    "  --config          selector and agent ID templates (docs/spire.md)\n"
		    "  --dry-run         print the plan, change nothing\n"
		    "  --allow-removals  approve removing up to N nodes in this run (default 1)\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct applier_opts o = {.file = APPLIER_DEFAULT_FILE, .cli = APPLIER_DEFAULT_CLI,
				 .allow_removals = -1};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char **slot = !strcmp(a, "--file")           ? &o.file
				    : !strcmp(a, "--spire-server") ? &o.cli
				    : !strcmp(a, "--socket")       ? &o.socket
				    : !strcmp(a, "--config")       ? &o.config
								   : NULL;
		if (slot || !strcmp(a, "--allow-removals")) {
			if (i + 1 == argc || !argv[i + 1][0]) {
				fprintf(stderr, "spire-server-fleet-entries: %s needs a value\n", a);
				return usage(stderr);
			}
			const char *v = argv[++i];
			if (slot) {
				*slot = v;
				continue;
			}
			char *end;
			long n = strtol(v, &end, 10);
			if (*end || n < 0 || n > 100000 || v[0] == '-' || v[0] == '+') {
				fprintf(stderr, "spire-server-fleet-entries: --allow-removals takes "
						"a count from 0 to 100000\n");
				return usage(stderr);
			}
			o.allow_removals = n;
		} else if (!strcmp(a, "--dry-run")) {
			o.dry_run = 1;
		} else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		} else {
			fprintf(stderr, "spire-server-fleet-entries: unknown argument %s\n", a);
			return usage(stderr);
		}
	}
	return applier_run(&o);
}
