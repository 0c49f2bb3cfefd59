/* sessions_shared.h: the shared table's half of sessions.h (SH1-SH4),
 * called by sessions.c when the table is in the store; nothing else
 * includes it. */
#ifndef FLEET_ADMISSION_SESSIONS_SHARED_H
#define FLEET_ADMISSION_SESSIONS_SHARED_H

#include "fleetd/admission/sessions.h"

/* Wipe and free one entry (sessions.c: both tables' entries). */
void adm_session_free(struct adm_session *e);

enum adm_sess_result adm_sh_reserve(struct adm_sessions *t, const char *serial,
				    const char *peer, const char *peer_key, time_t now,
				    struct adm_session **out);
bool adm_sh_publish(struct adm_sessions *t, struct adm_session *e);
enum adm_sess_result adm_sh_acquire(struct adm_sessions *t,
				    const uint8_t id[FLEET_WIRE_ID_LEN], time_t now,
				    struct adm_session **out);
size_t adm_sh_prove(struct adm_sessions *t, struct adm_session *e);
void adm_sh_release(struct adm_sessions *t, struct adm_session *e);
void adm_sh_drop(struct adm_sessions *t, struct adm_session *e);
size_t adm_sh_reap(struct adm_sessions *t, time_t now, adm_sess_ended ended, void *ctx);
size_t adm_sh_count(struct adm_sessions *t);
/* Seal e for the row handle into *out (malloc'd), and open it again:
 * exposed for the tests of SH1. */
bool adm_sh_seal(const struct adm_sessions *t, const struct adm_session *e, uint8_t **out,
		 size_t *len);
struct adm_session *adm_sh_open(const struct adm_sessions *t, const char *handle,
				const uint8_t *b, size_t len);

#endif
