/* inproc_server.c: fleetd-lite (inproc_server.h). */
#include "tests/tpm/inproc_server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/rand.h>

#include "lib/tpm_credential.h"
#include "tests/testutil.h"

int inproc_server_init(struct inproc_server *s, const char *roots_dir, const char *profile)
{
	struct fleet_errctx ec;
	struct fleet_profile_error pe;
	memset(s, 0, sizeof(*s));
	memset(&ec, 0, sizeof(ec));
	char *tmp = make_temp_dir("inproc-ca");
	if (!tmp)
		return -1;
	snprintf(s->ca_dir, sizeof(s->ca_dir), "%s/ca", tmp);
	free(tmp);
	if (fleet_ek_roots_load(roots_dir, &s->roots, &ec) != FLEET_OK ||
	    fleet_ca_init(s->ca_dir, "fleetd-lite test CA", 30, &ec) != FLEET_OK ||
	    fleet_ca_load(s->ca_dir, &s->ca, &ec) != FLEET_OK) {
		fprintf(stderr, "inproc server: roots or CA: %s\n", ec.detail);
		return -1;
	}
	if (fleet_profile_load(profile, &s->profile, &pe) != FLEET_OK) {
		fprintf(stderr, "inproc server: profile %s:%u: %s\n", profile, pe.line, pe.msg);
		return -1;
	}
	s->env.roots = s->roots;
	s->env.profile = s->profile;
	s->env.ca = s->ca;
	return 0;
}

void inproc_server_free(struct inproc_server *s)
{
	fleet_attest_session_wipe(&s->session);
	fleet_ek_roots_free(s->roots);
	fleet_profile_free(s->profile);
	fleet_ca_free(s->ca);
	if (s->ca_dir[0]) {
		char *slash = strrchr(s->ca_dir, '/');
		if (slash)
			*slash = '\0';
		rm_rf(s->ca_dir);
	}
}

static void status_only(enum fleet_wire_status st, struct fleet_buf *out)
{
	static const char *const names[] = {[FLEET_WIRE_PENDING] = "pending",
					    [FLEET_WIRE_REFUSED] = "refused"};
	char body[64];
	snprintf(body, sizeof(body), "{\"v\":1,\"status\":\"%s\"}", names[st]);
	fb_put(out, body, strlen(body));
}

static long intake(struct inproc_server *s, const struct fleet_buf *body, struct fleet_buf *out)
{
	struct fleet_wire_intake in;
	struct fleet_wire_intake_reply reply;
	long status = 200;
	if (fleet_wire_intake_decode(body->data, body->len, &in, NULL) != FLEET_OK) {
		s->n_malformed++;
		return 400;
	}
	s->n_intake++;
	s->intake_had_ecc = in.ek_ecc.present;
	memset(&reply, 0, sizeof(reply));
	if (strcmp(in.serial, s->binding.serial) != 0) {
		status_only(FLEET_WIRE_PENDING, out); /* a pending claim */
		goto done;
	}
	/* Trust rule 4, as the daemon keeps it (fleetd/admission/admission.h,
	 * I2): an intake, even a valid one (it holds nothing fresh and can be
	 * replayed), never displaces a session that is still open. */
	if (s->session.state >= FLEET_SESSION_CHALLENGED &&
	    s->session.state < FLEET_SESSION_CONFIRMED && time(NULL) <= s->session.deadline) {
		s->reason = "session-open";
		status_only(FLEET_WIRE_REFUSED, out);
		goto done;
	}
	struct fleet_attest_session fresh;
	memset(&fresh, 0, sizeof(fresh));
	if (fleet_attest_intake(&s->env, &in, &fresh, &s->reason) != FLEET_OK) {
		status_only(FLEET_WIRE_REFUSED, out);
		goto done;
	}
	/* The binding: every approved EK, and no other. */
	if (strcmp(fresh.ek_hash, s->binding.ek_hash) != 0 ||
	    strcmp(fresh.ek_hash_ecc, s->binding.ek_hash_ecc) != 0) {
		s->reason = "ek-binding-mismatch";
		status_only(FLEET_WIRE_REFUSED, out);
		fleet_attest_session_wipe(&fresh);
		goto done;
	}
	if (fleet_attest_challenge(&s->env, &in, &fresh, &reply) != FLEET_OK ||
	    fleet_wire_intake_reply_encode(&reply, out) != FLEET_OK) {
		status = 500;
		fleet_attest_session_wipe(&fresh);
		goto done;
	}
	fleet_attest_session_wipe(&s->session);
	s->session = fresh;
done:
	fleet_wire_intake_reply_free(&reply);
	fleet_wire_intake_free(&in);
	return status;
}

