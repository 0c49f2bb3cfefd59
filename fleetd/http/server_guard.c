/*
 * server_guard.c: what bounds a client's cost to the listener (server.h):
 * the request deadline, the memory budget of bodies in flight, and the
 * per-source rate limit of POST routes.
 *
 * A reply may carry a write deadline too (server.h, write-deadline): the
 * sweep cuts a connection still handling its request past it the same way.
 *
 * The deadline. libmicrohttpd 0.9.75's own timeout is an idle timeout (any
 * byte resets it) and it calls us only once the headers are in, so it can
 * cut neither a client trickling its headers nor one trickling its body.
 * Each connection is therefore on a list from its accept (the connection
 * notification) to its close, and a sweep thread shuts down the socket of
 * one whose request has not arrived in full by its deadline. A request's
 * clock starts at the connection's accept for the first request (the TLS
 * handshake counts), and for a later one on a kept-alive connection at its
 * first bytes, which the sweep sees as TCP bytes received (TCP_INFO) since
 * the request before ended. It stops when the body is in: the handler's
 * own time (an inventory call) is not the client's. libmicrohttpd calls
 * the close notification before it closes the socket, and both it and the
 * sweep hold guard, so the sweep never touches a descriptor that has been
 * closed (and perhaps reused). shutdown() leaves the descriptor open;
 * libmicrohttpd then reads end-of-file and closes it as usual, saying so
 * in its log; server.c's logger drops those words while a cut connection
 * is open (cuts_open), so a cut is counted and never journaled.
 */
#include <errno.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fleetd/http/server_impl.h"

#define SWEEP_MS 100

long long fleet_http_mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- setup --------------------------------------------------------------- */

fleet_err fleet_http_guard_init(struct fleet_http *s, struct fleet_errctx *ec)
{
	if (pthread_mutex_init(&s->guard, NULL) != 0)
		return fleet_errctx_msg(ec, FLEET_E_NOMEM, "cannot create a mutex");
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	int rc = pthread_cond_init(&s->sweep_wake, &ca);
	pthread_condattr_destroy(&ca);
	if (rc != 0) {
		pthread_mutex_destroy(&s->guard);
		return fleet_errctx_msg(ec, FLEET_E_NOMEM, "cannot create a condition variable");
	}
	s->rate = calloc(FLEET_HTTP_RATE_SOURCES, sizeof(*s->rate));
	s->rate_buckets = calloc(FLEET_HTTP_RATE_BUCKETS, sizeof(*s->rate_buckets));
	s->body_sources_cap = (size_t)s->max_connections + 1;
	s->body_sources = calloc(s->body_sources_cap, sizeof(*s->body_sources));
	if (!s->rate || !s->rate_buckets || !s->body_sources) {
		fleet_http_guard_free(s);
		return fleet_errctx_msg(ec, FLEET_E_NOMEM, "out of memory");
	}
	/* A keyed hash: a client choosing its addresses cannot aim them all
	 * at one chain. */
	if (getrandom(&s->rate_seed, sizeof(s->rate_seed), 0) != sizeof(s->rate_seed))
		s->rate_seed = (uint64_t)fleet_http_mono_ms() ^ (uint64_t)(uintptr_t)s;
	return FLEET_OK;
}

void fleet_http_guard_free(struct fleet_http *s)
{
	free(s->body_sources);
	s->body_sources = NULL;
	free(s->rate);
	free(s->rate_buckets);
	s->rate = NULL;
	s->rate_buckets = NULL;
	pthread_cond_destroy(&s->sweep_wake);
	pthread_mutex_destroy(&s->guard);
}

/* ---- connections and the deadline ------------------------------------- */

/* TCP bytes received on fd so far (0 when the kernel does not say). */
static uint64_t tcp_bytes_received(int fd)
{
	struct tcp_info ti;
	memset(&ti, 0, sizeof(ti));
	socklen_t len = sizeof(ti);
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 ||
	    len < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof(ti.tcpi_bytes_received))
		return 0;
	return ti.tcpi_bytes_received;
}

