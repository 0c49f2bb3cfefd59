#include "fleetd/pass/pass_runner.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

struct fleet_pass_runner {
	struct fleet_pass *pass;
	atomic_bool *cancel;
	uint64_t interval_ms;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* CLOCK_MONOTONIC: a clock step moves no pass */
	bool stop;         /* under mu */
	uint64_t started;  /* under mu: the running pass's start, 0: none */
	uint64_t passes;   /* under mu */
};

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void *run(void *arg)
{
	struct fleet_pass_runner *r = arg;
	uint64_t next = mono_ms(); /* the first pass at once */
	pthread_mutex_lock(&r->mu);
	for (;;) {
		uint64_t now = mono_ms();
		while (!r->stop && now < next) {
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			uint64_t wait = next - now;
			ts.tv_sec += (time_t)(wait / 1000u);
			ts.tv_nsec += (long)(wait % 1000u) * 1000000L;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			(void)pthread_cond_timedwait(&r->cv, &r->mu, &ts);
			now = mono_ms();
		}
		if (r->stop)
			break;
		r->started = now ? now : 1;
		pthread_mutex_unlock(&r->mu);
		(void)fleet_pass_run(r->pass, time(NULL));
		pthread_mutex_lock(&r->mu);
		r->started = 0;
		r->passes++;
		next = mono_ms() + r->interval_ms;
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

int fleet_pass_runner_start(struct fleet_pass *pass, atomic_bool *cancel,
			    uint32_t interval_seconds, struct fleet_pass_runner **out)
{
	struct fleet_pass_runner *r = calloc(1, sizeof(*r));
	pthread_condattr_t ca;
	if (!r)
		return -1;
	r->pass = pass;
	r->cancel = cancel;
	r->interval_ms = (uint64_t)interval_seconds * 1000u;
	int e = pthread_condattr_init(&ca);
	if (!e) {
		e = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		if (!e)
			e = pthread_cond_init(&r->cv, &ca);
		pthread_condattr_destroy(&ca);
	}
	if (e) {
		free(r);
		errno = e;
		return -1;
	}
	pthread_mutex_init(&r->mu, NULL);
	if ((e = pthread_create(&r->thread, NULL, run, r)) != 0) {
		pthread_cond_destroy(&r->cv);
		pthread_mutex_destroy(&r->mu);
		free(r);
		errno = e;
		return -1;
	}
	*out = r;
	return 0;
}

uint64_t fleet_pass_runner_busy_ms(struct fleet_pass_runner *r)
{
	pthread_mutex_lock(&r->mu);
	uint64_t s = r->started;
	pthread_mutex_unlock(&r->mu);
	if (!s)
		return 0;
	uint64_t now = mono_ms();
	return now > s ? now - s : 1;
}

uint64_t fleet_pass_runner_passes(struct fleet_pass_runner *r)
{
	pthread_mutex_lock(&r->mu);
	uint64_t n = r->passes;
	pthread_mutex_unlock(&r->mu);
	return n;
}

void fleet_pass_runner_stop(struct fleet_pass_runner *r)
{
	if (!r)
		return;
	atomic_store(r->cancel, true);
	pthread_mutex_lock(&r->mu);
	r->stop = true;
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
	pthread_join(r->thread, NULL);
	pthread_cond_destroy(&r->cv);
	pthread_mutex_destroy(&r->mu);
	free(r);
}
