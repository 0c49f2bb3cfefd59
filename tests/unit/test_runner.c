/*
 * test_runner.c: lib/runner.h's promises beyond the bounds
 * (test_applier_plan.c test_runner_bounds has the caps and the deadline):
 * only descriptors 0, 1 and 2 reach the program, whatever their
 * close-on-exec flag, and the environment is the caller's; at the
 * deadline the whole process group dies (a grandchild too); the program
 * starts with an empty signal mask and SIGPIPE at its default; a caller
 * whose 0, 1 and 2 are closed still captures the program's output.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/runner.h"

static void only_three_descriptors_cross(void **state)
{
	(void)state;
	char sh[256];
	assert_int_equal(fleet_runner_resolve("sh", sh, sizeof(sh)), FLEET_OK);
	/* A descriptor without O_CLOEXEC, as a careless library leaves one. */
	int leak = open("/dev/null", O_RDONLY);
	assert_true(leak > 2);
	assert_int_equal(fcntl(leak, F_GETFD) & FD_CLOEXEC, 0);
	char probe[64];
	snprintf(probe, sizeof(probe), "test -e /proc/self/fd/%d && echo leaked || echo closed",
		 leak);
	char *argv[] = {"sh", "-c", probe, NULL};
	struct fleet_buf out, err;
	struct fleet_run_result r;
	fb_init_capped(&out, 1024);
	fb_init_capped(&err, FLEET_RUNNER_ERR_CAP);
	assert_int_equal(fleet_runner_run(sh, argv, NULL, 10, 1024, &out, &err, &r), FLEET_OK);
	assert_true(r.exited);
	assert_int_equal(r.exit_code, 0);
	assert_int_equal(out.len, 7);
	assert_memory_equal(out.data, "closed\n", 7);
	fb_free(&out);
	fb_free(&err);
	close(leak);
}

static void environment_is_the_callers(void **state)
{
	(void)state;
	char sh[256];
	assert_int_equal(fleet_runner_resolve("sh", sh, sizeof(sh)), FLEET_OK);
	setenv("FLEET_RUNNER_SECRET", "from-the-parent", 1);
	char *argv[] = {"sh", "-c", "echo \"${FLEET_RUNNER_SECRET:-unset} $ONLY\"", NULL};
	char *envp[] = {"ONLY=this", NULL};
	struct fleet_buf out, err;
	struct fleet_run_result r;
	fb_init_capped(&out, 1024);
	fb_init_capped(&err, FLEET_RUNNER_ERR_CAP);
	assert_int_equal(fleet_runner_run(sh, argv, envp, 10, 1024, &out, &err, &r), FLEET_OK);
	assert_int_equal(out.len, strlen("unset this\n"));
	assert_memory_equal(out.data, "unset this\n", out.len);
	fb_free(&out);
	/* NULL: this process's environment. */
	fb_init_capped(&out, 1024);
	assert_int_equal(fleet_runner_run(sh, argv, NULL, 10, 1024, &out, &err, &r), FLEET_OK);
	assert_memory_equal(out.data, "from-the-parent \n", strlen("from-the-parent \n"));
	fb_free(&out);
	fb_free(&err);
	unsetenv("FLEET_RUNNER_SECRET");
}

/* The child starts a grandchild that sleeps past the deadline and keeps the
 * pipes: both are killed. This process is made a subreaper, so the orphaned
 * grandchild becomes its child and how it ended is seen here. */
static void deadline_kills_the_group(void **state)
{
	(void)state;
	char sh[256];
	assert_int_equal(fleet_runner_resolve("sh", sh, sizeof(sh)), FLEET_OK);
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
	char *argv[] = {"sh", "-c", "sleep 30 & echo $!; exec sleep 30", NULL};
	struct fleet_buf out, err;
	struct fleet_run_result r;
	fb_init_capped(&out, 1024);
	fb_init_capped(&err, FLEET_RUNNER_ERR_CAP);
	assert_int_equal(fleet_runner_run(sh, argv, NULL, 1, 1024, &out, &err, &r), FLEET_OK);
	assert_true(r.timed_out);
	assert_false(r.exited);
	assert_true(out.len > 1 && out.len < 32);
	char buf[32];
	memcpy(buf, out.data, out.len);
	buf[out.len] = '\0';
	pid_t g = (pid_t)atoi(buf);
	assert_true(g > 1);
	/* Reaped within 3 s, killed by SIGKILL: not left sleeping. */
	int st = 0;
	pid_t w = 0;
	for (int i = 0; i < 300 && w == 0; i++) {
		w = waitpid(g, &st, WNOHANG);
		if (w == 0) {
			struct timespec ts = {0, 10 * 1000 * 1000};
			nanosleep(&ts, NULL);
		}
	}
	if (w == 0) {
		kill(g, SIGKILL);
		waitpid(g, &st, 0);
		fail_msg("the grandchild %d outlived the deadline", (int)g);
	}
	assert_int_equal(w, g);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGKILL);
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0), 0);
	fb_free(&out);
	fb_free(&err);
}

