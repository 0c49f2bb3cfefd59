/*
 * pass_runner.h: the pass on its own thread.
 *
 * systemd kills a daemon whose main loop misses WatchdogSec; a pass waits on
 * NetBox for as long as NetBox takes (at 10,000 devices and a slow NetBox,
 * a minute). So the pass never runs on the thread that pings the watchdog:
 * the runner's thread runs one pass at start and then one every interval,
 * measured from the end of the previous pass (passes never overlap, and a
 * long one does not make the next start at once), and the main loop only
 * asks how it is going.
 *
 * Contract:
 *  P1  fleet_pass_runner_start returns once the thread runs; its first pass
 *      starts at once.
 *  P2  fleet_pass_runner_busy_ms: how long the running pass has run (0:
 *      none running). The main loop journals a pass that outlasts its
 *      deadline (event=pass-slow), once per pass; it keeps pinging the
 *      watchdog either way: a slow NetBox is not a hung fleetd.
 *  P3  fleet_pass_runner_stop sets the pass's cancel flag, wakes the
 *      thread and joins it: a pass in progress ends at its next check
 *      (between inventory requests) and writes nothing after it.
 */
#ifndef FLEET_PASS_RUNNER_H
#define FLEET_PASS_RUNNER_H

#include <stdatomic.h>
#include <stdint.h>

#include "fleetd/pass/pass.h"

struct fleet_pass_runner;

/* cancel: the flag the pass was built with (fleet_pass_deps.cancel); the
 * runner sets it at stop. 0 on success, -1 (errno) when no thread. */
int fleet_pass_runner_start(struct fleet_pass *pass, atomic_bool *cancel,
			    uint32_t interval_seconds, struct fleet_pass_runner **out);
uint64_t fleet_pass_runner_busy_ms(struct fleet_pass_runner *r);
/* Passes finished so far. */
uint64_t fleet_pass_runner_passes(struct fleet_pass_runner *r);
void fleet_pass_runner_stop(struct fleet_pass_runner *r);

#endif
