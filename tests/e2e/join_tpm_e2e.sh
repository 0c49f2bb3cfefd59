#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# shellcheck disable=SC2015 # "check && ok || fail": ok only echoes
# join_tpm_e2e.sh: the tpm attestor over its real HTTPS endpoint (issue 14;
# policy/attestors/tpm.c, fleetd/join/join_renew.c): a real swtpm with its
# manufacturer's EK certificate, fleet-join --attestor tpm as the machine,
# and TWO fleetd processes sharing only the store and the challenge key
# behind one address: an HTTP relay hands each request to the next fleetd
# in turn, so the challenge one process sealed is answered by the other
# (spec 001: "any api replica can finish the join").
#
# Checked: both rounds admitted, the node key certified (its certificate
# names the AK: urn:bc:tpm-ak:), the EK bound to the node; a reinstall
# (a new node key, no old files) reclaims the same node; a renewal with the
# AK's certification of the next key keeps the statement; a renewal
# without it is refused key-attestation-missing (a raw request: fleet-join
# never sends one) and the store is unchanged; a second fleetd with
# another challenge key cannot finish a challenge (challenge-tag).
# Needs swtpm, openssl, curl, jq, python3 (else 77); root (fleetctl).
set -euo pipefail

src="${FLEET_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
bin="${FLEET_BINARY_DIR:-$src/build}"
skip() { echo "SKIP: $*"; exit 77; }
for tool in openssl curl jq python3 swtpm swtpm_setup swtpm_localca; do
	command -v "$tool" >/dev/null 2>&1 || skip "$tool not found"
done
[ "$(id -u)" -eq 0 ] || skip "fleetctl's join commands are root's: run as root (CI does)"

# shellcheck source=../../scripts/demo-site.sh
. "$src/scripts/demo-site.sh"
# shellcheck source=../../scripts/swtpm-env.sh
. "$src/scripts/swtpm-env.sh"
site_bins "$bin"
join="$bin/tink-attest/fleet-join"
fleetctl="$site_fleetctl"
[ -x "$join" ] || { echo "FAIL: no $join"; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/fleet-join-tpm-e2e-XXXXXX")
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	swtpm_env_stop
	if [ -n "${FLEET_KEEP_E2E:-}" ]; then echo "kept $work"; else rm -rf "$work"; fi
}
# Two TPMs of one manufacturer (one roots directory trusts both).
SWTPM_ENV_CA="$work/tpm-ca"
export SWTPM_ENV_CA
swtpm_env_start sha256 || { rc=$?; [ $rc -eq 77 ] && skip "swtpm is not usable"; exit $rc; }
trap cleanup EXIT
cd "$work"
umask 077
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }
die() {
	echo "FAIL: $*"
	for l in a.log b.log; do [ -f $l ] && tail -n 20 $l | sed "s/^/  $l: /"; done
	exit 1
}

# ---- the site: one store, one challenge key, two fleetd --------------------------

