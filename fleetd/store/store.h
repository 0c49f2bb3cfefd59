/*
 * store.h: fleetd's own state, in SQLite (WAL) under the state directory
 * (default /var/lib/fleetd/fleetd.db). docs/store.md describes the tables
 * and the decisions behind them.
 *
 * The store is the authority for re-admission: a device past planned that
 * boots HookOS again is held to the EK hashes recorded here when fleetd
 * first proved them; nothing the inventory says stands in for them.
 *
 * Every statement is prepared with bound parameters; no SQL is built from
 * strings. Every value going in is checked here (lengths, printable ASCII,
 * lowercase hex) as well as by the schema's CHECK constraints, and every
 * value coming out is copied into fixed-size fields with its length checked,
 * so a damaged database is reported as corrupt rather than overrun.
 *
 * Open sessions are not stored: they hold challenge secrets that must
 * never reach disk, and a restart only makes a machine start intake again.
 *
 * Threads. A handle owns its concurrency: any number of threads may call
 * any function on one handle at once, with no lock of their own. Each call
 * holds the handle's mutex for all of its work, so each is one
 * transaction that no other thread's statement on the connection can
 * enter, and its failure's sentence is kept per thread
 * (fleet_store_errmsg), so no other call can overwrite it. Calls on one
 * handle run one after another; for calls that should not wait on each
 * other, open another handle: separate handles, in this process or
 * another, run at once (WAL: one writer at a time, readers never blocked
 * and never blocking). The daemon gives the admission one read-write
 * handle and the pass its own read-only one. fleet_store_close ends the
 * handle: no other thread may be using it then. docs/store.md, "Threads
 * and handles".
 */
#ifndef FLEETD_STORE_H
#define FLEETD_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "lib/buf.h"
#include "lib/fleet_err.h"

/* The store's failures, in the one error space (lib/fleet_err.h): layer
 * FLEET_LAYER_STORE; fleet_err_str gives each code's stable string. */
#define FLEET_STORE_ERR(code) FLEET_ERR(FLEET_LAYER_STORE, FLEET_CODE_##code)
enum {
	FLEET_STORE_OK = FLEET_OK,
	FLEET_STORE_E_NOT_FOUND = FLEET_STORE_ERR(NOT_FOUND),     /* no such device, or no store at that path */
	FLEET_STORE_E_CONFLICT = FLEET_STORE_ERR(CONFLICT),       /* would contradict what the store holds */
	FLEET_STORE_E_EK_MISMATCH = FLEET_STORE_ERR(EK_MISMATCH), /* the EKs differ from the ones the store holds */
	FLEET_STORE_E_FULL = FLEET_STORE_ERR(FULL),               /* a cap on rows was reached */
	FLEET_STORE_E_INVALID = FLEET_STORE_ERR(INVALID_ARG),     /* a caller's value was refused */
	FLEET_STORE_E_BUSY = FLEET_STORE_ERR(BUSY),               /* locked by another writer past the timeout */
	FLEET_STORE_E_READONLY = FLEET_STORE_ERR(READONLY),       /* a write on a read-only handle */
	FLEET_STORE_E_UNSAFE = FLEET_STORE_ERR(UNSAFE),           /* the directory or file is open to others */
	FLEET_STORE_E_SCHEMA = FLEET_STORE_ERR(SCHEMA),           /* a schema version this program does not read */
	FLEET_STORE_E_CORRUPT = FLEET_STORE_ERR(CORRUPT),         /* the database holds what it cannot */
	FLEET_STORE_E_IO = FLEET_STORE_ERR(IO),                   /* SQLite or the file system failed */
	FLEET_STORE_E_NOMEM = FLEET_STORE_ERR(NOMEM),
	FLEET_STORE_E_STATE = FLEET_STORE_ERR(STATE),             /* the row's state forbids it (a burned code) */
};

/* The current schema version (the migrations table's highest). */
#define FLEET_STORE_SCHEMA_VERSION 9
#define FLEET_STORE_FILE "fleetd.db"

/* Caps on what goes in. */
#define FLEET_STORE_NAME_MAX 127     /* device name, serial */
#define FLEET_STORE_REASON_MAX 64    /* one verdict reason, one quarantine word */
#define FLEET_STORE_QREASON_MAX 255  /* a quarantine reason */
#define FLEET_STORE_MAX_REASONS 16   /* reasons per verdict */
#define FLEET_STORE_SESSION_MAX 64   /* hex digits of a session id */
#define FLEET_STORE_CERT_MAX 16384   /* DER bytes of one certificate */
#define FLEET_STORE_MAX_CLAIMS 10000 /* pending claims kept */
#define FLEET_STORE_CLAIM_EKS 16     /* distinct EK pairs kept per claim */
#define FLEET_STORE_CLAIMS_PER_EK 4  /* serials one EK pair may claim */
#define FLEET_STORE_LIST_MAX 10000   /* rows one list call returns */
#define FLEET_STORE_MAX_DEVICES 1000000 /* devices fleet_store_devices_list returns */
#define FLEET_STORE_MAX_BINDING_AUTHORS 100000 /* binding author records kept */

struct fleet_store;

enum fleet_store_mode {
	FLEET_STORE_RW,       /* the daemon: creates the file, migrates */
	FLEET_STORE_READONLY, /* fleetctl: SQLITE_OPEN_READONLY, query_only */
	/* fleetctl's few writes (quarantine lift), run as root beside the
	 * daemon: the existing file read-write, never created and never
	 * migrated (the schema must be exactly this program's version, as
	 * for READONLY). The directory must not be group- or world-writable
	 * and the file must be a regular file owned by the directory's owner
	 * (the daemon's user), mode 0600 or stricter; the caller must be root
	 * or that owner (UNSAFE otherwise). SQLite, run as root, gives the
	 * -wal and -shm files it creates the database file's owner, so the
	 * daemon can still open them. */
	FLEET_STORE_OPERATOR,
};

/* Open (or, RW, create) state_dir/fleetd.db. RW requires state_dir to be
 * owned by this user and not group- or world-writable, creates it 0700 when
 * missing, creates the database 0600 and refuses one readable or writable
 * by others. ec (may be NULL) gets the failure: a sentence, and the errno
 * of a system call that failed. */
fleet_err fleet_store_open(const char *state_dir, enum fleet_store_mode mode,
			   struct fleet_store **out, struct fleet_errctx *ec);
void fleet_store_close(struct fleet_store *st);
/* A location naming a PostgreSQL server (postgres://, postgresql://: a
 * libpq URI) rather than a state directory: fleet_store_open then opens
 * the store there (docs/store.md, "Several replicas"), with the same
 * schema, migrations and contracts as the SQLite file. */
bool fleet_store_location_is_postgres(const char *location);
/* The store is one several replicas may share (PostgreSQL). */
bool fleet_store_is_shared(const struct fleet_store *st);

/* P1: the pass lock, so that one replica at a time runs the pass. Never
 * waits: *held says whether this handle holds it now (it may already). It
 * is released by fleet_store_pass_unlock, by closing the handle, and by
 * the holder's death (the kernel's flock on SQLite, the server's session
 * end on PostgreSQL), so a replica killed mid-pass never keeps the others
 * from theirs. */
fleet_err fleet_store_pass_lock(struct fleet_store *st, bool *held);
void fleet_store_pass_unlock(struct fleet_store *st);
/* The sentence for the calling thread's last failed call on st ("" if
 * none): the failing call wrote it to this thread's own storage, under the
 * handle's mutex, so other threads' calls on st cannot change it. Read it
 * right after the call; this thread's next failed store call replaces it. */
const char *fleet_store_errmsg(const struct fleet_store *st);
/* The same failure as a context: ec (may be NULL) gets the calling
 * thread's last failure on st (its sentence and errno; nothing when there
 * is none) with err set to e, which is returned:
 *     if ((se = fleet_store_binding_author_record(st, r)) != FLEET_STORE_OK)
 *             return fleet_store_errctx(st, se, ec); */
