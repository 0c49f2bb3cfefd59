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

/* SIGKILL to the child's process group, and to the child itself should
 * its setpgid not have happened (it failed, or the child changed group). */
static void kill_group(pid_t pid)
{
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
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
		/* Its own process group, so the deadline kills whatever it
		 * started too (a grandchild holding the pipes, a daemonised
		 * helper): kill(-pid). The parent sets it as well, so the
		 * group exists whichever runs first. */
		setpgid(0, 0);
		/* The caller's blocked signals and ignored SIGPIPE (a daemon
		 * ignores it) would cross execve: the program starts with an
		 * empty mask and every disposition at its default. */
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		struct sigaction dfl;
		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		sigemptyset(&dfl.sa_mask);
		for (int sig = 1; sig < NSIG; sig++)
			if (sig != SIGKILL && sig != SIGSTOP)
				sigaction(sig, &dfl, NULL);
		int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
		/* A caller that runs with 0, 1 or 2 closed gets pipes there:
		 * moved above 2 first, so no dup2 below overwrites a source
		 * it still needs, and none is a dup2 onto itself (which would
		 * keep O_CLOEXEC and close the descriptor at execve). */
		int src[3] = {devnull, po[1], pe[1]};
		for (int i = 0; i < 3; i++)
			if (src[i] >= 0 && src[i] <= 2 && (src[i] = fcntl(src[i], F_DUPFD_CLOEXEC, 3)) < 0)
				_exit(127);
		if (src[0] < 0 || dup2(src[0], 0) < 0 || dup2(src[1], 1) < 0 || dup2(src[2], 2) < 0)
			_exit(127);
		/* Only 0, 1 and 2 cross execve: a descriptor some library
		 * opened without O_CLOEXEC must not reach the program. */
		if (close_range(3, ~0u, 0) != 0)
			_exit(127);
		execve(path, argv, envp ? envp : environ);
		_exit(127);
	}
	(void)setpgid(pid, pid); /* EACCES once it has run execve: then it set it */
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
	/* The group: the child and all it started (it is not reaped yet, so
	 * the group id is still its own). */
	if (kill_it)
		kill_group(pid);
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
			kill_group(pid);
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
