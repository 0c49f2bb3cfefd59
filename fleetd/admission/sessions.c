/* sessions.c: the open-session table (sessions.h). */
#include "fleetd/admission/sessions.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>

static void set_gauge(struct adm_sessions *t)
{
	if (t->gauge)
		fleet_metric_set(t->gauge, (int64_t)t->n);
}

/* Remove entry i (lock held): wipe its secrets, free it. */
static void remove_at(struct adm_sessions *t, size_t i)
{
	struct adm_session *e = t->v[i];
	fleet_attest_session_wipe(&e->s);
	OPENSSL_cleanse(e, sizeof(*e));
	free(e);
	t->v[i] = t->v[--t->n];
	t->v[t->n] = NULL;
}

static bool expired(const struct adm_session *e, time_t now)
{
	return e->published && now > e->s.deadline;
}

int adm_sessions_init(struct adm_sessions *t, size_t cap, struct fleet_metric *gauge)
{
	memset(t, 0, sizeof(*t));
	if (cap == 0)
		return -1;
	t->v = calloc(cap, sizeof(*t->v));
	if (!t->v)
		return -1;
	if (pthread_mutex_init(&t->mu, NULL) != 0) {
		free(t->v);
		t->v = NULL;
		return -1;
	}
	t->cap = cap;
	t->gauge = gauge;
	set_gauge(t);
	return 0;
}

void adm_sessions_destroy(struct adm_sessions *t)
{
	if (!t->v)
		return;
	while (t->n)
		remove_at(t, t->n - 1);
	free(t->v);
	t->v = NULL;
	pthread_mutex_destroy(&t->mu);
}

enum adm_sess_result adm_sessions_reserve(struct adm_sessions *t, const char *serial, time_t now,
					  struct adm_session **out)
{
	enum adm_sess_result r = ADM_SESS_OK;
	*out = NULL;
	pthread_mutex_lock(&t->mu);
	for (size_t i = 0; i < t->n; i++) {
		struct adm_session *e = t->v[i];
		if (strcasecmp(e->s.serial, serial) != 0)
			continue;
		if (e->busy || !expired(e, now)) {
			r = ADM_SESS_OPEN;
			goto out;
		}
		remove_at(t, i); /* expired and idle: the clock ended it */
		break;           /* at most one entry per serial */
	}
	if (t->n >= t->cap) {
		r = ADM_SESS_FULL;
		goto out;
	}
	struct adm_session *e = calloc(1, sizeof(*e));
	if (!e) {
		r = ADM_SESS_NOMEM;
		goto out;
	}
	size_t len = strlen(serial);
	if (len >= sizeof(e->s.serial))
		len = sizeof(e->s.serial) - 1; /* the decoder capped it already */
	memcpy(e->s.serial, serial, len);
	e->busy = true;
	t->v[t->n++] = e;
	*out = e;
	set_gauge(t);
out:
	pthread_mutex_unlock(&t->mu);
	return r;
}

void adm_sessions_publish(struct adm_sessions *t, struct adm_session *e)
{
	pthread_mutex_lock(&t->mu);
	e->published = true;
	e->busy = false;
	pthread_mutex_unlock(&t->mu);
}

enum adm_sess_result adm_sessions_acquire(struct adm_sessions *t,
					  const uint8_t id[FLEET_WIRE_ID_LEN], time_t now,
					  struct adm_session **out)
{
	struct adm_session *found = NULL;
	enum adm_sess_result r;
	*out = NULL;
	pthread_mutex_lock(&t->mu);
	/* Every published entry is compared, in constant time each, so how
	 * long a lookup takes says nothing about how much of an id matched. */
	for (size_t i = 0; i < t->n; i++) {
		struct adm_session *e = t->v[i];
		if (e->published && CRYPTO_memcmp(e->s.id, id, FLEET_WIRE_ID_LEN) == 0)
			found = e;
	}
	if (!found)
		r = ADM_SESS_UNKNOWN;
	else if (found->busy)
		r = ADM_SESS_BUSY;
	else if (expired(found, now))
		r = ADM_SESS_EXPIRED;
	else {
		found->busy = true;
		*out = found;
		r = ADM_SESS_OK;
	}
	pthread_mutex_unlock(&t->mu);
	return r;
}

void adm_sessions_release(struct adm_sessions *t, struct adm_session *e)
{
	pthread_mutex_lock(&t->mu);
	e->busy = false;
	pthread_mutex_unlock(&t->mu);
}

void adm_sessions_drop(struct adm_sessions *t, struct adm_session *e)
{
	pthread_mutex_lock(&t->mu);
	for (size_t i = 0; i < t->n; i++) {
		if (t->v[i] == e) {
			remove_at(t, i);
			break;
		}
	}
	set_gauge(t);
	pthread_mutex_unlock(&t->mu);
}

size_t adm_sessions_reap(struct adm_sessions *t, time_t now)
{
	size_t dropped = 0;
	pthread_mutex_lock(&t->mu);
	for (size_t i = t->n; i-- > 0;) {
		if (!t->v[i]->busy && expired(t->v[i], now)) {
			remove_at(t, i);
			dropped++;
		}
	}
	set_gauge(t);
	pthread_mutex_unlock(&t->mu);
	return dropped;
}

size_t adm_sessions_count(struct adm_sessions *t)
{
	pthread_mutex_lock(&t->mu);
	size_t n = t->n;
	pthread_mutex_unlock(&t->mu);
	return n;
}
