/*
 * admission_harness.h: the fleetd binary as a child process for e2e tests.
 * The test writes a configuration; the harness picks a free port, starts
 * `fleetd --config PATH --log-target stderr` with its stderr in a file,
 * waits until GET /healthz answers 200, and stops it with SIGTERM.
 */
#ifndef FLEET_ADMISSION_HARNESS_H
#define FLEET_ADMISSION_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct fleetd_proc {
	pid_t pid;
	uint16_t port;
	char log[600];    /* fleetd's stderr: its log lines */
	char tls_ca[600]; /* the CA that signed fleetd's TLS certificate */
};

/* A TCP port on 127.0.0.1 nobody listens on right now. */
uint16_t adm_free_port(void);

/* Mint dir/tls-ca.pem and dir/fleetd.{crt,key} (for 127.0.0.1) with the
 * openssl CLI; fills tls_ca. Fails the test when openssl fails. */
void adm_mint_tls(const char *dir, char *tls_ca, size_t cap);

/* Start fleetd (binary) with config; p->port and p->tls_ca must be set
 * (the configuration's port and the CA of its certificate). Fails the test
 * unless /healthz answers 200 within 20 s. */
void fleetd_start(struct fleetd_proc *p, const char *binary, const char *config,
		  const char *log);
/* The same with env (NULL-terminated "NAME=VALUE" strings, which must
 * outlive the call) added to fleetd's environment, e.g. NOTIFY_SOCKET. */
void fleetd_start_env(struct fleetd_proc *p, const char *binary, const char *config,
		      const char *log, const char *const *env);
/* SIGTERM, wait (10 s, then SIGKILL); returns the exit status (or -1). */
int fleetd_stop(struct fleetd_proc *p);

/* Lines of the log file so far. */
size_t adm_log_lines(const char *log);
/* Lines of the log holding every one of the NULL-terminated needles. */
size_t adm_log_count(const char *log, ...) __attribute__((sentinel));

#endif
