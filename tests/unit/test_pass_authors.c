/*
 * test_pass_authors.c: the pass's binding author records (fleetd/pass/pass.h,
 * B1..B6) over the real store (a read-only handle for the pass, the
 * daemon's read-write one behind the record callbacks, as the admission
 * has it) and a scripted inventory whose change log a test can purge,
 * change between two reads, or break.
 *
 *   B1, B3  records_the_authors_change, only_unproven_devices_are_read
 *   B2      reads_are_capped_and_take_turns
 *   B3      change_between_reads_records_nothing (the race an attacker with
 *           dcim.change_device would need: a value of theirs beside the
 *           author's change id)
 *   B4      other_author_forgets, changed_and_changed_back_forgets,
 *           purged_log_with_other_values_forgets
 *   B5      former_candidates_forgotten, malformed_devices_keep_records
 *   B6      inventory_error_leaves_records, out_of_memory_leaves_records,
 *           unanswered_device_is_first_again,
 *           malformed_change_log_leaves_record
 *   the view  one_listing_per_pass, nothing_without_callbacks
 *   fleetd_pass_total  listing_out_of_memory_is_said
 */
#include "tests/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleetd/config/config.h"
#include "fleetd/obs/metrics.h"
#include "fleetd/pass/pass.h"
#include "fleetd/store/store.h"

#define EA "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define EB "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define EC "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
#define EVIL "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"
#define MAXDEV 64

/* ---- a scripted inventory -------------------------------------------------- */

struct fchange {
	long id;
	char user[32];
	time_t when;
};

struct fdev {
	struct fleet_inv_device d;
	struct fchange ch[16]; /* the binding changes the log still holds */
	size_t n_ch;
	bool bad_log; /* the change log answers malformed (INVALID) */
};

struct finv {
	struct fleet_inventory inv; /* first */
	struct fdev dev[MAXDEV];
	size_t n;
	struct fleet_inv_malformed bad[4];
	size_t n_bad;
	long next_change;
	time_t clock;
	size_t lists, gets, changes;
	size_t changes_by_id[MAXDEV + 1];
	long fail_changes_from; /* from this binding_change call on: fail_with (0: never) */
	fleet_err fail_with;    /* 0: UNAVAILABLE */
	fleet_err fail_list;    /* the listing answers this (0: it answers) */
	/* Called before binding_change / get answer for id (the nth change read). */
	void (*on_change)(struct finv *f, long id, size_t nth);
	void (*on_get)(struct finv *f, long id);
};

static struct fdev *fdev_by_id(struct finv *f, long id)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->dev[i].d.id == id)
			return &f->dev[i];
	return NULL;
}

/* A binding change by user: the device's approved hashes become ek/ek_ecc. */
static void change(struct finv *f, long id, const char *user, const char *ek, const char *ek_ecc)
{
	struct fdev *d = fdev_by_id(f, id);
	assert_non_null(d);
	assert_true(d->n_ch < 16);
	snprintf(d->d.approved_ek_hash, sizeof(d->d.approved_ek_hash), "%s", ek);
	snprintf(d->d.approved_ek_hash_ecc, sizeof(d->d.approved_ek_hash_ecc), "%s", ek_ecc);
	struct fchange *c = &d->ch[d->n_ch++];
	c->id = ++f->next_change;
	snprintf(c->user, sizeof(c->user), "%s", user);
	c->when = ++f->clock;
}

/* NetBox's housekeeping: every change of the device older than now is gone. */
static void purge(struct finv *f, long id)
{
	fdev_by_id(f, id)->n_ch = 0;
}

static void add(struct finv *f, long id, const char *status, const char *by, const char *ek,
		const char *ek_ecc)
{
	struct fdev *d = &f->dev[f->n++];
	memset(d, 0, sizeof(*d));
	d->d.id = id;
	snprintf(d->d.name, sizeof(d->d.name), "w%ld", id);
	snprintf(d->d.serial, sizeof(d->d.serial), "SN-%ld", id);
	snprintf(d->d.status, sizeof(d->d.status), "%s", status);
	if (ek)
		change(f, id, by, ek, ek_ecc ? ek_ecc : "");
}

