/*
 * sessions_shared.c: the open-session table kept in the store, for
 * replicas that share it (sessions.h SH1-SH4; the rows: store.h SS1-SS4).
 * The caps, replacement, supersession and expiry are the in-memory
 * table's rules (sessions.c), counted by the store in one transaction.
 */
#include "fleetd/admission/sessions_shared.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "fleetd/store/store.h"
#include "lib/hex.h"

#define NONCE_LEN 12
#define TAG_LEN 16
#define AAD_LABEL "fleetd admission session v1"

/* The associated data: the label, the row's handle, the layout's size (a
 * replica of another build does not open what it cannot read). */
static size_t aad(const char *handle, uint8_t out[96])
{
	uint32_t size = (uint32_t)sizeof(struct adm_session);
	size_t n = sizeof(AAD_LABEL);
	memcpy(out, AAD_LABEL, n); /* with its NUL */
	memcpy(out + n, handle, 32);
	n += 32;
	for (int i = 0; i < 4; i++)
		out[n++] = (uint8_t)(size >> (24 - 8 * i));
	return n;
}

bool adm_sh_seal(const struct adm_sessions *t, const struct adm_session *e, uint8_t **out,
		 size_t *len)
{
	struct adm_session *pt = malloc(sizeof(*pt));
	size_t total = NONCE_LEN + sizeof(*pt) + TAG_LEN;
	uint8_t *b = malloc(total), ad[96];
	EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
	bool ok = false;
	int l = 0;
	*out = NULL;
	*len = 0;
	if (!pt || !b || !c)
		goto done;
	memcpy(pt, e, sizeof(*pt));
	/* what only this process's table means */
	pt->profile = NULL;
	pt->busy = pt->published = false;
	size_t adl = aad(e->handle, ad);
	if (RAND_bytes(b, NONCE_LEN) != 1 ||
	    EVP_EncryptInit_ex(c, EVP_aes_256_gcm(), NULL, t->seal_key, b) != 1 ||
	    EVP_EncryptUpdate(c, NULL, &l, ad, (int)adl) != 1 ||
	    EVP_EncryptUpdate(c, b + NONCE_LEN, &l, (const uint8_t *)pt, (int)sizeof(*pt)) != 1 ||
	    EVP_EncryptFinal_ex(c, b + NONCE_LEN + l, &l) != 1 ||
	    EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, TAG_LEN, b + NONCE_LEN + sizeof(*pt)) != 1)
		goto done;
	*out = b;
	*len = total;
	b = NULL;
	ok = true;
done:
	EVP_CIPHER_CTX_free(c);
	free(b);
	if (pt)
		adm_session_free(pt);
	return ok;
}

struct adm_session *adm_sh_open(const struct adm_sessions *t, const char *handle,
				const uint8_t *b, size_t len)
{
	uint8_t ad[96], tag[TAG_LEN];
	int l = 0;
	if (!b || len != NONCE_LEN + sizeof(struct adm_session) + TAG_LEN || strlen(handle) != 32)
		return NULL;
	struct adm_session *e = calloc(1, sizeof(*e));
	EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
	bool ok = false;
	if (!e || !c)
		goto done;
	memcpy(tag, b + len - TAG_LEN, TAG_LEN);
	size_t adl = aad(handle, ad);
	ok = EVP_DecryptInit_ex(c, EVP_aes_256_gcm(), NULL, t->seal_key, b) == 1 &&
	     EVP_DecryptUpdate(c, NULL, &l, ad, (int)adl) == 1 &&
	     EVP_DecryptUpdate(c, (uint8_t *)e, &l, b + NONCE_LEN, (int)sizeof(*e)) == 1 &&
	     EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, TAG_LEN, tag) == 1 &&
	     EVP_DecryptFinal_ex(c, (uint8_t *)e + l, &l) == 1;
	/* the handle it was sealed under is the row's (the AAD says so) */
	ok = ok && memcmp(e->handle, handle, 32) == 0 && e->handle[32] == '\0';
done:
	EVP_CIPHER_CTX_free(c);
	if (!ok && e) {
		adm_session_free(e);
		e = NULL;
	}
	if (e)
		e->profile = NULL;
	return e;
}