mkdir -p roots profiles state && chmod 0700 state
cp "$SWTPM_ENV_ROOTS"/*.pem roots/ # the TPM's manufacturer: its EK certificate chains here
site_tls tls
cp "$src/tests/fwsim/worker.profile.yaml" profiles/worker.yaml
printf 'version: 1\nnodes: []\n' >nodes.yaml
"$fleetctl" ca init state/ca --cn "fleetd tpm e2e CA" >/dev/null
"$fleetctl" join init --state-dir "$work/state" >/dev/null
head -c 32 /dev/urandom >challenge.key
head -c 32 /dev/urandom >other.key
chmod 0600 challenge.key other.key

# The TPM's EK hash, as fleetd computes it, for the resolve list.
ek_of_tpm() { # file -> the EK hash
	tpm2_nvread 0x01C00002 -o "$1" >/dev/null 2>&1 || die "tpm2_nvread EK certificate"
	"$fleetctl" ek hash "$1" 2>/dev/null | tail -n1 | awk '{print $NF}'
}
ek_hash=$(ek_of_tpm ek.der)
[ "${#ek_hash}" -eq 64 ] || die "fleetctl ek hash gave '$ek_hash'"
printf '# delivery manifest\n%s pool=pool-a\n' "$ek_hash" >resolve.txt
chmod 0644 resolve.txt

enroll= # the enrollment pool, when set
write_config() { # name port key
	site_fleetd_yaml "$work" "$2" >"$1.yaml"
	cat >>"$1.yaml" <<YAML
join:
  trust_domain: folly.test
  tpm:
    challenge_key: $work/$3
    resolve_file: $work/resolve.txt
    retry_after_seconds: 1
YAML
	[ -z "$enroll" ] || printf '    enrollment_pool: %s\n' "$enroll" >>"$1.yaml"
}
pa=$(site_free_port)
pb=$(site_free_port)
write_config a "$pa" challenge.key
write_config b "$pb" challenge.key
"$site_fleetd" --config a.yaml --check-config >/dev/null 2>check.err || die "check-config: $(cat check.err)"
# pids[0] is fleetd a, pids[1] fleetd b, pids[2] the relay.
start() { # name index -> its pid in pids[index], its URL in site_fleetd_url
	site_fleetd_start "$1.yaml" "$1.log" || die "fleetd $1 did not start"
	pids[$2]=$site_fleetd_pid
	site_fleetd_pid=
}
stop() { # index
	kill "${pids[$1]}" 2>/dev/null || true
	wait "${pids[$1]}" 2>/dev/null || true
}
start a 0
url_a=$site_fleetd_url
# A pool that takes only the tpm attestor (fleetd made the store).
"$fleetctl" pool create pool-a --owner root --join-attestors tpm --state-dir "$work/state" >/dev/null ||
	die "pool create"
start b 1
url_b=$site_fleetd_url

# The relay (tests/e2e/http_relay.py): one address, each request to the
# next fleetd in turn, as an HTTP load balancer in round-robin mode does:
# fleet-join keeps one connection for both rounds, and a relay of
# connections would hand both to one process.
relay_port=$(site_free_port)
python3 "$src/tests/e2e/http_relay.py" "$relay_port" tls/fleetd.crt tls/fleetd.key "$pa" "$pb" \
	>relay.log 2>&1 &
pids[2]=$!
for _ in $(seq 1 50); do
	curl -sf --cacert tls/fleetd.crt "https://127.0.0.1:$relay_port/healthz" >/dev/null && break
	sleep 0.1
done
url="https://127.0.0.1:$relay_port"
ca=state/ca/ca.crt
J=("$join" join --server "$url" --ca "$ca" --tls-ca tls/fleetd.crt --attestor tpm
	--tcti "$TPM2TOOLS_TCTI")

metric() { # url label -> the refused counter's value
	curl -sf --cacert tls/fleetd.crt "$1/metrics" |
		awk -v k="fleetd_join_refused_total{reason=\"$2\"}" '$1 == k { print $2; found=1 } END { if (!found) print 0 }'
}
joined() { # url -> fleetd_joins_total{attestor="tpm"}
	curl -sf --cacert tls/fleetd.crt "$1/metrics" |
		awk '$1 == "fleetd_joins_total{attestor=\"tpm\"}" { print $2; found=1 } END { if (!found) print 0 }'
}
sql() { python3 -c 'import sqlite3,sys; c=sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True); print("\n".join("|".join(str(x) for x in r) for r in c.execute(sys.argv[2])))' state/fleetd.db "$1"; }
uris() { openssl x509 -in "$1" -noout -ext subjectAltName 2>/dev/null | tr ',' '\n' | sed -n 's/^ *URI://p'; }

# ---- a tpm join, both rounds, across the two processes ----------------------------

"${J[@]}" --key-out node.key --cert-out node.pem >join.out 2>join.err ||
	die "tpm join: exit $? $(cat join.err)"
node=$(sql "SELECT node_id FROM node_bindings WHERE kind = 'ek' AND subject = '$ek_hash'")
[ -n "$node" ] && ok "joined as $node, the EK bound to it" || fail "no EK binding after the join"
# the join's own requests, not the readiness probe's /healthz
rounds=$(grep 'request to' relay.log | grep -v ' /healthz$' || true)
[ "$(printf '%s\n' "$rounds" | grep -c .)" -ge 2 ] &&
	grep -q "request to $pa " <<<"$rounds" && grep -q "request to $pb " <<<"$rounds" &&
	ok "round 1 and round 2 went to different fleetd processes" ||
	fail "the rounds did not reach both fleetd ($(tr '\n' ' ' <relay.log))"
grep -h "event=node-joined FLEET_NODE=$node" a.log b.log | grep -q 'FLEET_NODE_KEY=tpm' &&
	ok "the journal says the node key is the TPM's (FLEET_NODE_KEY=tpm)" ||
	fail "node-joined does not say FLEET_NODE_KEY=tpm"
total=$(( $(joined "$url_a") + $(joined "$url_b") ))
[ "$total" -eq 1 ] && ok "one join counted" || fail "joins counted: $total"
grep -q 'FLEET TPM NODE KEY' node.key && ok "the node key is the TPM's (a record, no key bytes)" ||
	fail "node.key is not a TPM key record"
aks=$(uris node.pem | grep -c '^urn:bc:tpm-ak:' || true)
first=$(uris node.pem | head -n1)
[ "$aks" -eq 1 ] && [ "$first" = "spiffe://folly.test/node/$node" ] &&
	ok "the certificate: the SPIFFE ID, then the AK's statement" ||
	fail "the certificate's URIs: $(uris node.pem | tr '\n' ' ')"

# ---- a reinstall: the same TPM, nothing kept, reclaims the node -----------------------

mkdir -p reinstall
"${J[@]}" --key-generation 5 --key-out reinstall/node.key --cert-out reinstall/node.pem \
	>reinstall.out 2>reinstall.err || die "reinstall join: exit $? $(cat reinstall.err)"
again=$(openssl x509 -in reinstall/node.pem -noout -ext subjectAltName | grep -o 'node/node_[a-z0-9]*' | head -n1)
[ "$again" = "node/$node" ] && ok "the reinstall reclaimed $node" || fail "the reinstall joined as $again"
gen=$(sql "SELECT generation FROM nodes WHERE id = '$node'")
[ "$gen" = 2 ] && ok "its generation raised to 2" || fail "generation $gen"

# ---- renewal: the AK certifies the next key; the statement stays -------------------------

statement=$(uris reinstall/node.pem | grep '^urn:bc:tpm-ak:')
"$join" renew --server "$url" --ca "$ca" --tls-ca tls/fleetd.crt --key reinstall/node.key \
	--cert reinstall/node.pem --tcti "$TPM2TOOLS_TCTI" >renew.out 2>renew.err ||
	die "renew: exit $? $(cat renew.err)"
[ "$(uris reinstall/node.pem | grep '^urn:bc:tpm-ak:')" = "$statement" ] &&
	ok "the renewed certificate keeps the AK's statement" || fail "the statement was not carried forward"

# A renewal without key_attestation (no agent of ours sends one): refused.
before=$(( $(metric "$url_a" renew:key-attestation-missing) + $(metric "$url_b" renew:key-attestation-missing) ))
certs=$(sql "SELECT count(*) FROM node_certs WHERE node_id = '$node'")
openssl ecparam -name prime256v1 -genkey -noout -out soft.key 2>/dev/null
openssl req -new -key soft.key -subj /CN=x -outform DER -out soft.csr 2>/dev/null
python3 - reinstall/node.pem soft.csr >renew.json <<'PY'
import base64, json, subprocess, sys
b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()
leaf = subprocess.run(["openssl", "x509", "-in", sys.argv[1], "-outform", "DER"], capture_output=True, check=True).stdout
csr = open(sys.argv[2], "rb").read()
print(json.dumps({"v": 1, "cert": b64(leaf), "csr": b64(csr), "sig": b64(bytes(64))}, separators=(",", ":")))
PY
code=$(curl -s -o renew.ans -w '%{http_code}' --cacert tls/fleetd.crt -H 'Content-Type: application/json' \
	--data-binary @renew.json "$url/v1/renew")
after=$(( $(metric "$url_a" renew:key-attestation-missing) + $(metric "$url_b" renew:key-attestation-missing) ))
sig_refused=$(( $(metric "$url_a" renew:renew-signature) + $(metric "$url_b" renew:renew-signature) ))
# The proof is checked first: a request that proves nothing is renew-signature.
[ "$code" = 403 ] && [ "$sig_refused" -ge 1 ] && [ "$after" -eq "$before" ] &&
	ok "an unproven renewal is refused before any statement is judged" ||
	fail "unproven renewal: HTTP $code, renew-signature $sig_refused"
[ "$(sql "SELECT count(*) FROM node_certs WHERE node_id = '$node'")" = "$certs" ] &&
	ok "the refusal issued nothing" || fail "a refused renewal added a certificate"

# ---- another challenge key cannot finish a challenge ----------------------------------

stop 1
write_config b "$pb" other.key
start b 1
url_b=$site_fleetd_url
n0=$(metric "$url_a" tpm:challenge-tag)
n1=$(metric "$url_b" tpm:challenge-tag)
rc=0
"${J[@]}" --key-generation 7 --key-out x.key --cert-out x.pem >x.out 2>x.err || rc=$?
[ "$rc" -eq 10 ] && ok "a replica with another challenge key: denied" || fail "another key: exit $rc"
[ $(( $(metric "$url_a" tpm:challenge-tag) + $(metric "$url_b" tpm:challenge-tag) )) -eq $(( n0 + n1 + 1 )) ] &&
	ok "counted challenge-tag once" || fail "challenge-tag not counted"
[ ! -e x.pem ] && ok "nothing written" || fail "a certificate was written"

# ---- a second TPM ------------------------------------------------------------------

restart_both() { # both fleetd on the challenge key, the current resolve list and enroll
	stop 0
	stop 1
	write_config a "$pa" challenge.key
	write_config b "$pb" challenge.key
	start a 0
	url_a=$site_fleetd_url
	start b 1
	url_b=$site_fleetd_url
}
swtpm_env_stop
swtpm_env_start sha256 || die "the second TPM did not start"
J2=("$join" join --server "$url" --ca "$ca" --tls-ca tls/fleetd.crt --attestor tpm
	--tcti "$TPM2TOOLS_TCTI")
ek2=$(ek_of_tpm ek2.der)
[ "${#ek2}" -eq 64 ] && [ "$ek2" != "$ek_hash" ] || die "the second TPM's EK: '$ek2'"

# A list that hands the first machine's node to the second TPM: a node
# holds one EK, so the list cannot give it away.
printf '%s pool=pool-a\n%s pool=pool-a node=%s\n' "$ek_hash" "$ek2" "$node" >resolve.txt
restart_both
n=$(( $(metric "$url_a" tpm:bound-elsewhere) + $(metric "$url_b" tpm:bound-elsewhere) ))
rc=0
"${J2[@]}" --key-out t2.key --cert-out t2.pem >t2.out 2>t2.err || rc=$?
[ "$rc" -eq 10 ] && [ $(( $(metric "$url_a" tpm:bound-elsewhere) + $(metric "$url_b" tpm:bound-elsewhere) )) -eq $((n + 1)) ] &&
	ok "another TPM handed a bound node: bound-elsewhere" || fail "bound elsewhere: exit $rc"
[ -z "$(sql "SELECT node_id FROM node_bindings WHERE subject = '$ek2'")" ] &&
	ok "its EK bound to nothing" || fail "the refused EK was bound"

# Enrollment: the unlisted TPM waits for an operator, who approves; the
# agent then asks again from round 1 (a fresh challenge) and joins.
printf '%s pool=pool-a\n' "$ek_hash" >resolve.txt
"$fleetctl" pool create pool-e --owner root --join-attestors tpm --state-dir "$work/state" >/dev/null
enroll=pool-e
restart_both
"${J2[@]}" --max-wait 60 --key-out t2.key --cert-out t2.pem >t2.out 2>t2.err &
pj=$!
rq=
for _ in $(seq 1 100); do
	rq=$("$fleetctl" join-requests list --json --state-dir "$work/state" 2>/dev/null |
		jq -r '.join_requests[]? | select(.status == "pending" and .attestor == "tpm") | .id' | head -n1)
	[ -n "$rq" ] && break
	sleep 0.2
done
[ -n "$rq" ] && ok "the unknown EK waits: join request $rq" || fail "no pending tpm join request"
[ -n "$rq" ] && "$fleetctl" join-requests approve "$rq" --state-dir "$work/state" >/dev/null 2>&1
rc=0
wait $pj || rc=$?
n2=$(sql "SELECT node_id FROM node_bindings WHERE kind = 'ek' AND subject = '$ek2'")
[ "$rc" -eq 0 ] && [ -n "$n2" ] && [ "$(sql "SELECT pool FROM nodes WHERE id = '$n2'")" = pool-e ] &&
	ok "approved: joined pool-e as $n2" || fail "the approved join: exit $rc $(tail -n 3 t2.err)"
[ "$(grep -c "challenge answered" t2.err)" -ge 2 ] &&
	ok "after the wait the agent answered a fresh challenge" ||
	fail "the agent did not start again from round 1: $(tr '\n' ' ' <t2.err)"
[ "$(sql "SELECT status FROM join_requests WHERE id = '$rq'")" = used ] &&
	ok "the approval spent" || fail "the request is $(sql "SELECT status FROM join_requests WHERE id = '$rq'")"

[ "$failures" -eq 0 ] || { echo "FAIL: $failures failure(s)"; exit 1; }
echo "PASS: join_tpm_e2e"