static fleet_err f_list(struct fleet_inventory *inv, struct fleet_inv_device **out, size_t *n,
			struct fleet_inv_malformed **bad, size_t *n_bad, struct fleet_errctx *ec)
{
	struct finv *f = (struct finv *)inv;
	f->lists++;
	if (f->fail_list)
		return fleet_errctx_msg(ec, f->fail_list, "the listing failed");
	*out = calloc(f->n + 1, sizeof(**out));
	*bad = calloc(f->n_bad + 1, sizeof(**bad));
	assert_true(*out && *bad);
	for (size_t i = 0; i < f->n; i++)
		(*out)[i] = f->dev[i].d;
	memcpy(*bad, f->bad, f->n_bad * sizeof(**bad));
	*n = f->n;
	*n_bad = f->n_bad;
	return FLEET_INV_OK;
}

static fleet_err f_get(struct fleet_inventory *inv, long id, struct fleet_inv_device *out,
		       struct fleet_errctx *ec)
{
	struct finv *f = (struct finv *)inv;
	f->gets++;
	if (f->on_get)
		f->on_get(f, id);
	struct fdev *d = fdev_by_id(f, id);
	if (!d)
		return fleet_errctx_msg(ec, FLEET_INV_NOT_FOUND, "no device %ld", id);
	*out = d->d;
	return FLEET_INV_OK;
}

static fleet_err f_change(struct fleet_inventory *inv, long id,
			  struct fleet_inv_binding_change *out, struct fleet_errctx *ec)
{
	struct finv *f = (struct finv *)inv;
	memset(out, 0, sizeof(*out));
	f->changes++;
	if (id > 0 && id <= MAXDEV)
		f->changes_by_id[id]++;
	if (f->on_change)
		f->on_change(f, id, f->changes_by_id[id > 0 && id <= MAXDEV ? id : 0]);
	if (f->fail_changes_from && (long)f->changes >= f->fail_changes_from)
		return f->fail_with == FLEET_INV_NOMEM
			       ? fleet_errctx_msg(ec, FLEET_INV_NOMEM, "out of memory")
			       : fleet_errctx_msg(ec, FLEET_INV_UNAVAILABLE, "HTTP 503");
	struct fdev *d = fdev_by_id(f, id);
	if (!d)
		return FLEET_INV_NOT_FOUND;
	if (d->bad_log)
		return fleet_errctx_msg(ec, FLEET_INV_INVALID,
					"object change 9: time is not an ISO 8601 date and time");
	for (size_t i = 0; i < d->n_ch; i++) /* the latest: by time, then id */
		if (!out->found || d->ch[i].when > out->when ||
		    (d->ch[i].when == out->when && d->ch[i].id > out->change_id)) {
			out->found = true;
			out->change_id = d->ch[i].id;
			out->when = d->ch[i].when;
			snprintf(out->user, sizeof(out->user), "%s", d->ch[i].user);
		}
	return FLEET_INV_OK;
}

static void f_close(struct fleet_inventory *inv)
{
	(void)inv;
}

static const struct fleet_inventory_ops F_OPS = {
	.get = f_get, .binding_change = f_change, .list = f_list, .close = f_close};

/* ---- the fixture ------------------------------------------------------------ */

struct fx {
	char *dir;
	struct fleet_store *rw, *ro;
	struct fleet_metrics *metrics;
	struct fleet_config c;
	struct finv inv;
	struct fleet_pass *p;
	unsigned reads;
	bool no_callbacks;
	atomic_bool cancel;
	time_t now;
};

static fleet_err cb_record(void *ctx, const struct fleet_store_binding_author *r,
			   struct fleet_errctx *ec)
{
	struct fx *f = ctx;
	fleet_err e = fleet_store_binding_author_record(f->rw, r);
	return e ? fleet_store_errctx(f->rw, e, ec) : e;
}