fleet_err fleet_store_errctx(const struct fleet_store *st, fleet_err e, struct fleet_errctx *ec);

/* A consistent view across several reads: from begin to end every call on
 * st reads one state of the store (one read transaction), and other
 * threads' calls on st wait; other handles' writers do not (WAL). Writes
 * on st inside it are refused (INVALID). Calls on st between the two must
 * come from the thread that began it, and it must end it. For what is
 * judged from many reads at once: spire-nodes.json, fleetctl device show. */
fleet_err fleet_store_snapshot_begin(struct fleet_store *st);
void fleet_store_snapshot_end(struct fleet_store *st);

/* Device life in fleetd's eyes (NetBox's status is the inventory's). */
#define FLEET_STORE_STATE_ADMITTED "admitted"         /* passed; identity issued */
#define FLEET_STORE_STATE_PROVISIONING "provisioning" /* a Workflow runs */
#define FLEET_STORE_STATE_ACTIVE "active"             /* configuration delivered */
#define FLEET_STORE_STATE_RETIRED "retired"           /* gone from the fleet */

struct fleet_store_device {
	int64_t id;
	char name[FLEET_STORE_NAME_MAX + 1];
	char serial[FLEET_STORE_NAME_MAX + 1];
	int64_t inventory_id; /* 0: not recorded */
	char state[16];
	char ek_hash[65];     /* "" when the device has no RSA EK */
	char ek_hash_ecc[65]; /* "" when the device has no ECC EK */
	int64_t first_admitted;
	int64_t last_seen;
	bool quarantined;
	char quarantine_reason[FLEET_STORE_QREASON_MAX + 1];
	int64_t quarantined_at; /* 0 when not quarantined */
};

/* Record a proven admission (both EK hashes proven by credential
 * activation; "" or NULL for an EK the device lacks, not both). A new
 * device is inserted "admitted"; a known serial must carry the same EK
 * hashes (FLEET_STORE_E_EK_MISMATCH otherwise: the store never rebinds)
 * and the same name (CONFLICT); its last_seen is updated, and its inventory
 * id when one is given (0 keeps the recorded one).
 * The serial's pending claim, if any, is removed in the same transaction. */
fleet_err fleet_store_device_record_admission(struct fleet_store *st, const char *name,
							 const char *serial, int64_t inventory_id,
							 const char *ek_hash,
							 const char *ek_hash_ecc, time_t now);

fleet_err fleet_store_device_get_by_serial(struct fleet_store *st, const char *serial,
						      struct fleet_store_device *out);
fleet_err fleet_store_device_get_by_name(struct fleet_store *st, const char *name,
						    struct fleet_store_device *out);

/* The EK hashes fleetd proved earlier for serial: the authority for
 * re-admission. NOT_FOUND when the store has no such device. */
fleet_err fleet_store_device_ek_hashes(struct fleet_store *st, const char *serial,
						  char ek_hash[65], char ek_hash_ecc[65]);

/* Re-admission, a decision (lib/fleet_err.h): FLEET_PASSED when the
 * presented hashes equal the stored ones exactly (an EK the store holds
 * must be presented; an EK it does not hold must not be); FLEET_REFUSED
 * "ek-mismatch" (err EK_MISMATCH) when not, "ek-not-recorded" (err
 * NOT_FOUND) for a serial the store never admitted; FLEET_FAILED with err
 * (and fleet_store_errmsg) when the store could not say. */
struct fleet_decision fleet_store_device_check_eks(struct fleet_store *st, const char *serial,
						   const char *ek_hash, const char *ek_hash_ecc)
	__attribute__((warn_unused_result));

fleet_err fleet_store_device_set_state(struct fleet_store *st, const char *name,
						  const char *state);
fleet_err fleet_store_device_touch(struct fleet_store *st, const char *name,
					      time_t now);
/* on: reason required (1..255 printable); off: reason ignored, cleared. */
fleet_err fleet_store_device_set_quarantine(struct fleet_store *st, const char *name,
						       bool on, const char *reason, time_t now);
/* The owner's lift (fleetctl quarantine lift), in one transaction:
 * NOT_FOUND when there is no device by that name, STATE when it is not
 * quarantined (nothing is written then); else the quarantine is cleared
 * and the one it replaced goes out: prev_reason (FLEET_STORE_QREASON_MAX +
 * 1 bytes, may be NULL) and *prev_at (may be NULL). Who lifted it and why
 * are the journal's (FLEET_EVENT=quarantine-lifted), not the store's. The
 * lift makes nothing eligible by itself: the device's last verdict is still
 * the failed one, and SPIRE eligibility needs a passing one (the next
 * passing check). */
fleet_err fleet_store_device_lift_quarantine(struct fleet_store *st, const char *name,
					     char *prev_reason, int64_t *prev_at);
/* All devices by name, in one statement (one snapshot); *out malloc'd.
 * Never only some of them: more than FLEET_STORE_MAX_DEVICES (far past any
 * fleet fleetd serves; about 0.7 GB of rows) is FULL. */
fleet_err fleet_store_devices_list(struct fleet_store *st,
					      struct fleet_store_device **out, size_t *n);

/*
 * The devices as the SPIRE pass judges them, compact: every device by name,
 * as fleet_store_devices_list lists them (the same statement's order, cap
 * and checks), with only the fields a judgement reads and the two strings
 * in one arena: about 200 bytes a device instead of that list's 712 (34 MiB
 * at 50,000). Inside a snapshot, one state with the other reads.
 */
struct fleet_store_device_brief {
	int64_t id;
	int64_t inventory_id; /* 0: not recorded */
	const char *name;     /* in the list's arena */
	const char *serial;   /* in the list's arena */
	char state[16];
	bool quarantined;
	char ek_hash[65];     /* "" when the device has no RSA EK */
	char ek_hash_ecc[65]; /* "" when the device has no ECC EK */
};
struct fleet_store_device_briefs {
	struct fleet_store_device_brief *v; /* by name */
	size_t n;
	char *arena; /* the strings, each NUL-terminated */
};
/* *out zeroed first; on failure it holds nothing. */
fleet_err fleet_store_devices_brief(struct fleet_store *st, struct fleet_store_device_briefs *out);
void fleet_store_device_briefs_free(struct fleet_store_device_briefs *l);

/* Pending claims: an unknown serial or a device without a binding. */
#define FLEET_STORE_CLAIM_UNKNOWN_SERIAL "unknown-serial"
#define FLEET_STORE_CLAIM_NO_BINDING "no-binding"

struct fleet_store_claim_ek {
	char ek_hash[65];
	char ek_hash_ecc[65];
	int64_t first_seen, last_seen, count;
};

struct fleet_store_claim {
	char serial[FLEET_STORE_NAME_MAX + 1];
	char reason[16];
	int64_t first_seen, last_seen, count;
	bool eks_dropped; /* more distinct EK pairs came than are kept */
	size_t n_eks;
	struct fleet_store_claim_ek eks[FLEET_STORE_CLAIM_EKS];
};

/* Create or count a claim; the reason is the latest one. The EK pair is
 * recorded (up to FLEET_STORE_CLAIM_EKS distinct pairs per serial; past
 * that the claim says some were dropped). A new serial past
 * FLEET_STORE_MAX_CLAIMS, or for an EK pair that already claims
 * FLEET_STORE_CLAIMS_PER_EK serials, is FULL. Claims grant nothing. */
fleet_err fleet_store_claim_upsert(struct fleet_store *st, const char *serial,
					      const char *reason, const char *ek_hash,
					      const char *ek_hash_ecc, time_t now);
/* Newest first; *out malloc'd. */
fleet_err fleet_store_claims_list(struct fleet_store *st,
					     struct fleet_store_claim **out, size_t *n);

