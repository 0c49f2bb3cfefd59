/*
 * sdnotify.c: sd_notify wrappers and the watchdog cadence (sdnotify.h).
 */
#include "fleetd/obs/sdnotify.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include <systemd/sd-daemon.h>

#include "fleetd/obs/journal.h"

#define STATUS_MAX 256

void fleet_sd_init(struct fleet_sdnotify *n)
{
	memset(n, 0, sizeof(*n));
	uint64_t usec = 0;
	if (sd_watchdog_enabled(0, &usec) > 0)
		n->watchdog_usec = usec;
}

/* head ("READY=1", "STOPPING=1" or NULL) then STATUS=<escaped status>. */
static int notify(const char *head, const char *status)
{
	char esc[STATUS_MAX];
	char msg[STATUS_MAX + 32];
	int k;
	if (status) {
		fleet_log_escape_n(status, strlen(status), esc, sizeof(esc));
		k = snprintf(msg, sizeof(msg), "%s%sSTATUS=%s", head ? head : "",
			     head ? "\n" : "", esc);
	} else {
		k = snprintf(msg, sizeof(msg), "%s", head ? head : "");
	}
	if (k <= 0)
		return 0;
	return sd_notify(0, msg);
}

int fleet_sd_ready(const char *status)
{
	return notify("READY=1", status);
}

int fleet_sd_status(const char *status)
{
	return status ? notify(NULL, status) : 0;
}

int fleet_sd_stopping(const char *status)
{
	return notify("STOPPING=1", status);
}

int fleet_sd_watchdog(void)
{
	return sd_notify(0, "WATCHDOG=1");
}

uint64_t fleet_sd_now_usec(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t fleet_sd_watchdog_tick(struct fleet_sdnotify *n, uint64_t now_usec, bool alive)
{
	if (!n || n->watchdog_usec == 0)
		return UINT64_MAX;
	uint64_t half = n->watchdog_usec / 2;
	uint64_t since = n->pinged ? now_usec - n->last_ping_usec : UINT64_MAX;
	if (alive && since >= half) {
		fleet_sd_watchdog();
		n->pinged = true;
		n->last_ping_usec = now_usec;
		return half;
	}
	if (!n->pinged)
		return half;
	return since >= half ? half : half - since;
}