static fleet_err cb_forget(void *ctx, int64_t id, bool *forgot, struct fleet_errctx *ec)
{
	struct fx *f = ctx;
	fleet_err e = fleet_store_binding_author_forget(f->rw, id, forgot);
	return e ? fleet_store_errctx(f->rw, e, ec) : e;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	f->dir = make_temp_dir("passauthors");
	fleet_config_defaults(&f->c);
	snprintf(f->c.state_dir, sizeof(f->c.state_dir), "%s", f->dir);
	snprintf(f->c.binding_author, sizeof(f->c.binding_author), "terraform");
	struct fleet_errctx sec = {0};
	char err[sizeof(sec.detail) + 80];
	if (fleet_store_open(f->dir, FLEET_STORE_RW, &f->rw, &sec) ||
	    fleet_store_open(f->dir, FLEET_STORE_READONLY, &f->ro, &sec))
		fail_msg("store: %s", fleet_errctx_text(&sec, err, sizeof(err)));
	f->inv.inv.ops = &F_OPS;
	f->now = 1000000;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	fleet_pass_free(f->p);
	fleet_metrics_free(f->metrics);
	fleet_store_close(f->ro);
	fleet_store_close(f->rw);
	rm_rf(f->dir);
	free(f->dir);
	free(f);
	return 0;
}

/* The pass, made on first use (after the test set reads and callbacks). */
static const char *run(struct fx *f)
{
	if (!f->p) {
		f->metrics = fleet_metrics_new();
		struct fleet_pass_deps d = {.config = &f->c, .inventory = &f->inv.inv,
					    .store = f->ro, .metrics = f->metrics,
					    .author_reads = f->reads, .cancel = &f->cancel};
		if (!f->no_callbacks) {
			d.record_author = cb_record;
			d.forget_author = cb_forget;
			d.author_ctx = f;
		}
		assert_int_equal(fleet_pass_new(&d, &f->p), FLEET_OK);
	}
	f->now += 60;
	return fleet_pass_run(f->p, f->now);
}

static bool rec_of(struct fx *f, long id, struct fleet_store_binding_author *r)
{
	fleet_err e = fleet_store_binding_author_get(f->rw, id, r);
	assert_true(e == FLEET_STORE_OK || e == FLEET_STORE_E_NOT_FOUND);
	return e == FLEET_STORE_OK;
}

/* The metric series `series` reads n. */
static void assert_series(struct fx *f, const char *series, long long n)
{
	struct fleet_buf b;
	char want[256];
	fb_init(&b);
	assert_int_equal(fleet_metrics_render(f->metrics, &b), FLEET_OK);
	assert_int_equal(fb_put(&b, "", 1), FLEET_OK);
	snprintf(want, sizeof(want), "\n%s %lld\n", series, n);
	if (!strstr((const char *)b.data, want))
		fail_msg("no \"%s %lld\" in:\n%s", series, n, (const char *)b.data);
	fb_free(&b);
}

#define TOTAL(r) "fleetd_pass_binding_authors_total{result=\"" r "\"}"

/* A planned device whose binding (ek, no ECC EK) Terraform wrote. */
static void planned(struct fx *f, long id, const char *ek)
{
	add(&f->inv, id, "planned", "terraform", ek, "");
}

/* ---- the rules -------------------------------------------------------------- */

/* B1, B3: the author's latest change is copied with the device's values,
 * the change's id and time, and when it was recorded. */
