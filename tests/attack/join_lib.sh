# shellcheck shell=bash
# join_lib.sh: what the join attack reproducers share (sourced). Stands up
# the real fleetd with its join service over HTTPS, as tests/e2e/join_e2e.sh
# does: the CA, the sealing key, pool-a, an on_refusal hook that records
# each run. Each reproducer exits 1 when the defect it names is present
# ("DEFECT: ..."), 0 when the attack is refused, 77 when it cannot run.
set -euo pipefail
src="${FLEET_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
bin="${FLEET_BINARY_DIR:-$src/build}"
skip() { echo "SKIP: $*"; exit 77; }
for tool in openssl curl jq python3; do
	command -v "$tool" >/dev/null 2>&1 || skip "$tool not found"
done
[ "$(id -u)" -eq 0 ] || skip "fleetctl's join commands are root's"
faketime_lib=/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1
asan="ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
# shellcheck source=../../scripts/demo-site.sh
. "$src/scripts/demo-site.sh"
site_bins "$bin"
join="$bin/tink-attest/fleet-join"
fleetctl="$site_fleetctl"
[ -x "$join" ] && [ -x "$site_fleetd" ] && [ -x "$fleetctl" ] || skip "build fleetd, fleetctl and fleet-join first"

work=$(mktemp -d "${TMPDIR:-/tmp}/fleet-join-attack-XXXXXX")
cleanup() {
	site_fleetd_stop >/dev/null 2>&1 || true
	if [ -n "${FLEET_KEEP_E2E:-}" ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
cd "$work"
umask 077
defects=0
defect() { echo "DEFECT: $*"; defects=$((defects + 1)); }
held() { echo "held: $*"; }
die() { echo "ERROR: $*"; tail -n 30 fleetd.log 2>/dev/null | sed 's/^/  fleetd: /'; exit 2; }
finish() {
	[ "$defects" -eq 0 ] || { echo "FAIL: $defects defect(s) demonstrated"; exit 1; }
	echo "every attack was refused"
	exit 0
}

mkdir -p roots profiles state hook && chmod 0700 state
site_tls tls
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
	-subj "/CN=unused EK root" -keyout /dev/null -out roots/unused.pem 2>/dev/null
cp "$src/tests/fwsim/worker.profile.yaml" profiles/worker.yaml
printf 'version: 1\nnodes: []\n' >nodes.yaml
"$fleetctl" ca init state/ca --cn "fleetd join attack CA" >/dev/null
"$fleetctl" join init --state-dir "$work/state" >/dev/null
cat >hook/on-refusal <<HOOK
#!/bin/sh
printf '%s\n' "\$1" >>$work/hook/refusals.jsonl
HOOK
chmod 0755 hook/on-refusal
port=$(site_free_port)
approval=${approval:-never}
extra_join_yaml=${extra_join_yaml:-}
write_config() {
	site_fleetd_yaml "$work" "$port" >fleetd.yaml
	cat >>fleetd.yaml <<YAML
join:
  trust_domain: folly.test
  on_refusal: $work/hook/on-refusal
  discovery_approval: $approval
  discovery_retry_after_seconds: 1
$extra_join_yaml
YAML
}
write_config
site_fleetd_env=()
start() { site_fleetd_start fleetd.yaml fleetd.log || die "fleetd did not start"; }
restart() { site_fleetd_stop >/dev/null 2>&1 || true; start; }
start
url=$site_fleetd_url
# The documented pinning: --ca the identity CA alone, --tls-ca the
# connection's anchor (fleetd's TLS certificate).
ca=state/ca/ca.crt
tlsca=tls/fleetd.crt

tok() { # FILE fleetctl-token-create-args...: the sealed token into FILE
	local f=$1
	shift
	"$fleetctl" token create "$@" --state-dir "$work/state" --json >tok.json 2>tok.err ||
		die "token create $*: $(cat tok.err)"
	jq -r .sealed tok.json >"$f"
	chmod 0600 "$f"
}
tokid() { jq -r .id tok.json; }
metrics() { curl -sf --cacert tls/fleetd.crt "$url/metrics"; }
metric() {
	metrics | awk -v k="fleetd_join_refused_total{reason=\"$1\"}" '$1 == k { print $2; found=1 } END { if (!found) print 0 }'
}
sql() { python3 -c 'import sqlite3,sys; c=sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True); print("\n".join("|".join(str(x) for x in r) for r in c.execute(sys.argv[2])))' state/fleetd.db "$1"; }
J=(join --server "$url" --ca "$ca" --tls-ca "$tlsca" --seal-pub state/join/seal.pub)
X=(join --server "$url" --ca "$ca" --tls-ca "$tlsca" --attestor x509pop)
D=(join --server "$url" --ca "$ca" --tls-ca "$tlsca" --seal-pub state/join/seal.pub --attestor discovery --role ramdisk)
R=(renew --server "$url" --ca "$ca" --tls-ca "$tlsca")
sans() { openssl x509 -in "$1" -noout -ext subjectAltName 2>/dev/null | tail -n +2 | tr -d ' ' | tr ',' '\n'; }
# fj NAME args...: fleet-join; rc in $rc, the node id in $node
fj() {
	rc=0
	"$join" "$@" >out.txt 2>err.txt || rc=$?
	node=$(tr -d '\n' <out.txt)
}
post() { curl -s -o resp.json -w '%{http_code}' --cacert tls/fleetd.crt -H 'Content-Type: application/json' -X POST --data-binary @"$1" "$url${2:-/v1/join}"; }
"$fleetctl" pool create pool-a --owner ops --state-dir "$work/state" >/dev/null

# A site node s1 of site s1 holding the boot lease: $s1, s1.key, s1.pem, $epoch.
make_site() {
	tok t-site --pool pool-a --role site --site s1 --uses 4
	fj "${J[@]}" --role site --token-file t-site --key-out s1.key --cert-out s1.pem
	[ "$rc" = 0 ] || die "the site node did not join: $(cat err.txt)"
	s1=$node
	epoch=$("$fleetctl" site lease s1 "$s1" --json --state-dir "$work/state" 2>/dev/null | jq -r .epoch)
	[ -n "$epoch" ] || die "no lease"
}
# A ramdisk joined by discovery with MAC $1: $rd, rd.key, rd.pem.
make_ramdisk() {
	local mac=$1
	"$join" assert --key s1.key --cert s1.pem --site s1 --signer "$s1" --epoch "$epoch" --mac "$mac" "${@:2}" >a-rd.json
	tok td --pool pool-a --role discovery --site s1 --expect-mac "$mac"
	fj "${D[@]}" --token-file td --discovery-file a-rd.json --mac "$mac" --key-out rd.key --cert-out rd.pem
	[ "$rc" = 0 ] || die "the ramdisk did not join: $(cat err.txt)"
	rd=$node
}
