/*
 * fleet_err.h: the one error space of the whole tree.
 *
 * Every function in lib/, policy/, fleetd/, fleetctl/, tink-attest/ and
 * the applier that can fail returns a fleet_err. Like tpm2-tss's TSS2_RC,
 * a fleet_err is a 32-bit value in two fields:
 *
 *     bits 16..23  the layer that produced it (FLEET_LAYER_*): the store,
 *                  the inventory, the SPIRE handoff, the Kubernetes client,
 *                  libfleet ...
 *     bits  0..15  the code (FLEET_CODE_*): what kind of failure
 *
 * FLEET_OK is 0 in every layer. A layer passes on what a lower layer
 * returned unchanged, so a caller three layers up still sees where the
 * failure began: the SPIRE pass returns the store's "busy" as a store
 * error, not as a SPIRE one. Compare whole values against a layer's
 * constants (FLEET_STORE_E_BUSY), or ask fleet_err_code() for the kind
 * whatever the layer.
 *
 * Codes have one stable string each (fleet_err_str): lowercase and
 * hyphenated, the same in every layer; operators grep for them and tests
 * assert them. docs/errors.md lists them.
 *
 * Failures and decisions. A fleet_err says a function could not do its
 * work, or that the input it was given is not what it claims to be. A
 * refusal of evidence (a signature that does not verify, a digest that does
 * not match) is a decision, not a failure: the evidence rounds
 * (fleetd/attest/attest_server.h) return it as a struct fleet_decision
 * whose outcome is PASSED, REFUSED with a stable reason string, or FAILED
 * with a fleet_err. Inside libfleet a refusal still travels as
 * FLEET_E_VERIFY beside its reason string, so that every `if (e) return e;`
 * stays fail-closed: a refusal can never be mistaken for success by a
 * caller that only propagates.
 *
 * The context. What went wrong in words goes in one struct fleet_errctx,
 * whatever the layer: a detail sentence, the byte offset into an untrusted
 * input, the errno of a failed system call, and the reason OpenSSL's error
 * queue held. Nothing in a context is input bytes other than numbers, or
 * input that went through fleet_sanitize (lib/sanitize.h), so it is safe
 * to log.
 */
#ifndef FLEET_ERR_H
#define FLEET_ERR_H

#include <stddef.h>
#include <stdint.h>

typedef uint32_t fleet_err;

#define FLEET_ERR_LAYER_SHIFT 16
#define FLEET_ERR_LAYER_MASK 0x00ff0000u
#define FLEET_ERR_CODE_MASK 0x0000ffffu

/* The layers, one per component that defines failures of its own. */
enum fleet_layer {
	FLEET_LAYER_NONE = 0,  /* FLEET_OK only */
	FLEET_LAYER_LIB,       /* libfleet: parsers, TPM, X.509, CA, files */
	FLEET_LAYER_STORE,     /* fleetd/store: SQLite */
	FLEET_LAYER_INVENTORY, /* fleetd/inventory: NetBox, the nodes file */
	FLEET_LAYER_SPIRE,     /* fleetd/spire: spire-nodes.json */
	FLEET_LAYER_KUBE,      /* fleetd/kube: the Kubernetes API client */
	FLEET_LAYER__COUNT
};

/* The codes, shared by every layer. */
enum fleet_code {
	FLEET_CODE_OK = 0,
	FLEET_CODE_TRUNCATED,   /* "truncated": the input ended before a field did */
	FLEET_CODE_MALFORMED,   /* "malformed": a field holds a value that cannot be */
	FLEET_CODE_TOO_LARGE,   /* "too-large": a length or count is beyond its cap */
	FLEET_CODE_UNSUPPORTED, /* "unsupported": well formed, of a kind not handled */
	FLEET_CODE_VERIFY,      /* "verify-failed": evidence refused, see its reason */
	FLEET_CODE_NOMEM,       /* "out-of-memory" */
	FLEET_CODE_CRYPTO,      /* "crypto-error": the crypto library failed on valid input */
	FLEET_CODE_IO,          /* "io-error": a system call or the database's file failed */
	FLEET_CODE_INVALID_ARG, /* "invalid-argument": a caller's value was refused */
	FLEET_CODE_NOT_FOUND,   /* "not-found" */
	FLEET_CODE_CONFLICT,    /* "conflict": would contradict what is held */
	FLEET_CODE_EK_MISMATCH, /* "ek-mismatch": the EKs differ from the ones held */
	FLEET_CODE_FULL,        /* "full": a cap on rows was reached */
	FLEET_CODE_BUSY,        /* "busy": locked by another writer past the timeout */
	FLEET_CODE_READONLY,    /* "read-only": a write through a read-only handle */
	FLEET_CODE_UNSAFE,      /* "unsafe-permissions": a file or directory open to others */
	FLEET_CODE_SCHEMA,      /* "schema-version": a version this program does not read */
	FLEET_CODE_CORRUPT,     /* "corrupt": stored state that cannot be */
	FLEET_CODE_AMBIGUOUS,   /* "ambiguous": more than one answer where one is required */
	FLEET_CODE_UNAVAILABLE, /* "unavailable": a service did not answer, or refused us */
	FLEET_CODE_STATE,       /* "bad-state": the state forbids it (a spent serial) */
	FLEET_CODE_EXISTS,      /* "already-exists": a create of what is already there */
	FLEET_CODE_AUTH,        /* "unauthorized": a service refused our credentials (401, 403) */
	FLEET_CODE__COUNT
};

