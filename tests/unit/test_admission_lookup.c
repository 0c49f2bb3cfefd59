/*
 * test_admission_lookup.c: intake's bounded inventory lookup
 * (fleetd/admission/lookup.h) over a counting inventory: concurrent
 * lookups of one serial share one request, answers are reused for the
 * cache's time only and never an outage, forget drops an answer, and the
 * fleet-wide budget refuses past its burst, then refills.
 */
#include "tests/testutil.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fleetd/admission/lookup.h"

struct counting {
	struct fleet_inventory inv;
	pthread_mutex_t mu;
	unsigned asked;
	unsigned delay_ms;
	fleet_err answer;
};

static fleet_err find(struct fleet_inventory *inv, const char *serial, struct fleet_inv_device *out,
		      struct fleet_errctx *ec)
{
	struct counting *c = (struct counting *)inv;
	pthread_mutex_lock(&c->mu);
	c->asked++;
	pthread_mutex_unlock(&c->mu);
	usleep(c->delay_ms * 1000);
	memset(out, 0, sizeof(*out));
	snprintf(out->serial, sizeof(out->serial), "%s", serial);
	snprintf(out->name, sizeof(out->name), "dev-%s", serial);
	if (c->answer != FLEET_INV_OK)
		fleet_errctx_msg(ec, c->answer, "down");
	return c->answer;
}

static const struct fleet_inventory_ops ops = {.find_by_serial = find};

static void counting_init(struct counting *c, fleet_err answer, unsigned delay_ms)
{
	memset(c, 0, sizeof(*c));
	c->inv.ops = &ops;
	pthread_mutex_init(&c->mu, NULL);
	c->answer = answer;
	c->delay_ms = delay_ms;
}

static fleet_err look(struct adm_lookup *l, const char *serial, bool *over)
{
	struct fleet_inv_device d;
	struct fleet_errctx ec;
	return adm_lookup_device(l, serial, &d, over, &ec);
}

struct racer {
	struct adm_lookup *l;
	fleet_err r;
	bool over;
};

static void *race(void *arg)
{
	struct racer *x = arg;
	x->r = look(x->l, "SER-1", &x->over);
	return NULL;
}

static void concurrent_lookups_share_one_request(void **state)
{
	(void)state;
	struct counting c;
	struct adm_lookup l;
	counting_init(&c, FLEET_INV_OK, 300);
	assert_int_equal(adm_lookup_init(&l, &c.inv, 1000, 0), 0); /* no cache at all */
	pthread_t th[8];
	struct racer x[8];
	for (int i = 0; i < 8; i++) {
		x[i] = (struct racer){.l = &l};
		assert_int_equal(pthread_create(&th[i], NULL, race, &x[i]), 0);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(x[i].r, FLEET_INV_OK);
		assert_false(x[i].over);
	}
	/* one in flight, the others waited for it (at most a straggler that
	 * arrived after it finished asks again: the cache is off) */
	assert_true(c.asked <= 2);
	adm_lookup_destroy(&l);
}

static void cached_for_its_time_only(void **state)
{
	(void)state;
	struct counting c;
	struct adm_lookup l;
	bool over;
	counting_init(&c, FLEET_INV_OK, 0);
	assert_int_equal(adm_lookup_init(&l, &c.inv, 1000, 300), 0);
	for (int i = 0; i < 50; i++)
		assert_int_equal(look(&l, "SER-1", &over), FLEET_INV_OK);
	assert_int_equal(c.asked, 1);
	assert_int_equal(look(&l, "ser-1", &over), FLEET_INV_OK); /* case: one machine */
	assert_int_equal(c.asked, 1);
	assert_int_equal(look(&l, "SER-2", &over), FLEET_INV_OK);
	assert_int_equal(c.asked, 2);
	usleep(350 * 1000);
	assert_int_equal(look(&l, "SER-1", &over), FLEET_INV_OK);
	assert_int_equal(c.asked, 3);
	adm_lookup_forget(&l, "SER-1");
	assert_int_equal(look(&l, "SER-1", &over), FLEET_INV_OK);
	assert_int_equal(c.asked, 4);
	assert_int_equal(l.requests, 4);
	adm_lookup_destroy(&l);
}

static void an_outage_is_not_cached(void **state)
{
	(void)state;
	struct counting c;
	struct adm_lookup l;
	bool over;
	counting_init(&c, FLEET_INV_UNAVAILABLE, 0);
	assert_int_equal(adm_lookup_init(&l, &c.inv, 1000, 60000), 0);
	assert_int_equal(look(&l, "SER-1", &over), FLEET_INV_UNAVAILABLE);
	assert_false(over);
	c.answer = FLEET_INV_NOT_FOUND;
	assert_int_equal(look(&l, "SER-1", &over), FLEET_INV_NOT_FOUND);
	assert_int_equal(look(&l, "SER-1", &over), FLEET_INV_NOT_FOUND); /* cached */
	assert_int_equal(c.asked, 2);
	adm_lookup_destroy(&l);
}

static void budget(void **state)
{
	(void)state;
	struct counting c;
	struct adm_lookup l;
	bool over;
	char serial[32];
	counting_init(&c, FLEET_INV_NOT_FOUND, 0);
	assert_int_equal(adm_lookup_init(&l, &c.inv, 5, 0), 0); /* burst 10 */
	unsigned refused = 0;
	for (int i = 0; i < 40; i++) {
		snprintf(serial, sizeof(serial), "R-%d", i);
		fleet_err r = look(&l, serial, &over);
		if (over) {
			assert_int_equal(r, FLEET_INV_UNAVAILABLE);
			refused++;
		}
	}
	assert_true(c.asked >= 10 && c.asked <= 11);
	assert_int_equal(refused, 40 - c.asked);
	/* the change-log request takes from the same bucket */
	assert_false(adm_lookup_budget(&l));
	usleep(450 * 1000); /* ~2 tokens */
	assert_true(adm_lookup_budget(&l));
	adm_lookup_destroy(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(concurrent_lookups_share_one_request),
		cmocka_unit_test(cached_for_its_time_only),
		cmocka_unit_test(an_outage_is_not_cached),
		cmocka_unit_test(budget),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
