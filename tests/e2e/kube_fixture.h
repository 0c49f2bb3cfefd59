/*
 * kube_fixture.h: the Kubernetes API contract fake for C tests
 * (kube_fixture.c). start() is a cmocka group setup: it skips (77) without
 * /usr/bin/python3 with yaml and jsonschema, openssl, or
 * ../shared/contracts/tinkerbell; stop_fake() its teardown.
 */
#ifndef FLEET_TESTS_KUBE_FIXTURE_H
#define FLEET_TESTS_KUBE_FIXTURE_H

#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>

#define CONTRACTS FLEET_SOURCE_DIR "/../shared/contracts/tinkerbell"
#define PY "/usr/bin/python3"

extern char *g_dir;       /* the fake's directory: ca.pem, srv.*, tokens.csv */
extern pid_t g_fake;
extern int g_port;
extern char g_kubeconfig[700]; /* as sa-one, system:masters */
extern char g_sa[700];         /* a service account directory (token, ca.crt) */

void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void write_text(const char *path, const char *text);
/* A /_fake control or an API call without auth: the answer's JSON. */
json_t *fake(const char *method, const char *path, const char *body);
/* Entries of the fake's request log with this path (and query key). */
size_t log_count(const char *path, const char *query_key, json_t **last);
int start(void **state);
int stop_fake(void **state);

#endif