struct fleet_store_verdict_in {
	time_t time;
	const char *device; /* the inventory's name; NULL/"" when none */
	const char *serial;
	const char *session; /* lowercase hex */
	bool pass;
	const char *const *reasons; /* each 1..64 printable ASCII */
	size_t n_reasons;           /* at most FLEET_STORE_MAX_REASONS */
	const char *ek_hash, *ek_hash_ecc; /* "" or NULL when not proven */
};

struct fleet_store_verdict {
	int64_t id;
	int64_t time;
	char device[FLEET_STORE_NAME_MAX + 1]; /* "" when none */
	char serial[FLEET_STORE_NAME_MAX + 1];
	char session[FLEET_STORE_SESSION_MAX + 1];
	bool pass;
	size_t n_reasons;
	char reasons[FLEET_STORE_MAX_REASONS][FLEET_STORE_REASON_MAX + 1];
	char ek_hash[65];
	char ek_hash_ecc[65];
};

/* A pass must carry no reasons; a fail at least one. */
fleet_err fleet_store_verdict_insert(struct fleet_store *st,
						const struct fleet_store_verdict_in *v,
						int64_t *id_out);
/* Newest first; device NULL for all; limit 1..FLEET_STORE_LIST_MAX. */
fleet_err fleet_store_verdicts_list(struct fleet_store *st, const char *device,
					       size_t limit, struct fleet_store_verdict **out,
					       size_t *n);

/*
 * Every device's latest verdict in one statement (the per-device
 * fleet_store_verdicts_list(st, name, 1) for all devices at once: 50,000
 * statements prepared and run become one). One row per device that has a
 * verdict, by device id ascending; a device with none has no row. Each row
 * is that call's first verdict: the highest verdict id under the device's
 * name. Inside a snapshot, one state with the other reads. *out malloc'd
 * (NULL when none).
 */
struct fleet_store_latest_verdict {
	int64_t device_id;
	int64_t id; /* the verdict's */
	int64_t time;
	bool pass;
};
fleet_err fleet_store_latest_verdicts(struct fleet_store *st,
				      struct fleet_store_latest_verdict **out, size_t *n);

#define FLEET_STORE_CERT_LAK "lak"
#define FLEET_STORE_CERT_LDEVID "ldevid"

struct fleet_store_cert {
	char device[FLEET_STORE_NAME_MAX + 1];
	char kind[8];
	char sha1[41]; /* lowercase hex SHA-1 of the DER */
	int64_t not_after;
	int64_t issued_at;
	bool revoked;
	int64_t revoked_at;
	uint8_t *der;
	size_t der_len;
};

/* Record a certificate issued to a known device. The store parses the DER
 * itself and takes notAfter and the SHA-1 fingerprint from it, so a caller
 * cannot record one thing and issue another. sha1_out (41 bytes) may be NULL. */
fleet_err fleet_store_cert_insert(struct fleet_store *st, const char *device,
					     const char *kind, const uint8_t *der, size_t der_len,
					     time_t issued_at, char *sha1_out);
/* Newest first; free with fleet_store_certs_free. */
fleet_err fleet_store_certs_for_device(struct fleet_store *st, const char *device,
						  struct fleet_store_cert **out, size_t *n);
fleet_err fleet_store_cert_revoke(struct fleet_store *st, const char *sha1,
					     time_t now);
void fleet_store_certs_free(struct fleet_store_cert *c, size_t n);

/*
 * Every device's certificates in one statement, without their DER: what
 * fleet_store_certs_for_device gives for each device (the same rows in the
 * same order: newest issued first, then the highest id; at most
 * FLEET_STORE_LIST_MAX a device), all devices at once, by device id
 * ascending. A device with none has no row. Inside a snapshot, one state
 * with the other reads. *out malloc'd (NULL when none).
 */
struct fleet_store_cert_brief {
	int64_t device_id;
	char kind[8];
	char sha1[41];
	int64_t not_after;
	int64_t issued_at;
	bool revoked;
	int64_t revoked_at;
};
fleet_err fleet_store_certs_all(struct fleet_store *st, struct fleet_store_cert_brief **out,
				size_t *n);

/*
 * One admission, as the spec orders it, in transactions of its own
 * (store_admission.c). The answer round issues both certificates
 * provisionally: they are recorded under the session, and belong to no
 * device. Only the confirm round, after the LDevID's signature and a fresh
 * read of the binding, admits the device: its row, the session's
 * certificates and the passing verdict in ONE transaction. A session that
 * ends any other way (refused or bad confirm, deadline, superseded, a
 * restart) revokes its provisional certificates, and nothing else of it
 * was ever written. So kill -9 at any point leaves the store before or
 * after an admission, never between.
 */
struct fleet_store_issue_in {
	const char *session; /* 64 lowercase hex */
	const char *serial;
	const char *device; /* the name the certificates carry */
	const uint8_t *lak_der;
	size_t lak_len;
	const uint8_t *ldevid_der;
	size_t ldevid_len;
	time_t now;
};
/* Both provisional certificates in one transaction; each SHA-1 out. */
fleet_err fleet_store_provisional_issue(struct fleet_store *st,
						   const struct fleet_store_issue_in *in,
						   char lak_sha1[41], char ldevid_sha1[41]);

struct fleet_store_admit_in {
	const char *session; /* whose provisional certificates become the device's */
	const char *device;
	const char *serial;
	int64_t inventory_id;
	const char *ek_hash, *ek_hash_ecc; /* proven by activation */
	/* false (a device past planned): the device row must exist already */
	bool may_create;
	time_t now;
};
/* The admission in one transaction: the device row (inserted admitted, or
 * the known row checked, never rebound, and touched), the session's two
 * unrevoked provisional certificates moved to certificates, a passing
 * verdict, the serial's claim removed. CONFLICT when the session has no
 * two unrevoked provisional certificates (a reaper got there first);
 * NOT_FOUND when !may_create and the device is unknown; EK_MISMATCH as
 * fleet_store_device_record_admission. *verdict_id (may be NULL) out. */
fleet_err fleet_store_admit(struct fleet_store *st,
				       const struct fleet_store_admit_in *in,
				       int64_t *verdict_id);

#define FLEET_STORE_REVOKE_SHA1S 8
/* Revoke the unrevoked provisional certificates of session (NULL: of every
 * session: what start-up does, since sessions do not survive a restart),
 * in one transaction, with reason (1..64 printable). *n gets how many;
 * up to FLEET_STORE_REVOKE_SHA1S of their SHA-1s go to sha1s (may be NULL)
 * for the journal. */
fleet_err fleet_store_provisional_revoke(struct fleet_store *st, const char *session,
						    const char *reason, time_t now,
						    char sha1s[][41], size_t *n);
/* Forget revoked provisional certificates past their notAfter. */
fleet_err fleet_store_provisional_prune(struct fleet_store *st, time_t now,
						   size_t *n);
/* Provisional certificates (revoked or not), newest first, for fleetctl
 * and tests; free with fleet_store_certs_free (device = the name they
 * carry, revoked/revoked_at as for certificates). */
fleet_err fleet_store_provisional_list(struct fleet_store *st,
						  struct fleet_store_cert **out, size_t *n);

/* Verdicts with id > after_id, oldest first, at most limit
 * (1..FLEET_STORE_LIST_MAX): what verdicts.jsonl is reconciled from. */
fleet_err fleet_store_verdicts_after(struct fleet_store *st, int64_t after_id,
						size_t limit, struct fleet_store_verdict **out,
						size_t *n);