static void records_the_authors_change(void **state)
{
	struct fx *f = *state;
	add(&f->inv, 1, "planned", "terraform", EA, EB);
	add(&f->inv, 2, "planned", "terraform", EC, NULL);
	add(&f->inv, 3, "active", "terraform", EA, EB);  /* not planned: never read */
	add(&f->inv, 4, "planned", "terraform", NULL, NULL); /* no binding */
	assert_string_equal(run(f), "ok");
	struct fleet_store_binding_author r;
	assert_true(rec_of(f, 1, &r));
	assert_string_equal(r.serial, "SN-1");
	assert_string_equal(r.approved_ek_hash, EA);
	assert_string_equal(r.approved_ek_hash_ecc, EB);
	assert_string_equal(r.user, "terraform");
	assert_int_equal(r.change_id, fdev_by_id(&f->inv, 1)->ch[0].id);
	assert_int_equal(r.changed_at, fdev_by_id(&f->inv, 1)->ch[0].when);
	assert_int_equal(r.recorded_at, f->now);
	assert_true(rec_of(f, 2, &r));
	assert_string_equal(r.approved_ek_hash_ecc, "");
	assert_false(rec_of(f, 3, &r));
	assert_false(rec_of(f, 4, &r));
	assert_int_equal(f->inv.changes_by_id[3] + f->inv.changes_by_id[4], 0);
	assert_series(f, TOTAL("recorded"), 2);
	assert_series(f, "fleetd_pass_binding_authors_waiting", 0);
	/* a record outlives the log: purged, it stays, and says the same */
	purge(&f->inv, 1);
	assert_string_equal(run(f), "ok");
	assert_true(rec_of(f, 1, &r));
	assert_string_equal(r.approved_ek_hash, EA);
	assert_int_equal(r.recorded_at, f->now - 60);
}

/* B2: a device whose record matches is not read again, except in its turn
 * among the proven (a quarter of the reads). */
static void only_unproven_devices_are_read(void **state)
{
	struct fx *f = *state;
	f->reads = 8;
	for (long id = 1; id <= 12; id++)
		planned(f, id, EA);
	assert_string_equal(run(f), "ok"); /* 8 recorded: 3 reads each */
	assert_series(f, TOTAL("recorded"), 8);
	assert_series(f, "fleetd_pass_binding_authors_waiting", 4);
	size_t before = f->inv.changes;
	assert_string_equal(run(f), "ok"); /* the other 4, and 2 proven re-read */
	assert_series(f, TOTAL("recorded"), 12);
	assert_series(f, TOTAL("confirmed"), 2);
	assert_int_equal(f->inv.changes - before, 4 * 2 + 2);
	before = f->inv.changes;
	assert_string_equal(run(f), "ok"); /* all proven: 2 re-read */
	assert_int_equal(f->inv.changes - before, 2);
	assert_series(f, "fleetd_pass_binding_authors_waiting", 0);
}

/* pass.h: fleetd stopping (or the pass's deadline) ends the author reads
 * before the next device: none read, none recorded, all still waiting and
 * taken at the next pass. Without the check every device is read. */
static void stopping_reads_nothing_more(void **state)
{
	struct fx *f = *state;
	f->reads = 8;
	for (long id = 1; id <= 4; id++)
		planned(f, id, EA);
	atomic_store(&f->cancel, true);
	size_t before = f->inv.changes;
	(void)run(f);
	assert_int_equal(f->inv.changes - before, 0);
	assert_series(f, TOTAL("recorded"), 0);
	atomic_store(&f->cancel, false);
	assert_string_equal(run(f), "ok");
	assert_series(f, TOTAL("recorded"), 4);
}

/* B2: devices without a provable author are read at most `reads` a pass,
 * in turn, so each is reached. */
static void reads_are_capped_and_take_turns(void **state)
{
	struct fx *f = *state;
	f->reads = 3;
	for (long id = 1; id <= 10; id++) {
		planned(f, id, EA);
		purge(&f->inv, id); /* written before fleetd ever saw it */
	}
	for (int pass = 0; pass < 3; pass++) {
		size_t before = f->inv.changes;
		assert_string_equal(run(f), "ok");
		assert_int_equal(f->inv.changes - before, 3);
		assert_series(f, "fleetd_pass_binding_authors_waiting", 7);
	}
	/* ten devices, nine read once each: the tenth comes next, then the first */
	for (long id = 1; id <= 9; id++)
		assert_int_equal(f->inv.changes_by_id[id], 1);
	assert_int_equal(f->inv.changes_by_id[10], 0);
	assert_string_equal(run(f), "ok");
	assert_int_equal(f->inv.changes_by_id[10], 1);
	assert_int_equal(f->inv.changes_by_id[1], 2);
	assert_series(f, TOTAL("unproven"), 12);
	struct fleet_store_binding_author r;
	assert_false(rec_of(f, 1, &r)); /* nothing to copy: nothing recorded */
}