/* A bounded copy (the columns were checked against the same bounds). */
static void copy_str(char *dst, size_t cap, const char *src)
{
	size_t n = src ? strnlen(src, cap - 1) : 0;
	if (n)
		memcpy(dst, src, n);
	dst[n] = '\0';
}

enum adm_sess_result adm_sh_reserve(struct adm_sessions *t, const char *serial,
				    const char *peer, const char *peer_key, time_t now,
				    struct adm_session **out)
{
	struct fleet_store_session r = {0};
	uint8_t h[16];
	enum fleet_store_session_cap cap = FLEET_STORE_SESSION_CAP_ALL;
	*out = NULL;
	if (RAND_bytes(h, sizeof(h)) != 1)
		return ADM_SESS_NOMEM;
	fleet_hex_encode(h, sizeof(h), r.handle);
	copy_str(r.serial, sizeof(r.serial), serial);
	copy_str(r.peer, sizeof(r.peer), peer);
	copy_str(r.peer_key, sizeof(r.peer_key), peer_key);
	r.busy_until = (int64_t)now + t->lease_s;
	if (fleet_store_session_reserve(t->st, &r, now, ADM_SESSIONS_PER_SERIAL,
					ADM_SESSIONS_PER_PEER, t->cap, &cap) != FLEET_STORE_OK)
		return ADM_SESS_STORE;
	switch (cap) {
	case FLEET_STORE_SESSION_RESERVED:
		break;
	case FLEET_STORE_SESSION_CAP_SERIAL:
		return ADM_SESS_OPEN;
	case FLEET_STORE_SESSION_CAP_PEER:
		return ADM_SESS_PEER;
	default:
		return ADM_SESS_FULL;
	}
	struct adm_session *e = calloc(1, sizeof(*e));
	if (!e) {
		(void)fleet_store_session_delete(t->st, r.handle);
		return ADM_SESS_NOMEM;
	}
	copy_str(e->s.serial, sizeof(e->s.serial), serial);
	copy_str(e->peer, sizeof(e->peer), peer);
	copy_str(e->peer_key, sizeof(e->peer_key), peer_key);
	memcpy(e->handle, r.handle, sizeof(e->handle));
	e->busy = true;
	*out = e;
	return ADM_SESS_OK;
}

/* Write e back, sealed, idle. */
static bool put(struct adm_sessions *t, const struct adm_session *e)
{
	struct fleet_store_session r = {0};
	memcpy(r.handle, e->handle, sizeof(r.handle));
	fleet_hex_encode(e->s.id, FLEET_WIRE_ID_LEN, r.sid);
	copy_str(r.serial, sizeof(r.serial), e->s.serial);
	copy_str(r.peer, sizeof(r.peer), e->peer);
	copy_str(r.peer_key, sizeof(r.peer_key), e->peer_key);
	copy_str(r.ek_hash, sizeof(r.ek_hash), e->s.ek_hash);
	copy_str(r.ek_hash_ecc, sizeof(r.ek_hash_ecc), e->s.ek_hash_ecc);
	r.published = true;
	r.proven = e->proven;
	r.deadline = e->s.deadline;
	r.answer_by = e->answer_by;
	if (!adm_sh_seal(t, e, &r.sealed, &r.sealed_len))
		return false;
	bool ok = fleet_store_session_put(t->st, &r) == FLEET_STORE_OK;
	fleet_store_session_clear(&r);
	return ok;
}

bool adm_sh_publish(struct adm_sessions *t, struct adm_session *e)
{
	bool ok = put(t, e);
	if (!ok)
		(void)fleet_store_session_delete(t->st, e->handle);
	adm_session_free(e);
	return ok;
}

static bool ending(const struct fleet_store_session *r, time_t now)
{
	return !r->published || r->superseded || now > r->deadline ||
	       (!r->proven && r->answer_by && now > r->answer_by);
}