/*
 * Binding authors (schema version 3, store_authors.c). NetBox purges its
 * change log after CHANGELOG_RETENTION (90 days by default), and with it
 * the only proof that a planned device's binding (approved_ek_hash,
 * approved_ek_hash_ecc) was written by binding_author; a binding written
 * long before the hardware first boots would then be refused for ever. So
 * the pass, while the log still holds that proof, keeps a copy here: which
 * change, by whom, for exactly which values of which device. Admission
 * reads it only when the change log holds no change that set the binding,
 * and only while the device's id, serial and both values are exactly the
 * record's (docs/admission.md, I7). The record is a copy of an answer the
 * inventory gave, never fleetd's own judgement of the binding.
 *
 * Keyed by the inventory's device id: a device deleted and re-created
 * (same serial, new id) has no record, and its binding needs its own proof.
 * The serial is kept too, and must match, so an id the inventory reuses
 * (a NetBox restored from an older backup) does not inherit a record.
 */
struct fleet_store_binding_author {
	int64_t device_id;                      /* the inventory's id, > 0 */
	char serial[FLEET_STORE_NAME_MAX + 1];  /* the device's, when recorded */
	char approved_ek_hash[65];              /* never "" */
	char approved_ek_hash_ecc[65];          /* "" when the binding has none */
	char user[FLEET_STORE_NAME_MAX + 1];    /* the change's author */
	int64_t change_id;                      /* the inventory's change id, > 0 */
	int64_t changed_at;                     /* the change's time */
	int64_t recorded_at;                    /* when fleetd copied it */
};

/* The one rule of what a record proves: true when r is the record of
 * exactly this device id and serial, these binding values (ecc "" or NULL:
 * none) and a change by author. Anything else (the value changed since, a
 * re-created device, another author configured) proves nothing. */
bool fleet_store_binding_author_matches(const struct fleet_store_binding_author *r,
					int64_t device_id, const char *serial, const char *ek_hash,
					const char *ek_hash_ecc, const char *author);
/* Record (insert or replace) the device's record in one transaction. Every
 * field is checked (INVALID): printable serial and user, 64 lowercase hex
 * approved_ek_hash, "" or 64 lowercase hex approved_ek_hash_ecc, positive
 * ids, times not negative. A new device id past
 * FLEET_STORE_MAX_BINDING_AUTHORS is FULL; a known one is replaced. */
fleet_err fleet_store_binding_author_record(struct fleet_store *st,
						       const struct fleet_store_binding_author *r);
/* The record of device_id; NOT_FOUND when there is none. */
fleet_err fleet_store_binding_author_get(struct fleet_store *st, int64_t device_id,
						    struct fleet_store_binding_author *out);
/* Forget the record of device_id, in one transaction; *forgot (may be NULL)
 * says whether there was one. No record is not an error. */
fleet_err fleet_store_binding_author_forget(struct fleet_store *st, int64_t device_id,
						       bool *forgot);
/* Records with device_id > after_id, by device id, at most limit
 * (1..FLEET_STORE_LIST_MAX); *out malloc'd. */
fleet_err fleet_store_binding_authors_after(struct fleet_store *st, int64_t after_id,
						       size_t limit,
						       struct fleet_store_binding_author **out,
						       size_t *n);

/*
 * Provisions (schema version 4, store_provisions.c): the install runs
 * fleetd starts for admitted devices (docs/provision.md, "Delivery"). One
 * row per run, never deleted: its code_hash stays after the run ends, so a
 * burned code never serves again, across restarts. At most one open run
 * (rendered, started or delivered) per device (a partial unique index).
 * The rendered configuration is a secret: it is held only while the run is
 * rendered or started (a CHECK makes a delivered, done or dropped row
 * without one), and the connection runs with secure_delete, so the pages
 * it leaves are zeroed. What secure_delete does not reach: an older copy of
 * the page in the WAL file until the WAL is checkpointed and overwritten.
 * Each call is one transaction.
 */
#define FLEET_STORE_CODE_HASH_LEN 32
/* The cap on a stored configuration: FLEET_RENDER_OUTPUT_MAX
 * (fleetd/provision/render.h), which the store cannot include. */
#define FLEET_STORE_CONFIG_MAX ((size_t)256 * 1024)
#define FLEET_STORE_MAX_PROVISIONS 100000 /* rows one list call returns */

enum fleet_store_provision_stage { /* stored as text */
	FLEET_PROV_RENDERED = 1, /* "rendered": config rendered and checked, code hash stored; nothing started */
	FLEET_PROV_STARTED,      /* "started": token Secret and Workflow created; the config waits for its GET */
	FLEET_PROV_DELIVERED,    /* "delivered": the code consumed, the config wiped, the device active */
	FLEET_PROV_DONE,         /* "done": kubelet CSR approved and the token deleted (control plane: at delivery) */
	FLEET_PROV_DROPPED,      /* "dropped": expired, Workflow deleted/failed, or a start that failed; code burned, config wiped */
};
enum fleet_store_token_state {
	FLEET_TOKEN_NONE = 0, /* control plane: nojoin */
	FLEET_TOKEN_PENDING,  /* "pending": a worker's, not yet created */
	FLEET_TOKEN_CREATED,  /* "created": its Secret exists */
	FLEET_TOKEN_DELETED,  /* "deleted" */
};
struct fleet_store_provision {
	int64_t id;
	char device[64], serial[128], role[16]; /* role "worker" | "controlplane" */
	enum fleet_store_provision_stage stage;
	char workflow[64]; /* the Workflow's name in the tinkerbell namespace */
	char token_id[8];  /* "" for a control plane */
	enum fleet_store_token_state token_state;
	char csr_name[254], csr_uid[64]; /* the one CSR approved for this token, "" none */
	bool csr_issued;                 /* that CSR has its certificate */
	int64_t created_at, expires_at, delivered_at, ended_at; /* 0: not yet */
	char stop_reason[64]; /* why it was dropped ("expired", "workflow-deleted", ...) */
	int64_t started_at;   /* 0: never reached STARTED (added beside the caller's fields) */
	int64_t csr_approved_at; /* 0: no CSR approved */
};
struct fleet_store_provision_in {
	const char *device, *serial, *role, *workflow, *token_id /* NULL or "" for CP */;
	const uint8_t *code_hash; /* SHA-256 of the 32 raw code bytes */
	const void *config;       /* the rendered configuration (secret: wipe buffers) */
	size_t config_len;        /* 1..FLEET_STORE_CONFIG_MAX */
	int64_t now, expires_at;  /* expires_at > now >= 0 */
};
/* A new run at stage RENDERED (a worker's token PENDING, a control plane's
 * NONE). The device must have its row in the store with this serial
 * (NOT_FOUND otherwise). CONFLICT when the device has an open provision
 * (rendered/started/delivered), the code hash was ever used, or the token
 * id is another run's. INVALID: a field out of its form (device 1..63,
 * serial 1..127 and workflow 1..63 printable; role "worker" with a token id
 * of 6 [a-z0-9], "controlplane" with none). */
fleet_err fleet_store_provision_create(struct fleet_store *st,
				       const struct fleet_store_provision_in *in, int64_t *id);
/* Compare-and-set of the stage: CONFLICT when the row is not at `from`
 * (NOT_FOUND: no such row). The moves it makes: RENDERED -> STARTED
 * (started_at; token_state CREATED when it was PENDING) and DELIVERED ->
 * DONE (ended_at). Any other pair is INVALID: delivery is
 * fleet_store_provision_consume (it wipes the config), a drop
 * fleet_store_provision_drop. */
fleet_err fleet_store_provision_advance(struct fleet_store *st, int64_t id,
					enum fleet_store_provision_stage from,
					enum fleet_store_provision_stage to, int64_t now);
/* Drop an open provision: stage DROPPED, config wiped (set NULL; the page
 * zeroed: secure_delete), stop_reason (1..63 printable), ended_at. The code
 * hash stays: a burned code never serves again. NOT_FOUND / CONFLICT (not
 * open). */
fleet_err fleet_store_provision_drop(struct fleet_store *st, int64_t id, const char *reason,
				     int64_t now);
