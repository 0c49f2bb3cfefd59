/*
 * test_sdnotify.c: fleetd's notify messages (fleetd/obs/sdnotify.c), read
 * off a unix datagram socket the test binds and hands to a child as
 * NOTIFY_SOCKET, the way systemd does; no systemd needed.
 *
 * READY/STATUS/STOPPING arrive as written; a newline in a status cannot
 * smuggle a second assignment; the watchdog pings once per half interval,
 * only while the loop says it is alive, and not at all when systemd set no
 * interval; outside systemd every call is a no-op.
 */
#include "tests/testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fleetd/obs/sdnotify.h"

#define MAX_MSGS 16

struct notify_sock {
	char *dir;
	char path[100]; /* fits sun_path */
	int fd;
};

static int setup(void **state)
{
	struct notify_sock *ns = calloc(1, sizeof(*ns));
	ns->dir = make_temp_dir("sdnotify");
	assert_non_null(ns->dir);
	snprintf(ns->path, sizeof(ns->path), "%s/notify", ns->dir);
	ns->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_true(ns->fd >= 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", ns->path);
	assert_int_equal(bind(ns->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	*state = ns;
	return 0;
}

static int teardown(void **state)
{
	struct notify_sock *ns = *state;
	close(ns->fd);
	rm_rf(ns->dir);
	free(ns->dir);
	free(ns);
	return 0;
}

/* Run fn in a child with NOTIFY_SOCKET set (or not); its exit status must be
 * 0 (fn checks return values and exits with the number of the first that
 * was wrong). Then collect every datagram it sent. */
static size_t run_child(struct notify_sock *ns, int (*fn)(void), bool with_socket,
			char msgs[MAX_MSGS][512])
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (with_socket)
			setenv("NOTIFY_SOCKET", ns->path, 1);
		else
			unsetenv("NOTIFY_SOCKET");
		_exit(fn());
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	size_t n = 0;
	for (;;) {
		char buf[512];
		ssize_t r = recv(ns->fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
		if (r < 0) {
			assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
			break;
		}
		assert_true(n < MAX_MSGS);
		buf[r] = '\0';
		memcpy(msgs[n++], buf, (size_t)r + 1);
	}
	return n;
}

static int child_lifecycle(void)
{
	if (fleet_sd_ready("serving on [::]:8443") <= 0)
		return 1;
	if (fleet_sd_status("pass 3 done, 12 devices") <= 0)
		return 2;
	if (fleet_sd_stopping("stopping: SIGTERM") <= 0)
		return 3;
	if (fleet_sd_ready(NULL) <= 0)
		return 4;
	return 0;
}

static void test_lifecycle(void **state)
{
	char msgs[MAX_MSGS][512];
	size_t n = run_child(*state, child_lifecycle, true, msgs);
	assert_int_equal(n, 4);
	assert_string_equal(msgs[0], "READY=1\nSTATUS=serving on [::]:8443");
	assert_string_equal(msgs[1], "STATUS=pass 3 done, 12 devices");
	assert_string_equal(msgs[2], "STOPPING=1\nSTATUS=stopping: SIGTERM");
	assert_string_equal(msgs[3], "READY=1");
}

static int child_injection(void)
{
	return fleet_sd_status("x\nREADY=1\nMAINPID=1") > 0 ? 0 : 1;
}

static void test_status_cannot_inject(void **state)
{
	char msgs[MAX_MSGS][512];
	size_t n = run_child(*state, child_injection, true, msgs);
	assert_int_equal(n, 1);
	assert_string_equal(msgs[0], "STATUS=x\\x0AREADY=1\\x0AMAINPID=1");
	assert_null(strchr(msgs[0], '\n'));
}

static int child_watchdog(void)
{
	char pid[24];
	snprintf(pid, sizeof(pid), "%ld", (long)getpid());
	setenv("WATCHDOG_USEC", "1000000", 1);
	setenv("WATCHDOG_PID", pid, 1);
	struct fleet_sdnotify n;
	fleet_sd_init(&n);
	if (n.watchdog_usec != 1000000)
		return 1;
	/* Time is the caller's: the cadence is exact, no sleeping. */
	if (fleet_sd_watchdog_tick(&n, 10000000, true) != 500000) /* ping 1 */
		return 2;
	if (fleet_sd_watchdog_tick(&n, 10100000, true) != 400000) /* too soon */
		return 3;
	if (fleet_sd_watchdog_tick(&n, 10499999, true) != 1)      /* still too soon */
		return 4;
	if (fleet_sd_watchdog_tick(&n, 10600000, false) != 500000) /* wedged: no ping */
		return 5;
	if (fleet_sd_watchdog_tick(&n, 10900000, false) != 500000)
		return 6;
	if (fleet_sd_watchdog_tick(&n, 11000000, true) != 500000) /* ping 2 */
		return 7;
	return 0;
}

static void test_watchdog_cadence(void **state)
{
	char msgs[MAX_MSGS][512];
	size_t n = run_child(*state, child_watchdog, true, msgs);
	assert_int_equal(n, 2);
	assert_string_equal(msgs[0], "WATCHDOG=1");
	assert_string_equal(msgs[1], "WATCHDOG=1");
}

static int child_watchdog_other_pid(void)
{
	/* WATCHDOG_PID names another process (the interval is for it): off. */
	setenv("WATCHDOG_USEC", "1000000", 1);
	setenv("WATCHDOG_PID", "1", 1);
	struct fleet_sdnotify n;
	fleet_sd_init(&n);
	if (n.watchdog_usec != 0)
		return 1;
	if (fleet_sd_watchdog_tick(&n, 1, true) != UINT64_MAX)
		return 2;
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
	fleet_sd_init(&n);
	if (n.watchdog_usec != 0 || fleet_sd_watchdog_tick(&n, 1, true) != UINT64_MAX)
		return 3;
	return 0;
}

static void test_watchdog_off(void **state)
{
	char msgs[MAX_MSGS][512];
	assert_int_equal(run_child(*state, child_watchdog_other_pid, true, msgs), 0);
}

static int child_outside_systemd(void)
{
	if (fleet_sd_ready("x") != 0 || fleet_sd_stopping(NULL) != 0 || fleet_sd_watchdog() != 0)
		return 1;
	return 0;
}

static void test_outside_systemd(void **state)
{
	char msgs[MAX_MSGS][512];
	assert_int_equal(run_child(*state, child_outside_systemd, false, msgs), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_lifecycle, setup, teardown),
		cmocka_unit_test_setup_teardown(test_status_cannot_inject, setup, teardown),
		cmocka_unit_test_setup_teardown(test_watchdog_cadence, setup, teardown),
		cmocka_unit_test_setup_teardown(test_watchdog_off, setup, teardown),
		cmocka_unit_test_setup_teardown(test_outside_systemd, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
