/*
 * join_client.h: fleet-join, the join service's client (issue 13; the
 * wire formats are lib/join_wire.h and lib/join_evidence.h). fleet_join.c
 * is the command line; everything it does is here, so the tests
 * (tests/unit/test_join_client.c) run the program's own code against an
 * in-process CA and a transport of their own.
 *
 *   fleet-join join    POST /v1/join with a fresh key's CSR; on "joined"
 *                      write KEY and CHAIN and print the node id
 *   fleet-join renew   POST /v1/renew: a fresh key's CSR, proven by the
 *                      current key over the current leaf
 *   fleet-join assert  what a site's boot server does: a signed discovery
 *                      assertion on stdout, the --discovery-file of a
 *                      ramdisk's join
 *
 * join_tpm.c holds the tpm attestor's pieces (FJ9-FJ11): the key in either
 * form, the rounds' evidence, the renewal's key_attestation, the leaf's AK
 * statement; the TPM commands are tpm_join.h's.
 *
 * The rules (each traced to a test of tests/unit/test_join_client.c):
 *
 * FJ1 The key is a fresh software P-256 key (EVP_PKEY) for every run (the
 *     tpm attestor's is the TPM's, FJ9); the
 *     CSR is PKCS#10 DER, subject CN=fleet-join, ecdsa-with-SHA256, and is
 *     what the server's NC1-NC3 accept (the server takes its key and
 *     nothing else). A pending answer is followed by the same request, the
 *     same CSR, byte for byte. test_key_csr, test_join_pending_then_joined.
 * FJ2 An answer is believed only by lib/join_wire.h JW10, in order: the
 *     envelope decodes ("answer-envelope"); its kid is fleet_join_kid of a
 *     pinned CA certificate ("answer-kid"); fleet_ca_verify of the body
 *     under that certificate ("answer-signature"), before the body is read;
 *     the body decodes ("answer-body"); csr_sha256 is the CSR's
 *     ("answer-csr"); a challenge names the attestor the request named
 *     ("answer-attestor"). Every refusal is FLEET_E_VERIFY or the
 *     decoder's code, with the reason in ec->reason. The pinned
 *     certificates are every one of --ca's PEM (1..FJ_MAX_PINNED).
 *     test_answer_refusals, test_pins.
 * FJ3 A joined answer's chain parses, entry by entry, as DER certificates
 *     ("answer-chain"); its leaf holds the CSR's key ("answer-leaf-key"),
 *     verifies under the certificate that signed the answer
 *     ("answer-leaf-issuer"), and names the body's node id in its one
 *     SPIFFE ID (lib/ca.h NR1-NR6; "answer-node-id") with the role the
 *     request asked ("answer-role"; a renewal asks none). The pins are
 *     --ca's alone: fleetd's TLS anchor is --tls-ca's, for the connection
 *     only, since any pinned key may name the machine.
 *     test_answer_refusals.
 * FJ4 A token file is base64url (trailing whitespace allowed) of either a
 *     sealing (its first bytes "fsl": sent as it is) or an unsealed
 *     FLEET_JOIN_TOKEN_LEN-byte token (lib/join_token.h JT1), which is
 *     sealed to the join service's SPKI (--seal-pub, DER or PEM) for
 *     FLEET_JOIN_TOKEN_PURPOSE; anything else is FLEET_E_MALFORMED
 *     "token-malformed", an unsealed token without a key
 *     FLEET_E_INVALID_ARG "token-no-seal-pub". The file is a secret
 *     (lib/file_read.h SECRET: mode 0600 or stricter); every copy of the
 *     token this code holds (the file, the decoded token, the sealing,
 *     the request around it) is in a wiping buffer or wiped, and none is
 *     ever printed. (jansson's own copies while the request is encoded,
 *     lib/attest_wire_json.c's writers, are freed unwiped.) test_token_read.
 * FJ5 x509pop evidence is built from the previous chain and its key (the
 *     key must be the leaf's, "x509pop-key"; a leaf that names a node id
 *     must name --node-id, "x509pop-node-id"), signed with fleet_es256_sign
 *     over fleet_x509pop_signing_input. test_x509pop_build.
 * FJ6 An assertion is the body (issued_at, not_after = issued_at + ttl,
 *     ttl 1..FJ_ASSERT_MAX_TTL) signed with the site node's key over
 *     fleet_discovery_signing_input, the key the certificate's
 *     ("assert-key"), encoded as fleet_discovery_signed. test_assert_build.
 * FJ7 KEY is written PKCS#8 PEM, mode 0600, CHAIN PEM, leaf first, mode
 *     0644, each to a temporary file in its own directory, fsynced and
 *     renamed over the name (tink-attest/output.h): KEY first, so a
 *     CHAIN never names a key that was not written. The PEM of the key is
 *     built in OpenSSL's wiping memory BIO. test_join_pending_then_joined,
 *     test_renew.
 * FJ8 pending: wait retry_after_seconds and send again, unless that wait
 *     would end past max_wait seconds since the run began: then
 *     FJ_EXIT_PENDING. test_join_max_wait.
 *
 * The tpm attestor (issue 14; lib/tpm_join_evidence.h, tink-attest/
 * tpm_join.h; tests/tpm/test_join_tpm_client.c):
 *
 * FJ9 --attestor tpm makes the node key IN the TPM (node key generation
 *     --key-generation, default 0) and its CSR signed there; no token is
 *     read or sent. Round 1 carries {ek_public, ek_cert, ak_public}; a
 *     signed challenge for "tpm" is answered (ActivateCredential, the
 *     quote over the challenge's pcrs with extraData
 *     fleet_tpm_quote_nonce(secret, SHA-256(csr)), the PCR values, the
 *     AK's certification of the node key over SHA-256(csr), --event-log)
 *     with the same CSR and the state unchanged, at most FJ_MAX_CHALLENGES
 *     times; then FJ_EXIT_CHALLENGE. The secret and every request carrying
 *     it are in wiping buffers.
 * FJ10 A TPM-held KEY is the PEM block FJ_TPM_KEY_PEM, mode 0600, written
 *     as FJ7 writes a key, holding the record fj_tpm_key_record encodes
 *     ("FTNK", version 1, the generation, the template's unique): the same
 *     TPM derives the same key from it again. Every reader of a key
 *     (fj_key_load) takes either form; a record needs a TPM (--tcti).
 * FJ11 renew with a TPM-held key proves the request with TPM2_Sign (r||s).
 *     A leaf whose URI SAN begins FLEET_TPM_AK_URI_PREFIX renews only with
 *     the next generation made in the same TPM and key_attestation, the
 *     AK's certification of it over SHA-256(new csr); an AK whose name is
 *     not the statement's is refused before anything is sent
 *     (FJ_EXIT_LOCAL), and there is no fallback to a software key. A leaf
 *     with no statement renews a TPM key with the next generation and no
 *     key_attestation, a software key with a software key.
 */