fleet_err fleet_store_provision_get(struct fleet_store *st, int64_t id,
				    struct fleet_store_provision *out);
/* By id; *out malloc'd (free with fleet_store_provisions_free). open_only:
 * stage rendered/started/delivered, or token_state CREATED, or an approved
 * CSR not yet issued. More than FLEET_STORE_MAX_PROVISIONS is FULL. */
fleet_err fleet_store_provisions_list(struct fleet_store *st, bool open_only,
				      struct fleet_store_provision **out, size_t *n);
/* Has this device ever had a provision that reached STARTED (P: "the
 * worker has never run a Workflow")? A dropped run that had started counts. */
fleet_err fleet_store_provision_ever_started(struct fleet_store *st, const char *device,
					     bool *yes);
fleet_err fleet_store_provision_by_token(struct fleet_store *st, const char *token_id,
					 struct fleet_store_provision *out);
/* A worker's token only (a control plane's stays NONE: INVALID). */
fleet_err fleet_store_provision_token_set(struct fleet_store *st, int64_t id,
					  enum fleet_store_token_state s);
/* Once per token: record that CSR (name, uid) is approved for this
 * provision's token. Same uid again: OK (idempotent, for a retry after a
 * crash). A different uid when one is recorded: CONFLICT. A first approval
 * needs the token CREATED and the run not dropped (STATE otherwise). */
fleet_err fleet_store_provision_csr_approve(struct fleet_store *st, int64_t id,
					    const char *csr_name, const char *csr_uid,
					    int64_t now);
/* The approved CSR has its certificate (STATE when none is approved). */
fleet_err fleet_store_provision_csr_issued(struct fleet_store *st, int64_t id);
/* Delivery, step 1 (read only): the config for a code. NOT_FOUND: no such
 * code. FLEET_STORE_E_STATE: the code is burned (delivered, done, dropped)
 * or the row is at or past its expires_at. CONFLICT: the run is rendered,
 * not yet started. OK: only a STARTED row serves; config (emptied first)
 * gets the bytes (make it a secret buffer: fb_init_secret). *id is set for
 * every answer but NOT_FOUND, so the caller can read the row and say which. */
fleet_err fleet_store_provision_config_for_code(struct fleet_store *st,
						const uint8_t code_hash[32], int64_t now,
						int64_t *id, struct fleet_buf *config);
/* Delivery, step 2: ONE transaction: STARTED -> DELIVERED (a worker) or
 * DONE (a control plane, whose token_state is NONE; ended_at too), config
 * wiped, delivered_at, and the device's row set to state "active".
 * CONFLICT when it is no longer STARTED (consumed by someone else, or
 * dropped): then the caller must not count it delivered. Expiry is not
 * checked again: a delivery that began before it may end after. */
fleet_err fleet_store_provision_consume(struct fleet_store *st, int64_t id, int64_t now);
const char *fleet_store_provision_stage_str(enum fleet_store_provision_stage s);
const char *fleet_store_token_state_str(enum fleet_store_token_state s);
void fleet_store_provisions_free(struct fleet_store_provision *p, size_t n);

/*
 * The hourly re-check's last TPM clock per device (schema version 5,
 * store_reattest.c): resetCount and restartCount of the last quote that
 * fleetd authenticated for the device, which the next may never fall
 * below (fleetd/reattest/reattest.h, RA9).
 */
struct fleet_store_reattest_clock {
	uint32_t reset_count;
	uint32_t restart_count;
	uint64_t clock;     /* TPM milliseconds, at most INT64_MAX */
	int64_t checked_at; /* when fleetd recorded it */
};
/* NOT_FOUND when the device has no clock recorded yet. */
fleet_err fleet_store_reattest_clock_get(struct fleet_store *st, const char *device,
					 struct fleet_store_reattest_clock *out);
/* Record c for a known device (NOT_FOUND otherwise), in one statement that
 * only moves forwards: CONFLICT, and nothing written, when c's
 * (reset_count, restart_count) is below the recorded pair (a concurrent
 * check cannot lower what another recorded). Equal counts are recorded
 * (the clock and checked_at move on). INVALID for a clock past INT64_MAX
 * or a negative checked_at. */
fleet_err fleet_store_reattest_clock_record(struct fleet_store *st, const char *device,
					    const struct fleet_store_reattest_clock *c);

/*
 * A renewal's certificates (fleetd/reattest/reattest.h RN7), in ONE
 * transaction that reads the device row again first, so a quarantine or a
 * retirement that lands while fleetd checked the evidence still stops it:
 *   - the device exists by name with this serial (NOT_FOUND / CONFLICT),
 *     its state admitted, provisioning or active, not quarantined, and at
 *     least one EK hash recorded (a confirm admitted it): CONFLICT;
 *   - the LAK certificate the node presented (by SHA-1) is the device's,
 *     unrevoked, and for the key of its newest unrevoked LAK: CONFLICT
 *     (a revocation or a re-admission with another TPM that landed after
 *     the check);
 *   - no LDevID certificate of the device is for the new one's key: STATE
 *     (a concurrent renewal of the same key issued first; answer that one);
 *   - it holds fewer than max_current LDevID certificates that are not
 *     revoked and not past notAfter at now: FULL (each renewal lists one
 *     more certificate in spire-nodes.json until the old one expires);
 *   - then the LAK and the LDevID certificate are inserted (kinds "lak",
 *     "ldevid"; notAfter and SHA-1 from the DER, as cert_insert takes them).
 * Nothing is written unless all of it holds.
 */
struct fleet_store_renew_in {
	const char *device;
	const char *serial;
	const char *presented_lak_sha1; /* 40 lowercase hex */
	const uint8_t *lak_der;
	size_t lak_len;
	const uint8_t *ldevid_der;
	size_t ldevid_len;
	size_t max_current; /* 1.. */
	time_t now;
};
fleet_err fleet_store_renewal_issue(struct fleet_store *st, const struct fleet_store_renew_in *in,
				    char lak_sha1[41], char ldevid_sha1[41]);


/*
 * The join service's pools and tokens (schema version 6, store_join.c;
 * issue 13, docs/join-tokens.md). Rules, traced to tests/unit/test_store.c
 * test_join_* and tests/join_cli.sh:
 *
 * J1 A pool's id is 1..63 of a-z 0-9 '-'; its join_attestors is NULL (any
 *    attestor this server runs) or 1..16 ids of a-z 0-9 '-', each 1..31
 *    (the caller checks they are attestors this server runs). Created once
 *    (CONFLICT when it exists).
 * J2 A token is created for an existing pool (NOT_FOUND otherwise): id 26
 *    of 0-9 a-z, role node | site | provisioned | discovery (site and
 *    discovery tokens name a site, the others may not), 1..10000 uses, an
 *    expiry after its creation, the SHA-256 of its secret (never the
 *    secret), an optional expect MAC (aa:bb:..) and product UUID, the
 *    reclaim flag and who created it.
 * J3 fleet_store_token_consume is the join-token attestor's store half, in
 *    ONE write transaction (BEGIN IMMEDIATE: the token's row is locked
 *    until the commit): the token by id ("token-unknown"), its secret's
 *    SHA-256 compared in constant time ("token-secret"), not revoked
 *    ("token-revoked"), not expired at the store's clock ("token-expired":
 *    SQLite's unixepoch(), the one clock every replica of a store shares),
 *    a use left ("token-used-up"), of the role asked ("token-role"); then
 *    one use taken. A refusal writes nothing (FLEET_STORE_E_STATE with
 *    *reason set). Two concurrent consumes of a one-use token: exactly one
 *    succeeds.
 * J4 A revoked token stays refused for ever; revoking twice is STATE.
 * J5 attestation_uses: (attestor, subject) is recorded once; a second
 *    record is CONFLICT ("reused"). The prune deletes rows past expires_at,
 *    at most a batch (1..5000) per call, and says how many.
 */
