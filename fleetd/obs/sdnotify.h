/*
 * sdnotify.h: fleetd's side of systemd's Type=notify protocol.
 *
 * READY=1 once the listener serves, STATUS= lines for `systemctl status`,
 * STOPPING=1 at shutdown, and WATCHDOG=1 from the main loop while it is
 * alive. Outside systemd (no NOTIFY_SOCKET) every call is a quiet no-op, so
 * the daemon runs the same in a terminal.
 *
 * Status text is fleetd's own; it is still escaped (fleet_log_escape_n), so
 * no newline in it can smuggle another assignment such as READY=1 into the
 * datagram.
 */
#ifndef FLEET_OBS_SDNOTIFY_H
#define FLEET_OBS_SDNOTIFY_H

#include <stdbool.h>
#include <stdint.h>

struct fleet_sdnotify {
	uint64_t watchdog_usec; /* 0: systemd expects no watchdog pings */
	uint64_t last_ping_usec;
	bool pinged;
};

/* Read the watchdog interval (sd_watchdog_enabled; WATCHDOG_USEC and
 * WATCHDOG_PID from the environment). */
void fleet_sd_init(struct fleet_sdnotify *n);

/* Each returns > 0 when sent, 0 when not under systemd, < 0 (-errno) when
 * sending failed. status may be NULL. */
int fleet_sd_ready(const char *status);
int fleet_sd_status(const char *status);
int fleet_sd_stopping(const char *status);
int fleet_sd_watchdog(void);

/*
 * The main loop's call: when the watchdog is on, alive is true and half the
 * interval has passed since the last ping (or none was sent), send
 * WATCHDOG=1. alive is the loop's own liveness, not the state of NetBox or
 * Kubernetes: systemd restarts a daemon whose pings stop, which mends a
 * wedged loop and never an unreachable inventory.
 *
 * now_usec is CLOCK_MONOTONIC in microseconds (fleet_sd_now_usec()).
 * Returns the microseconds until the next ping is due, for the loop's poll
 * timeout; UINT64_MAX when the watchdog is off.
 */
uint64_t fleet_sd_watchdog_tick(struct fleet_sdnotify *n, uint64_t now_usec, bool alive);

uint64_t fleet_sd_now_usec(void);

#endif
