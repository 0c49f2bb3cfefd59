/*
 * metrics.c: the registry behind metrics.h.
 *
 * Families live in a fixed array of pointers; a family and its values are
 * allocated once at registration and never move, so the atomics a handler
 * increments stay valid while another thread renders. Gauges keep their
 * int64 in the same uint64 cell as counters (two's complement), read back by
 * type.
 */
#include "fleetd/obs/metrics.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/sanitize.h"

struct fleet_metric {
	enum fleet_metric_type type;
	char name[FLEET_METRICS_MAX_NAME + 1];
	char help[FLEET_METRICS_MAX_HELP + 1];
	char label[FLEET_METRICS_MAX_NAME + 1]; /* "" for none */
	size_t n_values;                        /* 1 when there is no label */
	char (*values)[FLEET_METRICS_MAX_LABEL_VALUE + 1];
	_Atomic uint64_t *cells;
};

struct fleet_metrics {
	pthread_mutex_t lock;
	size_t n;
	struct fleet_metric *fam[FLEET_METRICS_MAX_FAMILIES];
};

struct fleet_metrics *fleet_metrics_new(void)
{
	struct fleet_metrics *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	if (pthread_mutex_init(&m->lock, NULL) != 0) {
		free(m);
		return NULL;
	}
	return m;
}

static void family_free(struct fleet_metric *f)
{
	if (!f)
		return;
	free(f->values);
	free((void *)f->cells);
	free(f);
}

void fleet_metrics_free(struct fleet_metrics *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++)
		family_free(m->fam[i]);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

/* ---- validation ---------------------------------------------------------- */

static bool is_alpha_(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Prometheus metric names: [a-zA-Z_:][a-zA-Z0-9_:]* */
static bool metric_name_ok(const char *s)
{
	if (!s || !*s || strlen(s) > FLEET_METRICS_MAX_NAME)
		return false;
	if (!is_alpha_(s[0]) && s[0] != ':')
		return false;
	for (const char *p = s + 1; *p; p++)
		if (!is_alpha_(*p) && !is_digit(*p) && *p != ':')
			return false;
	return true;
}

/* Label names: [a-zA-Z_][a-zA-Z0-9_]*, "__" reserved for Prometheus. */
static bool label_name_ok(const char *s)
{
	if (!s || !*s || strlen(s) > FLEET_METRICS_MAX_NAME || strncmp(s, "__", 2) == 0)
		return false;
	if (!is_alpha_(s[0]))
		return false;
	for (const char *p = s + 1; *p; p++)
		if (!is_alpha_(*p) && !is_digit(*p))
			return false;
	return true;
}

/* Label values from our own fixed sets: printable ASCII, non-empty. The
 * renderer still escapes \ and " as the format requires. */
static bool label_value_ok(const char *s)
{
	if (!s || !*s || strlen(s) > FLEET_METRICS_MAX_LABEL_VALUE)
		return false;
	return fleet_ascii_printable(s, strlen(s), FLEET_ASCII_SPACE);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n > k && strcmp(s + n - k, suffix) == 0;
}

static fleet_err check_family(const struct fleet_metrics *m, enum fleet_metric_type type,
			      const char *name, const char *help, const char *label,
			      const char *const *values, size_t *n_values, struct fleet_errctx *ec)
{
	if (type != FLEET_METRIC_COUNTER && type != FLEET_METRIC_GAUGE)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG, "unknown metric type");
	if (!metric_name_ok(name))
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG,
					"metric name is not [a-zA-Z_:][a-zA-Z0-9_:]*");
	if (type == FLEET_METRIC_COUNTER && !ends_with(name, "_total"))
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG,
					"a counter's name must end in _total");
	if (!help || !*help)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG, "a metric needs a help text");
	if (strlen(help) > FLEET_METRICS_MAX_HELP)
		return fleet_errctx_msg(ec, FLEET_E_TOO_LARGE, "help text over %d bytes",
					FLEET_METRICS_MAX_HELP);
	for (size_t i = 0; i < m->n; i++)
		if (strcmp(m->fam[i]->name, name) == 0)
			return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG,
						"metric registered twice");
	if (m->n == FLEET_METRICS_MAX_FAMILIES)
		return fleet_errctx_msg(ec, FLEET_E_TOO_LARGE, "more than %d metric families",
					FLEET_METRICS_MAX_FAMILIES);
	*n_values = 1;
	if (!label) {
		if (values)
			return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG,
						"label values given without a label name");
		return FLEET_OK;
	}
	if (!label_name_ok(label))
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG,
					"label name is not [a-zA-Z_][a-zA-Z0-9_]* or is reserved");
	if (!values || !values[0])
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG, "a label needs its values");
	size_t n = 0;
	for (; values[n]; n++) {
		if (n == FLEET_METRICS_MAX_VALUES)
			return fleet_errctx_msg(ec, FLEET_E_TOO_LARGE, "more than %d label values",
						FLEET_METRICS_MAX_VALUES);
		if (!label_value_ok(values[n]))
			return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG,
						"label value %zu is empty, too long or not "
						"printable ASCII", n);
		for (size_t j = 0; j < n; j++)
			if (strcmp(values[j], values[n]) == 0)
				return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG,
							"label value %zu repeats %zu", n, j);
	}
	*n_values = n;
	return FLEET_OK;
}