#ifndef TINK_JOIN_CLIENT_H
#define TINK_JOIN_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

#include "lib/buf.h"
#include "lib/fleet_err.h"
#include "lib/join_evidence.h"
#include "lib/join_wire.h"
#include "tink-attest/tpm_client.h"
#include "tink-attest/transport.h"

/* Exit codes of fleet-join. */
enum fj_exit {
	FJ_EXIT_OK = 0,
	FJ_EXIT_USAGE = 2,     /* bad command line, or an input file unusable */
	FJ_EXIT_DENIED = 10,   /* "denied": access denied */
	FJ_EXIT_FAILED = 11,   /* transport failure, or an answer that does not verify */
	FJ_EXIT_PENDING = 12,  /* still pending at --max-wait */
	FJ_EXIT_CHALLENGE = 13, /* a challenge unanswered (another attestor's, or a 4th) */
	FJ_EXIT_LOCAL = 14,    /* this side: the TPM, making the key, writing KEY or CHAIN */
};
const char *fj_exit_name(int code);

#define FJ_DEFAULT_MAX_WAIT 120u
#define FJ_DEFAULT_TIMEOUT 20u
#define FJ_ASSERT_MAX_TTL 900u
#define FJ_ASSERT_DEFAULT_TTL 600u
#define FJ_CSR_CN "fleet-join"
#define FJ_MAX_PINNED 16 /* certificates in --ca */
#define FJ_MAX_CHALLENGES 3 /* challenge rounds answered for one CSR (FJ9) */
#define FJ_TPM_KEY_PEM "FLEET TPM NODE KEY"
#define FJ_TPM_ATTESTOR "tpm"

