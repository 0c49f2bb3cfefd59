#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# shellcheck disable=SC2015 # "check && ok || fail": ok only echoes
# join_cloud_iid_e2e.sh: the cloud-iid attestor through the real fleetd
# over HTTPS (issue 14; policy/attestors/cloud_iid.h): the configuration
# file loaded and checked by --check-config, an OIDC provider whose JWKS
# fleetd serves from a file, identity tokens signed here with openssl
# (RS256) the way an issuer signs them, and the join request sent as an
# agent sends it. The unit test (tests/unit/test_cloud_iid.c) holds every
# refusal; this one holds the wiring: a token bound to its CSR admits one
# node, the same instance never a second (instance-reused, the use kept
# with no expiry), a token for another CSR is refused, and a configuration
# file that names a missing JWKS stops fleetd with the file's name.
# Needs openssl, curl, jq, python3 (else 77); root (fleetctl).
set -euo pipefail

src="${FLEET_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
bin="${FLEET_BINARY_DIR:-$src/build}"
skip() { echo "SKIP: $*"; exit 77; }
for tool in openssl curl jq python3; do
	command -v "$tool" >/dev/null 2>&1 || skip "$tool not found"
done
[ "$(id -u)" -eq 0 ] || skip "fleetctl's join commands are root's: run as root (CI does)"

# shellcheck source=../../scripts/demo-site.sh
. "$src/scripts/demo-site.sh"
site_bins "$bin"
fleetctl="$site_fleetctl"

