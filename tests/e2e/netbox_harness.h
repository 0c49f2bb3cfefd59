/*
 * netbox_harness.h: the NetBox contract fake (tests/fakes/netbox_fake.py)
 * for a cmocka test: a private CA and certificates minted with the openssl
 * CLI, the fake started on a free port, and its /_fake/ control API.
 */
#ifndef FLEET_NETBOX_HARNESS_H
#define FLEET_NETBOX_HARNESS_H

#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>

struct nbf_env {
	char *dir;
	char ca[512];           /* the CA that signed the fake's certificates */
	char rogue_ca[512];     /* a CA with the same name that signed nothing */
	char cert[512], key[512];
	char badname_cert[512]; /* signed by ca, for netbox.other.example */
	char seed[512];         /* the seed file the caller writes */
	pid_t pid;
	char base[64];          /* https://127.0.0.1:PORT */
};

extern struct nbf_env E;

/* Exit 77 without python3 or openssl; mint the certificates, call
 * write_seed(E.seed), start the fake. */
void nbf_setup(void (*write_seed)(const char *path));
void nbf_teardown(void);

/* Another fake (same seed) with cert/key; returns its pid, fills base. */
pid_t nbf_start(const char *cert, const char *key, char *base, size_t baselen);
/* The same with another seed file. */
pid_t nbf_start_seed(const char *cert, const char *key, const char *seed, char *base,
		     size_t baselen);
void nbf_stop(pid_t pid);

/* A /_fake/ control request (fails the test unless HTTP 200). */
json_t *nbf_control(const char *method, const char *path, const char *body);
void nbf_ctl(const char *path, const char *body);
/* The fake's state dump; its request log's length; one device in a dump. */
json_t *nbf_state(void);
/* Only the request log and the connection count ({"log", "connections"}):
 * cheap however large the devices and their change log grew. */
json_t *nbf_log(void);
size_t nbf_log_len(void);
json_t *nbf_device(json_t *state, long id);
/* The next answer for path is status/ctype/body. */
void nbf_canned(const char *path, int status, const char *ctype, const char *body);

#endif
