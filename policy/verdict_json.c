/*
 * verdict_json.c: a verdict as JSON, one shape for fleetctl --json and the
 * daemon's journal and API, so an operator's scripts read both alike.
 */
#include <jansson.h>

#include "policy/evaluate.h"

struct json_t *fleet_verdict_json(const struct fleet_profile *p, const struct fleet_verdict *v)
{
	json_t *reasons = json_array();
	json_t *o = json_object();
	if (!reasons || !o)
		goto fail;
	for (size_t i = 0; i < v->n_reasons; i++) {
		json_t *r = json_pack("{s:s, s:s}", "reason", v->reasons[i].reason, "detail",
				      v->reasons[i].detail);
		if (!r || json_array_append_new(reasons, r))
			goto fail;
	}
	if (json_object_set_new(o, "verdict", json_string(v->pass ? "pass" : "fail")) ||
	    json_object_set_new(o, "class", json_string(p ? p->class_name : "")) ||
	    json_object_set_new(o, "quote_checked", json_boolean(v->quote_checked)))
		goto fail;
	/* json_object_set_new takes the reference even when it fails. */
	int bad = json_object_set_new(o, "reasons", reasons);
	reasons = NULL;
	if (bad || json_object_set_new(o, "reasons_dropped", json_integer((json_int_t)v->n_dropped)))
		goto fail;
	return o;
fail:
	json_decref(reasons);
	json_decref(o);
	return NULL;
}