enum adm_sess_result adm_sh_acquire(struct adm_sessions *t,
				    const uint8_t id[FLEET_WIRE_ID_LEN], time_t now,
				    struct adm_session **out)
{
	struct fleet_store_session r;
	char sid[65];
	bool found = false, took = false;
	*out = NULL;
	fleet_hex_encode(id, FLEET_WIRE_ID_LEN, sid);
	if (fleet_store_session_acquire(t->st, sid, now, (int64_t)now + t->lease_s, &r, &found,
					&took) != FLEET_STORE_OK)
		return ADM_SESS_STORE;
	enum adm_sess_result res = ADM_SESS_UNKNOWN;
	if (!found)
		goto done;
	if (!took) {
		res = ending(&r, now) ? ADM_SESS_EXPIRED : ADM_SESS_BUSY;
		goto done;
	}
	struct adm_session *e = adm_sh_open(t, r.handle, r.sealed, r.sealed_len);
	bool ok = false;
	if (e && CRYPTO_memcmp(e->s.id, id, FLEET_WIRE_ID_LEN) == 0) {
		e->profile = t->profile_for ? t->profile_for(t->profile_ctx, e, &ok) : NULL;
		if (!t->profile_for)
			ok = true;
	}
	if (!ok) {
		/* SH1: it does not open here (another CA key, another build, a
		 * changed row) or names a class this replica lacks: unknown,
		 * and the lease ends by itself for the reaper */
		if (e)
			adm_session_free(e);
		goto done;
	}
	e->proven = r.proven;
	e->superseded = r.superseded;
	e->answer_by = (time_t)r.answer_by;
	e->published = e->busy = true;
	*out = e;
	res = ADM_SESS_OK;
done:
	fleet_store_session_clear(&r);
	return res;
}

size_t adm_sh_prove(struct adm_sessions *t, struct adm_session *e)
{
	size_t n = 0;
	e->proven = true;
	/* A failure here leaves the others for their answer windows: they
	 * are unproven and end by themselves. */
	(void)fleet_store_session_prove(t->st, e->handle, &n);
	return n;
}

void adm_sh_release(struct adm_sessions *t, struct adm_session *e)
{
	(void)put(t, e); /* SH3: a failure leaves the lease to run out */
	adm_session_free(e);
}

void adm_sh_drop(struct adm_sessions *t, struct adm_session *e)
{
	(void)fleet_store_session_delete(t->st, e->handle);
	adm_session_free(e);
}

/* An ended row that does not open: what its columns say, with its
 * certificates to be revoked by the session id (SH4). */
static struct adm_session *from_columns(const struct fleet_store_session *r)
{
	struct adm_session *e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	copy_str(e->s.serial, sizeof(e->s.serial), r->serial);
	copy_str(e->s.ek_hash, sizeof(e->s.ek_hash), r->ek_hash);
	copy_str(e->s.ek_hash_ecc, sizeof(e->s.ek_hash_ecc), r->ek_hash_ecc);
	copy_str(e->peer, sizeof(e->peer), r->peer);
	memcpy(e->handle, r->handle, sizeof(e->handle));
	if (r->sid[0] && fleet_hex_decode(r->sid, 64, e->s.id, FLEET_WIRE_ID_LEN) == FLEET_OK)
		copy_str(e->lak_sha1, sizeof(e->lak_sha1), "unknown");
	return e;
}

size_t adm_sh_reap(struct adm_sessions *t, time_t now, adm_sess_ended ended, void *ctx)
{
	struct fleet_store_session *v = NULL;
	size_t n = 0;
	if (fleet_store_session_reap(t->st, now, 256, &v, &n) != FLEET_STORE_OK)
		return 0;
	for (size_t i = 0; i < n; i++) {
		struct adm_session *e = v[i].sealed
						? adm_sh_open(t, v[i].handle, v[i].sealed, v[i].sealed_len)
						: NULL;
		if (!e)
			e = from_columns(&v[i]);
		if (e && ended)
			ended(ctx, e, v[i].superseded ? "superseded" : "session-expired");
		if (e)
			adm_session_free(e);
		fleet_store_session_clear(&v[i]);
	}
	free(v);
	if (t->gauge)
		fleet_metric_set(t->gauge, (int64_t)adm_sh_count(t));
	return n;
}

size_t adm_sh_count(struct adm_sessions *t)
{
	size_t n = 0;
	(void)fleet_store_session_count(t->st, &n);
	return n;
}