fleet_err fleet_metrics_register(struct fleet_metrics *m, enum fleet_metric_type type,
				 const char *name, const char *help, const char *label,
				 const char *const *values, struct fleet_metric **out,
				 struct fleet_errctx *ec)
{
	if (!m || !out)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG, "no registry or no handle");
	*out = NULL;
	pthread_mutex_lock(&m->lock);
	size_t n_values = 0;
	fleet_err e = check_family(m, type, name, help, label, values, &n_values, ec);
	if (e != FLEET_OK)
		goto out;
	struct fleet_metric *f = calloc(1, sizeof(*f));
	if (!f) {
		e = FLEET_E_NOMEM;
		goto out;
	}
	f->type = type;
	f->n_values = n_values;
	f->cells = calloc(n_values, sizeof(*f->cells));
	if (label)
		f->values = calloc(n_values, sizeof(*f->values));
	if (!f->cells || (label && !f->values)) {
		family_free(f);
		e = FLEET_E_NOMEM;
		goto out;
	}
	snprintf(f->name, sizeof(f->name), "%s", name);
	snprintf(f->help, sizeof(f->help), "%s", help);
	if (label) {
		snprintf(f->label, sizeof(f->label), "%s", label);
		for (size_t i = 0; i < n_values; i++)
			snprintf(f->values[i], sizeof(f->values[i]), "%s", values[i]);
	}
	for (size_t i = 0; i < n_values; i++)
		atomic_init(&f->cells[i], 0);
	m->fam[m->n++] = f;
	*out = f;
out:
	pthread_mutex_unlock(&m->lock);
	return e;
}

/* ---- updates ------------------------------------------------------------- */

/* The cell for a label value, or -1. The set is small (<= 32) and fixed. */
static long find_value(const struct fleet_metric *f, const char *value)
{
	if (!f->values || !value)
		return -1;
	for (size_t i = 0; i < f->n_values; i++)
		if (strcmp(f->values[i], value) == 0)
			return (long)i;
	return -1;
}

void fleet_metric_inc(struct fleet_metric *f)
{
	fleet_metric_add(f, 1);
}

void fleet_metric_add(struct fleet_metric *f, uint64_t n)
{
	if (f && !f->values)
		atomic_fetch_add_explicit(&f->cells[0], n, memory_order_relaxed);
}

void fleet_metric_set(struct fleet_metric *f, int64_t v)
{
	if (f && !f->values && f->type == FLEET_METRIC_GAUGE)
		atomic_store_explicit(&f->cells[0], (uint64_t)v, memory_order_relaxed);
}

fleet_err fleet_metric_add_label(struct fleet_metric *f, const char *value, uint64_t n)
{
	if (!f || !f->values)
		return FLEET_E_INVALID_ARG;
	long i = find_value(f, value);
	if (i < 0)
		return FLEET_E_NOT_FOUND;
	atomic_fetch_add_explicit(&f->cells[i], n, memory_order_relaxed);
	return FLEET_OK;
}

fleet_err fleet_metric_inc_label(struct fleet_metric *f, const char *value)
{
	return fleet_metric_add_label(f, value, 1);
}

fleet_err fleet_metric_set_label(struct fleet_metric *f, const char *value, int64_t v)
{
	if (!f || !f->values || f->type != FLEET_METRIC_GAUGE)
		return FLEET_E_INVALID_ARG;
	long i = find_value(f, value);
	if (i < 0)
		return FLEET_E_NOT_FOUND;
	atomic_store_explicit(&f->cells[i], (uint64_t)v, memory_order_relaxed);
	return FLEET_OK;
}

int64_t fleet_metric_get(const struct fleet_metric *f, const char *value)
{
	if (!f)
		return 0;
	long i = 0;
	if (f->values) {
		i = find_value(f, value);
		if (i < 0)
			return 0;
	} else if (value) {
		return 0;
	}
	return (int64_t)atomic_load_explicit(&f->cells[i], memory_order_relaxed);
}

/* ---- rendering ----------------------------------------------------------- */

/* HELP text escapes \ and newline; label values also escape ". */
static void put_escaped(struct fleet_buf *out, const char *s, bool quote)
{
	for (; *s; s++) {
		if (*s == '\\')
			fb_put(out, "\\\\", 2);
		else if (*s == '\n')
			fb_put(out, "\\n", 2);
		else if (quote && *s == '"')
			fb_put(out, "\\\"", 2);
		else
			fb_put_u8(out, (uint8_t)*s);
	}
}

static void put_str(struct fleet_buf *out, const char *s)
{
	fb_put(out, s, strlen(s));
}

static void render_family(const struct fleet_metric *f, struct fleet_buf *out)
{
	put_str(out, "# HELP ");
	put_str(out, f->name);
	fb_put_u8(out, ' ');
	put_escaped(out, f->help, false);
	put_str(out, "\n# TYPE ");
	put_str(out, f->name);
	put_str(out, f->type == FLEET_METRIC_COUNTER ? " counter\n" : " gauge\n");
	for (size_t i = 0; i < f->n_values; i++) {
		uint64_t raw = atomic_load_explicit(&f->cells[i], memory_order_relaxed);
		char num[32];
		if (f->type == FLEET_METRIC_COUNTER)
			snprintf(num, sizeof(num), " %" PRIu64 "\n", raw);
		else
			snprintf(num, sizeof(num), " %" PRId64 "\n", (int64_t)raw);
		put_str(out, f->name);
		if (f->values) {
			fb_put_u8(out, '{');
			put_str(out, f->label);
			put_str(out, "=\"");
			put_escaped(out, f->values[i], true);
			put_str(out, "\"}");
		}
		put_str(out, num);
	}
}

fleet_err fleet_metrics_render(struct fleet_metrics *m, struct fleet_buf *out)
{
	if (!m || !out)
		return FLEET_E_INVALID_ARG;
	pthread_mutex_lock(&m->lock);
	for (size_t i = 0; i < m->n; i++)
		render_family(m->fam[i], out);
	pthread_mutex_unlock(&m->lock);
	return fb_err(out);
}
