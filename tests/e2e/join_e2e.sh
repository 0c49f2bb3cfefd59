#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# shellcheck disable=SC2015 # "check && ok || fail": ok only echoes
# join_e2e.sh: the join service over its real HTTPS endpoint (issue 13;
# fleetd/join/join.h JS1-JS8, policy/attestors/): the real fleetd, fleetctl
# as the operator, and fleet-join as every agent, as a machine would run
# it. No TPM and no fake: the token attestors need neither.
#
# Every refusal is checked three ways: the agent is told only "denied"
# (exit 10, the signed generic body), fleetd_join_refused_total counts the
# attestor and reason exactly once, and the store is byte for byte what it
# was (nothing spent, nothing issued, nothing recorded). Each reason the
# spec names for join-token, x509pop, provisioned, discovery and the
# service is produced here, as is each of fleetd's own (docs/attestors.md).
#
# Also: two concurrent joins with a one-use token make exactly one node; a
# deferral is answered after fleetd restarts (the pending request is the
# store's); kill -9 at every store write of a join leaves no token spent
# and no certificate recorded, or the whole join; the pass prunes only
# expired attestation uses; the on_refusal hook gets the refusal as JSON.
#
# Time: fleetd and the agents run some phases days ahead (libfaketime),
# where a certificate has expired. Needs openssl, curl, jq, python3 and
# libfaketime (else 77). FLEET_KEEP_E2E=1 keeps the directory.
set -euo pipefail

src="${FLEET_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
bin="${FLEET_BINARY_DIR:-$src/build}"
skip() { echo "SKIP: $*"; exit 77; }
for tool in openssl curl jq python3; do
	command -v "$tool" >/dev/null 2>&1 || skip "$tool not found"
done
faketime_lib=/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1
[ -f "$faketime_lib" ] || skip "libfaketime is not installed ($faketime_lib; scripts/deps.sh installs faketime)"
[ "$(id -u)" -eq 0 ] || skip "fleetctl's join commands are root's: run as root (CI does)"
# A preloaded library (libfaketime, the crash shim) comes before the
# sanitizers' runtime in a sanitizer build: tell it that is fine.
asan="ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"

