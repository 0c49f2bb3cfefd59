/*
 * cmd_eventlog.c: `fleetctl eventlog replay [--json] FILE` and
 * `fleetctl eventlog show FILE`.
 *
 * A log that does not parse exits 1 with the byte offset on stderr; a file
 * that cannot be read, or a wrong command line, exits 2.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleetctl/fleetctl.h"
#include "fleetctl/util.h"
#include "lib/buf.h"
#include "lib/eventlog.h"
#include "lib/hex.h"

static int usage(void)
{
	fprintf(stderr, "usage: fleetctl eventlog replay [--json] FILE\n"
			"       fleetctl eventlog show FILE\n");
	return FLEETCTL_EXIT_USAGE;
}

/* Read and parse; on failure print why and return the exit code. */
static int load(const char *path, struct fleet_evlog **log)
{
	struct fleet_buf b;
	fb_init(&b);
	struct fleet_errctx fe;
	char text[sizeof(fe.detail) + 80];
	fleet_err e = fleet_file_read_data(path, FLEET_EVLOG_MAX_SIZE, &b, &fe);
	if (e == FLEET_E_TOO_LARGE) {
		fprintf(stderr, "fleetctl: eventlog: %s: malformed at byte %u: log over the %u-byte cap\n",
			path, FLEET_EVLOG_MAX_SIZE, FLEET_EVLOG_MAX_SIZE);
		fb_free(&b);
		return FLEETCTL_EXIT_REFUSED;
	}
	if (e != FLEET_OK) {
		fprintf(stderr, "fleetctl: eventlog: %s: cannot read: %s\n", path,
			fleet_errctx_text(&fe, text, sizeof(text)));
		fb_free(&b);
		return FLEETCTL_EXIT_USAGE;
	}
	struct fleet_errctx ec = {0};
	e = fleet_evlog_parse(b.data, b.len, log, &ec);
	fb_free(&b);
	if (e == FLEET_E_NOMEM) {
		fprintf(stderr, "fleetctl: eventlog: %s: out of memory\n", path);
		return FLEETCTL_EXIT_USAGE;
	}
	if (e != FLEET_OK) {
		/* Always "malformed at byte N": operators grep for one phrase;
		 * the kind (truncated, too-large, ...) follows the detail. */
		fprintf(stderr, "fleetctl: eventlog: %s: malformed at byte %zu: %s (%s)\n", path,
			ec.offset, ec.detail, fleet_err_str(e));
		return FLEETCTL_EXIT_REFUSED;
	}
	return FLEETCTL_EXIT_OK;
}

static int replay_json(const struct fleet_evlog *log, const struct fleet_pcr_replay *r)
{
	char *s = fleet_evlog_replay_json_str(r, log->format);
	if (!s) {
		fprintf(stderr, "fleetctl: eventlog: out of memory\n");
		return FLEETCTL_EXIT_USAGE;
	}
	printf("%s\n", s);
	free(s);
	return FLEETCTL_EXIT_OK;
}

static void replay_table(const struct fleet_evlog *log, const struct fleet_pcr_replay *r)
{
	printf("format: %s\n", fleet_evlog_format_name(log->format));
	for (uint32_t b = 0; b < r->n_banks; b++) {
		const struct fleet_pcr_bank *bank = &r->banks[b];
		const char *name = fleet_hash_alg_name(bank->alg);
		if (name)
			printf("%s:", name);
		else
			printf("0x%04x:", bank->alg);
		if (!bank->replayable) {
			printf(" not replayable (an event lacks this bank, or its hash is "
			       "unavailable)\n");
			continue;
		}
		if (!bank->extended) {
			printf(" no PCR extended\n");
			continue;
		}
		printf("\n");
		for (unsigned i = 0; i < FLEET_PCR_COUNT; i++) {
			if (!(bank->extended & (UINT32_C(1) << i)))
				continue;
			char hex[2 * FLEET_DIGEST_MAX + 1];
			fleet_hex_encode(bank->pcr[i], bank->size, hex);
			printf("  %2u: %s\n", i, hex);
		}
	}
}

static int cmd_replay(const char *path, int json)
{
	struct fleet_evlog *log;
	int rc = load(path, &log);
	if (rc != FLEETCTL_EXIT_OK)
		return rc;
	struct fleet_pcr_replay r;
	struct fleet_errctx ec = {0};
	fleet_err e = fleet_evlog_replay(log, &r, &ec);
	if (e != FLEET_OK) {
		char msg[300];
		fleet_errctx_format(&ec, e, msg, sizeof(msg));
		fprintf(stderr, "fleetctl: eventlog: %s: replay failed: %s\n", path, msg);
		fleet_evlog_free(log);
		return FLEETCTL_EXIT_REFUSED;
	}
	if (json)
		rc = replay_json(log, &r);
	else
		replay_table(log, &r);
	fleet_evlog_free(log);
	return rc;
}

static int cmd_show(const char *path)
{
	struct fleet_evlog *log;
	int rc = load(path, &log);
	if (rc != FLEETCTL_EXIT_OK)
		return rc;
	printf("format: %s, %zu events\n", fleet_evlog_format_name(log->format), log->n_events);
	for (size_t i = 0; i < log->n_events; i++) {
		const struct fleet_evlog_event *ev = &log->events[i];
		char desc[1024];
		fleet_evlog_describe(ev, desc, sizeof(desc));
		/* The decoded data of these types is only evidence when the
		 * digests cover it; say so where they do not. */
		int lie = fleet_evlog_type_binds_data(ev->type) &&
			  fleet_evlog_event_data_matches(ev) == FLEET_E_VERIFY;
		printf("#%zu @%zu PCR %u %s (0x%08x), %u bytes%s%s%s\n", i, ev->offset, ev->pcr,
		       fleet_evlog_type_name(ev->type), ev->type, ev->data_len,
		       desc[0] ? ": " : "", desc,
		       lie ? " [DATA DOES NOT MATCH ITS DIGESTS]" : "");
		for (uint32_t d = 0; d < ev->n_digests; d++) {
			const struct fleet_evlog_digest *dg = &ev->digests[d];
			char hex[2 * FLEET_DIGEST_MAX + 1];
			const char *name = fleet_hash_alg_name(dg->alg);
			fleet_hex_encode(dg->bytes, dg->size, hex);
			if (name)
				printf("    %s: %s\n", name, hex);
			else
				printf("    0x%04x: %s\n", dg->alg, hex);
		}
	}
	fleet_evlog_free(log);
	return FLEETCTL_EXIT_OK;
}

int cmd_eventlog(int argc, char **argv)
{
	if (argc < 2)
		return usage();
	if (strcmp(argv[1], "replay") == 0) {
		int json = 0;
		const char *path = NULL;
		for (int i = 2; i < argc; i++) {
			if (strcmp(argv[i], "--json") == 0 && !json)
				json = 1;
			else if (argv[i][0] == '-' && argv[i][1] != '\0')
				return usage();
			else if (!path)
				path = argv[i];
			else
				return usage();
		}
		return path ? cmd_replay(path, json) : usage();
	}
	if (strcmp(argv[1], "show") == 0) {
		if (argc != 3 || (argv[2][0] == '-' && argv[2][1] != '\0'))
			return usage();
		return cmd_show(argv[2]);
	}
	return usage();
}