static long answer(struct inproc_server *s, const struct fleet_buf *body, struct fleet_buf *out)
{
	struct fleet_wire_answer in;
	struct fleet_wire_verdict v;
	long status = 200;
	if (fleet_wire_answer_decode(body->data, body->len, &in, NULL) != FLEET_OK) {
		s->n_malformed++;
		return 400;
	}
	s->n_answer++;
	memset(&v, 0, sizeof(v));
	if (fleet_attest_answer(&s->env, &s->session, &in, &s->verdict, &s->reason) != FLEET_OK ||
	    !s->verdict.pass) {
		if (s->verdict.n_reasons)
			s->reason = s->verdict.reasons[0].reason;
		status_only(FLEET_WIRE_REFUSED, out);
	} else if (fleet_attest_issue(&s->env, &s->session, s->binding.serial, &v) != FLEET_OK ||
		   fleet_wire_verdict_encode(&v, out) != FLEET_OK) {
		status = 500;
	}
	fleet_wire_verdict_free(&v);
	fleet_wire_answer_free(&in);
	return status;
}

/* The provision: a fresh 32-byte code wrapped to the RSA EK, bound to the
 * AK's name, as fleetd wraps it. */
static int provision(struct inproc_server *s, struct fleet_wire_confirm_reply *r,
		     struct fleet_buf *id, struct fleet_buf *es)
{
	uint8_t name[2 + 64];
	size_t name_len = 0;
	static const char proof[] = "fleetd-lite proof of a passing check";
	if (RAND_bytes(s->code, sizeof(s->code)) != 1 ||
	    fleet_tpm_name(&s->session.ak.publicArea, name, sizeof(name), &name_len) != FLEET_OK ||
	    fleet_make_credential(&s->session.ek_rsa.publicArea, s->code, sizeof(s->code), name,
				  name_len, id, es, NULL) != FLEET_OK)
		return -1;
	r->has_provision = true;
	r->code.present = true;
	r->code.id_object.data = id->data;
	r->code.id_object.len = id->len;
	r->code.enc_secret.data = es->data;
	r->code.enc_secret.len = es->len;
	r->proof.data = (uint8_t *)proof;
	r->proof.len = sizeof(proof) - 1;
	return 0;
}

static long confirm(struct inproc_server *s, const struct fleet_buf *body, struct fleet_buf *out)
{
	struct fleet_wire_confirm in;
	struct fleet_wire_confirm_reply r;
	struct fleet_buf id, es;
	long status = 200;
	if (fleet_wire_confirm_decode(body->data, body->len, &in, NULL) != FLEET_OK) {
		s->n_malformed++;
		return 400;
	}
	s->n_confirm++;
	memset(&r, 0, sizeof(r));
	fb_init(&id);
	fb_init(&es);
	if (fleet_attest_confirm(&s->env, &s->session, &in, &s->reason) != FLEET_OK) {
		status_only(FLEET_WIRE_REFUSED, out);
	} else {
		r.status = FLEET_WIRE_CONFIRMED;
		if ((s->provision && provision(s, &r, &id, &es) != 0) ||
		    fleet_wire_confirm_reply_encode(&r, out) != FLEET_OK)
			status = 500;
	}
	fb_free(&id);
	fb_free(&es);
	fleet_wire_confirm_free(&in);
	return status;
}

static enum tink_tx_result post(void *ctx, const char *path, const struct fleet_buf *body,
				size_t max_reply, struct fleet_buf *reply, long *http_status,
				char *err, size_t errlen)
{
	struct inproc_server *s = ctx;
	fb_reset(reply);
	if (strcmp(path, "/v1/attest/intake") == 0)
		*http_status = intake(s, body, reply);
	else if (strcmp(path, "/v1/attest/answer") == 0)
		*http_status = answer(s, body, reply);
	else if (strcmp(path, "/v1/attest/confirm") == 0)
		*http_status = confirm(s, body, reply);
	else
		*http_status = 404;
	if (s->after)
		s->after(s->after_arg, path);
	if (reply->len > max_reply) {
		snprintf(err, errlen, "reply over %zu bytes", max_reply);
		return TINK_TX_FATAL;
	}
	return TINK_TX_OK;
}

struct tink_transport inproc_transport(struct inproc_server *s)
{
	struct tink_transport t = {.post = post, .ctx = s};
	return t;
}
