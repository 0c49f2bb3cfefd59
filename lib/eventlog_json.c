/*
 * eventlog_json.c: the replay as JSON, for `fleetctl eventlog replay --json`
 * and the daemon. Built with jansson so that escaping is never ours to get
 * wrong; keys are inserted in numeric PCR order and dumped in that order.
 */
#include "lib/eventlog.h"

#include <stdio.h>

#include <jansson.h>

#include "lib/hex.h"

static json_t *bank_json(const struct fleet_pcr_bank *bank)
{
	json_t *pcrs = json_object();
	if (!pcrs)
		return NULL;
	for (unsigned i = 0; i < FLEET_PCR_COUNT; i++) {
		if (!(bank->extended & (UINT32_C(1) << i)))
			continue;
		char key[4], hex[2 * FLEET_DIGEST_MAX + 1];
		snprintf(key, sizeof(key), "%u", i);
		fleet_hex_encode(bank->pcr[i], bank->size, hex);
		if (json_object_set_new(pcrs, key, json_string(hex)) != 0) {
			json_decref(pcrs);
			return NULL;
		}
	}
	return pcrs;
}

json_t *fleet_evlog_replay_json(const struct fleet_pcr_replay *r, enum fleet_evlog_format format)
{
	if (!r)
		return NULL;
	json_t *root = json_object();
	json_t *banks = json_object();
	if (!root || !banks ||
	    json_object_set_new(root, "format", json_string(fleet_evlog_format_name(format))) ||
	    json_object_set(root, "pcrs", banks))
		goto fail;
	for (uint32_t b = 0; b < r->n_banks && b < FLEET_EVLOG_MAX_BANKS; b++) {
		const struct fleet_pcr_bank *bank = &r->banks[b];
		const char *name = fleet_hash_alg_name(bank->alg);
		if (!bank->replayable || !name || bank->size != fleet_hash_alg_size(bank->alg))
			continue;
		json_t *pcrs = bank_json(bank);
		if (!pcrs || json_object_set_new(banks, name, pcrs) != 0)
			goto fail;
	}
	json_decref(banks);
	return root;
fail:
	json_decref(banks);
	json_decref(root);
	return NULL;
}

char *fleet_evlog_replay_json_str(const struct fleet_pcr_replay *r,
				  enum fleet_evlog_format format)
{
	json_t *j = fleet_evlog_replay_json(r, format);
	if (!j)
		return NULL;
	char *s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(j);
	return s;
}