#define FLEET_STORE_POOL_ID_MAX 63
#define FLEET_STORE_TOKEN_ID_LEN 26
#define FLEET_STORE_POOL_MAX_ATTESTORS 16
#define FLEET_STORE_ATTESTOR_MAX 31
#define FLEET_STORE_TOKEN_MAX_USES 10000
#define FLEET_STORE_PRUNE_BATCH 5000
#define FLEET_STORE_NODE_ID_MAX 63 /* a node id: 1..63 of a-z 0-9 _ - */

struct fleet_store_pool {
	char id[FLEET_STORE_POOL_ID_MAX + 1];
	char owner[64];
	size_t n_attestors; /* 0: any */
	char attestors[FLEET_STORE_POOL_MAX_ATTESTORS][FLEET_STORE_ATTESTOR_MAX + 1];
	int64_t created_at;
};
fleet_err fleet_store_pool_create(struct fleet_store *st, const struct fleet_store_pool *p);
fleet_err fleet_store_pool_get(struct fleet_store *st, const char *id, struct fleet_store_pool *out);
/* All pools by id; free() the array. */
fleet_err fleet_store_pools_list(struct fleet_store *st, struct fleet_store_pool **out, size_t *n);

struct fleet_store_token {
	char id[FLEET_STORE_TOKEN_ID_LEN + 1];
	char pool[FLEET_STORE_POOL_ID_MAX + 1];
	char site[FLEET_STORE_POOL_ID_MAX + 1]; /* "" when none */
	char role[16];
	unsigned uses_total, uses_left;
	int64_t created_at, expires_at;
	char created_by[65];
	int64_t revoked_at;  /* 0: not revoked */
	int64_t last_used_at; /* 0: never */
	char expect_mac[18];  /* "" when none */
	char expect_product_uuid[37];
	bool allow_reclaim;
	/* schema version 8: the node a provisioned token was minted for (the
	 * spec's resolveTarget; D1 below); "" none */
	char target_node[FLEET_STORE_NODE_ID_MAX + 1];
};
struct fleet_store_token_in {
	const char *id;
	const char *pool;
	const char *site; /* NULL: none */
	const char *role;
	const uint8_t *secret_sha256; /* 32 bytes */
	unsigned uses;
	time_t created_at, expires_at;
	const char *created_by;
	const char *expect_mac;          /* NULL: none */
	const char *expect_product_uuid; /* NULL: none */
	bool allow_reclaim;
	const char *target_node; /* NULL: none; role provisioned only (D1) */
};
fleet_err fleet_store_token_create(struct fleet_store *st, const struct fleet_store_token_in *in);
fleet_err fleet_store_token_get(struct fleet_store *st, const char *id, struct fleet_store_token *out);
/* Newest first, at most FLEET_STORE_LIST_MAX; free() the array. */
fleet_err fleet_store_tokens_list(struct fleet_store *st, struct fleet_store_token **out, size_t *n);
fleet_err fleet_store_token_revoke(struct fleet_store *st, const char *id, time_t now);
/* J3. secret is the token's 32 secret bytes; role what the join asks. On
 * FLEET_OK *out (may be NULL) is the token after the use. */
fleet_err fleet_store_token_consume(struct fleet_store *st, const char *id,
				    const uint8_t secret[32], const char *role,
				    struct fleet_store_token *out, const char **reason);
/* J5 */
fleet_err fleet_store_attestation_use(struct fleet_store *st, const char *attestor,
				      const char *subject, time_t expires_at);
fleet_err fleet_store_attestation_uses_prune(struct fleet_store *st, time_t now, size_t batch,
					     size_t *deleted);


/*
 * The join service's nodes and their certificates (schema version 7,
 * store_join_nodes.c; issue 13). Rules, traced to tests/unit/test_store.c
 * test_join_nodes_*:
 *
 * N1 fleet_store_join_commit is a token join's final round in ONE write
 *    transaction: the token consumed as J3 (its refusals, writing nothing),
 *    then the node inserted (generation 1) with its first certificate, and
 *    the token recorded on the node. The certificate was signed before the
 *    call and is handed to the node only after this commit: killed at any
 *    point, the store holds the whole join or none of it (no token spent,
 *    no certificate recorded, hence none issued).
 * N2 A node's certificates: fleet_store_node_cert_current finds a
 *    certificate byte for byte among the node's, of its current
 *    generation, not revoked, not retired (STATE otherwise, NOT_FOUND for
 *    a certificate fleetd never recorded).
 * N3 fleet_store_node_reclaim raises the node's generation and revokes
 *    every certificate of an older one, with the reclaim's new certificate
 *    recorded, in one transaction.
 * N5 fleet_store_node_retire marks a node retired, for ever (STATE when it
 *    is already): no attestor re-joins it, no certificate of it renews.
 * N6 fleet_store_node_revoke revokes every unrevoked certificate of the
 *    node (the spec's nodes.revokeIdentity), the node itself kept: none of
 *    them re-joins (cert-revoked) or renews; *revoked says how many.
 * N4 fleet_store_node_bind records that (kind, subject) belongs to the
 *    node: again for the same node is fine; for another node CONFLICT
 *    ("bound-elsewhere"), nothing written.
 */
/* FLEET_STORE_NODE_ID_MAX is above, with the tokens (a token may name a node). */

struct fleet_store_join_in {
	const char *token_id;
	const uint8_t *token_secret; /* 32 bytes */
	const char *token_role;      /* the role the token must have */
	const char *node_id;
	const char *node_role;       /* node | site | ramdisk */
	const char *attestor;        /* "join-token" */
	const char *product_uuid;    /* NULL: none claimed */
	const uint8_t *cert_der;
	size_t cert_len;
	time_t now;
};
/* N1. On FLEET_STORE_E_STATE *reason is the token's refusal (J3). On
 * FLEET_OK *token_out (may be NULL) is the token after the use, for the
 * service's expect/reclaim decisions already made before the call. */
fleet_err fleet_store_join_commit(struct fleet_store *st, const struct fleet_store_join_in *in,
				  struct fleet_store_token *token_out, const char **reason);

struct fleet_store_node {
	char id[FLEET_STORE_NODE_ID_MAX + 1];
	char pool[FLEET_STORE_POOL_ID_MAX + 1];
	char site[FLEET_STORE_POOL_ID_MAX + 1];
	char role[16];
	int64_t generation;
	int64_t joined_at;
	char joined_by[32];
	char token[FLEET_STORE_TOKEN_ID_LEN + 1];
	char product_uuid[37];
	int64_t retired_at;
};
fleet_err fleet_store_node_get(struct fleet_store *st, const char *id, struct fleet_store_node *out);
/* N2: *node filled on FLEET_OK. */
fleet_err fleet_store_node_cert_current(struct fleet_store *st, const uint8_t *der, size_t len,
					struct fleet_store_node *node);
/* N3: the new generation into *generation. */
fleet_err fleet_store_node_reclaim(struct fleet_store *st, const char *node_id,
				   const uint8_t *cert_der, size_t cert_len, time_t now,
				   int64_t *generation);
/* N5, N6 */
fleet_err fleet_store_node_retire(struct fleet_store *st, const char *node_id, time_t now);
fleet_err fleet_store_node_revoke(struct fleet_store *st, const char *node_id, time_t now,
				  size_t *revoked);
/* N4 */
fleet_err fleet_store_node_bind(struct fleet_store *st, const char *kind, const char *subject,
				const char *node_id, time_t now);

