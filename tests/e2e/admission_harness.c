/* admission_harness.c: see admission_harness.h. */
#include "tests/e2e/admission_harness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/e2e/http_client.h"
#include "tests/testutil.h"

uint16_t adm_free_port(void)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	close(fd);
	return ntohs(sa.sin_port);
}

void adm_mint_tls(const char *dir, char *tls_ca, size_t cap)
{
	char cmd[4096];
	const char *ec = "-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes";
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && openssl req -x509 %s -keyout tls-ca.key -out tls-ca.pem -days 2"
		 " -subj /CN=fleetd-test-tls-ca 2>/dev/null"
		 " && openssl req %s -keyout fleetd.key -out fleetd.csr -subj /CN=127.0.0.1"
		 " 2>/dev/null"
		 " && printf 'subjectAltName=IP:127.0.0.1\\n' > fleetd.ext"
		 " && openssl x509 -req -in fleetd.csr -CA tls-ca.pem -CAkey tls-ca.key"
		 " -CAcreateserial -out fleetd.crt -days 2 -extfile fleetd.ext 2>/dev/null"
		 " && chmod 600 fleetd.key",
		 dir, ec, ec);
	if (system(cmd) != 0)
		fail_msg("minting fleetd's TLS certificate failed");
	snprintf(tls_ca, cap, "%s/tls-ca.pem", dir);
}

void fleetd_start(struct fleetd_proc *p, const char *binary, const char *config,
		  const char *log)
{
	fleetd_start_env(p, binary, config, log, NULL);
}

void fleetd_start_env(struct fleetd_proc *p, const char *binary, const char *config,
		      const char *log, const char *const *env)
{
	snprintf(p->log, sizeof(p->log), "%s", log);
	p->pid = fork();
	assert_true(p->pid >= 0);
	if (p->pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
		if (fd < 0)
			_exit(126);
		dup2(fd, 2);
		dup2(fd, 1);
		close(fd);
		unsetenv("NOTIFY_SOCKET");
		for (size_t i = 0; env && env[i]; i++)
			putenv((char *)env[i]);
		execl(binary, binary, "--config", config, "--log-target", "stderr", (char *)NULL);
		_exit(127);
	}
	struct http_client c;
	http_client_init(&c, p->port, p->tls_ca);
	for (int i = 0; i < 200; i++) {
		struct http_reply r;
		int st;
		if (waitpid(p->pid, &st, WNOHANG) == p->pid) {
			char cmd[700];
			snprintf(cmd, sizeof(cmd), "cat '%s' >&2", log);
			(void)!system(cmd);
			p->pid = 0;
			http_client_free(&c);
			fail_msg("fleetd exited during startup (status %d); its log is above", st);
		}
		long code = http_get(&c, "/healthz", NULL, &r);
		http_reply_free(&r);
		if (code == 200) {
			http_client_free(&c);
			return;
		}
		struct timespec ts = {0, 100 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	http_client_free(&c);
	fleetd_stop(p);
	fail_msg("fleetd did not serve /healthz within 20 s");
}

int fleetd_stop(struct fleetd_proc *p)
{
	int st = 0;
	if (p->pid <= 0)
		return -1;
	kill(p->pid, SIGTERM);
	for (int i = 0; i < 100; i++) {
		if (waitpid(p->pid, &st, WNOHANG) == p->pid) {
			p->pid = 0;
			return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
		}
		struct timespec ts = {0, 100 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	kill(p->pid, SIGKILL);
	waitpid(p->pid, &st, 0);
	p->pid = 0;
	return -1;
}

size_t adm_log_lines(const char *log)
{
	FILE *f = fopen(log, "r");
	size_t n = 0;
	int ch;
	if (!f)
		return 0;
	while ((ch = fgetc(f)) != EOF)
		if (ch == '\n')
			n++;
	fclose(f);
	return n;
}

size_t adm_log_count(const char *log, ...)
{
	FILE *f = fopen(log, "r");
	char line[8192];
	size_t n = 0;
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		va_list ap;
		bool all = true;
		va_start(ap, log);
		for (const char *s = va_arg(ap, const char *); s; s = va_arg(ap, const char *))
			if (!strstr(line, s))
				all = false;
		va_end(ap);
		if (all)
			n++;
	}
	fclose(f);
	return n;
}