/* Reasons (ec->reason). */
#define FJ_REASON_ENVELOPE "answer-envelope"
#define FJ_REASON_KID "answer-kid"
#define FJ_REASON_SIGNATURE "answer-signature"
#define FJ_REASON_BODY "answer-body"
#define FJ_REASON_CSR "answer-csr"
#define FJ_REASON_ATTESTOR "answer-attestor"
#define FJ_REASON_CHAIN "answer-chain"
#define FJ_REASON_LEAF_KEY "answer-leaf-key"
#define FJ_REASON_LEAF_ISSUER "answer-leaf-issuer"
#define FJ_REASON_NODE_ID "answer-node-id"
#define FJ_REASON_ROLE "answer-role"
#define FJ_REASON_TOKEN "token-malformed"
#define FJ_REASON_NO_SEAL_PUB "token-no-seal-pub"
#define FJ_REASON_X509POP_KEY "x509pop-key"
#define FJ_REASON_X509POP_NODE_ID "x509pop-node-id"
#define FJ_REASON_ASSERT_KEY "assert-key"

/* ---- pieces ------------------------------------------------------------- */

/* FJ1: a fresh P-256 key and its CSR (DER appended to csr). */
fleet_err fj_key_csr(EVP_PKEY **key, struct fleet_buf *csr, struct fleet_errctx *ec);

/* The pinned CA certificates: every certificate of a PEM file's bytes,
 * 1..FJ_MAX_PINNED of them. */
struct fj_pins {
	size_t n;
	X509 *certs[FJ_MAX_PINNED];
};
fleet_err fj_pins_from_pem(const uint8_t *pem, size_t len, struct fj_pins *out,
			   struct fleet_errctx *ec);
void fj_pins_free(struct fj_pins *p);

/* What an answer must be bound to (FJ2, FJ3). */
struct fj_expect {
	const struct fleet_wire_bytes *csr; /* the CSR sent */
	EVP_PKEY *key;                      /* its key */
	const char *attestor;               /* the request's ("" join-token) */
	const char *role;                   /* the role asked; NULL: any (a renewal) */
	bool answers_challenge;             /* FJ9: a challenge is the caller's to answer */
};

/* FJ2, FJ3: reply (the HTTP body) into *out; on a refusal *out is zeroed
 * and ec says why (its reason one of the FJ_REASON_ answer-* ones). On
 * FLEET_OK *signer (if not NULL) is the pinned certificate that signed the
 * answer (borrowed); NULL otherwise. */
fleet_err fj_answer_verify(const struct fj_pins *pins, const uint8_t *reply, size_t len,
			   const struct fj_expect *x, struct fleet_join_response *out,
			   X509 **signer, struct fleet_errctx *ec);

/* FJ4: the token file's bytes into the sealing to send (sealed: a wiping
 * buffer, fb_init_secret(sealed, >= FLEET_SEAL_MAX_SEALED)). spki may be
 * NULL (then an unsealed token is refused). */
fleet_err fj_token_from_text(const uint8_t *text, size_t len, const uint8_t *spki,
			     size_t spki_len, struct fleet_buf *sealed, struct fleet_errctx *ec);
