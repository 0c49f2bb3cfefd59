/*
 * kube_watch.c: list, then watch, K10-K15 (kube.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fleetd/kube/kube_internal.h"
#include "lib/sanitize.h"

#define BACKOFF_FIRST_MS 500u
#define BACKOFF_MAX_MS 30000u

fleet_err fleet_kube_watch_event_parse(const char *line, size_t len, struct fleet_kube_event *ev,
				       struct fleet_errctx *ec)
{
	memset(ev, 0, sizeof(*ev));
	if (len > FLEET_KUBE_EVENT_MAX)
		return fleet_errctx_msg(ec, FLEET_KUBE_E_TOO_LARGE, "a watch event over %u bytes",
					FLEET_KUBE_EVENT_MAX);
	json_error_t je;
	json_t *j = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(j)) {
		json_decref(j);
		return fleet_errctx_set(ec, FLEET_KUBE_E_MALFORMED,
					j ? 0 : (size_t)(je.position < 0 ? 0 : je.position),
					"a watch event that is not a JSON object");
	}
	static const struct {
		const char *s;
		enum fleet_kube_event_type t;
	} types[] = {{"ADDED", FLEET_KUBE_EV_ADDED},
		     {"MODIFIED", FLEET_KUBE_EV_MODIFIED},
		     {"DELETED", FLEET_KUBE_EV_DELETED},
		     {"BOOKMARK", FLEET_KUBE_EV_BOOKMARK},
		     {"ERROR", FLEET_KUBE_EV_ERROR}};
	const char *ts = json_string_value(json_object_get(j, "type"));
	json_t *obj = json_object_get(j, "object");
	fleet_err e = FLEET_OK;
	if (!ts || !json_is_object(obj)) {
		e = fleet_errctx_msg(ec, FLEET_KUBE_E_MALFORMED,
				     "a watch event without a type string and an object");
		goto out;
	}
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (strcmp(ts, types[i].s) == 0) {
			ev->type = types[i].t;
			ev->type_str = types[i].s;
		}
	if (!ev->type) {
		char p[64];
		fleet_sanitize(ts, strlen(ts), p, sizeof(p), 20);
		e = fleet_errctx_msg(ec, FLEET_KUBE_E_MALFORMED, "a watch event of type %s", p);
		goto out;
	}
	if (ev->type == FLEET_KUBE_EV_ERROR) {
		json_t *code = json_object_get(obj, "code");
		if (!json_is_integer(code)) {
			e = fleet_errctx_msg(ec, FLEET_KUBE_E_MALFORMED,
					     "an ERROR watch event without a Status code");
			goto out;
		}
		ev->code = (long)json_integer_value(code);
	} else {
		const char *rv = json_string_value(
			json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
		if (!fleet_kube_rv_ok(rv)) {
			e = fleet_errctx_msg(ec, FLEET_KUBE_E_MALFORMED,
					     "a watch event without a usable "
					     "metadata.resourceVersion");
			goto out;
		}
		snprintf(ev->rv, sizeof(ev->rv), "%s", rv);
	}
	ev->object = json_incref(obj);
out:
	json_decref(j);
	if (e) {
		ev->type = 0;
		ev->type_str = NULL;
	}
	return e;
}

/* ---- the loop ------------------------------------------------------------- */

struct watch {
	struct fleet_kube *k;
	const struct fleet_kube_watch_ops *ops;
	char rv[FLEET_KUBE_RV_MAX];
	unsigned events;  /* good events in this stream (bookmarks too) */
	bool gone;        /* K11: a 410 ERROR event */
	fleet_err err;    /* an ERROR event or a line that did not parse */
	struct fleet_errctx ec;
};

static bool on_line(void *arg, const char *line, size_t len)
{
	struct watch *w = arg;
	struct fleet_kube_event ev;
	fleet_err e = fleet_kube_watch_event_parse(line, len, &ev, &w->ec);
	if (e) {
		w->err = e;
		return false;
	}
	if (ev.type == FLEET_KUBE_EV_ERROR) {
		const char *m = json_string_value(json_object_get(ev.object, "message"));
		char p[320] = "";
		if (m)
			fleet_sanitize(m, strlen(m), p, sizeof(p), 300);
		if (ev.code == 410) {
			w->gone = true;
		} else {
			w->err = fleet_errctx_msg(&w->ec,
						  ev.code == 429 || ev.code >= 500
							  ? FLEET_KUBE_E_UNAVAILABLE
							  : FLEET_KUBE_E_INVALID,
						  "the watch ended with an ERROR event %ld: %s",
						  ev.code, p);
		}
		json_decref(ev.object);
		return false;
	}
	snprintf(w->rv, sizeof(w->rv), "%s", ev.rv);
	w->events++;
	if (ev.type != FLEET_KUBE_EV_BOOKMARK && w->ops->on_event)
		w->ops->on_event(w->ops->ctx, ev.type_str, ev.object);
	json_decref(ev.object);
	return true;
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static uint32_t xorshift(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return (uint32_t)(x >> 32);
}

/* K14: sleep ms in slices of 100 ms, false when *stop became true. */
static bool nap(unsigned ms, volatile int *stop)
{
	while (ms > 0) {
		if (*stop)
			return false;
		unsigned s = ms < 100 ? ms : 100;
		struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)s * 1000000L};
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
		ms -= s;
	}
	return !*stop;
}

