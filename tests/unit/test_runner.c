/*
 * test_runner.c: lib/runner.h's promises beyond the bounds
 * (test_applier_plan.c test_runner_bounds has the caps and the deadline):
 * only descriptors 0, 1 and 2 reach the program, whatever their
 * close-on-exec flag, and the environment is the caller's.
 */
#include <fcntl.h>
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(only_three_descriptors_cross),
		cmocka_unit_test(environment_is_the_callers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