work=$(mktemp -d "${TMPDIR:-/tmp}/fleet-cloud-iid-e2e-XXXXXX")
cleanup() {
	site_fleetd_stop >/dev/null 2>&1 || true
	if [ -n "${FLEET_KEEP_E2E:-}" ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
cd "$work"
umask 022
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }
die() { echo "FAIL: $*"; tail -n 30 fleetd.log 2>/dev/null | sed 's/^/  fleetd: /'; exit 1; }

mkdir -p roots profiles state && chmod 0700 state
site_tls tls
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
	-subj "/CN=cloud-iid e2e unused EK root" -keyout /dev/null -out roots/unused.pem 2>/dev/null
cp "$src/tests/fwsim/worker.profile.yaml" profiles/worker.yaml
printf 'version: 1\nnodes: []\n' >nodes.yaml
"$fleetctl" ca init state/ca --cn "fleetd cloud-iid e2e CA" >/dev/null
"$fleetctl" join init --state-dir "$work/state" >/dev/null

# The issuer: an RSA key and its JWKS.
openssl genrsa -out issuer.key 2048 2>/dev/null
python3 - issuer.key >jwks.json <<'PY'
import base64, json, subprocess, sys
text = subprocess.run(["openssl", "rsa", "-in", sys.argv[1], "-noout", "-modulus"],
                      capture_output=True, check=True, text=True).stdout
n = bytes.fromhex(text.strip().split("=", 1)[1])
b = lambda x: base64.urlsafe_b64encode(x).rstrip(b"=").decode()
print(json.dumps({"keys": [{"kty": "RSA", "kid": "k1", "alg": "RS256", "use": "sig",
                            "n": b(n), "e": b((65537).to_bytes(3, "big"))}]}))
PY
cat >cloud-iid.yaml <<YAML
providers:
  - id: corp
    type: oidc
    issuers: [https://issuer.folly.test]
    audience: https://fleetd.folly.test
    jwks_file: $work/jwks.json
    account_claim: acct
    instance_claim: sub
resolve:
  - provider: corp
    account: a1
    pool: pool-a
YAML
port=$(site_free_port)
site_fleetd_yaml "$work" "$port" >fleetd.yaml
cat >>fleetd.yaml <<YAML
join:
  trust_domain: folly.test
  cloud_iid_file: $work/cloud-iid.yaml
YAML
"$site_fleetd" --config fleetd.yaml --check-config >/dev/null 2>check.err || die "check-config: $(cat check.err)"

# A configuration naming a JWKS that is not there is refused, by name.
sed "s|$work/jwks.json|$work/missing.json|" cloud-iid.yaml >bad.yaml
sed "s|$work/cloud-iid.yaml|$work/bad.yaml|" fleetd.yaml >bad-fleetd.yaml
if "$site_fleetd" --config bad-fleetd.yaml --check-config >/dev/null 2>bad.err; then
	fail "--check-config took a cloud-iid file naming a missing JWKS"
else
	grep -q 'missing.json' bad.err && ok "--check-config refuses a missing JWKS, naming it" ||
		fail "the refusal does not name the file: $(cat bad.err)"
fi

site_fleetd_start fleetd.yaml fleetd.log || die "fleetd did not start"
url=$site_fleetd_url
"$fleetctl" pool create pool-a --owner root --state-dir "$work/state" >/dev/null || die "pool create"

metric() {
	curl -sf --cacert tls/fleetd.crt "$url/metrics" |
		awk -v k="$1" '$1 == k { print $2; found=1 } END { if (!found) print 0 }'
}
refusals() { metric "fleetd_join_refused_total{reason=\"cloud-iid:$1\"}"; }
sql() { python3 -c 'import sqlite3,sys; c=sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True); print("\n".join("|".join(str(x) for x in r) for r in c.execute(sys.argv[2])))' state/fleetd.db "$1"; }

# join NAME INSTANCE [AUDIENCE_CSR]: a fresh key and CSR, a token for
# INSTANCE whose audience binds AUDIENCE_CSR's hash (default: its own CSR),
# POST /v1/join; the HTTP status into NAME.code, the signed body's status
# into NAME.status.
join() {
	local name=$1 inst=$2 bind=${3:-}
	openssl ecparam -name prime256v1 -genkey -noout -out "$name.key" 2>/dev/null
	openssl req -new -key "$name.key" -subj /CN=vm -outform DER -out "$name.csr" 2>/dev/null
	python3 - "$name.csr" "${bind:-$name.csr}" "$inst" issuer.key >"$name.json" <<'PY'
import base64, hashlib, json, subprocess, sys, time
b = lambda x: base64.urlsafe_b64encode(x).rstrip(b"=").decode()
csr = open(sys.argv[1], "rb").read()
bound = hashlib.sha256(open(sys.argv[2], "rb").read()).hexdigest()
now = int(time.time())
head = b(json.dumps({"alg": "RS256", "kid": "k1", "typ": "JWT"}).encode())
claims = {"iss": "https://issuer.folly.test", "aud": "https://fleetd.folly.test#" + bound,
          "sub": sys.argv[3], "acct": "a1", "iat": now - 5, "exp": now + 600}
body = b(json.dumps(claims).encode())
sig = subprocess.run(["openssl", "dgst", "-sha256", "-sign", sys.argv[4]],
                     input=(head + "." + body).encode(), capture_output=True, check=True).stdout
att = json.dumps({"v": 1, "provider": "corp", "document": head + "." + body + "." + b(sig)},
                 separators=(",", ":")).encode()
print(json.dumps({"v": 1, "attestor": "cloud-iid", "attestation": b(att), "csr": b(csr),
                  "role": "node"}, separators=(",", ":")))
PY
	curl -s -o "$name.ans" -w '%{http_code}' --cacert tls/fleetd.crt \
		-H 'Content-Type: application/json' --data-binary @"$name.json" "$url/v1/join" >"$name.code"
	python3 -c 'import base64,json,sys; e=json.load(open(sys.argv[1])); p=e["body"]; p+="="*(-len(p)%4); print(json.loads(base64.urlsafe_b64decode(p))["status"])' \
		"$name.ans" >"$name.status" 2>/dev/null || echo "unreadable" >"$name.status"
}

join vm1 instance-1
[ "$(cat vm1.code)" = 200 ] && [ "$(cat vm1.status)" = joined ] &&
	ok "a token bound to its CSR admitted the instance" ||
	fail "first join: HTTP $(cat vm1.code), $(cat vm1.status)"
nodes=$(sql "SELECT count(*) FROM nodes WHERE joined_by = 'cloud-iid' AND pool = 'pool-a'")
[ "$nodes" = 1 ] && ok "one node in pool-a" || fail "$nodes cloud-iid nodes"
forever=$(sql "SELECT expires_at FROM attestation_uses WHERE attestor = 'cloud-iid'")
[ "${#forever}" -ge 18 ] && ok "the instance's use is kept with no expiry ($forever)" ||
	fail "the use expires at '$forever'"

before=$(refusals instance-reused)
join vm1again instance-1
[ "$(cat vm1again.code)" = 403 ] && [ "$(cat vm1again.status)" = denied ] &&
	[ "$(refusals instance-reused)" -eq $((before + 1)) ] &&
	ok "the same instance with a new key and token: instance-reused" ||
	fail "second join of instance-1: HTTP $(cat vm1again.code), reused $(refusals instance-reused)"

before=$(refusals cloud-iid-audience)
join vm2 instance-2 vm1.csr
[ "$(cat vm2.code)" = 403 ] && [ "$(refusals cloud-iid-audience)" -eq $((before + 1)) ] &&
	ok "a token bound to another CSR: cloud-iid-audience" ||
	fail "another CSR's token: HTTP $(cat vm2.code)"
[ "$(sql "SELECT count(*) FROM nodes WHERE joined_by = 'cloud-iid'")" = 1 ] &&
	ok "the refusals made no node" || fail "a refusal made a node"

[ "$failures" -eq 0 ] || { echo "FAIL: $failures failure(s)"; exit 1; }
echo "PASS: join_cloud_iid_e2e"