#define FLEET_ERR(layer, code) \
	((fleet_err)(((uint32_t)(layer) << FLEET_ERR_LAYER_SHIFT) | (uint32_t)(code)))

static inline enum fleet_code fleet_err_code(fleet_err e)
{
	return (enum fleet_code)(e & FLEET_ERR_CODE_MASK);
}

static inline enum fleet_layer fleet_err_layer(fleet_err e)
{
	return (enum fleet_layer)((e & FLEET_ERR_LAYER_MASK) >> FLEET_ERR_LAYER_SHIFT);
}

/* libfleet's constants. */
enum {
	FLEET_OK = 0,
	FLEET_E_TRUNCATED = FLEET_ERR(FLEET_LAYER_LIB, FLEET_CODE_TRUNCATED),
	FLEET_E_MALFORMED = FLEET_ERR(FLEET_LAYER_LIB, FLEET_CODE_MALFORMED),
	FLEET_E_TOO_LARGE = FLEET_ERR(FLEET_LAYER_LIB, FLEET_CODE_TOO_LARGE),
	FLEET_E_UNSUPPORTED = FLEET_ERR(FLEET_LAYER_LIB, FLEET_CODE_UNSUPPORTED),
	FLEET_E_VERIFY = FLEET_ERR(FLEET_LAYER_LIB, FLEET_CODE_VERIFY),
	FLEET_E_NOMEM = FLEET_ERR(FLEET_LAYER_LIB, FLEET_CODE_NOMEM),
	FLEET_E_CRYPTO = FLEET_ERR(FLEET_LAYER_LIB, FLEET_CODE_CRYPTO),
	FLEET_E_IO = FLEET_ERR(FLEET_LAYER_LIB, FLEET_CODE_IO),
	FLEET_E_INVALID_ARG = FLEET_ERR(FLEET_LAYER_LIB, FLEET_CODE_INVALID_ARG),
	FLEET_E_NOT_FOUND = FLEET_ERR(FLEET_LAYER_LIB, FLEET_CODE_NOT_FOUND),
	FLEET_E_UNSAFE = FLEET_ERR(FLEET_LAYER_LIB, FLEET_CODE_UNSAFE),
	FLEET_E_UNAVAILABLE = FLEET_ERR(FLEET_LAYER_LIB, FLEET_CODE_UNAVAILABLE),
};

/* The code's stable string, whatever the layer: "truncated", "busy", ...;
 * "unknown-error" for a value no layer defines. */
const char *fleet_err_str(fleet_err e);
/* The layer's name: "lib", "store", "inventory", "spire", "kube"; "" for FLEET_OK;
 * "unknown" for a layer not defined. */
const char *fleet_err_layer_str(fleet_err e);
/* Whether e is one this tree defines (a known layer and code). */
int fleet_err_valid(fleet_err e);

/*
 * Whether e blames the input: it is truncated, malformed, too large, of a
 * kind not handled, evidence that did not verify, or EKs other than the
 * ones held. Every other failure
 * (out of memory, the crypto library, I/O, a caller's mistake, a busy or
 * unavailable service) is this side's trouble, and says nothing about the
 * input.
 */
int fleet_err_blames_input(fleet_err e);

/* ---- decisions ------------------------------------------------------------
 *
 * What a judging function returns: it judged and the evidence passed; it
 * judged and refused it, for a stable reason; or it could not judge. The
 * three are told apart by outcome, never by which error code came back,
 * and 0 is none of them, so a decision never made (a zeroed struct) is not
 * a pass. A caller switches on outcome (-Wswitch-enum names a case it
 * forgets); only FLEET_PASSED may go on.
 */
enum fleet_outcome {
	FLEET_PASSED = 1,
	FLEET_REFUSED, /* reason: the rule; err: the kind (verify-failed, malformed, ...) */
	FLEET_FAILED,  /* err: why nothing was judged (out-of-memory, crypto-error, ...) */
};

