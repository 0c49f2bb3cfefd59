/*
 * log_limit.c: the journal limiter (log_limit.h).
 *
 * All memory is taken at creation: max_keys slots, chained into a hash
 * table of a power-of-two number of buckets, plus one overflow slot
 * ("other", never in the table). A free slot sits on the free list. The
 * limiter keeps the lowest and highest window start of its live slots (a
 * bound that flush makes exact again), so admit can tell in O(1) whether
 * any window may have ended and a flush is due.
 *
 * Summaries are never written under the mutex: flush takes ended windows
 * off in batches, unlocks, writes the batch, and goes on where it stopped.
 */
#include "fleetd/obs/log_limit.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleetd/obs/journal.h"

#define BATCH 16

struct slot {
	char key[FLEET_LOG_LIMIT_KEY_MAX + 1];
	size_t key_len;
	time_t start;        /* the window opened here */
	uint64_t suppressed; /* in this window */
	bool live;
	struct slot *next; /* bucket chain, or the free list */
};

struct fleet_log_limit {
	pthread_mutex_t mu;
	unsigned window;
	size_t max_keys;
	struct slot *slots; /* max_keys + 1; the last is "other" */
	struct slot **buckets;
	size_t bucket_mask;
	struct slot *free;
	size_t live;
	time_t min_start, max_start; /* over live slots; may be looser */
	unsigned flushing;           /* flushes under way */
	_Atomic uint64_t suppressed_total;
};

struct pending {
	char key[FLEET_LOG_LIMIT_KEY_MAX + 1];
	size_t key_len;
	uint64_t count;
};

/* |a - b| >= w, without overflow. */
static bool apart(time_t a, time_t b, unsigned w)
{
	uintmax_t d = a >= b ? (uintmax_t)a - (uintmax_t)b : (uintmax_t)b - (uintmax_t)a;
	return d >= w;
}

static bool ended(const struct fleet_log_limit *l, const struct slot *s, time_t now)
{
	return apart(now, s->start, l->window);
}

/* Whether some live slot's window may have ended. */
static bool flush_due(const struct fleet_log_limit *l, time_t now)
{
	if (l->live == 0)
		return false;
	return (now >= l->min_start && apart(now, l->min_start, l->window)) ||
	       (l->max_start > now && apart(l->max_start, now, l->window));
}

static void note_start(struct fleet_log_limit *l, time_t t)
{
	if (l->live == 1 || t < l->min_start)
		l->min_start = t;
	if (l->live == 1 || t > l->max_start)
		l->max_start = t;
}

static size_t hash(const char *k, size_t n)
{
	uint64_t h = 0xcbf29ce484222325u; /* FNV-1a */
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)k[i]) * 0x100000001b3u;
	return (size_t)h;
}

static struct slot *other(struct fleet_log_limit *l)
{
	return &l->slots[l->max_keys];
}

static bool is_other(const char *k, size_t n)
{
	return n == strlen(FLEET_LOG_LIMIT_OTHER) && memcmp(k, FLEET_LOG_LIMIT_OTHER, n) == 0;
}

static struct slot *find(struct fleet_log_limit *l, const char *k, size_t n)
{
	for (struct slot *s = l->buckets[hash(k, n) & l->bucket_mask]; s; s = s->next)
		if (s->key_len == n && memcmp(s->key, k, n) == 0)
			return s;
	return NULL;
}

static void open_window(struct fleet_log_limit *l, struct slot *s, const char *k, size_t n,
			time_t now)
{
	memcpy(s->key, k, n);
	s->key[n] = '\0';
	s->key_len = n;
	s->start = now;
	s->suppressed = 0;
	s->live = true;
	l->live++;
	note_start(l, now);
}

/* Take a live slot out of the table (or retire "other"). */
static void forget(struct fleet_log_limit *l, struct slot *s)
{
	s->live = false;
	l->live--;
	if (s == other(l))
		return;
	struct slot **pp = &l->buckets[hash(s->key, s->key_len) & l->bucket_mask];
	while (*pp != s)
		pp = &(*pp)->next;
	*pp = s->next;
	s->next = l->free;
	l->free = s;
}

static void write_summary(const struct pending *p, unsigned window)
{
	char key[FLEET_LOG_LIMIT_KEY_MAX * 4 + 32], count[24];
	fleet_log_escape_n(p->key, p->key_len, key, sizeof(key));
	snprintf(count, sizeof(count), "%" PRIu64, p->count);
	fleet_log(LOG_NOTICE, "log-suppressed",
		  FLEET_LOG_FIELDS({"FLEET_KEY", key}, {"FLEET_SUPPRESSED", count}),
		  "%s: %" PRIu64 " more in a %us window counted, not journaled", key, p->count,
		  window);
}

