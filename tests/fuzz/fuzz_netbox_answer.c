/*
 * fuzz_netbox_answer.c: the reader of NetBox's answers (fleetd/inventory/
 * json_view.h) against jansson, which it replaced on that path.
 *
 * Differential: json_view accepts exactly what json_loadb with
 * JSON_REJECT_DUPLICATES accepts as an object or an array (J1; an input
 * with a NUL byte it always refuses, where jansson may not), and when
 * both accept, the two documents are the same value by value: the same
 * types (jansson's integer/real split, J2), the same integers and reals
 * bit for bit, the same decoded string bytes (J3), the same members in the
 * same order. Then what netbox.c does with an answer: each device parser on
 * the root and on every element of a "results" array must end with a
 * terminated reason, and a device it accepts must hold terminated strings.
 */
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fleetd/inventory/json_view.h"
#include "fleetd/inventory/netbox_json.h"

/* The view's value at i equals jansson's j; returns the token after it. */
static uint32_t same(const struct jv_doc *d, uint32_t i, const json_t *j)
{
	if (i >= d->ntok)
		abort();
	const struct jv_tok *t = &d->tok[i];
	switch (json_typeof(j)) {
	case JSON_NULL:
		if (t->type != JV_NULL)
			abort();
		break;
	case JSON_TRUE:
		if (t->type != JV_TRUE)
			abort();
		break;
	case JSON_FALSE:
		if (t->type != JV_FALSE)
			abort();
		break;
	case JSON_INTEGER:
		if (t->type != JV_INT || t->v.i != json_integer_value(j))
			abort();
		break;
	case JSON_REAL: {
		double a = t->v.d, b = json_real_value(j);
		if (t->type != JV_REAL || memcmp(&a, &b, sizeof(a)) != 0)
			abort();
		break;
	}
	case JSON_STRING: {
		size_t n;
		const char *s = jv_str(d, i, &n);
		if (!s || n != json_string_length(j) || memcmp(s, json_string_value(j), n) ||
		    s[n] != '\0')
			abort();
		break;
	}
	case JSON_ARRAY: {
		if (t->type != JV_ARRAY || t->n != json_array_size(j))
			abort();
		uint32_t c = i + 1;
		for (size_t k = 0; k < json_array_size(j); k++) {
			uint32_t after = same(d, c, json_array_get(j, k));
			if (d->tok[c].next != after)
				abort();
			c = after;
		}
		if (t->next != c)
			abort();
		return c;
	}
	case JSON_OBJECT: {
		if (t->type != JV_OBJECT || t->n != json_object_size(j))
			abort();
		uint32_t c = i + 1;
		const char *key;
		size_t klen;
		json_t *v;
		/* jansson 2.14 keeps insertion order: document order */
		json_object_keylen_foreach((json_t *)j, key, klen, v) {
			size_t n;
			const char *s = jv_str(d, c, &n);
			if (!s || n != klen || memcmp(s, key, n))
				abort();
			if (jv_get(d, i, key) != c + 1) /* no NUL in a key: jv_get finds it */
				abort();
			c = same(d, c + 1, v);
		}
		if (t->next != c)
			abort();
		return c;
	}
	}
	if (t->next != i + 1)
		abort();
	return i + 1;
}

static void terminated(const char *s, size_t cap)
{
	if (strnlen(s, cap) == cap)
		abort();
}

static void device(const struct jv_doc *d, uint32_t o)
{
	struct fleet_inv_device dev;
	struct nb_change ch;
	char reason[96];
	memset(reason, 'x', sizeof(reason));
	fleet_err r = nb_parse_device(d, o, &dev, reason, sizeof(reason), NULL);
	terminated(reason, sizeof(reason));
	if (r == FLEET_INV_OK) {
		if (reason[0] || dev.id <= 0)
			abort();
		terminated(dev.serial, sizeof(dev.serial));
		terminated(dev.name, sizeof(dev.name));
		terminated(dev.status, sizeof(dev.status));
		terminated(dev.class_name, sizeof(dev.class_name));
		terminated(dev.approved_ek_hash, sizeof(dev.approved_ek_hash));
		if (!dev.serial[0] || !nb_is_status_slug(dev.status))
			abort();
		if (dev.approved_ek_hash[0] && !nb_is_ek_hash(dev.approved_ek_hash))
			abort();
	} else if (!reason[0]) {
		abort();
	}
	if (nb_parse_change(d, o, 1, &ch, NULL) == FLEET_INV_OK)
		terminated(ch.user, sizeof(ch.user));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jv_doc d;
	struct jv_error e;
	json_error_t je;
	json_t *j = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &je);
	enum jv_result r = jv_parse(&d, (const char *)data, size, &e);
	if (r == JV_NOMEM)
		abort(); /* inputs are small; nothing here runs out */
	/* A NUL byte is never JSON outside a string, nor unescaped inside one:
	 * the view refuses every input holding one. jansson 2.14 skips a NUL
	 * that follows a number or a literal (json_view.h, J1), so there its
	 * verdict is not the reference. */
	bool nul = memchr(data, 0, size) != NULL;
	if (nul ? r == JV_OK : (r == JV_OK) != (j != NULL))
		abort();
	if (r != JV_OK) {
		json_decref(j);
		if (!e.text[0] || e.offset > size || d.tok || d.str)
			abort();
		return 0;
	}
	if (same(&d, 0, j) != d.ntok)
		abort();
	json_decref(j);

	device(&d, 0);
	uint32_t results = jv_get(&d, 0, "results"), c = results + 1;
	for (uint32_t k = 0; k < jv_count(&d, results); k++, c = d.tok[c].next)
		device(&d, c);
	jv_free(&d);
	return 0;
}
