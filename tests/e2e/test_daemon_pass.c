/*
 * test_daemon_pass.c: the fleetd binary's pass against a slow NetBox, as
 * systemd sees it (fleetd/pass/pass_runner.h).
 *
 *   - watchdog_during_slow_pass: the startup pass waits on NetBox for
 *     seconds (8 pages, each 1 s late); fleetd's WATCHDOG=1 datagrams keep
 *     coming at half of WATCHDOG_USEC all the same (systemd would otherwise
 *     kill fleetd, and its startup pass would repeat the stall). With the
 *     pass on the main loop the gap is the whole listing.
 *
 *   - stop_during_slow_pass: SIGTERM one page into a listing whose pages
 *     are 2 s late each (16 s in all): fleetd stops within a page, cleanly
 *     (exit 0), well inside TimeoutStopSec=30s, and writes no file from the
 *     partial listing. With the listing unbounded, the stop waits for the
 *     whole listing and the harness SIGKILLs it after 10 s.
 *
 * The notify socket is the test's own datagram socket; fleetd speaks to it
 * through libsystemd's sd_notify exactly as under systemd. Skips (77)
 * without swtpm, python3 or openssl.
 */
#include "tests/e2e/admission_fixture.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "tests/e2e/netbox_harness.h"

#define PAGES 8
#define PAGE_DELAY_MS 1000
#define WATCHDOG_MS 2000

static void write_seed(const char *path)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "{\"paginate_count\": 1, \"max_page_size\": 1,\n"
		   " \"tokens\": {\"" TOKEN "\": {\"user\": \"fleetd\"}},\n"
		   " \"custom_fields\": [\"class\", \"ek_hash\", \"ek_hash_ecc\"],\n"
		   " \"devices\": [\n");
	for (int i = 1; i <= PAGES; i++)
		fprintf(f,
			"  {\"id\": %d, \"name\": \"d%d\", \"serial\": \"DP-%d\", \"status\": "
			"\"planned\", \"created_by\": \"terraform\", \"custom_fields\": {}}%s\n",
			i, i, i, i == PAGES ? "" : ",");
	fprintf(f, " ]}\n");
	assert_int_equal(fclose(f), 0);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int setup(void **state)
{
	(void)state;
	adm_fixture_up("daemonpass", write_seed);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	adm_fixture_down();
	return 0;
}

static void watchdog_during_slow_pass(void **state)
{
	(void)state;
	char cfg[800], sock[800], env_sock[900];
	snprintf(cfg, sizeof(cfg), "%s/fleetd.yaml", D);
	adm_write_config(cfg, "", "  ttl_seconds: 300\n");
	snprintf(sock, sizeof(sock), "%s/notify.sock", D);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	assert_true(strlen(sock) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, sock, strlen(sock) + 1);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	snprintf(env_sock, sizeof(env_sock), "NOTIFY_SOCKET=%s", sock);
	static char env_wd[64];
	snprintf(env_wd, sizeof(env_wd), "WATCHDOG_USEC=%d", WATCHDOG_MS * 1000);
	const char *env[] = {env_sock, env_wd, NULL};

	char delay[64];
	snprintf(delay, sizeof(delay), "{\"ms\": %d, \"count\": %d}", PAGE_DELAY_MS, PAGES);
	nbf_ctl("/_fake/delay", delay);
	double t0 = now_s(), last = 0, gap = 0, written = 0;
	int pings = 0;
	fleetd_start_env(&FD, FLEETD_BIN, cfg, LOG, env);
	while (now_s() - t0 < 60) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, 100) > 0) {
			char msg[512];
			ssize_t n = recv(fd, msg, sizeof(msg) - 1, 0);
			if (n > 0) {
				msg[n] = '\0';
				/* systemd's watchdog runs from the start's end,
				 * READY=1 */
				if (strstr(msg, "READY=1") && !last)
					last = now_s();
				if (strstr(msg, "WATCHDOG=1")) {
					double t = now_s();
					if (last > 0 && t - last > gap)
						gap = t - last;
					last = t;
					pings++;
				}
			}
		}
		if (!written && adm_log_count(LOG, "event=spire-nodes-written", (char *)NULL))
			written = now_s();
		/* one more watchdog interval after the pass */
		if (written && now_s() - written > WATCHDOG_MS / 1000.0)
			break;
	}
	assert_int_equal(fleetd_stop(&FD), 0);
	close(fd);
	print_message("slow pass: %.1f s, %d watchdog pings, longest gap %.2f s\n",
		      written ? written - t0 : -1.0, pings, gap);
	assert_true(written > 0);
	/* the pass really was slow: every page waited */
	assert_true(written - t0 >= PAGES * PAGE_DELAY_MS / 1000.0);
	assert_true(pings >= PAGES / 2);
	/* and the watchdog never waited on it (half the interval, plus slack) */
	assert_true(gap < WATCHDOG_MS / 1000.0 * 0.9);
}

static void stop_during_slow_pass(void **state)
{
	(void)state;
	char cfg[800], spire[800];
	snprintf(cfg, sizeof(cfg), "%s/fleetd.yaml", D);
	snprintf(spire, sizeof(spire), "%s/spire-nodes.json", STATE);
	unlink(spire);
	nbf_ctl("/_fake/delay", "{\"ms\": 2000, \"count\": 8}");
	fleetd_start(&FD, FLEETD_BIN, cfg, LOG);
	struct timespec ts = {2, 500 * 1000 * 1000}; /* one page in */
	nanosleep(&ts, NULL);
	double t0 = now_s();
	int rc = fleetd_stop(&FD);
	double took = now_s() - t0;
	print_message("stopped %.1f s after SIGTERM (exit %d)\n", took, rc);
	assert_int_equal(rc, 0);
	assert_true(took < 5.0);
	assert_int_equal(access(spire, F_OK), -1); /* nothing from part of a listing */
	assert_int_equal(adm_log_count(LOG, "event=pass-cancelled", (char *)NULL), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(watchdog_during_slow_pass),
		cmocka_unit_test(stop_during_slow_pass),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
