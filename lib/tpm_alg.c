#include "lib/tpm_alg.h"

#include <pthread.h>
#include <string.h>

struct alg_row {
	uint16_t id;
	const char *name;
	const char *ossl;
	size_t size;
};

static const struct alg_row rows[] = {
	{FLEET_ALG_SHA1, "sha1", "SHA1", 20},
	{FLEET_ALG_SHA256, "sha256", "SHA256", 32},
	{FLEET_ALG_SHA384, "sha384", "SHA384", 48},
	{FLEET_ALG_SHA512, "sha512", "SHA512", 64},
	{FLEET_ALG_SM3_256, "sm3_256", "SM3", 32},
};
#define NROWS (sizeof(rows) / sizeof(rows[0]))

static const EVP_MD *mds[NROWS];
static pthread_once_t mds_once = PTHREAD_ONCE_INIT;

/* Fetch once: EVP_get_digestbyname on every hash costs a lock and a lookup,
 * which shows in the verification benchmark. */
static void fetch_mds(void)
{
	for (size_t i = 0; i < NROWS; i++)
		mds[i] = EVP_MD_fetch(NULL, rows[i].ossl, NULL);
}

static const struct alg_row *find(uint16_t alg, size_t *idx)
{
	for (size_t i = 0; i < NROWS; i++)
		if (rows[i].id == alg) {
			if (idx)
				*idx = i;
			return &rows[i];
		}
	return NULL;
}

const char *fleet_hash_alg_name(uint16_t alg)
{
	const struct alg_row *r = find(alg, NULL);
	return r ? r->name : NULL;
}

uint16_t fleet_hash_alg_from_name(const char *name)
{
	for (size_t i = 0; i < NROWS; i++)
		if (strcmp(rows[i].name, name) == 0)
			return rows[i].id;
	return 0;
}

size_t fleet_hash_alg_size(uint16_t alg)
{
	const struct alg_row *r = find(alg, NULL);
	return r ? r->size : 0;
}

const EVP_MD *fleet_hash_alg_md(uint16_t alg)
{
	size_t i;
	if (!find(alg, &i))
		return NULL;
	pthread_once(&mds_once, fetch_mds);
	return mds[i];
}

fleet_err fleet_hash(uint16_t alg, const void *in, size_t len, uint8_t *out)
{
	const EVP_MD *md = fleet_hash_alg_md(alg);
	unsigned int n = 0;
	if (!md)
		return FLEET_E_UNSUPPORTED;
	if (!EVP_Digest(in, len, out, &n, md, NULL))
		return FLEET_E_CRYPTO;
	return FLEET_OK;
}
