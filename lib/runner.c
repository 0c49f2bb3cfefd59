/*
 * runner.c: see runner.h. poll() on both pipes against a monotonic
 * deadline; a child past its deadline or its output cap gets SIGKILL and
 * is reaped, so its caller never waits on, or buffers, without bound.
 */
#include "lib/runner.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;


fleet_err fleet_runner_resolve(const char *prog, char *out, size_t outlen)
{
	struct stat st;
	if (strchr(prog, '/')) {
		if (strlen(prog) >= outlen || stat(prog, &st) || !S_ISREG(st.st_mode) ||
		    access(prog, X_OK))
			return FLEET_E_NOT_FOUND;
		snprintf(out, outlen, "%s", prog);
		return FLEET_OK;
	}
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	for (const char *p = path;;) {
		const char *colon = strchr(p, ':');
		size_t dl = colon ? (size_t)(colon - p) : strlen(p);
		/* An empty or relative PATH element would search the working
		 * directory: a root program does not do that. */
		if (dl && p[0] == '/' && dl + 1 + strlen(prog) < outlen) {
			snprintf(out, outlen, "%.*s/%s", (int)dl, p, prog);
			if (!stat(out, &st) && S_ISREG(st.st_mode) && !access(out, X_OK))
				return FLEET_OK;
		}
		if (!colon)
			break;
		p = colon + 1;
	}
	return FLEET_E_NOT_FOUND;
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Read what is there into b; 0 at EOF, -1 past cap, 1 otherwise. */
static int drain(int fd, struct fleet_buf *b, size_t cap)
{
	char chunk[16384];
	ssize_t n = read(fd, chunk, sizeof(chunk));
	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 1 : 0;
	if (n == 0)
		return 0;
	if (b->len + (size_t)n > cap)
		return -1;
	return fb_put(b, chunk, (size_t)n) == FLEET_OK ? 1 : -1;
}

fleet_err fleet_runner_run(const char *path, char *const argv[], char *const envp[],
			   int timeout_seconds, size_t out_cap, struct fleet_buf *out,
			   struct fleet_buf *err, struct fleet_run_result *r)
{
	memset(r, 0, sizeof(*r));
	int po[2], pe[2];
	if (pipe2(po, O_CLOEXEC))
		return FLEET_E_IO;
	if (pipe2(pe, O_CLOEXEC)) {
		close(po[0]);
		close(po[1]);
		return FLEET_E_IO;
	}
	pid_t pid = fork();
	if (pid < 0) {
		close(po[0]), close(po[1]), close(pe[0]), close(pe[1]);
		return FLEET_E_IO;
	}
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDONLY);
		if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(po[1], 1) < 0 || dup2(pe[1], 2) < 0)
			_exit(127);
		/* Only 0, 1 and 2 cross execve: a descriptor some library
		 * opened without O_CLOEXEC must not reach the program. */
		if (close_range(3, ~0u, 0) != 0)
			_exit(127);
		execve(path, argv, envp ? envp : environ);
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	long long deadline = now_ms() + (long long)timeout_seconds * 1000;
	int open_o = 1, open_e = 1, kill_it = 0;
	while ((open_o || open_e) && !kill_it) {
		struct pollfd fds[2] = {{.fd = open_o ? po[0] : -1, .events = POLLIN},
					{.fd = open_e ? pe[0] : -1, .events = POLLIN}};
		long long left = deadline - now_ms();
		if (left <= 0) {
			r->timed_out = kill_it = 1;
			break;
		}
		int rc = poll(fds, 2, left > 1000 ? 1000 : (int)left);
		if (rc < 0 && errno != EINTR) {
			kill_it = 1;
			break;
		}
		for (int i = 0; i < 2; i++) {
			if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			int d = drain(fds[i].fd, i ? err : out, i ? FLEET_RUNNER_ERR_CAP : out_cap);
			if (d < 0)
				r->overflow = kill_it = 1;
			else if (d == 0)
				*(i ? &open_e : &open_o) = 0;
		}
	}
	if (kill_it)
		kill(pid, SIGKILL);
	close(po[0]);
	close(pe[0]);
	/* Both pipes closed is not the same as exited: wait to the deadline. */
	int status;
	for (;;) {
		pid_t w = waitpid(pid, &status, kill_it ? 0 : WNOHANG);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR)
			return FLEET_E_IO;
		if (w == 0 && now_ms() >= deadline) {
			r->timed_out = kill_it = 1;
			kill(pid, SIGKILL);
		} else if (w == 0) {
			struct timespec ts = {0, 10 * 1000 * 1000};
			nanosleep(&ts, NULL);
		}
	}
	if (WIFEXITED(status)) {
		r->exited = !kill_it;
		r->exit_code = WEXITSTATUS(status);
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && !kill_it && out->len == 0 &&
	    err->len == 0)
		return FLEET_E_IO; /* execve failed in the child */
	return FLEET_OK;
}
