/*
 * metrics.h: fleetd's counters and gauges, rendered as Prometheus text
 * exposition format 0.0.4 for GET /metrics.
 *
 * A registry holds metric families. A family has a name, a help line, a
 * type and either no label or one label whose values come from a fixed set
 * given at registration: a series per value, all rendered from the start
 * (a counter that has never moved still reads 0, so rate() and alerts see
 * it). A caller can never create a series from a value it received: a value
 * outside the set is refused, which keeps an attacker from growing the
 * registry or writing into /metrics.
 *
 * Names are checked at registration: [a-zA-Z_:][a-zA-Z0-9_:]*, and a
 * counter's name ends in "_total". Label names are [a-zA-Z_][a-zA-Z0-9_]*
 * without the reserved "__" prefix; label values are printable ASCII.
 *
 * Thread safety: registration and rendering take the registry's lock;
 * increments and sets are lock-free C11 atomics on storage that never moves,
 * so a handler thread can count while another renders.
 */
#ifndef FLEET_OBS_METRICS_H
#define FLEET_OBS_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "lib/buf.h"
#include "lib/fleet_err.h"

#define FLEET_METRICS_MAX_FAMILIES 128
#define FLEET_METRICS_MAX_VALUES 512 /* label values of one family */
#define FLEET_METRICS_MAX_NAME 128
#define FLEET_METRICS_MAX_HELP 256
#define FLEET_METRICS_MAX_LABEL_VALUE 64

/* The Content-Type of fleet_metrics_render's output. */
#define FLEET_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

enum fleet_metric_type {
	FLEET_METRIC_COUNTER,
	FLEET_METRIC_GAUGE,
};

struct fleet_metrics;
struct fleet_metric; /* one family; owned by its registry */

struct fleet_metrics *fleet_metrics_new(void);
/* Frees the registry and every family in it; handles become invalid. */
void fleet_metrics_free(struct fleet_metrics *m);

/*
 * Register a family. label is NULL for a family of one series; otherwise
 * values is a NULL-terminated list of the label's permitted values (at least
 * one, no duplicates). The strings are copied. On success *out is the handle.
 * FLEET_E_INVALID_ARG (with ec saying why) for a bad or duplicate name, a
 * bad label or value; FLEET_E_TOO_LARGE past the caps above.
 */
fleet_err fleet_metrics_register(struct fleet_metrics *m, enum fleet_metric_type type,
				 const char *name, const char *help, const char *label,
				 const char *const *values, struct fleet_metric **out,
				 struct fleet_errctx *ec);

/* A family without a label. */
void fleet_metric_inc(struct fleet_metric *f);
void fleet_metric_add(struct fleet_metric *f, uint64_t n);
void fleet_metric_set(struct fleet_metric *f, int64_t v); /* gauges only */

/* A family with a label: FLEET_E_NOT_FOUND when value is not in the set
 * (nothing is counted), FLEET_E_INVALID_ARG on a family without a label or a
 * set on a counter. */
fleet_err fleet_metric_inc_label(struct fleet_metric *f, const char *value);
fleet_err fleet_metric_add_label(struct fleet_metric *f, const char *value, uint64_t n);
fleet_err fleet_metric_set_label(struct fleet_metric *f, const char *value, int64_t v);

/* The current value of one series (value NULL for a family without a
 * label); 0 for a value not in the set. Counters read as their count. */
int64_t fleet_metric_get(const struct fleet_metric *f, const char *value);

/* Append every family, in registration order, to out: "# HELP", "# TYPE",
 * then one line per series. */
fleet_err fleet_metrics_render(struct fleet_metrics *m, struct fleet_buf *out);

#endif
