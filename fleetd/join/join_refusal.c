/*
 * join_refusal.c: where a join's reason goes (join.h JS1). The machine is
 * told only "denied"; the operator gets the reason three ways:
 *
 *  - the journal: event security.join.refused, FLEET_ATTESTOR,
 *    FLEET_REASON=join:<reason>, FLEET_TOKEN, FLEET_NODE, FLEET_POOL_OWNER,
 *    FLEET_PEER. Through the journal limiter, keyed on attestor and reason
 *    (a bounded set): a flood of forged joins is one line and a summary a
 *    minute, never a line each;
 *  - the counter fleetd_join_refused_total{reason="<attestor>:<reason>"},
 *    every refusal;
 *  - the on_refusal hook, when configured: the program run with execve
 *    (lib/runner.h: no shell, an empty environment, its own process group,
 *    killed after JOIN_HOOK_TIMEOUT_S) with one argument, the refusal as
 *    JSON {"attestor","reason","tokenId","nodeId","poolOwner","peer",
 *    "time"}. It runs on its own thread from a queue of JOIN_HOOK_QUEUE:
 *    a join never waits for it; it runs for at most JOIN_HOOK_PER_REASON
 *    refusals of each attestor:reason a minute, and when the queue is full
 *    or a reason's share is spent the refusal is dropped from the hook
 *    (counted in fleetd_join_hook_dropped_total), never from the journal
 *    or the counter.
 *
 * Why execve and not only the journal: the spec's onRefusal is the
 * operator's own code (an audit sink, a pager); a program with an argv is
 * the least a C daemon can offer without linking it, and the queue keeps
 * what an unproven request can cost to one bounded slot.
 */
#include "fleetd/join/join_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "fleetd/obs/journal.h"
#include "lib/runner.h"

static fleet_err add_label(struct fleet_join *j, size_t *n, const char *att, const char *reason)
{
	char v[FLEET_METRICS_MAX_LABEL_VALUE + 1];
	int k = snprintf(v, sizeof(v), "%s:%s", att, reason);
	if (k < 0 || (size_t)k >= sizeof(v))
		return FLEET_E_TOO_LARGE;
	for (size_t i = 0; i < *n; i++)
		if (strcmp(j->labels[i], v) == 0)
			return FLEET_OK;
	if (*n >= JOIN_MAX_LABELS)
		return FLEET_E_TOO_LARGE;
	if (!(j->labels[*n] = strdup(v)))
		return FLEET_E_NOMEM;
	(*n)++;
	j->labels[*n] = NULL;
	return FLEET_OK;
}

fleet_err join_labels(struct fleet_join *j, struct fleet_errctx *ec)
{
	size_t n = 0;
	fleet_err e = FLEET_OK;
	for (size_t a = 0; !e && a < sizeof(j->attestors) / sizeof(j->attestors[0]); a++) {
		const struct fleet_attestor *at = &j->attestors[a];
		for (size_t i = 0; !e && at->reasons && at->reasons[i]; i++)
			e = add_label(j, &n, at->id, at->reasons[i]);
		for (size_t i = 0; !e && join_service_reasons[i]; i++)
			e = add_label(j, &n, at->id, join_service_reasons[i]);
	}
	if (!e)
		e = add_label(j, &n, "other", "attestor-unknown");
	for (size_t i = 0; !e && join_renew_reasons[i]; i++)
		e = add_label(j, &n, "renew", join_renew_reasons[i]);
	if (e)
		return fleet_errctx_msg(ec, e, "the join refusal counter's labels do not fit");
	return FLEET_OK;
}

static char *refusal_json(const struct join_refusal *rf)
{
	json_t *o = json_object();
	char *s = NULL;
	if (!o)
		return NULL;
	if (!json_object_set_new(o, "attestor", json_string(rf->attestor)) &&
	    !json_object_set_new(o, "reason", json_string(rf->reason)) &&
	    (!rf->token_id[0] || !json_object_set_new(o, "tokenId", json_string(rf->token_id))) &&
	    (!rf->node_id || !json_object_set_new(o, "nodeId", json_string(rf->node_id))) &&
	    (!rf->pool_owner ||
	     !json_object_set_new(o, "poolOwner", json_string(rf->pool_owner))) &&
	    (!rf->peer || !json_object_set_new(o, "peer", json_string(rf->peer))) &&
	    !json_object_set_new(o, "time", json_integer((json_int_t)time(NULL))))
		s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}

