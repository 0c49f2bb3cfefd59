/*
 * kube_config.h: where the Kubernetes client's credentials come from: a
 * kubeconfig file, or the pod's service account.
 *
 * A kubeconfig (the v1 Config of client-go's clientcmd, read with
 * lib/yaml_strict.h):
 *
 *   KC1  The file is read as a secret (lib/file_read.h
 *        FLEET_FILE_POLICY_SECRET: owned by root or us, no access for group
 *        or others, not a symbolic link, at most FLEET_KUBECONFIG_MAX
 *        bytes): it holds a token or a key. The file reader's refusal is
 *        passed on (FLEET_E_UNSAFE, reason "group-readable", ...).
 *   KC2  One YAML document, no aliases, no tags, no key twice, no key
 *        client-go's v1 Config does not have at the levels read (the
 *        strict reader's refusals, with line and column). "preferences"
 *        and "extensions" are skipped unread.
 *   KC3  current-context is required and names one entry of contexts,
 *        whose cluster and user name one entry each of clusters and users
 *        (reason "no-context", FLEET_KUBE_E_MALFORMED); a name twice in a
 *        list is refused ("duplicate-name").
 *   KC4  The cluster's server is https://host[:port][/path] (reason
 *        "not-https" for http:// or any other scheme; "bad-server" for no
 *        host, a query, a fragment, user info, a byte outside printable
 *        ASCII); a trailing "/" is dropped.
 *   KC5  insecure-skip-tls-verify: true is refused ("insecure-skip-tls-
 *        verify"); false is the default and accepted.
 *   KC6  The CA is certificate-authority (a file, relative to the
 *        kubeconfig's directory, read as configuration: FLEET_FILE_POLICY_
 *        CONFIG) or certificate-authority-data (base64 of PEM), not both
 *        ("both-ca"), and must hold a "-----BEGIN CERTIFICATE-----"
 *        ("bad-pem"). Neither: the system's roots.
 *   KC7  The user authenticates by exactly one of: token, tokenFile (read
 *        as a secret again for every request, K3), a client certificate
 *        and its key (client-certificate or -data, client-key or -data;
 *        file or data, not both, each; the key read as a secret). None is
 *        "no-credentials", more than one "ambiguous-credentials", a
 *        certificate without its key or the reverse "half-client-cert"
 *        (FLEET_KUBE_E_MALFORMED).
 *   KC8  exec and auth-provider plugins, username/password, impersonation
 *        (as, as-uid, as-groups, as-user-extra), proxy-url and
 *        tls-server-name are FLEET_KUBE_E_UNSUPPORTED, the error saying
 *        "not supported" and naming the key (reason "exec-plugin",
 *        "auth-provider", "basic-auth", "impersonation", "proxy-url",
 *        "tls-server-name").
 *   KC9  Every *-data value is strict base64 (the standard alphabet, '='
 *        padding only at the end, length a multiple of 4, nothing else: not
 *        even a newline): "bad-base64" otherwise.
 *   KC10 A token, from the file or a token file, is 1..FLEET_KUBE_TOKEN_MAX
 *        bytes of printable ASCII without spaces once one trailing newline
 *        is dropped ("bad-token"): it goes into an HTTP header.
 *   KC11 Key bytes and tokens are held in secret buffers (lib/buf.h) and
 *        wiped when freed; the YAML document's scalars are wiped before it
 *        is freed.
 *
 * In-cluster (cfg->kubeconfig NULL), as client-go's rest.InClusterConfig:
 *
 *   KC12 KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT (both needed,
 *        "no-in-cluster-env"; the host an address or name of printable
 *        ASCII, an IPv6 address bracketed; the port 1..65535) give
 *        https://host:port. The CA is <sa_dir>/ca.crt (configuration
 *        policy) and the token <sa_dir>/token, read for every request with
 *        the secret policy except that others may read it (forbid 022:
 *        kubelet mounts it 0644 in the pod's own volume). Kubelet's atomic
 *        writer makes "token" and "ca.crt" symbolic links into "..data/":
 *        a name refused as a symbolic link is read as "..data/<name>"
 *        instead (the link in the last component is still never followed).
 *
 * Tests: tests/unit/test_kube_config.c; fuzz: tests/fuzz/fuzz_kubeconfig.c.
 */
#ifndef FLEETD_KUBE_KUBE_CONFIG_H
#define FLEETD_KUBE_KUBE_CONFIG_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/buf.h"
#include "lib/fleet_err.h"

#define FLEET_KUBECONFIG_MAX (1024u * 1024u)
#define FLEET_KUBE_TOKEN_MAX 8192u
#define FLEET_KUBE_PEM_MAX (256u * 1024u)
#define FLEET_KUBE_SERVER_MAX 512u
#define FLEET_KUBE_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

struct fleet_kube_auth {
	char server[FLEET_KUBE_SERVER_MAX]; /* https://host[:port][/path], no trailing '/' */
	struct fleet_buf ca_pem;            /* empty: the system's roots */
	struct fleet_buf token;             /* a static token (secret); empty: none */
	char token_dir[PATH_MAX];           /* token read per request from token_dir/token_name */
	char token_name[PATH_MAX];          /* "" : no token file */
	int token_in_cluster;               /* KC12's policy and "..data/" fallback */
	struct fleet_buf cert_pem;          /* client certificate; empty: none */
	struct fleet_buf key_pem;           /* its key (secret) */
};

void fleet_kube_auth_init(struct fleet_kube_auth *a);
/* Wipes and frees everything a holds. */
void fleet_kube_auth_free(struct fleet_kube_auth *a);

/* KC2-KC11 over the bytes of a kubeconfig; base_dir is where relative
 * paths in it are (the kubeconfig's directory). Files it names are read.
 * On failure a is left as fleet_kube_auth_init made it. */
fleet_err fleet_kubeconfig_parse(const uint8_t *buf, size_t len, const char *base_dir,
				 struct fleet_kube_auth *a, struct fleet_errctx *ec);
/* KC1 then fleet_kubeconfig_parse. */
fleet_err fleet_kubeconfig_load(const char *path, struct fleet_kube_auth *a,
				struct fleet_errctx *ec);
/* KC12. sa_dir NULL: FLEET_KUBE_SA_DIR. */
fleet_err fleet_kube_in_cluster(const char *sa_dir, struct fleet_kube_auth *a,
				struct fleet_errctx *ec);

/* The token for one request (K3, KC10): a's static token, or its file read
 * now, into out (which must be empty; it is made a secret buffer, the
 * token NUL-terminated, without its trailing newline). FLEET_OK with out
 * empty when a has no token. */
fleet_err fleet_kube_auth_token(const struct fleet_kube_auth *a, struct fleet_buf *out,
				struct fleet_errctx *ec);

/* KC9: strict base64 of in[0..len) into out (a secret buffer when
 * secret). FLEET_KUBE_E_MALFORMED, reason "bad-base64", otherwise. */
fleet_err fleet_kube_b64_decode(const char *in, size_t len, struct fleet_buf *out, int secret,
				size_t max, struct fleet_errctx *ec);

#endif