void fleet_http_on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			      enum MHD_ConnectionNotificationCode toe)
{
	struct fleet_http *s = cls;
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		struct fleet_http_conn *k = ci ? calloc(1, sizeof(*k)) : NULL;
		*socket_context = k;
		if (!k)
			return; /* the access handler refuses a connection without one */
		k->fd = ci->connect_fd;
		k->state = FLEET_CONN_REQUEST;
		k->deadline_ms = fleet_http_mono_ms() + 1000ll * s->request_deadline_seconds;
		pthread_mutex_lock(&s->guard);
		k->next = s->conns;
		if (s->conns)
			s->conns->prev = k;
		s->conns = k;
		pthread_mutex_unlock(&s->guard);
		return;
	}
	struct fleet_http_conn *k = *socket_context;
	if (!k)
		return;
	pthread_mutex_lock(&s->guard);
	if (k->cut)
		atomic_fetch_sub(&s->cuts_open, 1);
	if (k->prev)
		k->prev->next = k->next;
	else
		s->conns = k->next;
	if (k->next)
		k->next->prev = k->prev;
	pthread_mutex_unlock(&s->guard);
	free(k);
	*socket_context = NULL;
}

struct fleet_http_conn *fleet_http_conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

bool fleet_http_conn_request(struct fleet_http *s, struct fleet_http_conn *k)
{
	pthread_mutex_lock(&s->guard);
	bool ok = !k->cut;
	if (ok && k->state != FLEET_CONN_REQUEST) {
		/* Headers before the sweep saw their bytes: the clock starts now. */
		k->state = FLEET_CONN_REQUEST;
		k->deadline_ms = fleet_http_mono_ms() + 1000ll * s->request_deadline_seconds;
	}
	pthread_mutex_unlock(&s->guard);
	return ok;
}

bool fleet_http_conn_handling(struct fleet_http *s, struct fleet_http_conn *k)
{
	pthread_mutex_lock(&s->guard);
	bool ok = !k->cut;
	if (ok)
		k->state = FLEET_CONN_HANDLING;
	pthread_mutex_unlock(&s->guard);
	return ok;
}

void fleet_http_conn_write_deadline(struct fleet_http *s, struct fleet_http_conn *k,
				    long long deadline_ms)
{
	pthread_mutex_lock(&s->guard);
	k->write_deadline_ms = deadline_ms;
	pthread_mutex_unlock(&s->guard);
}

bool fleet_http_conn_was_cut(struct fleet_http *s, struct fleet_http_conn *k)
{
	pthread_mutex_lock(&s->guard);
	bool cut = k->cut;
	pthread_mutex_unlock(&s->guard);
	return cut;
}

void fleet_http_conn_idle(struct fleet_http *s, struct fleet_http_conn *k)
{
	uint64_t rx = tcp_bytes_received(k->fd);
	pthread_mutex_lock(&s->guard);
	k->state = FLEET_CONN_IDLE;
	k->write_deadline_ms = 0;
	k->rx_at_idle = rx;
	pthread_mutex_unlock(&s->guard);
}

static void sweep(struct fleet_http *s)
{
	long long now = fleet_http_mono_ms();
	for (struct fleet_http_conn *k = s->conns; k; k = k->next) {
		if (k->cut)
			continue;
		if (k->state == FLEET_CONN_IDLE) {
			uint64_t rx = tcp_bytes_received(k->fd);
			if (rx > k->rx_at_idle) { /* the next request's first bytes */
				k->state = FLEET_CONN_REQUEST;
				k->deadline_ms = now + 1000ll * s->request_deadline_seconds;
			}
			continue;
		}
		const char *why;
		if (k->state == FLEET_CONN_REQUEST && now >= k->deadline_ms)
			why = "request-deadline";
		else if (k->state == FLEET_CONN_HANDLING && k->write_deadline_ms &&
			 now >= k->write_deadline_ms)
			why = "write-deadline"; /* an answer still going out */
		else
			continue;
		k->cut = true;
		atomic_fetch_add(&s->cuts_open, 1); /* before libmicrohttpd can see it */
		shutdown(k->fd, SHUT_RDWR);
		fleet_metric_inc_label(s->rejected, why);
	}
}

