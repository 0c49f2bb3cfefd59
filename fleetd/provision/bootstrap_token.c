#include "fleetd/provision/bootstrap_token.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <string.h>

static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";

/* n characters of the alphabet, each uniform: bytes of 252 and above are
 * drawn again (252 = 7 * 36), so no character is likelier than another. */
static fleet_err draw(char *out, size_t n)
{
	size_t got = 0;
	while (got < n) {
		unsigned char b[32];
		if (RAND_bytes(b, sizeof(b)) != 1)
			return fleet_errctx_openssl(NULL, FLEET_E_CRYPTO, "RAND_bytes");
		for (size_t i = 0; i < sizeof(b) && got < n; i++)
			if (b[i] < 252)
				out[got++] = alphabet[b[i] % 36];
		OPENSSL_cleanse(b, sizeof(b));
	}
	out[n] = '\0';
	return FLEET_OK;
}

fleet_err fleet_bootstrap_token_new(struct fleet_bootstrap_token *t)
{
	fleet_err e;
	memset(t, 0, sizeof(*t));
	if ((e = draw(t->id, 6)) || (e = draw(t->secret, 16))) {
		fleet_bootstrap_token_wipe(t);
		return e;
	}
	snprintf(t->token, sizeof(t->token), "%s.%s", t->id, t->secret);
	return FLEET_OK;
}

void fleet_bootstrap_secret_name(const struct fleet_bootstrap_token *t, char out[32])
{
	snprintf(out, 32, "bootstrap-token-%s", t->id);
}

json_t *fleet_bootstrap_secret(const struct fleet_bootstrap_token *t, time_t config_expires)
{
	char name[32], when[32];
	struct tm tm;
	time_t at = config_expires + FLEET_BOOTSTRAP_TOKEN_GRACE;
	if (!gmtime_r(&at, &tm) || !strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm))
		return NULL;
	fleet_bootstrap_secret_name(t, name);
	return json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:s,s:{s:s,s:s,s:s,s:s,s:s}}",
			 "apiVersion", "v1", "kind", "Secret", "metadata", "name", name,
			 "namespace", "kube-system", "labels", "app.kubernetes.io/managed-by",
			 "fleetd", "type", "bootstrap.kubernetes.io/token", "stringData",
			 "token-id", t->id, "token-secret", t->secret, "expiration", when,
			 "usage-bootstrap-authentication", "true", "auth-extra-groups",
			 FLEET_BOOTSTRAP_GROUP);
}

void fleet_bootstrap_token_wipe(struct fleet_bootstrap_token *t)
{
	OPENSSL_cleanse(t, sizeof(*t));
}