/* The attack B3 stops: the attacker (dcim.change_device, not the author)
 * sets their EK; Terraform corrects the drift (the author's change N); the
 * attacker sets their EK again right after the log was read. Reading the
 * device alone after N would pair the attacker's value with the author's
 * change; the log read again names the attacker's change, so nothing is
 * recorded. */
static void attacker_after_first_read(struct finv *f, long id, size_t nth)
{
	if (id == 1 && nth == 1)
		change(f, 1, "terraform", EA, ""); /* the drift corrected, before the read */
}

static void attacker_before_get(struct finv *f, long id)
{
	if (id == 1)
		change(f, 1, "mallory", EVIL, "");
}

static void change_between_reads_records_nothing(void **state)
{
	struct fx *f = *state;
	add(&f->inv, 1, "planned", "mallory", EVIL, ""); /* the listing's value */
	f->inv.on_change = attacker_after_first_read;
	f->inv.on_get = attacker_before_get;
	assert_string_equal(run(f), "ok");
	struct fleet_store_binding_author r;
	assert_false(rec_of(f, 1, &r));
	assert_series(f, TOTAL("changed-while-read"), 1);
	assert_series(f, TOTAL("recorded"), 0);
	/* and once the log is purged, nothing speaks for the attacker's value */
	f->inv.on_change = NULL;
	f->inv.on_get = NULL;
	purge(&f->inv, 1);
	assert_string_equal(run(f), "ok");
	assert_false(rec_of(f, 1, &r));
}

/* B4: a later binding change by anyone else forgets the record. */
static void other_author_forgets(void **state)
{
	struct fx *f = *state;
	planned(f, 1, EA);
	assert_string_equal(run(f), "ok");
	struct fleet_store_binding_author r;
	assert_true(rec_of(f, 1, &r));
	change(&f->inv, 1, "alice", EB, "");
	assert_string_equal(run(f), "ok");
	assert_false(rec_of(f, 1, &r));
	assert_series(f, TOTAL("forgotten"), 1);
	/* and the author's next change is recorded again */
	change(&f->inv, 1, "terraform", EC, "");
	assert_string_equal(run(f), "ok");
	assert_true(rec_of(f, 1, &r));
	assert_string_equal(r.approved_ek_hash, EC);
}

/* B4: changed by someone else and changed back (so the values match the
 * record again): the proven device's turn reads the log, which names the
 * other user's change, and the record is forgotten before the log is
 * purged; after the purge nothing speaks for the binding. */
static void changed_and_changed_back_forgets(void **state)
{
	struct fx *f = *state;
	f->reads = 4; /* one proven device re-read a pass */
	planned(f, 1, EA);
	assert_string_equal(run(f), "ok");
	struct fleet_store_binding_author r;
	assert_true(rec_of(f, 1, &r));
	change(&f->inv, 1, "alice", "", "");  /* the approval withdrawn ... */
	change(&f->inv, 1, "mallory", EA, ""); /* ... and put back, between two passes */
	assert_string_equal(run(f), "ok");
	assert_false(rec_of(f, 1, &r));
	purge(&f->inv, 1);
	assert_string_equal(run(f), "ok");
	assert_false(rec_of(f, 1, &r));
}

/* B4: the values changed and the log holds no change that did it: the
 * record (of other values) is forgotten; changed back later, it proves
 * nothing either. */
static void purged_log_with_other_values_forgets(void **state)
{
	struct fx *f = *state;
	planned(f, 1, EA);
	assert_string_equal(run(f), "ok");
	change(&f->inv, 1, "mallory", EVIL, "");
	purge(&f->inv, 1); /* fleetd was down while the change was in the log */
	assert_string_equal(run(f), "ok");
	struct fleet_store_binding_author r;
	assert_false(rec_of(f, 1, &r));
	assert_series(f, TOTAL("forgotten"), 1);
}