static void take(struct pending *p, const struct slot *s)
{
	memcpy(p->key, s->key, s->key_len + 1);
	p->key_len = s->key_len;
	p->count = s->suppressed;
}

struct fleet_log_limit *fleet_log_limit_new(unsigned window_s, size_t max_keys)
{
	if (max_keys > (SIZE_MAX >> 2) / sizeof(struct slot) - 1)
		return NULL;
	size_t nb = 1;
	while (nb < max_keys)
		nb <<= 1;
	struct fleet_log_limit *l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->slots = calloc(max_keys + 1, sizeof(*l->slots));
	l->buckets = calloc(nb, sizeof(*l->buckets));
	if (!l->slots || !l->buckets || pthread_mutex_init(&l->mu, NULL) != 0) {
		free(l->slots);
		free(l->buckets);
		free(l);
		return NULL;
	}
	l->window = window_s ? window_s : 1;
	l->max_keys = max_keys;
	l->bucket_mask = nb - 1;
	for (size_t i = max_keys; i-- > 0;) {
		l->slots[i].next = l->free;
		l->free = &l->slots[i];
	}
	atomic_init(&l->suppressed_total, 0);
	return l;
}

void fleet_log_limit_free(struct fleet_log_limit *l)
{
	if (!l)
		return;
	/* Nothing else may use l now: no lock, and summaries one by one. */
	for (size_t i = 0; i <= l->max_keys; i++) {
		const struct slot *s = &l->slots[i];
		if (s->live && s->suppressed) {
			struct pending p;
			take(&p, s);
			write_summary(&p, l->window);
		}
	}
	pthread_mutex_destroy(&l->mu);
	free(l->buckets);
	free(l->slots);
	free(l);
}

size_t fleet_log_limit_flush(struct fleet_log_limit *l, time_t now)
{
	if (!l)
		return 0;
	size_t lines = 0, next = 0;
	pthread_mutex_lock(&l->mu);
	l->flushing++;
	for (;;) {
		struct pending batch[BATCH];
		size_t n = 0;
		for (; next <= l->max_keys && n < BATCH; next++) {
			struct slot *s = &l->slots[next];
			if (!s->live || !ended(l, s, now))
				continue;
			if (s->suppressed)
				take(&batch[n++], s);
			forget(l, s);
		}
		bool done = next > l->max_keys;
		if (done) {
			/* Every slot seen: make the bounds exact again. */
			l->flushing--;
			size_t seen = 0;
			for (size_t i = 0; i <= l->max_keys; i++) {
				const struct slot *s = &l->slots[i];
				if (!s->live)
					continue;
				if (seen++ == 0 || s->start < l->min_start)
					l->min_start = s->start;
				if (seen == 1 || s->start > l->max_start)
					l->max_start = s->start;
			}
		}
		pthread_mutex_unlock(&l->mu);
		for (size_t i = 0; i < n; i++)
			write_summary(&batch[i], l->window);
		lines += n;
		if (done)
			return lines;
		pthread_mutex_lock(&l->mu);
	}
}

bool fleet_log_limit_admit(struct fleet_log_limit *l, const char *key, time_t now)
{
	if (!l)
		return true;
	if (!key)
		key = "(null)";
	size_t n = strnlen(key, FLEET_LOG_LIMIT_KEY_MAX);

	pthread_mutex_lock(&l->mu);
	if (l->flushing == 0 && flush_due(l, now)) {
		pthread_mutex_unlock(&l->mu);
		fleet_log_limit_flush(l, now);
		pthread_mutex_lock(&l->mu);
	}
	struct slot *s = is_other(key, n) ? other(l) : find(l, key, n);
	bool journal;
	struct pending ended_window = {.count = 0};
	if (!s && l->free) {
		s = l->free;
		l->free = s->next;
		open_window(l, s, key, n, now);
		size_t b = hash(key, n) & l->bucket_mask;
		s->next = l->buckets[b];
		l->buckets[b] = s;
		journal = true;
	} else {
		if (!s)
			s = other(l); /* the table is full */
		if (!s->live) {
			open_window(l, s, FLEET_LOG_LIMIT_OTHER, strlen(FLEET_LOG_LIMIT_OTHER), now);
			journal = true;
		} else if (ended(l, s, now)) {
			/* A flush is under way elsewhere and has not reached
			 * this slot: end its window here. */
			if (s->suppressed)
				take(&ended_window, s);
			s->start = now;
			s->suppressed = 0;
			note_start(l, now);
			journal = true;
		} else {
			s->suppressed++;
			atomic_fetch_add(&l->suppressed_total, 1);
			journal = false;
		}
	}
	pthread_mutex_unlock(&l->mu);
	if (ended_window.count)
		write_summary(&ended_window, l->window);
	return journal;
}

uint64_t fleet_log_limit_suppressed(const struct fleet_log_limit *l)
{
	return l ? atomic_load(&l->suppressed_total) : 0;
}
