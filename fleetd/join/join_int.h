/*
 * join_int.h: what the join service's files share (join.c, join_renew.c,
 * join_refusal.c).
 */
#ifndef FLEET_JOIN_INT_H
#define FLEET_JOIN_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <time.h>

#include "fleetd/join/join.h"
#include "fleetd/obs/log_limit.h"

#define JOIN_HOOK_QUEUE 64       /* refusals waiting for the hook; more are dropped */
#define JOIN_HOOK_TIMEOUT_S 10   /* each run of the hook */
/* The hook runs for at most this many refusals of one attestor:reason a
 * minute: a flood of unproven requests (each refused before it proves
 * anything) must not become a flood of the operator's program, nor crowd
 * out the refusals that matter from its queue. */
#define JOIN_HOOK_PER_REASON 10
#define JOIN_HOOK_WINDOW_S 60
#define JOIN_LOG_WINDOW_S 60     /* the journal limiter's window */
#define JOIN_LOG_KEYS 512
#define JOIN_MAX_LABELS 480
#define JOIN_RENEW_MAX_CURRENT 4 /* a node's current certificates a renewal may add to */

struct fleet_join {
	struct fleet_join_config cfg;
	char trust_domain[256];
	char on_refusal[4096];
	struct fleet_x509pop_config x509pop;
	struct fleet_discovery_config discovery;
	struct fleet_tpm_attestor_config tpm;
	bool tpm_on;
	struct fleet_attestor attestors[6];
	char kid[FLEET_JOIN_KID_LEN + 1];
	unsigned char *ca_der;
	size_t ca_der_len;
	struct fleet_metric *m_joined, *m_deferred, *m_refused, *m_renewed, *m_hook_dropped;
	char *labels[JOIN_MAX_LABELS + 1];
	struct fleet_log_limit *limit;

	/* The on_refusal hook's thread and queue (join_refusal.c). */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	char *queue[JOIN_HOOK_QUEUE];
	unsigned hook_runs[JOIN_MAX_LABELS + 1]; /* this window's, per label */
	time_t hook_window;
	size_t q_head, q_len;
	bool stop, hook_running;
	pthread_t hook;
};

/* One refusal, for the journal, the counter and the hook (JS1). */
struct join_refusal {
	const char *attestor; /* the attestor's id, "renew", or "other" */
	const char *reason;
	const char *peer;
	char token_id[FLEET_JOIN_TOKEN_ID_LEN + 1]; /* "" none */
	const char *node_id;                        /* NULL none */
	const char *pool_owner;                     /* pool-attestor: whose refusal it is */
};

void join_refused(struct fleet_join *j, const struct join_refusal *rf);
fleet_err join_refusal_start(struct fleet_join *j, struct fleet_errctx *ec);
void join_refusal_stop(struct fleet_join *j);
/* The counter's labels, "<attestor>:<reason>" for every reason each
 * attestor and the service can give (JS1). */
fleet_err join_labels(struct fleet_join *j, struct fleet_errctx *ec);

fleet_err join_answer(struct fleet_join *j, const struct fleet_join_response *r,
		      struct fleet_buf *out);
void join_error(struct fleet_buf *out, const char *what, const char *detail);
const struct fleet_attestor *join_attestor(const struct fleet_join *j, const char *id);

/* The reasons of the service itself (join.c, JS2-JS6) and of renewals. */
extern const char *const join_service_reasons[];
extern const char *const join_renew_reasons[];

#endif