static void *sweeper(void *arg)
{
	struct fleet_http *s = arg;
	pthread_mutex_lock(&s->guard);
	while (!s->sweeper_stop) {
		sweep(s);
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += SWEEP_MS * 1000000l;
		if (ts.tv_nsec >= 1000000000l) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000l;
		}
		while (!s->sweeper_stop &&
		       pthread_cond_timedwait(&s->sweep_wake, &s->guard, &ts) == 0)
			;
	}
	pthread_mutex_unlock(&s->guard);
	return NULL;
}

fleet_err fleet_http_sweeper_start(struct fleet_http *s, struct fleet_errctx *ec)
{
	s->sweeper_stop = false;
	int rc = pthread_create(&s->sweeper, NULL, sweeper, s);
	if (rc != 0)
		return fleet_errctx_errno(ec, FLEET_E_IO, rc, "cannot start the deadline thread");
	s->sweeper_running = true;
	return FLEET_OK;
}

void fleet_http_sweeper_stop(struct fleet_http *s)
{
	if (!s->sweeper_running)
		return;
	pthread_mutex_lock(&s->guard);
	s->sweeper_stop = true;
	pthread_cond_broadcast(&s->sweep_wake);
	pthread_mutex_unlock(&s->guard);
	pthread_join(s->sweeper, NULL);
	s->sweeper_running = false;
}

/* ---- the body budget ----------------------------------------------------- */

static bool source_key(const struct sockaddr *sa, uint8_t key[16]);

size_t fleet_http_body_share(const struct fleet_http *s)
{
	size_t share = s->body_memory / FLEET_HTTP_BODY_SHARE_DIV;
	return share > s->max_body ? share : s->max_body;
}

/* The source's entry (guard held); a free one for a new source, NULL when
 * none is free (cannot happen: one entry per connection at most). */
static struct fleet_http_body_source *body_source(struct fleet_http *s, const uint8_t key[16],
						  bool add)
{
	struct fleet_http_body_source *free_one = NULL;
	for (size_t i = 0; i < s->body_sources_cap; i++) {
		struct fleet_http_body_source *b = &s->body_sources[i];
		if (b->bytes && memcmp(b->key, key, 16) == 0)
			return b;
		if (!b->bytes && !free_one)
			free_one = b;
	}
	if (add && free_one)
		memcpy(free_one->key, key, 16);
	return add ? free_one : NULL;
}

bool fleet_http_budget_take(struct fleet_http *s, const struct sockaddr *sa, size_t n,
			    uint8_t key[16])
{
	if (!source_key(sa, key))
		memset(key, 0, 16); /* no address: all such requests share one entry */
	pthread_mutex_lock(&s->guard);
	struct fleet_http_body_source *b = body_source(s, key, true);
	bool ok = b && n <= s->body_memory - s->body_reserved &&
		  n <= fleet_http_body_share(s) - b->bytes;
	if (ok) {
		s->body_reserved += n;
		b->bytes += n;
		fleet_metric_set(s->reserved_gauge, (int64_t)s->body_reserved);
	}
	pthread_mutex_unlock(&s->guard);
	return ok;
}

void fleet_http_budget_return(struct fleet_http *s, const uint8_t key[16], size_t n)
{
	pthread_mutex_lock(&s->guard);
	s->body_reserved -= n <= s->body_reserved ? n : s->body_reserved;
	struct fleet_http_body_source *b = body_source(s, key, false);
	if (b)
		b->bytes -= n <= b->bytes ? n : b->bytes;
	fleet_metric_set(s->reserved_gauge, (int64_t)s->body_reserved);
	pthread_mutex_unlock(&s->guard);
}

/* ---- the rate limit ------------------------------------------------------ */

/* An IPv4 address as its mapped IPv6 form; an IPv6 one by its /64, the
 * smallest block a site is given: one host holds a whole /64, and keying
 * by full address would let it take one bucket per address. */
