/* sessions.c: the open-session table (sessions.h). */
#include "fleetd/admission/sessions.h"
#include "fleetd/admission/sessions_shared.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <arpa/inet.h>
#include <openssl/crypto.h>

static void set_gauge(struct adm_sessions *t)
{
	if (t->gauge)
		fleet_metric_set(t->gauge, (int64_t)t->n);
}

void adm_session_free(struct adm_session *e)
{
	fleet_attest_session_wipe(&e->s);
	OPENSSL_cleanse(e, sizeof(*e));
	free(e);
}

/* Take entry i out of the table (lock held); the caller frees it. */
static struct adm_session *unlink_at(struct adm_sessions *t, size_t i)
{
	struct adm_session *e = t->v[i];
	t->v[i] = t->v[--t->n];
	t->v[t->n] = NULL;
	return e;
}

/* Why an idle published entry must end now, or NULL. */
static const char *ending(const struct adm_session *e, time_t now)
{
	if (!e->published)
		return NULL;
	if (e->superseded)
		return "superseded";
	if (now > e->s.deadline || (!e->proven && e->answer_by && now > e->answer_by))
		return "session-expired";
	return NULL;
}

/* The source as the caps count it: an IPv6 address by its /64 (one host
 * holds a whole /64, and counting full addresses would give it one place
 * per address), anything else as it is. The listener's rate limit keys
 * sources the same way. */