struct fleet_decision {
	enum fleet_outcome outcome;
	const char *reason; /* FLEET_REFUSED: a stable reason string; else NULL */
	fleet_err err;      /* FLEET_PASSED: FLEET_OK */
};

/*
 * The decision of a judging function written in libfleet's style (e plus a
 * reason the failing check set): FLEET_OK is a pass; an error that blames
 * the input is a refusal, for the reason given, or for the code's string
 * when no check named one; any other error is a failure, even when a
 * reason was set on the way (an out-of-memory after a check has begun is
 * this side's trouble, not the machine's).
 */
struct fleet_decision fleet_decide(fleet_err e, const char *reason);

/* Inside a judging function: name the rule and return its kind,
 *     return fleet_refuse(reason, "proof-invalid", FLEET_E_VERIFY); */
static inline fleet_err fleet_refuse(const char **reason, const char *rule, fleet_err e)
{
	*reason = rule;
	return e;
}

/*
 * Where and why something failed. offset is the byte offset into the
 * outermost input (readers carry their origin, so nested structures report
 * absolute offsets). detail is a short human sentence. sys_errno is the
 * errno of the system call that failed, 0 for none. ossl is the reason
 * OpenSSL's error queue held when the failure was recorded ("" for none):
 * its library, function and reason strings, and how many more entries the
 * queue had. err is the value the setter returned. reason is a stable
 * reason string (a static string, never input) where the failure is a
 * refusal with one: "group-readable", "symlink", "ek-mismatch"; NULL when
 * there is none. The setters leave it NULL; set it after them.
 */
struct fleet_errctx {
	fleet_err err;
	const char *reason;
	int has_offset;
	size_t offset;
	/* Where in a text input (YAML, JSON): 1-based, 0 for none. Set
	 * after a setter, as reason is; the setters clear them. */
	unsigned line, column;
	int sys_errno;
	/* 512: a sentence with a path in it, or with the words of a NetBox
	 * error body (fleetd/inventory/netbox.c keeps up to 400 of them). */
	char detail[512];
	char ossl[160];
};

/* Set ctx (if not NULL) and return e, so callers can write
 *     return fleet_errctx_set(ec, e, off, "event size %u past end", n); */
fleet_err fleet_errctx_set(struct fleet_errctx *ec, fleet_err e, size_t offset,
			   const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* The same without an offset. */
fleet_err fleet_errctx_msg(struct fleet_errctx *ec, fleet_err e, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The same, naming a refusal's stable reason (a static string) in
 * ec->reason:
 *     return fleet_errctx_refuse(ec, FLEET_E_MALFORMED, "no-digest", "class %s ...", n); */
fleet_err fleet_errctx_refuse(struct fleet_errctx *ec, fleet_err e, const char *reason,
			      const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* The same, recording errnum (an errno value) beside the sentence. */
fleet_err fleet_errctx_errno(struct fleet_errctx *ec, fleet_err e, int errnum,
			     const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/*
 * The same, recording the first entry of OpenSSL's error queue for this
 * thread, and emptying the queue: an entry left there would be reported
 * against a later, unrelated failure, and the queue grows for as long as
 * the thread lives. Call it where an OpenSSL call failed.
 */
fleet_err fleet_errctx_openssl(struct fleet_errctx *ec, fleet_err e, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/*
 * Say more about a failure a lower layer recorded in ec, passing on e: the
 * detail becomes before + detail + after (either may be NULL), err becomes
 * e, and everything else ec holds (reason, offset, errno, OpenSSL reason)
 * stays, so a caller tells where the failure was without losing what it was:
 *     if ((e = fleet_file_read(dfd, name, &policy, &b, ec)) != FLEET_OK)
 *             return fleet_errctx_wrap(ec, e, "cannot read ", NULL);
 */
fleet_err fleet_errctx_wrap(struct fleet_errctx *ec, fleet_err e, const char *before,
			    const char *after);
/*
 * Empty this thread's OpenSSL error queue, returning the first entry's
 * reason in out (which may be NULL). A refusal of evidence calls it: an
 * OpenSSL verify that says "no" leaves entries behind it.
 */
void fleet_openssl_drain(char *out, size_t outlen);

/* "malformed at byte 1234: event size 99999 past end of log" (or "at line
 * 3, column 5" for a text input), with
 * ": <strerror>" for an errno and " (openssl: <reason>)" when they are
 * set. The code's string comes from e, not ec->err, so a caller that
 * passes a different error on with the same context is told the truth. */
void fleet_errctx_format(const struct fleet_errctx *ec, fleet_err e, char *out, size_t outlen);
/* The context's detail with errno and OpenSSL reason, without the code:
 * "event size 99999 past end of log: No such file or directory". */
const char *fleet_errctx_text(const struct fleet_errctx *ec, char *out, size_t outlen);

#endif
