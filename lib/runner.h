/*
 * runner.h: run one program with an argv array (execve, never a shell),
 * stdin from /dev/null, stdout and stderr captured up to caps, killed at a
 * deadline. The SPIRE applier runs spire-server with it and fleetd runs
 * talosctl: neither ever builds a command line.
 *
 * The child gets only the descriptors 0, 1 and 2 (every other one is
 * closed before execve, whatever its close-on-exec flag: a daemon's
 * listening socket or database must not leak into talosctl), the
 * environment the caller names (NULL: this process's), and nothing the
 * caller did not pass. It starts with an empty signal mask and every
 * signal at its default disposition (a daemon's ignored SIGPIPE does not
 * cross execve), in a process group of its own: at the deadline or the
 * output cap the whole group gets SIGKILL, so nothing it started outlives
 * it there. A caller whose 0, 1 or 2 is closed is served the same.
 */
#ifndef FLEET_RUNNER_H
#define FLEET_RUNNER_H

#include <stddef.h>

#include "lib/buf.h"
#include "lib/fleet_err.h"

struct fleet_run_result {
	int exited;    /* 1: exit_code is valid; 0: killed by a signal */
	int exit_code;
	int timed_out; /* killed at the deadline */
	int overflow;  /* killed for printing more than the cap */
};

/* Find prog on PATH (unless it holds a '/'); out gets an absolute or
 * relative path to an executable file. FLEET_E_NOT_FOUND if none. */
fleet_err fleet_runner_resolve(const char *prog, char *out, size_t outlen);

/* What is kept of a program's stderr. */
#define FLEET_RUNNER_ERR_CAP (64u * 1024)

/* Run path with argv (argv[0] first, NULL-terminated) and envp (NULL:
 * this process's environment). FLEET_E_IO when it cannot be started;
 * otherwise FLEET_OK and *r says how it ended. At most out_cap bytes of
 * stdout and FLEET_RUNNER_ERR_CAP of stderr are kept (give out and err
 * those caps too: fb_init_capped). */
fleet_err fleet_runner_run(const char *path, char *const argv[], char *const envp[],
			   int timeout_seconds, size_t out_cap, struct fleet_buf *out,
			   struct fleet_buf *err, struct fleet_run_result *r);

#endif