/* The same from files: the token (a secret) and the SPKI (DER or PEM;
 * seal_pub may be NULL). */
fleet_err fj_token_read(const char *token_path, const char *seal_pub_path,
			struct fleet_buf *sealed, struct fleet_errctx *ec);
/* --seal-pub: SPKI DER (as is) or a PEM PUBLIC KEY block (as DER). */
fleet_err fj_seal_pub_read(const char *path, struct fleet_buf *spki, struct fleet_errctx *ec);

/* Files. A private key (PEM, a secret: mode 0600 or stricter); a chain
 * (PEM certificates, 1..FLEET_JOIN_MAX_CHAIN, the leaf first). */
fleet_err fj_key_read(const char *path, EVP_PKEY **out, struct fleet_errctx *ec);
fleet_err fj_chain_read(const char *path, struct fj_pins *out, struct fleet_errctx *ec);

/* FJ10: a key as every command reads it. Software: pkey the private key.
 * TPM-held: in_tpm, gen, and (after fj_key_attach) tpm and pkey the
 * public half the TPM derives. */
struct fj_key {
	EVP_PKEY *pkey;
	bool in_tpm;
	unsigned gen;
	struct tink_tpm *tpm; /* borrowed */
};
/* Either form from a file (a secret: mode 0600 or stricter). */
fleet_err fj_key_load(const char *path, struct fj_key *out, struct fleet_errctx *ec);
/* A TPM-held key's public half from its TPM (t stays the caller's). */
fleet_err fj_key_attach(struct fj_key *k, struct tink_tpm *t, struct fleet_errctx *ec);
/* ES256 (r || s) over msg by the key, wherever it is. */
fleet_err fj_key_sign(const struct fj_key *k, const uint8_t *msg, size_t len,
		      uint8_t sig[FLEET_ES256_SIG_LEN], struct fleet_errctx *ec);
void fj_key_free(struct fj_key *k);
/* FJ10: the record of generation gen as its PEM block, appended to pem. */
fleet_err fj_tpm_key_record(unsigned gen, struct fleet_buf *pem);

/* FJ9: round 1's attestation from TPM t, appended to att; *ek (freed with
 * tink_ek_free) is the EK sent, for round 2. */
fleet_err fj_tpm_round1(struct tink_tpm *t, struct tink_ek *ek, struct fleet_buf *att,
			struct fleet_errctx *ec);
/* FJ9: the answer to the challenge payload for csr made with node key
 * generation gen, as round 2's attestation in att (reset first: a wiping
 * buffer, since it holds the secret). event_log may be NULL. */
fleet_err fj_tpm_round2(struct tink_tpm *t, const struct tink_ek *ek, unsigned gen,
			const struct fleet_wire_bytes *payload, const struct fleet_wire_bytes *csr,
			const struct fleet_buf *event_log, struct fleet_buf *att,
			struct fleet_errctx *ec);
/* FJ11: the AK's certification of node key generation gen over
 * SHA-256(csr), *out owning its bytes (fleet_tpm_key_attestation_free). */
fleet_err fj_tpm_key_attestation(struct tink_tpm *t, unsigned gen,
				 const struct fleet_wire_bytes *csr,
				 struct fleet_tpm_key_attestation *out, struct fleet_errctx *ec);
/* FJ11: the leaf's "urn:bc:tpm-ak:" statement: *found and the AK's name, or
 * FLEET_E_MALFORMED for one that cannot be an AK's name (or two). */
fleet_err fj_leaf_ak_statement(X509 *leaf, bool *found, uint8_t *name, size_t cap,
			       size_t *name_len, struct fleet_errctx *ec);

/* FJ5: the x509pop evidence, appended to out. */
fleet_err fj_x509pop_build(EVP_PKEY *key, const struct fj_pins *chain, const char *node_id,
			   const struct fleet_wire_bytes *csr, int64_t client_time_ms,
			   struct fleet_buf *out, struct fleet_errctx *ec);