/* B5: past planned, binding cleared, gone from the inventory: forgotten. */
static void former_candidates_forgotten(void **state)
{
	struct fx *f = *state;
	planned(f, 1, EA);
	planned(f, 2, EB);
	planned(f, 3, EC);
	assert_string_equal(run(f), "ok");
	snprintf(fdev_by_id(&f->inv, 1)->d.status, 32, "staged");
	fdev_by_id(&f->inv, 2)->d.approved_ek_hash[0] = '\0';
	f->inv.n = 2; /* device 3 deleted */
	assert_string_equal(run(f), "ok");
	struct fleet_store_binding_author r;
	assert_false(rec_of(f, 1, &r));
	assert_false(rec_of(f, 2, &r));
	assert_false(rec_of(f, 3, &r));
	assert_series(f, TOTAL("forgotten"), 3);
}

/* B5: a malformed device is not absent: its record stays; and while a
 * malformed device has no id, no record is forgotten as absent. */
static void malformed_devices_keep_records(void **state)
{
	struct fx *f = *state;
	planned(f, 1, EA);
	planned(f, 2, EB);
	assert_string_equal(run(f), "ok");
	f->inv.n = 1; /* device 2 now listed as malformed */
	f->inv.bad[0] = (struct fleet_inv_malformed){.id = 2, .reason = "class:too-long"};
	f->inv.n_bad = 1;
	assert_string_equal(run(f), "ok");
	struct fleet_store_binding_author r;
	assert_true(rec_of(f, 2, &r));
	f->inv.bad[0].id = 0;
	assert_string_equal(run(f), "ok");
	assert_true(rec_of(f, 2, &r));
	f->inv.n_bad = 0;
	assert_string_equal(run(f), "ok");
	assert_false(rec_of(f, 2, &r));
	assert_true(rec_of(f, 1, &r));
}

/* B6: an inventory that stops answering (or fleetd out of memory reading
 * it: the same, fail-closed) stops the reads, and changes no record,
 * whatever it was about to say. */
static void no_answer_leaves_records(void **state, fleet_err fail_with)
{
	struct fx *f = *state;
	f->inv.fail_with = fail_with;
	planned(f, 1, EA);
	planned(f, 2, EB);
	planned(f, 3, EC);
	assert_string_equal(run(f), "ok");
	change(&f->inv, 1, "alice", EB, "");
	change(&f->inv, 2, "alice", EA, "");
	f->inv.fail_changes_from = (long)f->inv.changes + 1;
	size_t before = f->inv.changes;
	assert_string_equal(run(f), "ok");
	assert_int_equal(f->inv.changes - before, 1); /* no read after the failure */
	struct fleet_store_binding_author r;
	assert_true(rec_of(f, 1, &r));
	assert_true(rec_of(f, 2, &r));
	assert_series(f, TOTAL("inventory-error"), 1);
	/* back: the next pass forgets both, the first read first */
	f->inv.fail_changes_from = 0;
	assert_string_equal(run(f), "ok");
	assert_false(rec_of(f, 1, &r));
	assert_false(rec_of(f, 2, &r));
	assert_true(rec_of(f, 3, &r));
}

static void inventory_error_leaves_records(void **state)
{
	no_answer_leaves_records(state, FLEET_INV_UNAVAILABLE);
}

static void out_of_memory_leaves_records(void **state)
{
	no_answer_leaves_records(state, FLEET_INV_NOMEM);
}

/* B2, B6: the device the inventory did not answer for keeps its turn. */
static void unanswered_device_is_first_again(void **state)
{
	struct fx *f = *state;
	f->reads = 1;
	planned(f, 1, EA);
	planned(f, 2, EB);
	f->inv.fail_changes_from = 1;
	assert_string_equal(run(f), "ok");
	f->inv.fail_changes_from = 0;
	assert_string_equal(run(f), "ok");
	assert_int_equal(f->inv.changes_by_id[1], 3); /* failed, then read twice */
	assert_int_equal(f->inv.changes_by_id[2], 0);
	struct fleet_store_binding_author r;
	assert_true(rec_of(f, 1, &r));
}