void join_refused(struct fleet_join *j, const struct join_refusal *rf)
{
	char key[FLEET_METRICS_MAX_LABEL_VALUE + 1], why[96];
	snprintf(key, sizeof(key), "%s:%s", rf->attestor, rf->reason);
	if (fleet_metric_inc_label(j->m_refused, key) != FLEET_OK)
		fleet_metric_inc_label(j->m_refused, "other:attestor-unknown");
	snprintf(why, sizeof(why), "join:%s", rf->reason);
	bool renewal = !strcmp(rf->attestor, "renew");
	bool journal = fleet_log_limit_admit(j->limit, key, time(NULL));
	if (journal && renewal)
		/* The node proved its key before any statement was judged:
		 * this refusal is its owner's to see (spec: refused renewals). */
		fleet_log(LOG_WARNING, "security.renew.refused",
			  FLEET_LOG_FIELDS({"FLEET_NODE", rf->node_id}, {"FLEET_REASON", why},
					   {"FLEET_PEER", rf->peer}),
			  "renewal of node %s refused: %s", rf->node_id ? rf->node_id : "(unknown)",
			  rf->reason);
	else if (journal)
		fleet_log(LOG_WARNING, "security.join.refused",
			  FLEET_LOG_FIELDS({"FLEET_ATTESTOR", rf->attestor}, {"FLEET_REASON", why},
					   {"FLEET_TOKEN", rf->token_id[0] ? rf->token_id : NULL},
					   {"FLEET_NODE", rf->node_id},
					   {"FLEET_POOL_OWNER", rf->pool_owner},
					   {"FLEET_PEER", rf->peer}),
			  "join refused by %s: %s%s%s", rf->attestor, rf->reason,
			  rf->pool_owner ? ", for the pool's owner " : "",
			  rf->pool_owner ? rf->pool_owner : "");
	if (!j->on_refusal[0])
		return;
	size_t li = 0;
	while (j->labels[li] && strcmp(j->labels[li], key) != 0)
		li++; /* a label not in the set counts as the last slot's */
	char *arg = refusal_json(rf);
	time_t now = time(NULL);
	pthread_mutex_lock(&j->mu);
	if (now >= j->hook_window + JOIN_HOOK_WINDOW_S || now < j->hook_window) {
		memset(j->hook_runs, 0, sizeof(j->hook_runs));
		j->hook_window = now;
	}
	if (j->hook_runs[li] >= JOIN_HOOK_PER_REASON) {
		free(arg);
		arg = NULL; /* this reason's share of the minute is spent */
		pthread_mutex_unlock(&j->mu);
		fleet_metric_inc(j->m_hook_dropped);
		return;
	}
	j->hook_runs[li]++;
	if (arg && j->q_len < JOIN_HOOK_QUEUE && !j->stop) {
		j->queue[(j->q_head + j->q_len) % JOIN_HOOK_QUEUE] = arg;
		j->q_len++;
		arg = NULL;
		pthread_cond_signal(&j->cv);
	}
	pthread_mutex_unlock(&j->mu);
	if (arg || !j->hook_running) {
		free(arg);
		fleet_metric_inc(j->m_hook_dropped);
	}
}

static void run_hook(struct fleet_join *j, char *arg)
{
	char *argv[] = {j->on_refusal, arg, NULL};
	char *envp[] = {NULL};
	struct fleet_buf out, err;
	struct fleet_run_result r;
	fb_init_capped(&out, 4096);
	fb_init_capped(&err, FLEET_RUNNER_ERR_CAP);
	memset(&r, 0, sizeof(r));
	/* Through the limiter: a hook that fails on every refusal must not
	 * turn a flood of refusals into a flood of journal lines. */
	if (fleet_runner_run(j->on_refusal, argv, envp, JOIN_HOOK_TIMEOUT_S, 4096, &out, &err, &r) !=
		    FLEET_OK &&
	    fleet_log_limit_admit(j->limit, "join-hook-failed", time(NULL)))
		fleet_log(LOG_ERR, "join-hook-failed", FLEET_LOG_FIELDS({"FLEET_PATH", j->on_refusal}),
			  "join.on_refusal %s could not be started", j->on_refusal);
	fb_free(&out);
	fb_free(&err);
}

static void *hook_main(void *arg)
{
	struct fleet_join *j = arg;
	pthread_mutex_lock(&j->mu);
	for (;;) {
		while (!j->q_len && !j->stop)
			pthread_cond_wait(&j->cv, &j->mu);
		if (!j->q_len)
			break; /* stopping, the queue drained */
		char *a = j->queue[j->q_head];
		j->q_head = (j->q_head + 1) % JOIN_HOOK_QUEUE;
		j->q_len--;
		pthread_mutex_unlock(&j->mu);
		run_hook(j, a);
		free(a);
		pthread_mutex_lock(&j->mu);
	}
	pthread_mutex_unlock(&j->mu);
	return NULL;
}

fleet_err join_refusal_start(struct fleet_join *j, struct fleet_errctx *ec)
{
	fleet_err e;
	pthread_mutex_init(&j->mu, NULL);
	pthread_cond_init(&j->cv, NULL);
	if (!(j->limit = fleet_log_limit_new(JOIN_LOG_WINDOW_S, JOIN_LOG_KEYS)))
		return fleet_errctx_msg(ec, FLEET_E_NOMEM, "out of memory");
	if ((e = fleet_metrics_register(j->cfg.metrics, FLEET_METRIC_COUNTER,
					"fleetd_join_hook_dropped_total",
					"Join refusals the on_refusal hook did not get (its queue "
					"was full)",
					NULL, NULL, &j->m_hook_dropped, ec)))
		return e;
	if (!j->on_refusal[0])
		return FLEET_OK;
	if (j->on_refusal[0] != '/')
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG,
					"join.on_refusal must be an absolute path");
	if (access(j->on_refusal, X_OK) != 0)
		return fleet_errctx_msg(ec, FLEET_E_NOT_FOUND,
					"join.on_refusal %s is not an executable file", j->on_refusal);
	if (pthread_create(&j->hook, NULL, hook_main, j) != 0)
		return fleet_errctx_msg(ec, FLEET_E_NOMEM, "the on_refusal thread did not start");
	j->hook_running = true;
	return FLEET_OK;
}

void join_refusal_stop(struct fleet_join *j)
{
	if (j->hook_running) {
		pthread_mutex_lock(&j->mu);
		j->stop = true;
		pthread_cond_signal(&j->cv);
		pthread_mutex_unlock(&j->mu);
		pthread_join(j->hook, NULL);
		j->hook_running = false;
	}
	while (j->q_len) {
		free(j->queue[j->q_head]);
		j->q_head = (j->q_head + 1) % JOIN_HOOK_QUEUE;
		j->q_len--;
	}
	fleet_log_limit_free(j->limit);
	j->limit = NULL;
}