static bool source_key(const struct sockaddr *sa, uint8_t key[16])
{
	memset(key, 0, 16);
	if (sa && sa->sa_family == AF_INET) {
		const struct sockaddr_in *a4 = (const struct sockaddr_in *)sa;
		key[10] = key[11] = 0xff;
		memcpy(key + 12, &a4->sin_addr, 4);
		return true;
	}
	if (sa && sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)sa;
		memcpy(key, &a6->sin6_addr, 16);
		static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
		if (memcmp(key, mapped, sizeof(mapped)) != 0)
			memset(key + 8, 0, 8);
		return true;
	}
	return false;
}

static uint32_t key_hash(const struct fleet_http *s, const uint8_t key[16])
{
	uint64_t h = 0xcbf29ce484222325ull ^ s->rate_seed;
	for (int i = 0; i < 16; i++) {
		h ^= key[i];
		h *= 0x100000001b3ull;
	}
	h ^= h >> 29;
	return (uint32_t)(h % FLEET_HTTP_RATE_BUCKETS);
}

#define E(i) (&s->rate[(i) - 1]) /* from an index + 1 */

static void lru_unlink(struct fleet_http *s, uint32_t i)
{
	struct fleet_http_rate_entry *e = E(i);
	if (e->lru_prev)
		E(e->lru_prev)->lru_next = e->lru_next;
	else
		s->rate_lru_head = e->lru_next;
	if (e->lru_next)
		E(e->lru_next)->lru_prev = e->lru_prev;
	else
		s->rate_lru_tail = e->lru_prev;
	e->lru_prev = e->lru_next = 0;
}

static void lru_push(struct fleet_http *s, uint32_t i)
{
	struct fleet_http_rate_entry *e = E(i);
	e->lru_prev = 0;
	e->lru_next = s->rate_lru_head;
	if (s->rate_lru_head)
		E(s->rate_lru_head)->lru_prev = i;
	s->rate_lru_head = i;
	if (!s->rate_lru_tail)
		s->rate_lru_tail = i;
}

/* The least recently seen source gives up its entry. */
static uint32_t evict(struct fleet_http *s)
{
	uint32_t i = s->rate_lru_tail;
	struct fleet_http_rate_entry *e = E(i);
	lru_unlink(s, i);
	uint32_t *p = &s->rate_buckets[key_hash(s, e->key)];
	while (*p && *p != i)
		p = &E(*p)->hash_next;
	if (*p)
		*p = e->hash_next;
	e->hash_next = 0;
	return i;
}

bool fleet_http_rate_take(struct fleet_http *s, const struct sockaddr *sa,
			  unsigned *retry_after)
{
	uint8_t key[16];
	*retry_after = 1;
	if (!source_key(sa, key))
		return true; /* not IP: nothing to key on (libmicrohttpd serves TCP only) */
	long long now = fleet_http_mono_ms();
	double rate = s->rate_per_second, burst = s->rate_burst;
	pthread_mutex_lock(&s->guard);
	uint32_t b = key_hash(s, key), i = s->rate_buckets[b];
	while (i && memcmp(E(i)->key, key, 16) != 0)
		i = E(i)->hash_next;
	struct fleet_http_rate_entry *e;
	if (i) {
		e = E(i);
		lru_unlink(s, i);
		e->tokens += (double)(now - e->last_ms) * rate / 1000.0;
		if (e->tokens > burst)
			e->tokens = burst;
	} else {
		i = s->rate_used < FLEET_HTTP_RATE_SOURCES ? ++s->rate_used : evict(s);
		e = E(i);
		memcpy(e->key, key, 16);
		e->tokens = burst;
		e->hash_next = s->rate_buckets[b];
		s->rate_buckets[b] = i;
	}
	e->last_ms = now;
	lru_push(s, i);
	bool ok = e->tokens >= 1.0;
	if (ok)
		e->tokens -= 1.0;
	else {
		double wait = (1.0 - e->tokens) / rate;
		*retry_after = (unsigned)wait + ((double)(unsigned)wait < wait);
	}
	pthread_mutex_unlock(&s->guard);
	if (*retry_after < 1)
		*retry_after = 1;
	return ok;
}
