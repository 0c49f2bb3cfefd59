/* lookup.c: intake's bounded device lookup (lookup.h). */
#include "fleetd/admission/lookup.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static double secs_between(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

int adm_lookup_init(struct adm_lookup *l, struct fleet_inventory *inv, unsigned per_second,
		    unsigned cache_ms)
{
	memset(l, 0, sizeof(*l));
	if (!(l->v = calloc(ADM_LOOKUP_ENTRIES, sizeof(*l->v))))
		return -1;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (pthread_mutex_init(&l->mu, NULL) != 0 || pthread_cond_init(&l->cv, &ca) != 0) {
		pthread_condattr_destroy(&ca);
		free(l->v);
		l->v = NULL;
		return -1;
	}
	pthread_condattr_destroy(&ca);
	l->inv = inv;
	l->rate = per_second ? per_second : 1;
	l->burst = 2 * l->rate;
	l->tokens = l->burst;
	l->ttl_s = cache_ms / 1000.0;
	clock_gettime(CLOCK_MONOTONIC, &l->refilled);
	return 0;
}

void adm_lookup_destroy(struct adm_lookup *l)
{
	if (!l->v)
		return;
	pthread_mutex_destroy(&l->mu);
	pthread_cond_destroy(&l->cv);
	free(l->v);
	l->v = NULL;
}

static struct adm_lookup_entry *find(struct adm_lookup *l, const char *serial)
{
	for (size_t i = 0; i < ADM_LOOKUP_ENTRIES; i++)
		if (l->v[i].used && strcasecmp(l->v[i].serial, serial) == 0)
			return &l->v[i];
	return NULL;
}

/* A free slot, else the oldest answered one (an in-flight slot is never
 * taken: its waiters read it). NULL when every slot is in flight. */
static struct adm_lookup_entry *slot(struct adm_lookup *l)
{
	struct adm_lookup_entry *old = NULL;
	for (size_t i = 0; i < ADM_LOOKUP_ENTRIES; i++) {
		struct adm_lookup_entry *e = &l->v[i];
		if (!e->used)
			return e;
		if (!e->inflight && (!old || secs_between(&e->at, &old->at) > 0))
			old = e;
	}
	return old;
}

static bool take_token(struct adm_lookup *l, const struct timespec *now)
{
	l->tokens += secs_between(&l->refilled, now) * l->rate;
	if (l->tokens > l->burst)
		l->tokens = l->burst;
	l->refilled = *now;
	if (l->tokens < 1)
		return false;
	l->tokens -= 1;
	return true;
}

fleet_err adm_lookup_device(struct adm_lookup *l, const char *serial, struct fleet_inv_device *out,
			    bool *over_budget, struct fleet_errctx *ec)
{
	*over_budget = false;
	struct timespec now;
	struct adm_lookup_entry *e;
	size_t len = strlen(serial);
	if (len >= FLEET_INV_STR) /* the wire caps serials below this */
		return l->inv->ops->find_by_serial(l->inv, serial, out, ec);
	bool waited = false;
	unsigned long gen = 0;
	pthread_mutex_lock(&l->mu);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		e = find(l, serial);
		if (!e)
			break;
		if (!e->inflight) {
			/* the answer this intake waited for, or a fresh one */
			if ((waited && e->gen == gen) || secs_between(&e->at, &now) < l->ttl_s) {
				fleet_err r = e->r;
				*out = e->dev;
				pthread_mutex_unlock(&l->mu);
				return r;
			}
			e->used = false; /* stale */
			break;
		}
		/* Another intake is asking about this serial right now. A
		 * bounded wait: its request has the inventory's own timeout. */
		struct timespec until = now;
		until.tv_sec += 1;
		waited = true;
		gen = e->gen;
		pthread_cond_timedwait(&l->cv, &l->mu, &until);
	}
	if (!take_token(l, &now)) {
		pthread_mutex_unlock(&l->mu);
		*over_budget = true;
		return FLEET_INV_UNAVAILABLE;
	}
	e = slot(l);
	if (e) {
		memset(e, 0, sizeof(*e));
		memcpy(e->serial, serial, len + 1);
		e->used = e->inflight = true;
		e->gen = ++l->gens;
	}
	l->requests++;
	pthread_mutex_unlock(&l->mu);

	fleet_err r = l->inv->ops->find_by_serial(l->inv, serial, out, ec);

	pthread_mutex_lock(&l->mu);
	if (e) {
		e->inflight = false;
		clock_gettime(CLOCK_MONOTONIC, &e->at);
		if (r == FLEET_INV_OK || r == FLEET_INV_NOT_FOUND) {
			e->r = r;
			e->dev = *out;
		} else {
			e->used = false; /* an outage is not an answer to keep */
		}
		pthread_cond_broadcast(&l->cv);
	}
	pthread_mutex_unlock(&l->mu);
	return r;
}

bool adm_lookup_budget(struct adm_lookup *l)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	pthread_mutex_lock(&l->mu);
	bool ok = take_token(l, &now);
	if (ok)
		l->requests++;
	pthread_mutex_unlock(&l->mu);
	return ok;
}

void adm_lookup_forget(struct adm_lookup *l, const char *serial)
{
	pthread_mutex_lock(&l->mu);
	struct adm_lookup_entry *e = find(l, serial);
	if (e && !e->inflight)
		e->used = false;
	pthread_mutex_unlock(&l->mu);
}