/* The same with either form of key (FJ10). */
fleet_err fj_x509pop_build_key(const struct fj_key *key, const struct fj_pins *chain,
			       const char *node_id, const struct fleet_wire_bytes *csr,
			       int64_t client_time_ms, struct fleet_buf *out,
			       struct fleet_errctx *ec);

/* FJ6: the signed assertion, appended to out. */
fleet_err fj_assert_build(EVP_PKEY *key, X509 *cert, const struct fleet_discovery_assertion *a,
			  struct fleet_buf *out, struct fleet_errctx *ec);
/* The same with either form of key (FJ10). */
fleet_err fj_assert_build_key(const struct fj_key *key, X509 *cert,
			      const struct fleet_discovery_assertion *a, struct fleet_buf *out,
			      struct fleet_errctx *ec);

/* FJ7: KEY, then CHAIN (the joined answer's). */
fleet_err fj_write_identity(const char *key_path, const char *chain_path, EVP_PKEY *key,
			    const struct fleet_join_response *r, struct fleet_errctx *ec);
/* FJ7 and FJ10: the same for either form of key (a TPM-held key's record). */
fleet_err fj_write_identity_key(const char *key_path, const char *chain_path,
				const struct fj_key *key, const struct fleet_join_response *r,
				struct fleet_errctx *ec);

/* ---- runs --------------------------------------------------------------- */

/* The time and the waiting (the tests' own; NULL members: the real ones). */
struct fj_clock {
	double (*now)(void *ctx); /* seconds, monotonic */
	void (*sleep)(void *ctx, unsigned seconds);
	void *ctx;
};

struct fj_join_opts {
	const char *attestor;      /* "" or NULL: join-token */
	enum fleet_join_role role; /* 0: node */
	const char *token_file;    /* NULL: no token */
	const char *seal_pub;      /* NULL: no key to seal an unsealed token to */
	size_t n_macs;
	const char *macs[FLEET_JOIN_MAX_MACS];
	const char *product_uuid;
	const char *x509pop_cert, *x509pop_key, *node_id; /* attestor x509pop */
	const char *discovery_file;                      /* attestor discovery */
	unsigned max_wait;                               /* seconds */
	const char *key_out, *cert_out;
	/* attestor tpm (FJ9): the TPM (a TCTI string, as tpm2-tools takes
	 * it), the node key's generation, and a TCG event log to send. */
	const char *tcti;
	unsigned key_gen;
	const char *event_log;
	/* NULL, or a file (0600: the request holds the sealed token) that
	 * gets the request's bytes exactly as sent: what an operator sends
	 * again with curl to see how fleetd answers a replay. */
	const char *dump_request;
};

struct fj_renew_opts {
	const char *key, *cert; /* read, then replaced */
	const char *tcti;       /* the TPM of a TPM-held key, or of the AK (FJ11) */
	unsigned max_wait;
};

struct fj_result {
	char node_id[FLEET_JOIN_MAX_ID + 1]; /* FJ_EXIT_OK */
	char message[600];                   /* what happened, one line */
};

/* FJ10: a TPM-held k's TPM opened at tcti (*t_open then; close t) and its
 * public half derived; a software k needs nothing. An exit code. */
int fj_key_open(struct fj_key *k, const char *tcti, struct tink_tpm *t, bool *t_open,
		struct fj_result *res);

/* One join (or renewal): the exit code, res says what happened. */
int fj_join(const struct fj_join_opts *o, const struct fj_pins *pins,
	    const struct tink_transport *tx, const struct fj_clock *clk, struct fj_result *res);
int fj_renew(const struct fj_renew_opts *o, const struct fj_pins *pins,
	     const struct tink_transport *tx, const struct fj_clock *clk, struct fj_result *res);

#endif