/* B6: one device's malformed change log leaves its record, and the others
 * are read on. */
static void malformed_change_log_leaves_record(void **state)
{
	struct fx *f = *state;
	planned(f, 1, EA);
	assert_string_equal(run(f), "ok");
	change(&f->inv, 1, "alice", EB, "");
	fdev_by_id(&f->inv, 1)->bad_log = true;
	planned(f, 2, EC);
	assert_string_equal(run(f), "ok");
	struct fleet_store_binding_author r;
	assert_true(rec_of(f, 1, &r)); /* of other values: admission ignores it */
	assert_string_equal(r.approved_ek_hash, EA);
	assert_true(rec_of(f, 2, &r));
	assert_series(f, TOTAL("inventory-error"), 1);
	/* a malformed answer never becomes a record either */
	planned(f, 3, EA);
	fdev_by_id(&f->inv, 3)->bad_log = true;
	assert_string_equal(run(f), "ok");
	assert_false(rec_of(f, 3, &r));
}

/* fleetd_pass_total{result}: a listing that failed for want of memory is
 * "out-of-memory", whatever the layer and with or without a SPIRE file to
 * write; one the inventory did not answer is "inventory-error". */
static void listing_out_of_memory_is_said(void **state)
{
	struct fx *f = *state;
	planned(f, 1, EA);
	f->inv.fail_list = FLEET_INV_NOMEM;
	assert_string_equal(run(f), "out-of-memory");
	snprintf(f->c.spire_trust_domain, sizeof(f->c.spire_trust_domain), "fleet.example");
	assert_string_equal(run(f), "out-of-memory");
	assert_series(f, "fleetd_pass_total{result=\"out-of-memory\"}", 2);
	f->inv.fail_list = FLEET_INV_UNAVAILABLE;
	assert_string_equal(run(f), "inventory-error");
	f->c.spire_trust_domain[0] = '\0';
	assert_string_equal(run(f), "inventory-error");
	assert_series(f, "fleetd_pass_total{result=\"inventory-error\"}", 2);
	assert_series(f, "fleetd_pass_total{result=\"out-of-memory\"}", 2);
	struct fleet_store_binding_author r;
	assert_false(rec_of(f, 1, &r)); /* nothing listed: nothing recorded */
}

/* The view: with a SPIRE file to write, the inventory is still listed once. */
static void one_listing_per_pass(void **state)
{
	struct fx *f = *state;
	snprintf(f->c.spire_trust_domain, sizeof(f->c.spire_trust_domain), "fleet.example");
	planned(f, 1, EA);
	assert_string_equal(run(f), "ok");
	assert_int_equal(f->inv.lists, 1);
	struct fleet_store_binding_author r;
	assert_true(rec_of(f, 1, &r));
	f->c.spire_trust_domain[0] = '\0';
	assert_string_equal(run(f), "ok");
	assert_int_equal(f->inv.lists, 2);
}

/* Not wired: the pass reads no change log and writes nothing. */
static void nothing_without_callbacks(void **state)
{
	struct fx *f = *state;
	f->no_callbacks = true;
	planned(f, 1, EA);
	assert_string_equal(run(f), "ok");
	assert_int_equal(f->inv.changes + f->inv.lists, 0);
	struct fleet_store_binding_author r;
	assert_false(rec_of(f, 1, &r));
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(records_the_authors_change),
		T(stopping_reads_nothing_more),
		T(only_unproven_devices_are_read),
		T(reads_are_capped_and_take_turns),
		T(change_between_reads_records_nothing),
		T(other_author_forgets),
		T(changed_and_changed_back_forgets),
		T(purged_log_with_other_values_forgets),
		T(former_candidates_forgotten),
		T(malformed_devices_keep_records),
		T(inventory_error_leaves_records),
		T(out_of_memory_leaves_records),
		T(unanswered_device_is_first_again),
		T(malformed_change_log_leaves_record),
		T(listing_out_of_memory_is_said),
		T(one_listing_per_pass),
		T(nothing_without_callbacks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
