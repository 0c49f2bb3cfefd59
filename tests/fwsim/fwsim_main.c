/*
 * fleet-fwsim: boot a simulated firmware into a TPM, or replay a real log.
 *
 *   fleet-fwsim [--tcti TCTI] (--events FILE.yaml | --replay REAL.bin) [--out LOG.bin]
 *
 * TCTI as tpm2-tools takes it (swtpm:host=127.0.0.1,port=N); default
 * $TPM2TOOLS_TCTI. A test and demo tool: it is not installed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tss2/tss2_esys.h>
#include <tss2/tss2_rc.h>
#include <tss2/tss2_tctildr.h>

#include "lib/buf.h"
#include "lib/file_read.h"
#include "lib/eventlog.h"
#include "tests/fwsim/fwsim.h"

static int usage(void)
{
	fprintf(stderr, "usage: fleet-fwsim [--tcti TCTI] (--events FILE.yaml | --replay "
			"REAL.bin) [--out LOG.bin]\n"
			"  TCTI defaults to $TPM2TOOLS_TCTI, e.g. "
			"swtpm:host=127.0.0.1,port=2321\n");
	return 1;
}

static int write_file(const char *path, const struct fleet_buf *b)
{
	FILE *f = fopen(path, "wb");
	if (!f) {
		fprintf(stderr, "fleet-fwsim: %s: %s\n", path, strerror(errno));
		return -1;
	}
	size_t w = b->len ? fwrite(b->data, 1, b->len, f) : 0;
	int bad = w != b->len;
	bad |= fclose(f) != 0;
	if (bad) {
		fprintf(stderr, "fleet-fwsim: %s: write failed\n", path);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *tcti = getenv("TPM2TOOLS_TCTI"), *events = NULL, *replay = NULL,
		   *out = NULL;
	for (int i = 1; i < argc; i++) {
		const char **slot = !strcmp(argv[i], "--tcti")	    ? &tcti
				    : !strcmp(argv[i], "--events") ? &events
				    : !strcmp(argv[i], "--replay") ? &replay
				    : !strcmp(argv[i], "--out")	    ? &out
								    : NULL;
		if (!slot || i + 1 >= argc)
			return usage();
		*slot = argv[++i];
	}
	if (!!events == !!replay) {
		fprintf(stderr, "fleet-fwsim: give exactly one of --events and --replay\n");
		return usage();
	}
	if (replay && out) {
		fprintf(stderr, "fleet-fwsim: --out goes with --events (a replayed log is its "
				"own log)\n");
		return usage();
	}
	if (!tcti || !*tcti) {
		fprintf(stderr, "fleet-fwsim: no TPM: give --tcti or set TPM2TOOLS_TCTI\n");
		return 1;
	}
	/* The TSS logs every TPM error response at ERROR level; we report our own. */
	setenv("TSS2_LOG", "all+NONE", 0);

	char err[512] = "";
	struct fwsim_events *evs = NULL;
	struct fleet_buf in, log;
	fb_init(&in);
	fb_init(&log);
	if (events && fwsim_load(events, &evs, err, sizeof(err))) {
		fprintf(stderr, "fleet-fwsim: %s\n", err);
		return 1;
	}
	if (replay) {
		fleet_err e = fleet_file_read_data(replay, FLEET_EVLOG_MAX_SIZE, &in, NULL);
		if (e) {
			fprintf(stderr, "fleet-fwsim: %s: cannot read (%s)\n", replay,
				fleet_err_str(e));
			fb_free(&in);
			return 1;
		}
	}

	int rc = 1;
	TSS2_TCTI_CONTEXT *tctx = NULL;
	ESYS_CONTEXT *esys = NULL;
	TSS2_RC trc = Tss2_TctiLdr_Initialize(tcti, &tctx);
	if (trc != TSS2_RC_SUCCESS) {
		fprintf(stderr, "fleet-fwsim: TCTI '%s' did not open: %s\n", tcti,
			Tss2_RC_Decode(trc));
		goto done;
	}
	trc = Esys_Initialize(&esys, tctx, NULL);
	if (trc != TSS2_RC_SUCCESS) {
		fprintf(stderr, "fleet-fwsim: Esys_Initialize: %s\n", Tss2_RC_Decode(trc));
		goto done;
	}
	if (events) {
		if (fwsim_apply(esys, evs, &log, err, sizeof(err))) {
			fprintf(stderr, "fleet-fwsim: %s: %s\n", events, err);
			goto done;
		}
		if (out && write_file(out, &log))
			goto done;
	} else if (fwsim_replay_log(esys, in.data ? in.data : (const uint8_t *)"", in.len, err,
				    sizeof(err))) {
		fprintf(stderr, "fleet-fwsim: %s: %s\n", replay, err);
		goto done;
	}
	rc = 0;
done:
	if (esys)
		Esys_Finalize(&esys);
	if (tctx)
		Tss2_TctiLdr_Finalize(&tctx);
	fwsim_free(evs);
	fb_free(&in);
	fb_free(&log);
	return rc;
}