# shellcheck source=../../scripts/demo-site.sh
. "$src/scripts/demo-site.sh"
site_bins "$bin"
join="$bin/tink-attest/fleet-join"
fleetctl="$site_fleetctl"
seal_tool="${1:?usage: join_e2e.sh SEAL_TOOL [CRASH_SHIM]}"
shim="${2:-}" # the crash shim (tests/e2e/crash_shim.c), when built
[ -x "$join" ] || { echo "FAIL: no $join"; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/fleet-join-e2e-XXXXXX")
cleanup() {
	site_fleetd_stop >/dev/null 2>&1 || true
	if [ -n "${FLEET_KEEP_E2E:-}" ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
cd "$work"
umask 077 # the tokens and keys fleet-join reads are secrets (0600)
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }
die() { echo "FAIL: $*"; tail -n 30 fleetd.log 2>/dev/null | sed 's/^/  fleetd: /'; exit 1; }

# ---- the site ------------------------------------------------------------------

mkdir -p roots profiles state hook && chmod 0700 state
site_tls tls
# fleetd wants one EK root to start; the token attestors never read it.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
	-subj "/CN=join e2e unused EK root" -keyout /dev/null -out roots/unused.pem 2>/dev/null
cp "$src/tests/fwsim/worker.profile.yaml" profiles/worker.yaml
printf 'version: 1\nnodes: []\n' >nodes.yaml
"$fleetctl" ca init state/ca --cn "fleetd join e2e CA" >/dev/null
"$fleetctl" join init --state-dir "$work/state" >/dev/null
cat >hook/on-refusal <<EOF
#!/bin/sh
printf '%s\n' "\$1" >>$work/hook/refusals.jsonl
EOF
chmod 0755 hook/on-refusal
port=$(site_free_port)
approval=never
interval=0 # x509pop_min_interval_seconds: re-joins back to back, but in its own phase
write_config() {
	site_fleetd_yaml "$work" "$port" >fleetd.yaml
	cat >>fleetd.yaml <<YAML
join:
  trust_domain: folly.test
  on_refusal: $work/hook/on-refusal
  discovery_approval: $approval
  discovery_retry_after_seconds: 1
  x509pop_min_interval_seconds: $interval
YAML
}
write_config
"$site_fleetd" --config fleetd.yaml --check-config >/dev/null 2>check.err || die "check-config: $(cat check.err)"
start() { site_fleetd_start fleetd.yaml fleetd.log || die "fleetd did not start"; }
restart() { site_fleetd_stop >/dev/null 2>&1 || true; start; }
start
url=$site_fleetd_url
# What fleet-join pins: the CA that signs the join service's answers and
# the node certificates (--ca), and apart from it fleetd's TLS certificate,
# for the connection only (--tls-ca): a key in --ca may name the machine.
ca=state/ca/ca.crt
tlsca=tls/fleetd.crt

tok() { # fleetctl token create args... -> the sealed token into a file named by $1
	local f=$1
	shift
	"$fleetctl" token create "$@" --state-dir "$work/state" --json >tok.json 2>/dev/null ||
		die "token create $*"
	jq -r .sealed tok.json >"$f"
	chmod 0600 "$f"
}
tokid() { jq -r .id tok.json; }

metric() { # label -> the counter's value
	curl -sf --cacert tls/fleetd.crt "$url/metrics" |
		awk -v k="fleetd_join_refused_total{reason=\"$1\"}" '$1 == k { print $2; found=1 } END { if (!found) print 0 }'
}
joined_metric() {
	curl -sf --cacert tls/fleetd.crt "$url/metrics" |
		awk -v k="fleetd_joins_total{attestor=\"$1\"}" '$1 == k { print $2; found=1 } END { if (!found) print 0 }'
}
# What a refusal must leave as it was: every row of the join service.
snapshot() {
	python3 - state/fleetd.db <<'PY'
import hashlib, sqlite3, sys
c = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
h = hashlib.sha256()
for t in ("join_tokens", "nodes", "node_certs", "node_bindings", "attestation_uses", "join_requests"):
    for r in c.execute("SELECT * FROM %s ORDER BY 1" % t):
        h.update(repr(r).encode())
print(h.hexdigest())
PY
}
sql() { python3 -c 'import sqlite3,sys; c=sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True); print("\n".join("|".join(str(x) for x in r) for r in c.execute(sys.argv[2])))' state/fleetd.db "$1"; }

# refused NAME LABEL -- fleet-join args: exit 10, the label counted once,
# the store untouched.
refused() {
	local name=$1 label=$2
	shift 3
	local before snap rc=0
	before=$(metric "$label")
	snap=$(snapshot)
	"$join" "$@" >out.txt 2>err.txt || rc=$?
	[ "$rc" -eq 10 ] || { fail "$name: exit $rc, want 10 (denied): $(head -c 300 err.txt)"; return; }
	local after
	after=$(metric "$label")
	[ "$after" = "$((before + 1))" ] || { fail "$name: $label counted $before -> $after"; return; }
	[ "$(snapshot)" = "$snap" ] || { fail "$name: the refusal changed the store"; return; }
	ok "$name: denied, $label"
}
# joins NAME -- fleet-join args: exit 0, the node id on stdout.
joins() {
	local name=$1 rc=0
	shift 2
	"$join" "$@" >out.txt 2>err.txt || rc=$?
	[ "$rc" -eq 0 ] || { fail "$name: exit $rc, want 0: $(head -c 400 err.txt)"; return 1; }
	node=$(tr -d '\n' <out.txt)
	ok "$name: joined as $node"
}
J=(join --server "$url" --ca "$ca" --tls-ca "$tlsca" --seal-pub state/join/seal.pub)
sans() { openssl x509 -in "$1" -noout -ext subjectAltName 2>/dev/null | tail -n +2 | tr -d ' ' | tr ',' '\n'; }
lifetime() { # chain.pem -> notAfter - notBefore in seconds
	python3 - "$1" <<'PY'
import subprocess, sys
from datetime import datetime
out = subprocess.run(["openssl", "x509", "-in", sys.argv[1], "-noout", "-startdate", "-enddate"],
                     capture_output=True, text=True).stdout.split("\n")
f = lambda s: datetime.strptime(s.split("=", 1)[1], "%b %d %H:%M:%S %Y %Z")
print(int((f(out[1]) - f(out[0])).total_seconds()))
PY
}

"$fleetctl" pool create pool-a --owner ops --state-dir "$work/state" >/dev/null
"$fleetctl" pool create pool-x --owner security-team --join-attestors x509pop --state-dir "$work/state" >/dev/null

# post FILE -> HTTP status (the body in resp.json): a request fleet-join
# would not send, as an attacker sends it.
post() { curl -s -o resp.json -w '%{http_code}' --cacert tls/fleetd.crt -H 'Content-Type: application/json' -X POST --data-binary @"$1" "$url${2:-/v1/join}"; }
# posted NAME LABEL FILE: a hand-made request, denied with LABEL counted once
# and the store untouched.
posted() {
	local before snap code
	before=$(metric "$2")
	snap=$(snapshot)
	code=$(post "$3" "${4:-}")
	[ "$code" = 403 ] && [ "$(metric "$2")" = $((before + 1)) ] && [ "$(snapshot)" = "$snap" ] &&
		ok "$1: denied, $2" || fail "$1: HTTP $code, $2 $(metric "$2") (was $before)"
}
# forge_x509pop NODE_ID LEAF.pem KEY.pem > request: x509pop evidence signed
# by KEY whatever it is, for the refusals fleet-join checks before it sends
# (lib/join_evidence.h's layout; ES256 from openssl's DER signature).
forge_x509pop() {
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=forged \
		-keyout forged.key -outform DER -out forged.csr 2>/dev/null
	python3 - "$1" "$2" "$3" <<'PY'
import base64, hashlib, json, subprocess, sys, time
node, leaf, key = sys.argv[1:4]
b = lambda x: base64.urlsafe_b64encode(x).decode().rstrip("=")
csr = open("forged.csr", "rb").read()
der = subprocess.run(["openssl", "x509", "-in", leaf, "-outform", "DER"], capture_output=True).stdout
ms = int(time.time() * 1000)
msg = b"x509pop\0" + hashlib.sha256(csr).digest() + bytes([len(node)]) + node.encode() + ms.to_bytes(8, "big")
sig = subprocess.run(["openssl", "dgst", "-sha256", "-sign", key], input=msg, capture_output=True).stdout
def ints(d):  # SEQUENCE { INTEGER r, INTEGER s }
    i, out = 2 if d[1] < 0x80 else 3, []
    for _ in range(2):
        n = d[i + 1]; out.append(int.from_bytes(d[i + 2:i + 2 + n], "big")); i += 2 + n
    return out
r, s = ints(sig)
ev = {"v": 1, "nodeId": node, "chain": [b(der)], "clientTime": ms, "sig": b(r.to_bytes(32, "big") + s.to_bytes(32, "big"))}
print(json.dumps({"v": 1, "attestor": "x509pop", "attestation": b(json.dumps(ev, separators=(",", ":")).encode()),
                  "csr": b(csr), "role": "node"}, separators=(",", ":")))
PY
}

# mkreq CSR.der TOKEN-FILE|- ATTESTOR ATTESTATION-TEXT|- > request
mkreq() {
	python3 - "$@" <<'PY'
import base64, json, sys
csr, tok, att, ev = sys.argv[1:5]
b = lambda x: base64.urlsafe_b64encode(x).decode().rstrip("=")
r = {"v": 1, "attestor": att}
if tok != "-":
    r["token"] = open(tok).read().strip()
if ev != "-":
    r["attestation"] = b(ev.encode())
r["csr"] = b(open(csr, "rb").read())
r["role"] = "node"
print(json.dumps(r, separators=(",", ":")))
PY
}
# forge_renew KEY LEAF.pem > request: a renewal signed by KEY.
forge_renew() {
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=forged \
		-keyout forged.key -outform DER -out forged.csr 2>/dev/null
	python3 - "$1" "$2" <<'PY'
import base64, hashlib, json, subprocess, sys
key, leaf = sys.argv[1:3]
b = lambda x: base64.urlsafe_b64encode(x).decode().rstrip("=")
csr = open("forged.csr", "rb").read()
der = subprocess.run(["openssl", "x509", "-in", leaf, "-outform", "DER"], capture_output=True).stdout
msg = b"renew\0" + hashlib.sha256(csr).digest() + hashlib.sha256(der).digest()
sig = subprocess.run(["openssl", "dgst", "-sha256", "-sign", key], input=msg, capture_output=True).stdout
def ints(d):
    i, out = 2 if d[1] < 0x80 else 3, []
    for _ in range(2):
        n = d[i + 1]; out.append(int.from_bytes(d[i + 2:i + 2 + n], "big")); i += 2 + n
    return out
r, s = ints(sig)
print(json.dumps({"v": 1, "cert": b(der), "csr": b(csr), "sig": b(r.to_bytes(32, "big") + s.to_bytes(32, "big"))},
                 separators=(",", ":")))
PY
}
# forge_assert KEY CERT SIGNER EPOCH MAC > attestation: a discovery assertion
# signed by KEY whatever CERT says (fleet-join assert refuses that pair).
forge_assert() {
	python3 - "$@" <<'PY'
import base64, json, subprocess, sys, time
key, cert, signer, epoch, mac = sys.argv[1:6]
b = lambda x: base64.urlsafe_b64encode(x).decode().rstrip("=")
now = int(time.time())
body = json.dumps({"v": 1, "site": "s1", "signer": signer, "epoch": int(epoch), "mac": mac,
                   "issued_at": now, "not_after": now + 600}, separators=(",", ":")).encode()
der = subprocess.run(["openssl", "x509", "-in", cert, "-outform", "DER"], capture_output=True).stdout
sig = subprocess.run(["openssl", "dgst", "-sha256", "-sign", key], input=b"discovery-assertion\0" + body,
                     capture_output=True).stdout
def ints(d):
    i, out = 2 if d[1] < 0x80 else 3, []
    for _ in range(2):
        n = d[i + 1]; out.append(int.from_bytes(d[i + 2:i + 2 + n], "big")); i += 2 + n
    return out
r, s = ints(sig)
sys.stdout.write(json.dumps({"v": 1, "assertion": b(body), "cert": b(der),
                             "sig": b(r.to_bytes(32, "big") + s.to_bytes(32, "big"))}, separators=(",", ":")))
PY
}

# ---- join-token ----------------------------------------------------------------

echo "== join-token"
tok t1 --pool pool-a --role node --uses 3
joins "a token join" -- "${J[@]}" --token-file t1 --key-out n1.key --cert-out n1.pem \
	--mac 52:54:00:00:01:01 || true
n1=$node
san=$(sans n1.pem | grep -c '^URI:' || true)
sans n1.pem | grep -qx "URI:spiffe://folly.test/node/$n1" || fail "the leaf's SPIFFE ID is not spiffe://folly.test/node/$n1"
[ "$san" = 1 ] || fail "a token join's leaf has $san URIs, want the SPIFFE ID alone"
[ "$(lifetime n1.pem)" = 86400 ] || fail "a node certificate lasts $(lifetime n1.pem) s, want 86400"
[ "$(stat -c %a n1.key)" = 600 ] || fail "the node key is mode $(stat -c %a n1.key)"
[ "$(sql "SELECT uses_left FROM join_tokens WHERE id = '$(jq -r .id tok.json)'")" = 2 ] || fail "the join did not take one use"
[ "$(joined_metric join-token)" = 1 ] || fail "fleetd_joins_total{attestor=join-token} is $(joined_metric join-token)"

refused "no token" join-token:token-missing -- join --server "$url" --ca "$ca" --tls-ca "$tlsca" --key-out x.key --cert-out x.pem
python3 - "$(jq -r .id tok.json)" >t-badsecret <<'PY'
import base64, os, sys
raw = b"fjt1" + sys.argv[1].encode() + os.urandom(32)
print(base64.urlsafe_b64encode(raw).decode().rstrip("="))
PY
refused "a wrong secret" join-token:token-secret -- "${J[@]}" --token-file t-badsecret --key-out x.key --cert-out x.pem
python3 >t-unknown <<'PY'
import base64, os
raw = b"fjt1" + b"a" * 26 + os.urandom(32)
print(base64.urlsafe_b64encode(raw).decode().rstrip("="))
PY
refused "an unknown token" join-token:token-unknown -- "${J[@]}" --token-file t-unknown --key-out x.key --cert-out x.pem
tok t-rev --pool pool-a --role node
"$fleetctl" token revoke "$(tokid)" --state-dir "$work/state" >/dev/null
refused "a revoked token" join-token:token-revoked -- "${J[@]}" --token-file t-rev --key-out x.key --cert-out x.pem
tok t-once --pool pool-a --role node --uses 1
joins "a one-use token" -- "${J[@]}" --token-file t-once --key-out x.key --cert-out x.pem || true
refused "a spent token" join-token:token-used-up -- "${J[@]}" --token-file t-once --key-out x.key --cert-out x.pem
tok t-site --pool pool-a --role site --site s1 --uses 4
refused "a site token as a node" join-token:token-role -- "${J[@]}" --token-file t-site --key-out x.key --cert-out x.pem
mkdir -p other && "$fleetctl" join init --state-dir "$work/other" >/dev/null
printf 'sixty-two bytes that are not a join token at all, not fjt1....' |
	"$seal_tool" <(openssl pkey -pubin -in state/join/seal.pub -outform DER) join-token >t-notatoken
refused "a sealing that holds no token" join-token:token-malformed -- "${J[@]}" --token-file t-notatoken --key-out x.key --cert-out x.pem
refused "a token sealed to another key" join-token:token-seal -- join --server "$url" --ca "$ca" --tls-ca "$tlsca" \
	--seal-pub other/join/seal.pub --token-file t-unknown --key-out x.key --cert-out x.pem
tok t-mac --pool pool-a --role node --expect-mac 52:54:00:00:02:02
refused "expect: another MAC" join-token:expect-mac -- "${J[@]}" --token-file t-mac --mac 52:54:00:00:02:03 --key-out x.key --cert-out x.pem
joins "expect: the MAC" -- "${J[@]}" --token-file t-mac --mac 52:54:00:00:02:02 --key-out x.key --cert-out x.pem || true
U1=11111111-2222-3333-4444-555555555555
tok t-uuid --pool pool-a --role node --expect-product-uuid $U1 --uses 2
refused "expect: another product UUID" join-token:product-uuid-mismatch -- "${J[@]}" --token-file t-uuid \
	--product-uuid 11111111-2222-3333-4444-000000000000 --key-out x.key --cert-out x.pem
joins "expect: the product UUID" -- "${J[@]}" --token-file t-uuid --product-uuid $U1 --key-out u1.key --cert-out u1.pem || true
nu1=$node
[ "$(sql "SELECT node_id FROM node_bindings WHERE kind = 'product-uuid' AND subject = '$U1'")" = "$nu1" ] ||
	fail "the expected product UUID is not bound to $nu1"
refused "the bound UUID again, no reclaim" join-token:reclaim-not-allowed -- "${J[@]}" --token-file t-uuid \
	--product-uuid $U1 --key-out x.key --cert-out x.pem
tok t-reclaim --pool pool-a --role node --expect-product-uuid $U1 --allow-reclaim
joins "the bound UUID with reclaim" -- "${J[@]}" --token-file t-reclaim --product-uuid $U1 --key-out u1b.key --cert-out u1b.pem || true
[ "$node" = "$nu1" ] || fail "a reclaim made node $node, not $nu1"
[ "$(sql "SELECT generation FROM nodes WHERE id = '$nu1'")" = 2 ] || fail "a reclaim did not raise the generation"
[ -n "$(sql "SELECT revoked_at FROM node_certs WHERE node_id = '$nu1' AND generation = 1 AND revoked_at IS NOT NULL")" ] ||
	fail "a reclaim did not revoke the older certificate"
# A reclaim token that does not expect the UUID: the claim alone takes over nothing.
tok t-claimonly --pool pool-a --role node --allow-reclaim
joins "a reclaim token, the UUID only claimed" -- "${J[@]}" --token-file t-claimonly --product-uuid $U1 --key-out x.key --cert-out x.pem || true
[ "$node" != "$nu1" ] && [ "$(sql "SELECT node_id FROM node_bindings WHERE subject = '$U1'")" = "$nu1" ] ||
	fail "a claimed UUID reclaimed $nu1 or moved its binding"
tok t-x --pool pool-x --role node
"$fleetctl" pool create pool-b --owner ops --state-dir "$work/state" >/dev/null
tok t-otherpool --pool pool-b --role node --expect-product-uuid $U1 --allow-reclaim
refused "a reclaim across pools" join-token:reclaim-pool -- "${J[@]}" --token-file t-otherpool --product-uuid $U1 --key-out x.key --cert-out x.pem
tok t-siterole --pool pool-a --role site --site s1 --expect-product-uuid $U1 --allow-reclaim
refused "a reclaim as another role" join-token:reclaim-role -- "${J[@]}" --role site --token-file t-siterole --product-uuid $U1 --key-out x.key --cert-out x.pem
refused "a pool that takes only x509pop" join-token:pool-attestor -- "${J[@]}" --token-file t-x --key-out x.key --cert-out x.pem
grep -q '"reason":"pool-attestor"' hook/refusals.jsonl 2>/dev/null || sleep 1
grep '"reason":"pool-attestor"' hook/refusals.jsonl | grep -q '"poolOwner":"security-team"' ||
	fail "the on_refusal hook did not get pool-attestor with the pool's owner"
grep -q 'FLEET_REASON=join:pool-attestor' fleetd.log || fail "no security.join.refused entry with join:pool-attestor"
refused "an attestor fleetd does not run" other:attestor-unknown -- "${J[@]}" --attestor sev-snp --token-file t1 --key-out x.key --cert-out x.pem

# A request that does not decode is no decision: 400, not the signed denial.
code=$(curl -s -o resp.json -w '%{http_code}' --cacert tls/fleetd.crt -H 'Content-Type: application/json' -X POST -d '{"v":1}' "$url/v1/join")
[ "$code" = 400 ] && jq -e '.error == "join-malformed"' resp.json >/dev/null || fail "a malformed join: HTTP $code $(cat resp.json)"
# A CSR that is not one: the generic denial and csr-malformed.
python3 - "$(cat t1)" >bad-csr.json <<'PY'
import base64, json, sys
b = lambda x: base64.urlsafe_b64encode(x).decode().rstrip("=")
print(json.dumps({"v": 1, "attestor": "", "token": sys.argv[1], "csr": b(b"\x30\x03\x02\x01\x00"), "role": "node"}))
PY
posted "a CSR that is not one" join-token:csr-malformed bad-csr.json
openssl req -new -newkey rsa:2048 -nodes -subj /CN=rsa -keyout /dev/null -outform DER -out rsa.csr 2>/dev/null
mkreq rsa.csr t1 "" - >rsa-csr.json
posted "an RSA key's CSR" join-token:csr-key-type rsa-csr.json
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=bent -keyout /dev/null \
	-outform DER -out bent.csr 2>/dev/null
python3 -c 'import sys; b = bytearray(open(sys.argv[1], "rb").read()); b[-1] ^= 1; open(sys.argv[1], "wb").write(b)' bent.csr
mkreq bent.csr t1 "" - >bent-csr.json
posted "a CSR whose signature is not its key's" join-token:csr-signature bent-csr.json
jq -e '.body and .sig and .kid' resp.json >/dev/null || fail "the denial is not a signed envelope"

# Two joins at once with a one-use token: exactly one node.
tok t-race --pool pool-a --role node --uses 1
nodes_before=$(sql "SELECT count(*) FROM nodes")
rc1=0 rc2=0
"$join" "${J[@]}" --token-file t-race --key-out r1.key --cert-out r1.pem >/dev/null 2>&1 & p1=$!
"$join" "${J[@]}" --token-file t-race --key-out r2.key --cert-out r2.pem >/dev/null 2>&1 & p2=$!
wait $p1 || rc1=$?
wait $p2 || rc2=$?
if [ "$(sql "SELECT count(*) FROM nodes")" = $((nodes_before + 1)) ] && [ $((rc1 + rc2)) = 10 ]; then
	ok "two concurrent joins with a one-use token: exactly one node (exits $rc1, $rc2)"
else
	fail "two concurrent joins: exits $rc1 and $rc2, nodes $nodes_before -> $(sql "SELECT count(*) FROM nodes")"
fi

# ---- x509pop ---------------------------------------------------------------------

echo "== x509pop"
X=(join --server "$url" --ca "$ca" --tls-ca "$tlsca" --attestor x509pop)
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=stranger \
	-keyout stranger.key -out stranger.pem 2>/dev/null
refused "a certificate fleetd never issued" x509pop:cert-unknown -- "${X[@]}" --x509pop-cert stranger.pem \
	--x509pop-key stranger.key --node-id "$n1" --key-out x.key --cert-out x.pem
forge_x509pop "$nu1" n1.pem n1.key >forged-id.json
posted "another node's id" x509pop:x509pop-node-id forged-id.json
forge_x509pop "$n1" n1.pem stranger.key >forged-sig.json
posted "a proof by another key" x509pop:x509pop-signature forged-sig.json
forge_x509pop "$n1" n1.pem n1.key >forged-good.json
jq -e . forged-good.json >/dev/null || fail "the forger wrote no request"
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=pop -keyout /dev/null \
	-outform DER -out pop.csr 2>/dev/null
mkreq pop.csr - x509pop 'not the evidence' >pop-junk.json
posted "bytes that are no x509pop evidence" x509pop:x509pop-malformed pop-junk.json
refused "the role of another certificate" x509pop:x509pop-role -- "${X[@]}" --role site --x509pop-cert n1.pem \
	--x509pop-key n1.key --node-id "$n1" --key-out x.key --cert-out x.pem
refused "a certificate of an older generation" x509pop:cert-generation -- "${X[@]}" --x509pop-cert u1.pem \
	--x509pop-key u1.key --node-id "$nu1" --key-out x.key --cert-out x.pem
later5m=(env LD_PRELOAD="$faketime_lib" FAKETIME=+5m FAKETIME_DONT_FAKE_MONOTONIC=1 "$asan")
before=$(metric x509pop:x509pop-client-time)
rc=0
"${later5m[@]}" "$join" "${X[@]}" --x509pop-cert n1.pem --x509pop-key n1.key --node-id "$n1" \
	--key-out x.key --cert-out x.pem >/dev/null 2>&1 || rc=$?
[ "$rc" = 10 ] && [ "$(metric x509pop:x509pop-client-time)" = $((before + 1)) ] &&
	ok "a proof made 5 minutes ahead: denied, x509pop:x509pop-client-time" ||
	fail "a proof made 5 minutes ahead: exit $rc, x509pop-client-time not counted"
cp n1.pem n1-gen1.pem && cp n1.key n1-gen1.key
joins "a current certificate re-joins in place" -- "${X[@]}" --x509pop-cert n1.pem --x509pop-key n1.key \
	--node-id "$n1" --key-out n1.key --cert-out n1.pem || true
[ "$node" = "$n1" ] || fail "x509pop joined as $node, not $n1"
[ "$(sql "SELECT generation FROM nodes WHERE id = '$n1'")" = 2 ] || fail "x509pop did not raise $n1's generation"
refused "the replaced certificate" x509pop:cert-generation -- "${X[@]}" --x509pop-cert n1-gen1.pem \
	--x509pop-key n1-gen1.key --node-id "$n1" --key-out x.key --cert-out x.pem
# The same proof sent twice (a captured request): replayed.
"$join" "${X[@]}" --x509pop-cert n1.pem --x509pop-key n1.key --node-id "$n1" --key-out x.key \
	--cert-out x.pem --dump-request replay.json >/dev/null 2>&1 || true
if [ -s replay.json ]; then
	before=$(metric x509pop:x509pop-replayed)
	code=$(curl -s -o resp.json -w '%{http_code}' --cacert tls/fleetd.crt -H 'Content-Type: application/json' -X POST --data-binary @replay.json "$url/v1/join")
	[ "$code" = 403 ] && [ "$(metric x509pop:x509pop-replayed)" = $((before + 1)) ] ||
		fail "a replayed x509pop proof: HTTP $code, x509pop-replayed not counted"
	ok "a replayed x509pop proof: x509pop-replayed"
	cp x.pem n1.pem && cp x.key n1.key
else
	fail "fleet-join --dump-request wrote nothing"
fi
# A site node (for discovery below) and the x509pop pool.
joins "a site node" -- "${J[@]}" --role site --token-file t-site --key-out s1.key --cert-out s1.pem || true
s1=$node
sans s1.pem | grep -qx "URI:spiffe://folly.test/site/$s1" || fail "the site node's SPIFFE ID"

# ---- provisioned ------------------------------------------------------------------

echo "== provisioned"
P=(join --server "$url" --ca "$ca" --tls-ca "$tlsca" --seal-pub state/join/seal.pub --attestor provisioned)
U2=22222222-2222-3333-4444-555555555555
tok tp-multi --pool pool-a --role provisioned --expect-product-uuid $U2 --uses 2
refused "a token for two machines" provisioned:not-single-use -- "${P[@]}" --token-file tp-multi --product-uuid $U2 --key-out x.key --cert-out x.pem
tok tp-unbound --pool pool-a --role provisioned
refused "no product UUID claimed" provisioned:no-product-uuid -- "${P[@]}" --token-file tp-unbound --key-out x.key --cert-out x.pem
refused "bound to nothing" provisioned:unbound -- "${P[@]}" --token-file tp-unbound --product-uuid $U2 --key-out x.key --cert-out x.pem
tok tp-u2 --pool pool-a --role provisioned --expect-product-uuid $U2
refused "another machine's UUID" provisioned:product-uuid-mismatch -- "${P[@]}" --token-file tp-u2 --product-uuid $U1 --key-out x.key --cert-out x.pem
refused "a provisioned site" provisioned:provisioned-role -- "${P[@]}" --role site --token-file tp-u2 --product-uuid $U2 --key-out x.key --cert-out x.pem
joins "a provider bootstrap: a new node" -- "${P[@]}" --token-file tp-u2 --product-uuid $U2 --key-out p2.key --cert-out p2.pem || true
np2=$node
tok tp-target --pool pool-a --role provisioned --node "$nu1"
joins "a deploy: the target re-keyed" -- "${P[@]}" --token-file tp-target --product-uuid $U1 --key-out u1c.key --cert-out u1c.pem || true
[ "$node" = "$nu1" ] || fail "the provisioned target joined as $node, not $nu1"
[ "$(sql "SELECT generation FROM nodes WHERE id = '$nu1'")" = 3 ] || fail "re-keying did not raise $nu1's generation"
tok tp-elsewhere --pool pool-a --role provisioned --node "$n1" --expect-product-uuid $U2
refused "a deploy of one node with another's UUID" provisioned:bound-elsewhere -- "${P[@]}" --token-file tp-elsewhere --product-uuid $U2 --key-out x.key --cert-out x.pem
tok tp-target2 --pool pool-a --role provisioned --node "$nu1"
refused "the target's UUID differs" provisioned:product-uuid-mismatch -- "${P[@]}" --token-file tp-target2 --product-uuid $U2 --key-out x.key --cert-out x.pem

# ---- discovery ----------------------------------------------------------------------

echo "== discovery"
epoch=$("$fleetctl" site lease s1 "$s1" --json --state-dir "$work/state" 2>/dev/null | jq -r .epoch)
M=52:54:00:00:0d:01
D=(join --server "$url" --ca "$ca" --tls-ca "$tlsca" --seal-pub state/join/seal.pub --attestor discovery --role ramdisk)
assert() { "$join" assert --key s1.key --cert s1.pem --site s1 --signer "$s1" --epoch "$epoch" --mac "$M" "$@"; }
assert >a1.json
tok td1 --pool pool-a --role discovery --site s1 --expect-mac $M
joins "a ramdisk vouched for by the boot server" -- "${D[@]}" --token-file td1 --discovery-file a1.json --mac $M \
	--key-out rd.key --cert-out rd.pem || true
lt=$(lifetime rd.pem)
[ "$lt" -le 7200 ] || fail "a ramdisk certificate lasts $lt s"
[ "$(sans rd.pem | head -n1 | cut -d/ -f1-4)" = "URI:spiffe://folly.test/ramdisk" ] || fail "the ramdisk's SPIFFE ID: $(sans rd.pem | head -n1)"
openssl x509 -in rd.pem -noout -ext subjectAltName | grep -qF ", URI:urn:bc:allowed-kinds:inventory.refresh,logs.collect,diag.*,disk.wipe,deploy.*,boot.kexec" || fail "the ramdisk certificate names no commissioning kinds"
tok td2 --pool pool-a --role discovery --site s1
refused "the same assertion again" discovery:assertion-reused -- "${D[@]}" --token-file td2 --discovery-file a1.json --mac $M --key-out x.key --cert-out x.pem
# Another assertion: its own ttl, so it is never a1's bytes again when both
# are made within one second (the same MAC at the same time is the same
# assertion, and a1 was spent).
assert --ttl 599 >a2.json
cmp -s a1.json a2.json && fail "a2 is a1"
tok td-multi --pool pool-a --role discovery --site s1 --uses 2
refused "a discovery token for two" discovery:not-single-use -- "${D[@]}" --token-file td-multi --discovery-file a2.json --mac $M --key-out x.key --cert-out x.pem
refused "a ramdisk claiming to be a node" discovery:discovery-role -- "${D[@]}" --role node --token-file td2 --discovery-file a2.json --mac $M --key-out x.key --cert-out x.pem
tok td-s2 --pool pool-a --role discovery --site s2
refused "a token for another site" discovery:discovery-site -- "${D[@]}" --token-file td-s2 --discovery-file a2.json --mac $M --key-out x.key --cert-out x.pem
refused "the asserted MAC not claimed" discovery:discovery-mac -- "${D[@]}" --token-file td2 --discovery-file a2.json --mac 52:54:00:00:0d:02 --key-out x.key --cert-out x.pem
"$join" assert --key n1.key --cert n1.pem --site s1 --signer "$n1" --epoch "$epoch" --mac "$M" >a-node.json
refused "a node that is no site node" discovery:discovery-signer -- "${D[@]}" --token-file td2 --discovery-file a-node.json --mac $M --key-out x.key --cert-out x.pem
"$join" assert --key s1.key --cert s1.pem --site s1 --signer "$s1" --epoch $((epoch + 7)) --mac "$M" >a-epoch.json
refused "another lease epoch" discovery:discovery-lease -- "${D[@]}" --token-file td2 --discovery-file a-epoch.json --mac $M --key-out x.key --cert-out x.pem
"$join" assert --key n1.key --cert n1.pem --site s1 --signer "$s1" --epoch "$epoch" --mac "$M" >a-cert.json
refused "another node's certificate" discovery:discovery-signer-cert -- "${D[@]}" --token-file td2 --discovery-file a-cert.json --mac $M --key-out x.key --cert-out x.pem
forge_assert stranger.key s1.pem "$s1" "$epoch" "$M" >a-sig.json
refused "signed by another key" discovery:discovery-signature -- "${D[@]}" --token-file td2 --discovery-file a-sig.json --mac $M --key-out x.key --cert-out x.pem
assert --issued-at $(($(date +%s) - 1200)) >a-old.json
refused "an assertion 20 minutes old" discovery:discovery-stale -- "${D[@]}" --token-file td2 --discovery-file a-old.json --mac $M --key-out x.key --cert-out x.pem
assert --product-uuid $U2 >a-uuid.json
refused "another machine's product UUID" discovery:product-uuid-mismatch -- "${D[@]}" --token-file td2 --discovery-file a-uuid.json --mac $M --product-uuid $U1 --key-out x.key --cert-out x.pem
echo 'not an assertion' >a-junk.json
refused "bytes that are no assertion" discovery:discovery-malformed -- "${D[@]}" --token-file td2 --discovery-file a-junk.json --mac $M --key-out x.key --cert-out x.pem
# The lease moves: the former holder can no longer vouch.
joins "a second site node" -- "${J[@]}" --role site --token-file t-site --key-out s2.key --cert-out s2.pem || true
s2=$node
"$fleetctl" site lease s1 "$s2" --state-dir "$work/state" >/dev/null 2>&1
refused "a fenced boot server" discovery:discovery-lease -- "${D[@]}" --token-file td2 --discovery-file a2.json --mac $M --key-out x.key --cert-out x.pem
epoch=$("$fleetctl" site lease s1 "$s1" --json --state-dir "$work/state" 2>/dev/null | jq -r .epoch)

# Approval: the join waits for the operator, across a restart of fleetd.
approval=always
write_config
restart
assert >a3.json
tok td3 --pool pool-a --role discovery --site s1
rc=0
"$join" "${D[@]}" --token-file td3 --discovery-file a3.json --mac $M --key-out rd3.key --cert-out rd3.pem \
	--max-wait 60 >out3.txt 2>err3.txt &
pj=$!
for _ in $(seq 1 50); do
	rq=$("$fleetctl" join-requests list --json --state-dir "$work/state" 2>/dev/null |
		jq -r '.join_requests[]? | select(.status == "pending") | .id' | head -n1)
	[ -n "$rq" ] && break
	sleep 0.2
done
[ -n "$rq" ] || die "no pending join request"
[ "$(sql "SELECT uses_left FROM join_tokens WHERE id = '$(tokid)'")" = 1 ] || fail "a deferral spent the token"
[ "$(sql "SELECT count(*) FROM attestation_uses WHERE attestor = 'discovery'")" = 1 ] || fail "a deferral recorded the assertion"
site_fleetd_stop >/dev/null 2>&1 || true
"$fleetctl" join-requests approve "$rq" --state-dir "$work/state" >/dev/null || fail "join-requests approve"
start
wait $pj || rc=$?
if [ "$rc" = 0 ]; then ok "a deferral answered after a restart of fleetd: joined as $(cat out3.txt)"; else fail "the approved join: exit $rc $(head -c 300 err3.txt)"; fi
assert >a4.json
tok td4 --pool pool-a --role discovery --site s1
rc=0
"$join" "${D[@]}" --token-file td4 --discovery-file a4.json --mac $M --key-out x.key --cert-out x.pem --max-wait 2 >/dev/null 2>&1 || rc=$?
[ "$rc" = 12 ] || fail "a pending join: exit $rc, want 12 after --max-wait"
pending() { "$fleetctl" join-requests list --json --state-dir "$work/state" | jq -r '.join_requests[] | select(.status == "pending") | .id' | head -n1; }
rq=$(pending)
"$fleetctl" join-requests approve "$rq" --state-dir "$work/state" >/dev/null || fail "join-requests approve"
# The approval is the machine's (site and MAC), not its key's: rebooted with
# a new key (a new fleet-join run, a new CSR), it still joins.
joins "the approved machine with a new key" -- "${D[@]}" --token-file td4 --discovery-file a4.json --mac $M --key-out rd4.key --cert-out rd4.pem || true
[ "$(sql "SELECT status FROM join_requests WHERE id = '$rq'")" = used ] || fail "the approval was not spent"
M2=52:54:00:00:0d:02
tok td5 --pool pool-a --role discovery --site s1
"$join" assert --key s1.key --cert s1.pem --site s1 --signer "$s1" --epoch "$epoch" --mac "$M2" >a5.json
rc=0
"$join" "${D[@]}" --token-file td5 --discovery-file a5.json --mac $M2 --key-out x.key --cert-out x.pem --max-wait 1 >/dev/null 2>&1 || rc=$?
[ "$rc" = 12 ] || fail "a second pending join: exit $rc"
rq=$(pending)
"$fleetctl" join-requests deny "$rq" --state-dir "$work/state" >/dev/null || fail "join-requests deny"
refused "a denied machine" discovery:discovery-denied -- "${D[@]}" --token-file td5 --discovery-file a5.json --mac $M2 --key-out x.key --cert-out x.pem
approval=never
write_config
restart

# ---- renew --------------------------------------------------------------------------

echo "== renew"
R=(renew --server "$url" --ca "$ca" --tls-ca "$tlsca")
cp n1.pem n1-before.pem
rc=0
"$join" "${R[@]}" --key n1.key --cert n1.pem >out.txt 2>err.txt || rc=$?
[ "$rc" = 0 ] && [ "$(tr -d '\n' <out.txt)" = "$n1" ] || fail "a renewal: exit $rc $(head -c 300 err.txt)"
cmp -s n1.pem n1-before.pem && fail "a renewal wrote the same certificate"
forge_renew stranger.key n1.pem >renew-forged.json
posted "a renewal by another key" renew:renew-signature renew-forged.json /v1/renew
forge_renew n1.key n1.pem >renew-good.json
[ "$(post renew-good.json /v1/renew)" = 200 ] || fail "the forger's own good renewal was not answered"
# A node renews about once a day: past JOIN_RENEW_MAX_CURRENT current
# certificates its renewals stop (a captured renewal sent again, a loop).
before=$(metric renew:renew-too-many)
for _ in 1 2 3 4 5; do
	[ "$(post renew-good.json /v1/renew)" = 403 ] && break
done
[ "$(metric renew:renew-too-many)" = $((before + 1)) ] && [ "$(sql "SELECT count(*) FROM node_certs c JOIN nodes n ON n.id = c.node_id WHERE c.node_id = '$n1' AND c.generation = n.generation AND c.revoked_at IS NULL")" = 4 ] &&
	ok "renewals stop at 4 current certificates: renew:renew-too-many" || fail "the renewal cap did not hold"
# The owner's end of a node: its certificates revoked, or the node retired.
tok t-end --pool pool-a --role node --uses 2
joins "a node to revoke" -- "${J[@]}" --token-file t-end --key-out rv.key --cert-out rv.pem || true
nrv=$node
joins "a node to retire" -- "${J[@]}" --token-file t-end --key-out rt.key --cert-out rt.pem || true
nrt=$node
tok tp-retired --pool pool-a --role provisioned --node "$nrt" --expect-product-uuid 99999999-2222-3333-4444-555555555555
"$fleetctl" node revoke "$nrv" --state-dir "$work/state" >/dev/null 2>&1 || fail "node revoke"
"$fleetctl" node retire "$nrt" --state-dir "$work/state" >/dev/null 2>&1 || fail "node retire"
refused "x509pop with a revoked certificate" x509pop:cert-revoked -- "${X[@]}" --x509pop-cert rv.pem \
	--x509pop-key rv.key --node-id "$nrv" --key-out x.key --cert-out x.pem
refused "a renewal of a revoked certificate" renew:cert-revoked -- "${R[@]}" --key rv.key --cert rv.pem
refused "x509pop for a retired node" x509pop:node-retired -- "${X[@]}" --x509pop-cert rt.pem \
	--x509pop-key rt.key --node-id "$nrt" --key-out x.key --cert-out x.pem
refused "a renewal for a retired node" renew:node-retired -- "${R[@]}" --key rt.key --cert rt.pem
refused "a deploy of a node retired after its token" provisioned:node-retired -- "${P[@]}" \
	--token-file tp-retired --product-uuid 99999999-2222-3333-4444-555555555555 --key-out x.key --cert-out x.pem
cp rd.pem rd-copy.pem
refused "a ramdisk's renewal" renew:renew-ramdisk -- "${R[@]}" --key rd.key --cert rd.pem
refused "a ramdisk re-joining by x509pop" x509pop:x509pop-role -- "${X[@]}" --role ramdisk --x509pop-cert rd.pem \
	--x509pop-key rd.key --node-id "$(sans rd.pem | head -n1 | cut -d/ -f5)" --key-out x.key --cert-out x.pem
refused "a renewal of an unknown certificate" renew:cert-unknown -- "${R[@]}" --key stranger.key --cert stranger.pem
refused "a renewal of a replaced certificate" renew:cert-generation -- "${R[@]}" --key n1-gen1.key --cert n1-gen1.pem

# ---- a node re-joins at most once per x509pop_min_interval_seconds ------------------

interval=3600
write_config
restart
refused "x509pop minutes after the last certificate" x509pop:x509pop-too-soon -- "${X[@]}" --x509pop-cert n1.pem \
	--x509pop-key n1.key --node-id "$n1" --key-out x.key --cert-out x.pem
interval=0
write_config
restart

# ---- two days later: expired certificates -----------------------------------------

echo "== two days later"
site_fleetd_env=(LD_PRELOAD="$faketime_lib" FAKETIME=+2d FAKETIME_DONT_FAKE_MONOTONIC=1 "$asan")
restart
later2d=(env LD_PRELOAD="$faketime_lib" FAKETIME=+2d FAKETIME_DONT_FAKE_MONOTONIC=1 "$asan")
tok t-short --pool pool-a --role node --ttl 3600
before=$(metric renew:renew-expired)
rc=0
"${later2d[@]}" "$join" "${R[@]}" --key p2.key --cert p2.pem >/dev/null 2>&1 || rc=$?
[ "$rc" = 10 ] && [ "$(metric renew:renew-expired)" = $((before + 1)) ] && ok "an expired renewal: denied, renew:renew-expired" ||
	fail "an expired renewal: exit $rc"
rc=0
"${later2d[@]}" "$join" "${X[@]}" --x509pop-cert p2.pem --x509pop-key p2.key --node-id "$np2" \
	--key-out p2.key --cert-out p2.pem >out.txt 2>err.txt || rc=$?
[ "$rc" = 0 ] && [ "$(tr -d '\n' <out.txt)" = "$np2" ] && ok "a certificate expired a day ago re-joins with x509pop" ||
	fail "x509pop within the grace: exit $rc $(head -c 300 err.txt)"
site_fleetd_env=(LD_PRELOAD="$faketime_lib" FAKETIME=+9d FAKETIME_DONT_FAKE_MONOTONIC=1 "$asan")
restart
later9d=(env LD_PRELOAD="$faketime_lib" FAKETIME=+9d FAKETIME_DONT_FAKE_MONOTONIC=1 "$asan")
before=$(metric x509pop:x509pop-expired)
rc=0
"${later9d[@]}" "$join" "${X[@]}" --x509pop-cert s2.pem --x509pop-key s2.key --node-id "$s2" --role site \
	--key-out x.key --cert-out x.pem >/dev/null 2>&1 || rc=$?
[ "$rc" = 10 ] && [ "$(metric x509pop:x509pop-expired)" = $((before + 1)) ] && ok "x509pop 8 days past the notAfter: denied, x509pop:x509pop-expired" ||
	fail "x509pop past the grace: exit $rc"
before=$(metric join-token:token-expired)
rc=0
"${later9d[@]}" "$join" "${J[@]}" --token-file t-short --key-out x.key --cert-out x.pem >/dev/null 2>&1 || rc=$?
[ "$rc" = 10 ] && [ "$(metric join-token:token-expired)" = $((before + 1)) ] && ok "a token past its ttl: denied, join-token:token-expired" ||
	fail "an expired token: exit $rc"
site_fleetd_env=()
restart

# ---- the pass prunes expired uses only ------------------------------------------------

echo "== prune"
python3 - state/fleetd.db <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("INSERT INTO attestation_uses VALUES ('discovery', 'expired-e2e', 1000)")
c.execute("INSERT INTO attestation_uses VALUES ('discovery', 'current-e2e', 4102444800)")
c.commit()
PY
restart # the first pass runs at start
for _ in $(seq 1 50); do
	[ -z "$(sql "SELECT 1 FROM attestation_uses WHERE subject = 'expired-e2e'")" ] && break
	sleep 0.2
done
[ -z "$(sql "SELECT 1 FROM attestation_uses WHERE subject = 'expired-e2e'")" ] || fail "the pass did not prune an expired use"
[ -n "$(sql "SELECT 1 FROM attestation_uses WHERE subject = 'current-e2e'")" ] || fail "the pass pruned a use that has not expired"
ok "the pass pruned the expired use and kept the current one"

# ---- kill -9 inside a join ----------------------------------------------------------------

echo "== kill -9 inside a join"
if [ -f "$shim" ]; then
	site_fleetd_stop >/dev/null 2>&1 || true
	killed=0 done_at=0
	for n in $(seq 1 120); do
		tok t-crash --pool pool-a --role node --uses 1
		id=$(tokid)
		rm -f arm arm.count
		site_fleetd_env=(LD_PRELOAD="$shim" FLEET_CRASH_ARM="$work/arm" "$asan")
		start
		echo "$n" >arm
		rc=0
		"$join" "${J[@]}" --token-file t-crash --key-out c.key --cert-out c.pem --timeout 5 >/dev/null 2>&1 || rc=$?
		rm -f arm
		site_fleetd_stop >/dev/null 2>&1 || true
		site_fleetd_env=()
		state=$(sql "SELECT t.uses_left, (SELECT count(*) FROM nodes WHERE token = t.id), (SELECT count(*) FROM node_certs c JOIN nodes n ON c.node_id = n.id WHERE n.token = t.id) FROM join_tokens t WHERE t.id = '$id'")
		case "$rc:$state" in
		11:"1|0|0" | 11:"0|1|1") killed=$((killed + 1)) ;;
		0:"0|1|1") done_at=$n; break ;;
		*) fail "kill at write $n (exit $rc) left token|nodes|certs = $state"; break ;;
		esac
	done
	start
	if [ "$done_at" -gt 0 ] && [ "$killed" -ge 3 ]; then
		ok "kill -9 at each of $killed writes of a join: nothing or everything; write $done_at completed it"
	else
		fail "the crash loop: $killed kills, completed at $done_at"
	fi
else
	echo "note: no crash shim ($shim): the kill -9 loop did not run"
fi

[ "$failures" -eq 0 ] || { echo "FAIL: $failures failure(s)"; exit 1; }
echo "join_e2e: every check held"
