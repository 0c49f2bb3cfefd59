/*
 * install_int.h: what the files of fleetd/install share; not a contract
 * (install.h is).
 */
#ifndef FLEETD_INSTALL_INT_H
#define FLEETD_INSTALL_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "fleetd/install/install.h"

/* CSRs refused are journaled once each: the last few uids are kept. */
#define INSTALL_REFUSED_MEMORY 64

struct fleet_install {
	struct fleet_install_deps d;
	/* One CSR decision at a time: the watch thread and the pass both
	 * call fleet_install_csr, and A3's check-then-record must not
	 * interleave with itself. */
	pthread_mutex_t csr_mu;
	char refused[INSTALL_REFUSED_MEMORY][64];
	unsigned refused_next;
	pthread_t watch;
	bool watching;
	volatile int stop;
	struct fleet_metric *m_start;  /* fleetd_provision_start_total{result} */
	struct fleet_metric *m_drop;   /* fleetd_provision_dropped_total{reason} */
	struct fleet_metric *m_csr;    /* fleetd_kubelet_csr_total{result} */
};

time_t inst_now(const struct fleet_install *in);
void inst_count(struct fleet_metric *m, const char *label);

/* Object paths in out[512]. */
void inst_workflow_path(const struct fleet_install *in, const char *name, char *out, size_t n);
void inst_workflows_path(const struct fleet_install *in, char *out, size_t n);
void inst_secret_path(const char *token_id, char *out, size_t n);

/* Drop provision p (open) for reason: the store first (the code burned),
 * then its Workflow deleted when delete_workflow. Journaled. */
void inst_drop(struct fleet_install *in, const struct fleet_store_provision *p,
	       const char *reason, bool delete_workflow);

/* Delete p's token Secret and record it deleted; true when it is gone. */
bool inst_token_delete(struct fleet_install *in, const struct fleet_store_provision *p,
		       const char *why);

/* The workflow's state word in out[32] ("" when it has none yet). */
void inst_workflow_state(json_t *wf, char *out, size_t n);
bool inst_workflow_failed(const char *state, const char **reason);
bool inst_workflow_installed(json_t *wf);

#endif
