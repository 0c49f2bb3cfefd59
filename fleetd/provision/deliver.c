/*
 * deliver.c: GET /config's one-time delivery (deliver.h).
 *
 * Order of one request: the query's rule (no store read for a request
 * that proves nothing); the code's hash looked up (NOT_FOUND: 404, no
 * event); the provision's lease taken, by id, under the mutex (held:
 * 409); the row read again under the lease, so that a delivery which
 * consumed it between the lookup and the lease is seen (410); then the
 * 200. The lease is released only after the consumption committed or was
 * given up, so whoever takes it next reads the row as that left it.
 */
#include "fleetd/provision/deliver.h"

#include <errno.h>
#include <linux/sockios.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>

#include <openssl/evp.h>

#include "lib/hex.h"

/* tcpi_state of a closed (reset) socket: the kernel's TCP_CLOSE, which
 * linux/tcp.h does not name (netinet/tcp.h, which does, clashes with it). */
#define TCP_STATE_CLOSE 7

struct fleet_deliver_lease {
	struct fleet_deliver *d;
	struct fleet_deliver_lease *next;
	int64_t id;
	char device[64];
	char peer[64];
	size_t bytes;
	long long started_ms, deadline_ms;
};

struct fleet_deliver {
	struct fleet_store *store;
	unsigned deadline_s;
	void (*event)(void *ctx, const struct fleet_deliver_event *ev);
	void *event_ctx;
	pthread_mutex_t mu;
	struct fleet_deliver_lease *leases; /* one per provision being delivered */
};

static long long mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000l};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

fleet_err fleet_deliver_parse_query(const struct fleet_deliver_arg *args, size_t n, bool more,
				    uint8_t code[32])
{
	if (more || n != 1 || !args || !args[0].key || strcmp(args[0].key, "code") != 0)
		return FLEET_E_MALFORMED;
	const char *v = args[0].value;
	if (!v || strnlen(v, FLEET_DELIVER_CODE_HEX + 1) != FLEET_DELIVER_CODE_HEX ||
	    !fleet_hex_is_lower(v, FLEET_DELIVER_CODE_HEX))
		return FLEET_E_MALFORMED;
	return fleet_hex_decode(v, FLEET_DELIVER_CODE_HEX, code, 32) == FLEET_OK ? FLEET_OK
										  : FLEET_E_MALFORMED;
}

struct fleet_deliver *fleet_deliver_new(const struct fleet_deliver_config *cfg)
{
	if (!cfg || !cfg->store)
		return NULL;
	struct fleet_deliver *d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	if (pthread_mutex_init(&d->mu, NULL) != 0) {
		free(d);
		return NULL;
	}
	d->store = cfg->store;
	d->deadline_s = cfg->write_deadline_seconds ? cfg->write_deadline_seconds
						    : FLEET_DELIVER_DEFAULT_DEADLINE;
	d->event = cfg->event;
	d->event_ctx = cfg->event_ctx;
	return d;
}

void fleet_deliver_free(struct fleet_deliver *d)
{
	if (!d)
		return;
	pthread_mutex_destroy(&d->mu);
	free(d);
}

static void emit(struct fleet_deliver *d, enum fleet_deliver_event_kind kind, int64_t id,
		 const char *device, const char *reason, const char *peer, size_t bytes,
		 long long wait_ms)
{
	if (!d->event)
		return;
	struct fleet_deliver_event ev = {
		.kind = kind,
		.provision_id = id,
		.device = device ? device : "",
		.reason = reason,
		.peer = peer ? peer : "unknown",
		.bytes = bytes,
		.wait_ms = wait_ms,
	};
	d->event(d->event_ctx, &ev);
}

static int answer(struct fleet_buf *body, struct fleet_deliver_result *r, int status,
		  const char *reason)
{
	char text[96];
	int n = snprintf(text, sizeof(text), "{\"error\":\"%s\"}", reason);
	fb_put(body, text, (size_t)n);
	r->reason = reason;
	r->content_type = "application/json";
	return status;
}

static int store_failure(struct fleet_buf *body, struct fleet_deliver_result *r, fleet_err e)
{
	if (e == FLEET_STORE_E_BUSY)
		return answer(body, r, 503, "busy");
	return answer(body, r, 500, "internal");
}

/* Take the lease of provision id; false: another connection holds it. */
static bool lease_take(struct fleet_deliver *d, struct fleet_deliver_lease *l)
{
	pthread_mutex_lock(&d->mu);
	bool held = false;
	for (struct fleet_deliver_lease *p = d->leases; p && !held; p = p->next)
		held = p->id == l->id;
	if (!held) {
		l->next = d->leases;
		d->leases = l;
	}
	pthread_mutex_unlock(&d->mu);
	return !held;
}

static void lease_release(struct fleet_deliver_lease *l)
{
	struct fleet_deliver *d = l->d;
	pthread_mutex_lock(&d->mu);
	for (struct fleet_deliver_lease **p = &d->leases; *p; p = &(*p)->next)
		if (*p == l) {
			*p = l->next;
			break;
		}
	pthread_mutex_unlock(&d->mu);
	free(l);
}

/* Why a known code is not served: expired or burned (its row says). */
static const char *refusal(const struct fleet_store_provision *p, int64_t now)
{
	if (p->stage == FLEET_PROV_RENDERED)
		return "not-started";
	if (p->stage == FLEET_PROV_STARTED && now >= p->expires_at)
		return "expired";
	return "code-burned";
}