/*
 * The join transaction (store_join_tx.c; issue 13, "Everything an attestor
 * decides runs inside one store transaction"). fleet_store_join_tx opens
 * ONE write transaction (BEGIN IMMEDIATE: every row it reads stays as read
 * until it ends), calls fn with a handle to it, and commits when fn returns
 * FLEET_OK, rolls back on anything else and returns fn's error. Inside fn
 * only the fleet_store_tx_* functions below may touch the store (the
 * handle's other functions would deadlock on its mutex: fn runs under it).
 * Rules, traced to tests/unit/test_store.c test_join_tx_*:
 *
 * X1 All or nothing: a refusal (fn returns non-OK) leaves the store as it
 *    was; kill -9 inside fn leaves the store as it was (tests/join_crash.sh).
 * X2 fleet_store_tx_now is the store's clock (unixepoch()), one value for
 *    the whole transaction, read once.
 * X3 fleet_store_tx_token is J3 in the transaction with take false (the
 *    checks only: a deferral spends nothing) or true (one use taken); role
 *    NULL skips the role check (the attestor checks it); reasons as J3.
 * X4 fleet_store_tx_node_cert is N2 with reasons: "cert-unknown" (no such
 *    row byte for byte), "cert-revoked", "cert-generation" (an older
 *    identity generation), "node-retired"; *not_after the row's.
 * X5 fleet_store_tx_use is J5 in the transaction: CONFLICT when
 *    (attestor, subject) was recorded before; fleet_store_tx_use_seen
 *    reads whether it was, writing nothing.
 * X6 fleet_store_tx_node_insert: a new node at generation 1 with its first
 *    certificate (CONFLICT when the id exists); fleet_store_tx_node_reclaim
 *    is N3 (the generation raised, every older certificate revoked, the new
 *    one recorded), keeping the node's pool, site and role;
 *    fleet_store_tx_node_cert_add records another certificate of the
 *    current generation (a renewal), fleet_store_tx_node_certs_current
 *    counts the current ones; fleet_store_tx_node_bind is N4;
 *    fleet_store_tx_binding finds the node a (kind, subject) is bound to
 *    (NOT_FOUND when none).
 */
struct fleet_store_tx;
typedef fleet_err (*fleet_store_tx_fn)(struct fleet_store_tx *tx, void *arg);
fleet_err fleet_store_join_tx(struct fleet_store *st, fleet_store_tx_fn fn, void *arg);

fleet_err fleet_store_tx_now(struct fleet_store_tx *tx, int64_t *now);
fleet_err fleet_store_tx_token(struct fleet_store_tx *tx, const char *id, const uint8_t secret[32],
			       const char *role, bool take, struct fleet_store_token *out,
			       const char **reason);
fleet_err fleet_store_tx_pool(struct fleet_store_tx *tx, const char *id,
			      struct fleet_store_pool *out);
fleet_err fleet_store_tx_node(struct fleet_store_tx *tx, const char *id,
			      struct fleet_store_node *out);
fleet_err fleet_store_tx_node_cert(struct fleet_store_tx *tx, const uint8_t *der, size_t len,
				   struct fleet_store_node *node, int64_t *not_after,
				   const char **reason);
fleet_err fleet_store_tx_use(struct fleet_store_tx *tx, const char *attestor, const char *subject,
			     int64_t expires_at);
/* X5: whether (attestor, subject) was recorded (an attestor refuses a
 * reuse before it decides anything else). */
fleet_err fleet_store_tx_use_seen(struct fleet_store_tx *tx, const char *attestor,
				  const char *subject, bool *seen);

struct fleet_store_node_in {
	const char *id;
	const char *pool;
	const char *site;         /* NULL: none */
	const char *role;         /* node | site | ramdisk */
	const char *joined_by;    /* the attestor */
	const char *token;        /* NULL: none */
	const char *product_uuid; /* NULL: none */
	const uint8_t *cert_der;
	size_t cert_len;
	int64_t now;
};
fleet_err fleet_store_tx_node_insert(struct fleet_store_tx *tx, const struct fleet_store_node_in *in);
fleet_err fleet_store_tx_node_reclaim(struct fleet_store_tx *tx, const char *node_id,
				      const uint8_t *cert_der, size_t cert_len, int64_t now,
				      int64_t *generation);
fleet_err fleet_store_tx_node_cert_add(struct fleet_store_tx *tx, const char *node_id,
				       const uint8_t *cert_der, size_t cert_len, int64_t now);
/* X6: how many of the node's certificates are current (its generation,
 * unrevoked, notAfter after now): what a renewal is capped by. */
fleet_err fleet_store_tx_node_certs_current(struct fleet_store_tx *tx, const char *node_id,
					    size_t *n);
/* X6: when the node's newest certificate was issued (0: none). */
fleet_err fleet_store_tx_node_newest_cert(struct fleet_store_tx *tx, const char *node_id,
					  int64_t *issued_at);
fleet_err fleet_store_tx_node_bind(struct fleet_store_tx *tx, const char *kind, const char *subject,
				   const char *node_id, int64_t now);
fleet_err fleet_store_tx_binding(struct fleet_store_tx *tx, const char *kind, const char *subject,
				 char node_id[FLEET_STORE_NODE_ID_MAX + 1]);
/* X6: the subject of kind the node is bound to (the oldest; NOT_FOUND when
 * none): a node holds one EK. */
fleet_err fleet_store_tx_node_bound(struct fleet_store_tx *tx, const char *node_id,
				    const char *kind, char subject[129]);

/*
 * The discovery and provisioned attestors' rows (schema version 8,
 * store_join_requests.c; issue 13, spec 001 "provisioned", "discovery",
 * "Two-round joins"): the node a provisioned token was minted for, the
 * site's boot lease (who may vouch for a PXE-booted machine, fenced by
 * epoch), and the join requests a deferral leaves for an operator. Rules,
 * traced to tests/unit/test_store.c test_token_target_*, test_site_lease_*
 * and test_join_requests_*, and tests/join_requests_cli.sh:
 *
 * D1 A token's target_node (the spec's resolveTarget) is NULL or "" (none)
 *    or a node id: only for role provisioned, well-formed (INVALID
 *    otherwise); the node exists (NOT_FOUND), is not retired (STATE) and is
 *    of the token's pool (CONFLICT: a pool's token never re-keys another
 *    pool's node). token_get and the list give it back ("" none).
 * D2 fleet_store_site_lease_grant gives the site's boot lease
 *    ("site::boot") to a node of role site of that site, not retired
 *    (INVALID for ids out of their form, NOT_FOUND for an unknown node,
 *    STATE otherwise, nothing written), in one transaction; the epoch goes up by one on every grant, to the same
 *    holder or another (the first is 1), so the epoch a former holder
 *    signed with no longer matches (fencing). fleet_store_tx_site_lease
 *    reads the holder and epoch (NOT_FOUND when the site has none).
 * D3 fleet_store_tx_join_request_put inserts a pending request: id "jr_"
 *    and 26 of a-z 0-9, attestor 1..31 of a-z 0-9 -, site "" or 1..63 of
 *    a-z 0-9 -, hw_key and csr_sha256 64 lowercase hex, mac "" or
 *    aa:bb:cc:dd:ee:ff, product_uuid "" or a lowercase UUID, 0 <=
 *    created_at < expires_at (INVALID otherwise); status, decided_* and
 *    used_at are ignored (a put is pending). Keyed on (attestor, hw_key):
 *    a row there that expired (pending, tx->now >= expires_at), was denied
 *    or was used is replaced by the fresh pending one (its id, times and
 *    claims; the old decision gone); a live one (pending unexpired, or
 *    approved) is CONFLICT, as is an id already used, nothing written.
 *    FULL when FLEET_STORE_MAX_JOIN_REQUESTS requests are pending and
 *    unexpired (machines, not operators, make requests).
 * D4 fleet_store_tx_join_request reads the request of (attestor, hw_key)
 *    (NOT_FOUND when none); a pending, approved or denied one at or past
 *    expires_at (tx->now) reads as status "expired", which is never
 *    written: an approval unused and a denial both end.
 * D5 fleet_store_join_request_decide: NOT_FOUND for an unknown id; only a
 *    pending request before its expires_at (at now) is decided (STATE
 *    otherwise, nothing written): approved or denied, with decided_at and
 *    decided_by (1..64 printable), and expires_at moved to now plus the
 *    request's own lifetime (the decision lasts as long as the wait could).
 * D6 fleet_store_tx_join_request_used: approved and unexpired -> used,
 *    with used_at (STATE for any other status, NOT_FOUND unknown): an
 *    approval admits exactly one join.
 * D7 fleet_store_join_requests_list: newest first (created_at, then id),
 *    at most FLEET_STORE_LIST_MAX, pending ones past expires_at at the
 *    store's clock (unixepoch()) reading "expired" as in D4;
 *    fleet_store_join_request_get by id, the same view.
 * D8 For fleetctl node list | show: fleet_store_nodes_list (all nodes by
 *    id, in one statement; more than FLEET_STORE_MAX_DEVICES is FULL) and
 *    fleet_store_node_certs (a node's certificates, newest first, at most
 *    FLEET_STORE_LIST_MAX; NOT_FOUND for an unknown node).
 */