/* Signals blocked and SIGPIPE ignored here do not reach the program. */
static void signals_start_at_default(void **state)
{
	(void)state;
	char cat[256];
	assert_int_equal(fleet_runner_resolve("cat", cat, sizeof(cat)), FLEET_OK);
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGCHLD);
	assert_int_equal(sigprocmask(SIG_BLOCK, &block, &old), 0);
	struct sigaction ign = {.sa_handler = SIG_IGN}, old_pipe;
	assert_int_equal(sigaction(SIGPIPE, &ign, &old_pipe), 0);
	char *argv[] = {"cat", "/proc/self/status", NULL};
	struct fleet_buf out, err;
	struct fleet_run_result r;
	fb_init_capped(&out, 65536);
	fb_init_capped(&err, FLEET_RUNNER_ERR_CAP);
	assert_int_equal(fleet_runner_run(cat, argv, NULL, 10, 65536, &out, &err, &r), FLEET_OK);
	sigprocmask(SIG_SETMASK, &old, NULL);
	sigaction(SIGPIPE, &old_pipe, NULL);
	assert_true(r.exited);
	assert_int_equal(fb_put_u8(&out, 0), FLEET_OK);
	const char *blk = strstr((const char *)out.data, "\nSigBlk:\t");
	const char *ignl = strstr((const char *)out.data, "\nSigIgn:\t");
	assert_non_null(blk);
	assert_non_null(ignl);
	assert_memory_equal(blk + 9, "0000000000000000\n", 17);
	unsigned long long ig = strtoull(ignl + 9, NULL, 16);
	assert_int_equal(ig & (1ull << (SIGPIPE - 1)), 0);
	fb_free(&out);
	fb_free(&err);
}

/* In a child with 0, 1 and 2 closed, the pipes are made on them: the
 * program's output is still the program's, on the right stream. */
static void closed_standard_descriptors(void **state)
{
	(void)state;
	char sh[256];
	assert_int_equal(fleet_runner_resolve("sh", sh, sizeof(sh)), FLEET_OK);
	int rep[2];
	assert_int_equal(pipe(rep), 0);
	pid_t p = fork();
	assert_true(p >= 0);
	if (p == 0) {
		int fd = fcntl(rep[1], F_DUPFD, 10);
		close(rep[0]);
		close(rep[1]);
		close(0);
		close(1);
		close(2);
		char *argv[] = {"sh", "-c", "echo out; echo err >&2; read x && echo stdin", NULL};
		struct fleet_buf out, err;
		struct fleet_run_result r;
		fb_init_capped(&out, 1024);
		fb_init_capped(&err, FLEET_RUNNER_ERR_CAP);
		char verdict = 'x';
		if (fleet_runner_run(sh, argv, NULL, 10, 1024, &out, &err, &r) == FLEET_OK &&
		    r.exited && out.len == 4 && memcmp(out.data, "out\n", 4) == 0 && err.len == 4 &&
		    memcmp(err.data, "err\n", 4) == 0)
			verdict = r.exit_code == 1 ? 'y' : 'c'; /* read at EOF: /dev/null */
		else if (out.len == 0)
			verdict = 'o';
		if (write(fd, &verdict, 1) != 1)
			_exit(2);
		_exit(0);
	}
	close(rep[1]);
	char v = 0;
	assert_int_equal(read(rep[0], &v, 1), 1);
	close(rep[0]);
	int st;
	assert_int_equal(waitpid(p, &st, 0), p);
	assert_int_equal(v, 'y');
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(deadline_kills_the_group),
		cmocka_unit_test(signals_start_at_default),
		cmocka_unit_test(closed_standard_descriptors),
		cmocka_unit_test(only_three_descriptors_cross),
		cmocka_unit_test(environment_is_the_callers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