int fleet_deliver_get(struct fleet_deliver *d, const struct fleet_deliver_arg *args, size_t n,
		      bool more, long long started_ms, const char *peer, struct fleet_buf *body,
		      struct fleet_deliver_result *r)
{
	memset(r, 0, sizeof(*r));
	uint8_t code[32], hash[32];
	if (fleet_deliver_parse_query(args, n, more, code) != FLEET_OK)
		return answer(body, r, 400, "malformed-query");
	unsigned hlen = 0;
	int ok = EVP_Digest(code, sizeof(code), hash, &hlen, EVP_sha256(), NULL);
	explicit_bzero(code, sizeof(code));
	if (ok != 1 || hlen != sizeof(hash))
		return answer(body, r, 500, "internal");

	int64_t now = (int64_t)time(NULL), id = 0;
	struct fleet_buf config;
	fb_init_secret(&config, FLEET_STORE_CONFIG_MAX);
	fleet_err e = fleet_store_provision_config_for_code(d->store, hash, now, &id, &config);
	fb_free(&config); /* the lease decides; the config is read again under it */
	if (e == FLEET_STORE_E_NOT_FOUND)
		return answer(body, r, 404, "unknown-code");
	if (e != FLEET_STORE_OK && e != FLEET_STORE_E_STATE && e != FLEET_STORE_E_CONFLICT)
		return store_failure(body, r, e);

	struct fleet_store_provision p;
	fleet_err ge = fleet_store_provision_get(d->store, id, &p);
	if (ge != FLEET_STORE_OK)
		return store_failure(body, r, ge);
	if (e != FLEET_STORE_OK) {
		const char *why = refusal(&p, now);
		emit(d, FLEET_DELIVER_REFUSED, id, p.device, why, peer, 0, 0);
		return answer(body, r, strcmp(why, "not-started") ? 410 : 409, why);
	}

	struct fleet_deliver_lease *l = calloc(1, sizeof(*l));
	if (!l)
		return answer(body, r, 500, "internal");
	l->d = d;
	l->id = id;
	l->started_ms = started_ms;
	l->deadline_ms = started_ms + 1000ll * d->deadline_s;
	snprintf(l->device, sizeof(l->device), "%s", p.device);
	snprintf(l->peer, sizeof(l->peer), "%s", peer ? peer : "unknown");
	if (!lease_take(d, l)) {
		emit(d, FLEET_DELIVER_REFUSED, id, p.device, "delivery-in-progress", peer, 0, 0);
		free(l);
		return answer(body, r, 409, "delivery-in-progress");
	}
	/* Under the lease: whatever consumed or dropped it before is seen. */
	fb_free(body);
	fb_init_secret(body, FLEET_STORE_CONFIG_MAX);
	int64_t id2 = 0;
	e = fleet_store_provision_config_for_code(d->store, hash, now, &id2, body);
	if (e != FLEET_STORE_OK || id2 != id) {
		fb_free(body);
		fb_init(body);
		lease_release(l);
		if (e != FLEET_STORE_E_STATE && e != FLEET_STORE_E_CONFLICT && e != FLEET_STORE_OK)
			return store_failure(body, r, e);
		if ((ge = fleet_store_provision_get(d->store, id, &p)) != FLEET_STORE_OK)
			return store_failure(body, r, ge);
		const char *why = refusal(&p, now);
		emit(d, FLEET_DELIVER_REFUSED, id, p.device, why, peer, 0, 0);
		return answer(body, r, strcmp(why, "not-started") ? 410 : 409, why);
	}
	l->bytes = body->len;
	r->content_type = FLEET_DELIVER_CONTENT_TYPE;
	r->close = true;
	r->lease = l;
	r->write_deadline_ms = l->deadline_ms;
	emit(d, FLEET_DELIVER_SERVING, id, l->device, NULL, l->peer, l->bytes, 0);
	return 200;
}

/* Until the peer acknowledged every byte (SIOCOUTQ 0): NULL, or why not. */
static const char *wait_acknowledged(int fd, long long deadline_ms)
{
	long nap = 1;
	for (;;) {
		int outq = -1;
		if (ioctl(fd, SIOCOUTQ, &outq) != 0 || outq < 0)
			return "not-acknowledged";
		if (outq == 0)
			return NULL;
		/* A reset leaves the queue above 0 for good: snd_una never
		 * moves again. */
		struct tcp_info ti;
		socklen_t len = sizeof(ti);
		memset(&ti, 0, sizeof(ti));
		if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0 &&
		    ti.tcpi_state == TCP_STATE_CLOSE)
			return "not-acknowledged";
		long long left = deadline_ms - mono_ms();
		if (left <= 0)
			return "write-deadline";
		sleep_ms(nap < left ? nap : (long)left);
		if (nap < 20)
			nap *= 2;
	}
}

void fleet_deliver_done(void *arg, bool ok, int fd)
{
	struct fleet_deliver_lease *l = arg;
	if (!l)
		return;
	struct fleet_deliver *d = l->d;
	const char *why = NULL;
	if (!ok || fd < 0)
		why = "connection-closed";
	else if (mono_ms() >= l->deadline_ms)
		why = "write-deadline";
	else
		why = wait_acknowledged(fd, l->deadline_ms);
	if (!why) {
		fleet_err e = fleet_store_provision_consume(d->store, l->id, (int64_t)time(NULL));
		if (e == FLEET_STORE_E_CONFLICT)
			why = "consume-conflict";
		else if (e != FLEET_STORE_OK)
			why = "store-error";
	}
	long long waited = mono_ms() - l->started_ms;
	int64_t id = l->id;
	char device[64], peer[64];
	size_t bytes = l->bytes;
	memcpy(device, l->device, sizeof(device));
	memcpy(peer, l->peer, sizeof(peer));
	lease_release(l); /* after the consumption: the next holder reads its result */
	if (why)
		emit(d, FLEET_DELIVER_INCOMPLETE, id, device, why, peer, bytes, waited);
	else
		emit(d, FLEET_DELIVER_DELIVERED, id, device, NULL, peer, bytes, waited);
}