#define FLEET_STORE_JOIN_REQUEST_ID_LEN 29 /* "jr_" + 26 */
#define FLEET_STORE_MAX_JOIN_REQUESTS 10000 /* pending, unexpired */
#define FLEET_STORE_LEASE_BOOT "boot"    /* the lease "site::boot" */

struct fleet_store_join_request {
	char id[64];
	char attestor[32];
	char site[64];         /* "" none */
	char hw_key[65];       /* 64 lowercase hex: what the request is keyed on */
	char mac[18];          /* "" none */
	char product_uuid[37]; /* "" none */
	char csr_sha256[65];
	char status[10]; /* pending | approved | denied | used; read also "expired" */
	int64_t created_at, expires_at, decided_at; /* decided_at 0: not decided */
	char decided_by[65];                        /* "" not decided */
	int64_t used_at;                            /* 0: not used */
};

/* D2: *epoch (may be NULL) the lease's new epoch. */
fleet_err fleet_store_site_lease_grant(struct fleet_store *st, const char *site,
				       const char *holder_node, time_t now, int64_t *epoch);
/* D7: free() the array. */
fleet_err fleet_store_join_requests_list(struct fleet_store *st,
					 struct fleet_store_join_request **out, size_t *n);
fleet_err fleet_store_join_request_get(struct fleet_store *st, const char *id,
				       struct fleet_store_join_request *out);
/* D5 */
fleet_err fleet_store_join_request_decide(struct fleet_store *st, const char *id, bool approve,
					  const char *by, time_t now);

/* Inside fleet_store_join_tx's fn (the caller holds the lock and the
 * transaction; these never lock). D2, D4, D3, D6. */
fleet_err fleet_store_tx_site_lease(struct fleet_store_tx *tx, const char *site,
				    char holder[FLEET_STORE_NODE_ID_MAX + 1], int64_t *epoch);
fleet_err fleet_store_tx_join_request(struct fleet_store_tx *tx, const char *attestor,
				      const char *hw_key, struct fleet_store_join_request *out);
fleet_err fleet_store_tx_join_request_put(struct fleet_store_tx *tx,
					  const struct fleet_store_join_request *in);
fleet_err fleet_store_tx_join_request_used(struct fleet_store_tx *tx, const char *id,
					   int64_t now);

/* D8 */
struct fleet_store_node_cert {
	char sha256[65]; /* lowercase hex SHA-256 of the DER */
	int64_t generation;
	int64_t not_after, issued_at;
	int64_t revoked_at; /* 0: not revoked */
};
/* free() the arrays. */
fleet_err fleet_store_nodes_list(struct fleet_store *st, struct fleet_store_node **out, size_t *n);
fleet_err fleet_store_node_certs(struct fleet_store *st, const char *node_id,
				 struct fleet_store_node_cert **out, size_t *n);

/*
 * HookOS admission sessions shared by the replicas of one store
 * (store_sessions.c; the table fleetd/admission/sessions.h keeps in memory
 * when one fleetd serves alone). The store keeps the table's bookkeeping;
 * the session itself is the caller's sealed blob, never read here.
 *
 * SS1 Every change is one write transaction, serialised across replicas
 *     (db.h DB3), so the caps are counted and enforced on one state:
 *     fleet_store_session_reserve counts the serial's open sessions and the
 *     source's unproven ones (an ending row counts for neither: the
 *     reaper's), removes the exact address's own idle unproven published
 *     try for the serial, and inserts, or says which cap was reached.
 * SS2 A row is checked out while busy_until >= now (its lease's last second
 *     included): acquire on a busy row is
 *     BUSY and changes nothing; a replica that dies mid-round leaves a
 *     lease that ends by itself, never a session stuck for ever.
 * SS3 reap deletes every row whose lease is over and that is unpublished
 *     (an intake that never finished), superseded, past its deadline, or
 *     unproven past its answer window, and hands each back: exactly one
 *     replica gets each row.
 * SS4 Provisional certificates whose session has no row are orphans (a
 *     replica died between reaping and revoking): revoke_orphans revokes
 *     them, in one transaction (test_store: test_provisional_revoke_orphans,
 *     both engines).
 */
#define FLEET_STORE_SESSION_SEALED_MAX 65536
struct fleet_store_session {
	char handle[33];  /* 32 lowercase hex, the row's key, chosen at reserve */
	char sid[65];     /* "" until published */
	char serial[129];
	char peer[48], peer_key[48];
	char ek_hash[65], ek_hash_ecc[65];
	bool published, proven, superseded;
	int64_t deadline, answer_by, busy_until;
	uint8_t *sealed; /* malloc'd; NULL when none */
	size_t sealed_len;
};
void fleet_store_session_clear(struct fleet_store_session *r);

enum fleet_store_session_cap {
	FLEET_STORE_SESSION_RESERVED = 0,
	FLEET_STORE_SESSION_CAP_SERIAL, /* per_serial open sessions of the serial */
	FLEET_STORE_SESSION_CAP_PEER,   /* per_peer unproven sessions of the source */
	FLEET_STORE_SESSION_CAP_ALL,    /* cap rows in all */
};
/* SS1. r: handle, serial, peer, peer_key, busy_until set (unpublished). */
fleet_err fleet_store_session_reserve(struct fleet_store *st, const struct fleet_store_session *r,
				      int64_t now, size_t per_serial, size_t per_peer, size_t cap,
				      enum fleet_store_session_cap *result);
/* Write r's columns and blob (by handle), with busy_until 0: publish and
 * release. NOT_FOUND when the row is gone (reaped after its lease). */
fleet_err fleet_store_session_put(struct fleet_store *st, const struct fleet_store_session *r);
/* SS2: the published row with sid; *found false when none. When found and
 * neither busy nor ending, it is checked out until lease_until and
 * *took is true; out gets the row as it was read. */
fleet_err fleet_store_session_acquire(struct fleet_store *st, const char *sid, int64_t now,
				      int64_t lease_until, struct fleet_store_session *out,
				      bool *found, bool *took);
/* The row handle is proven; every other row of its serial and EKs is
 * superseded; *n how many. */
fleet_err fleet_store_session_prove(struct fleet_store *st, const char *handle, size_t *n);
fleet_err fleet_store_session_delete(struct fleet_store *st, const char *handle);
/* SS3: up to max rows ended (deleted) into *out (free each with
 * fleet_store_session_clear, then free(*out)). */
fleet_err fleet_store_session_reap(struct fleet_store *st, int64_t now, size_t max,
				   struct fleet_store_session **out, size_t *n);
fleet_err fleet_store_session_count(struct fleet_store *st, size_t *n);
/* SS4. */
fleet_err fleet_store_provisional_revoke_orphans(struct fleet_store *st, const char *reason,
						 time_t now, char sha1s[][41], size_t *n);

#endif