static void peer_key(const char *peer, char out[ADM_PEER_MAX])
{
	struct in6_addr a;
	static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	char bare[ADM_PEER_MAX];
	/* a link-local address comes with its zone ("fe80::1%eth0") */
	size_t bl = strcspn(peer, "%");
	if (bl >= sizeof(bare))
		bl = sizeof(bare) - 1;
	memcpy(bare, peer, bl);
	bare[bl] = '\0';
	if (inet_pton(AF_INET6, bare, &a) == 1 && memcmp(a.s6_addr, mapped, 12) != 0) {
		memset(a.s6_addr + 8, 0, 8);
		if (inet_ntop(AF_INET6, &a, out, ADM_PEER_MAX))
			return;
	}
	size_t len = strlen(peer);
	if (len >= ADM_PEER_MAX)
		len = ADM_PEER_MAX - 1;
	memcpy(out, peer, len);
	out[len] = '\0';
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

int adm_sessions_share(struct adm_sessions *t, struct fleet_store *st, const uint8_t key[32],
		       unsigned lease_s,
		       const struct fleet_profile *(*profile_for)(void *ctx,
								   const struct adm_session *e,
								   bool *ok),
		       void *profile_ctx)
{
	if (!st || !key || lease_s == 0 || t->n)
		return -1;
	t->st = st;
	memcpy(t->seal_key, key, sizeof(t->seal_key));
	t->lease_s = lease_s;
	t->profile_for = profile_for;
	t->profile_ctx = profile_ctx;
	return 0;
}

void adm_sessions_destroy(struct adm_sessions *t)
{
	OPENSSL_cleanse(t->seal_key, sizeof(t->seal_key));
	if (!t->v)
		return;
	while (t->n)
		adm_session_free(unlink_at(t, t->n - 1));
	free(t->v);
	t->v = NULL;
	pthread_mutex_destroy(&t->mu);
}

enum adm_sess_result adm_sessions_reserve(struct adm_sessions *t, const char *serial,
					  const char *peer, time_t now,
					  struct adm_session **out)
{
	enum adm_sess_result r = ADM_SESS_OK;
	size_t of_serial = 0, of_peer = 0;
	struct adm_session *replace = NULL;
	char key[ADM_PEER_MAX];
	*out = NULL;
	if (!peer)
		peer = "";
	peer_key(peer, key);
	if (t->st)
		return adm_sh_reserve(t, serial, peer, key, now, out);
	pthread_mutex_lock(&t->mu);
	for (size_t i = 0; i < t->n; i++) {
		struct adm_session *e = t->v[i];
		if (ending(e, now))
			continue; /* the reaper's: it may hold certificates to revoke */
		bool unproven = !e->proven;
		if (unproven && strcmp(e->peer_key, key) == 0)
			of_peer++;
		if (strcasecmp(e->s.serial, serial) != 0)
			continue;
		of_serial++;
		/* This address's own earlier unproven try for this serial: the
		 * exact address, never a neighbour in its /64. */
		if (unproven && strcmp(e->peer, peer) == 0 && !e->busy && e->published &&
		    !replace)
			replace = e;
	}
	if (replace) {
		for (size_t i = 0; i < t->n; i++)
			if (t->v[i] == replace) {
				adm_session_free(unlink_at(t, i));
				break;
			}
		of_serial--;
		of_peer--;
	}
	if (of_serial >= ADM_SESSIONS_PER_SERIAL) {
		r = ADM_SESS_OPEN;
		goto out;
	}
	if (of_peer >= ADM_SESSIONS_PER_PEER) {
		r = ADM_SESS_PEER;
		goto out;
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
	len = strlen(peer);
	if (len >= sizeof(e->peer))
		len = sizeof(e->peer) - 1;
	memcpy(e->peer, peer, len);
	memcpy(e->peer_key, key, sizeof(key));
	e->busy = true;
	t->v[t->n++] = e;
	*out = e;
out:
	set_gauge(t);
	pthread_mutex_unlock(&t->mu);
	return r;
}

bool adm_sessions_publish(struct adm_sessions *t, struct adm_session *e)
{
	if (t->st)
		return adm_sh_publish(t, e);
	pthread_mutex_lock(&t->mu);
	e->published = true;
	e->busy = false;
	pthread_mutex_unlock(&t->mu);
	return true;
}

enum adm_sess_result adm_sessions_acquire(struct adm_sessions *t,
					  const uint8_t id[FLEET_WIRE_ID_LEN], time_t now,
					  struct adm_session **out)
{
	struct adm_session *found = NULL;
	enum adm_sess_result r;
	*out = NULL;
	if (t->st)
		return adm_sh_acquire(t, id, now, out);
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
	else if (ending(found, now))
		r = ADM_SESS_EXPIRED;
	else {
		found->busy = true;
		*out = found;
		r = ADM_SESS_OK;
	}
	pthread_mutex_unlock(&t->mu);
	return r;
}

size_t adm_sessions_prove(struct adm_sessions *t, struct adm_session *e)
{
	size_t n = 0;
	if (t->st)
		return adm_sh_prove(t, e);
	pthread_mutex_lock(&t->mu);
	e->proven = true;
	/* Only a session for the same EKs is superseded: a proof says nothing
	 * about another TPM's sessions (a genuine TPM claiming a serial it is
	 * not bound to ends none of that machine's). */
	for (size_t i = 0; i < t->n; i++) {
		struct adm_session *o = t->v[i];
		if (o != e && !o->superseded && strcasecmp(o->s.serial, e->s.serial) == 0 &&
		    strcmp(o->s.ek_hash, e->s.ek_hash) == 0 &&
		    strcmp(o->s.ek_hash_ecc, e->s.ek_hash_ecc) == 0) {
			o->superseded = true;
			n++;
		}
	}
	pthread_mutex_unlock(&t->mu);
	return n;
}

void adm_sessions_release(struct adm_sessions *t, struct adm_session *e)
{
	if (t->st) {
		adm_sh_release(t, e);
		return;
	}
	pthread_mutex_lock(&t->mu);
	e->busy = false;
	pthread_mutex_unlock(&t->mu);
}

void adm_sessions_drop(struct adm_sessions *t, struct adm_session *e)
{
	if (t->st) {
		adm_sh_drop(t, e);
		return;
	}
	pthread_mutex_lock(&t->mu);
	for (size_t i = 0; i < t->n; i++) {
		if (t->v[i] == e) {
			adm_session_free(unlink_at(t, i));
			break;
		}
	}
	set_gauge(t);
	pthread_mutex_unlock(&t->mu);
}

size_t adm_sessions_reap(struct adm_sessions *t, time_t now, adm_sess_ended ended, void *ctx)
{
	struct adm_session **gone;
	const char **why;
	size_t n = 0;
	if (t->st)
		return adm_sh_reap(t, now, ended, ctx);
	pthread_mutex_lock(&t->mu);
	/* At most the whole table; allocated under the lock so the count is
	 * the one the loop sees. Without memory, nothing is reaped this time. */
	gone = t->n ? calloc(t->n, sizeof(*gone)) : NULL;
	why = t->n ? calloc(t->n, sizeof(*why)) : NULL;
	for (size_t i = t->n; gone && why && i-- > 0;) {
		const char *w = t->v[i]->busy ? NULL : ending(t->v[i], now);
		if (w) {
			why[n] = w;
			gone[n++] = unlink_at(t, i);
		}
	}
	set_gauge(t);
	pthread_mutex_unlock(&t->mu);
	for (size_t i = 0; i < n; i++) {
		if (ended)
			ended(ctx, gone[i], why[i]);
		adm_session_free(gone[i]);
	}
	free(gone);
	free(why);
	return n;
}

size_t adm_sessions_count(struct adm_sessions *t)
{
	if (t->st)
		return adm_sh_count(t);
	pthread_mutex_lock(&t->mu);
	size_t n = t->n;
	pthread_mutex_unlock(&t->mu);
	return n;
}
