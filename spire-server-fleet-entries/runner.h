/*
 * runner.h: run one program with an argv array (execve, never a shell),
 * stdin from /dev/null, stdout and stderr captured up to caps, killed at a
 * deadline.
 */
#ifndef FLEETD_APPLIER_RUNNER_H
#define FLEETD_APPLIER_RUNNER_H

#include <stddef.h>

#include "lib/buf.h"
#include "lib/fleet_err.h"

struct run_result {
	int exited;    /* 1: exit_code is valid; 0: killed by a signal */
	int exit_code;
	int timed_out; /* killed at the deadline */
	int overflow;  /* killed for printing more than the cap */
};

/* Find prog on PATH (unless it holds a '/'); out gets an absolute or
 * relative path to an executable file. FLEET_E_NOT_FOUND if none. */
fleet_err runner_resolve(const char *prog, char *out, size_t outlen);

/* What is kept of a program's stderr. */
#define RUNNER_ERR_CAP (64u * 1024)

/* Run path with argv (argv[0] first, NULL-terminated). FLEET_E_IO when it
 * cannot be started; otherwise FLEET_OK and *r says how it ended. At most
 * out_cap bytes of stdout and RUNNER_ERR_CAP of stderr are kept (give out
 * and err those caps too: fb_init_capped). */
fleet_err runner_run(const char *path, char *const argv[], int timeout_seconds,
		     size_t out_cap, struct fleet_buf *out, struct fleet_buf *err,
		     struct run_result *r);

#endif