/* K12: report e, then sleep the back-off; false when stopped. */
static bool back_off(struct watch *w, unsigned *step, uint64_t *seed, fleet_err e,
		     const struct fleet_errctx *ec, volatile int *stop)
{
	unsigned d = BACKOFF_FIRST_MS;
	for (unsigned i = 0; i < *step && d < BACKOFF_MAX_MS; i++)
		d *= 2;
	if (d > BACKOFF_MAX_MS)
		d = BACKOFF_MAX_MS;
	unsigned sleep_ms = d / 2 + xorshift(seed) % (d / 2 + 1);
	if (*step < 16)
		(*step)++;
	if (w->ops->on_error)
		w->ops->on_error(w->ops->ctx, e, ec, sleep_ms);
	return nap(sleep_ms, stop);
}

fleet_err fleet_kube_watch(struct fleet_kube *k, const char *collection_path,
			   const char *query, const struct fleet_kube_watch_ops *ops,
			   volatile int *stop, struct fleet_errctx *ec)
{
	if (!k || !ops || !stop || !fleet_kube_path_ok(collection_path) ||
	    strchr(collection_path, '?') || (query && !kube_query_ok(query)))
		return fleet_errctx_msg(ec, FLEET_KUBE_E_INVALID,
					"a watch needs a client, callbacks, a stop flag and a "
					"collection path without a query (the query apart)");
	struct watch w = {.k = k, .ops = ops};
	uint64_t seed = now_ms() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)&w;
	if (!seed)
		seed = 0x9e3779b97f4a7c15u;
	unsigned step = 0;
	bool need_list = true;
	bool good_since_list = true;
	while (!*stop) {
		if (need_list) {
			json_t *items = NULL;
			struct fleet_errctx lec;
			memset(&lec, 0, sizeof(lec));
			fleet_err e = kube_list_ex(k, collection_path, query, stop, &items, w.rv,
						   sizeof(w.rv), &lec);
			if (*stop) {
				json_decref(items);
				break;
			}
			if (e) {
				if (!back_off(&w, &step, &seed, e, &lec, stop))
					break;
				continue;
			}
			if (ops->on_relist)
				ops->on_relist(ops->ctx, items);
			json_decref(items);
			need_list = false;
			good_since_list = false;
		}
		char path[8192];
		int n = snprintf(path, sizeof(path),
				 "%s?watch=1&allowWatchBookmarks=true&resourceVersion=%s"
				 "&timeoutSeconds=%u%s%s",
				 collection_path, w.rv, k->watch_timeout, query ? "&" : "",
				 query ? query : "");
		if (n < 0 || (size_t)n >= sizeof(path))
			return fleet_errctx_msg(ec, FLEET_KUBE_E_INVALID, "the watch path is too long");
		struct kube_stream st = {.on_line = on_line, .ctx = &w, .stop = stop,
					 .total_ms = 1000L * (k->watch_timeout + 5) + k->timeout_ms};
		struct fleet_buf body;
		fb_init_capped(&body, k->max_response + 1);
		long status = 0;
		w.events = 0;
		w.gone = false;
		w.err = FLEET_OK;
		memset(&w.ec, 0, sizeof(w.ec));
		uint64_t t0 = now_ms();
		struct fleet_errctx rec;
		memset(&rec, 0, sizeof(rec));
		fleet_err e = kube_request_ex(k, "GET", path, NULL, NULL, 0, &status, &body, &st, &rec);
		if (st.stopped || *stop) {
			fb_free(&body);
			break;
		}
		if (e == FLEET_OK && status != 200) {
			if (status == 410)
				w.gone = true;
			else
				e = kube_status_err("GET", path, status, &body, &rec);
		}
		fb_free(&body);
		if (w.events) {
			step = 0; /* K12: a good event resets the back-off */
			good_since_list = true;
		}
		if (w.gone) { /* K11 */
			need_list = true;
			if (!good_since_list) {
				/* a 410 straight after a fresh list: back off, not spin */
				fleet_err ge = fleet_errctx_msg(&rec, FLEET_KUBE_E_UNAVAILABLE,
								"the watch was 410 Gone right after "
								"a list");
				if (!back_off(&w, &step, &seed, ge, &rec, stop))
					break;
			}
			continue;
		}
		if (e == FLEET_OK && w.err)
			e = w.err, rec = w.ec;
		if (e) {
			/* An event past the cap would come again at the same
			 * resourceVersion, for ever: list afresh instead, past it
			 * (one object must not stop the watch of all the others). */
			if (e == FLEET_KUBE_E_TOO_LARGE)
				need_list = true;
			if (!back_off(&w, &step, &seed, e, &rec, stop))
				break;
			continue;
		}
		if (w.events == 0 && now_ms() - t0 < 1000) {
			fleet_err qe = fleet_errctx_msg(&rec, FLEET_KUBE_E_UNAVAILABLE,
							"the watch stream ended within a second "
							"without an event");
			if (!back_off(&w, &step, &seed, qe, &rec, stop))
				break;
		}
	}
	return FLEET_OK;
}
