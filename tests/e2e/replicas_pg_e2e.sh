#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# shellcheck disable=SC2015 # "check && ok || fail": ok only echoes
# replicas_pg_e2e.sh: two fleetd replicas on one real PostgreSQL store serve
# one fleet (issue 16; fleetd/admission/sessions.h SH1-SH4, store.h SS1-SS4,
# P1). Behind one address an HTTP relay hands each request to the next
# replica in turn (as a load balancer in round-robin mode does), so
# tink-attest's three rounds - intake, answer, confirm - land on alternating
# replicas: a session one replica started is finished by the other.
#
# Checked, with real programs (fleetd x2, tink-attest, fleet-fwsim, a real
# TPM 2.0 in swtpm) and a real PostgreSQL:
#   - W is admitted across the replicas: its rounds were served by both
#     (each replica's counters), the store holds it admitted and its two
#     certificates, no provisional certificate is left unrevoked, and no
#     session row remains;
#   - kill -9 of a replica: the machine's next try is served by the other
#     (the relay skips the dead one, as a balancer's next-upstream does),
#     the dead replica's start afterwards (its orphan sweep, SS4) leaves no
#     provisional certificate unrevoked and no admitted state changed;
#   - each replica's pass runs on the shared store and writes its
#     spire-nodes.json.
# What the processes cannot show deterministically is in the unit tests on
# the same PostgreSQL: the sealed state (SH1), leases (SS2), one reaper per
# row (SS3), caps counted across replicas (SS1), and the pass lock P1
# (test_admission_sessions_shared_pg, test_store_pg).
# Needs swtpm, tpm2-tools, python3, psql and the PostgreSQL test cluster
# (FLEET_TEST_PG names its conninfo; tests/CMakeLists.txt starts it). Else
# exit 77, or fail when FLEET_REQUIRE_PG=1 (CI).
set -euo pipefail

src="${FLEET_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
bin="${FLEET_BINARY_DIR:-$src/build}"
skip() {
	if [ "${FLEET_REQUIRE_PG:-}" = 1 ]; then echo "FAIL (FLEET_REQUIRE_PG=1): $*"; exit 1; fi
	echo "SKIP: $*"; exit 77
}
for tool in swtpm swtpm_setup swtpm_localca tpm2_nvread openssl curl python3 psql; do
	command -v "$tool" >/dev/null 2>&1 || skip "$tool not found"
done
conninfo_file="${FLEET_TEST_PG:-}"
[ -n "$conninfo_file" ] && [ -f "$conninfo_file" ] || skip "no PostgreSQL test cluster (FLEET_TEST_PG)"
conn=$(cat "$conninfo_file")
[ "$conn" != none ] || skip "the PostgreSQL test cluster could not start (Debian: postgresql)"

# shellcheck source=../../scripts/swtpm-env.sh
. "$src/scripts/swtpm-env.sh"
# shellcheck source=../../scripts/demo-site.sh
. "$src/scripts/demo-site.sh"
site_bins "$bin"
fleetctl="$site_fleetctl"

work=$(mktemp -d "${TMPDIR:-/tmp}/fleet-replicas-e2e.XXXXXX")
chmod 0755 "$work"
db="fleet_e2e_$(basename "$work" | tr -dc 'a-zA-Z0-9' | tr 'A-Z' 'a-z')"
pids=()
started=$SECONDS
cleanup() {
	local rc=$? p
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	swtpm_env_stop
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
		for l in a.log b.log relay.log w/attest.log; do
			[ -f "$work/$l" ] && tail -n 25 "$work/$l" | sed "s|^|  $l: |"
		done
		echo "FAIL: exit $rc after $((SECONDS - started)) s"
	fi
	psql "$conn" -qc "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true
	if [ -n "${FLEET_KEEP_E2E:-}" ]; then echo "kept $work"; else rm -rf -- "$work"; fi
}
trap cleanup EXIT
export SWTPM_ENV_CA="$work/manufacturer"
swtpm_env_start sha1,sha256 || { rc=$?; [ $rc -eq 77 ] && skip "swtpm is not usable"; exit $rc; }
trap cleanup EXIT
cd "$work"
umask 077

fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok: $*"; }

psql "$conn" -qc "CREATE DATABASE $db" >/dev/null || fail "CREATE DATABASE $db"
store_uri="${conn/\/postgres\?//$db?}"
q() { psql "$store_uri" -Atqc "$1"; }

# ---- the site: one store, one CA, two replicas --------------------------

mkdir -p roots profiles ca-dir && cp "$SWTPM_ENV_ROOTS"/*.pem roots/
cp "$src/tests/fwsim/worker.profile.yaml" profiles/worker.yaml
site_tls tls
mkdir -p a/state b/state && chmod 0700 a/state b/state
"$fleetctl" ca init ca-dir/ca --cn "fleetd replicas e2e CA" >/dev/null

tpm2_nvread 0x01c00002 -o ek.der 2>/dev/null
tpm2_nvread 0x01c00016 -o ek-ecc.der 2>/dev/null
ek=$("$fleetctl" ek hash ek.der)
ek_ecc=$("$fleetctl" ek hash ek-ecc.der)
serial=E2E-R-0001
cat >nodes.yaml <<YAML
version: 1
nodes:
  - name: worker-w
    serial: $serial
    status: planned
    primary_ip4: 10.0.0.21
    class: worker
    install_disk: /dev/nvme0n1
    install_disk_serial: "S4EWNX0R21"
    bmc_type: ipmi
    tpm_version: "2.0"
    amt: false
    secure_boot_expected: true
    expected_port: Ethernet21
    approved_ek_hash: $ek
    approved_ek_hash_ecc: $ek_ecc
YAML
chmod 0644 nodes.yaml

write_config() { # name port
	site_fleetd_yaml "$work" "$2" --spire fleet.e2e.test |
		sed -e "s|^state_dir: .*|state_dir: $work/$1/state|" -e "s|^ca_dir: .*|ca_dir: $work/ca-dir/ca|" \
		>"$1.yaml"
	printf 'store: "%s"\n' "$store_uri" >>"$1.yaml"
}
pa=$(site_free_port)
pb=$(site_free_port)
write_config a "$pa"
write_config b "$pb"
start() { # name index
	site_fleetd_start "$1.yaml" "$1.log" --log-target stderr || fail "fleetd $1 did not start"
	pids[$2]=$site_fleetd_pid
	site_fleetd_pid=
}
kill9() { kill -9 "${pids[$1]}" 2>/dev/null || true; wait "${pids[$1]}" 2>/dev/null || true; }
start a 0
start b 1
url_a="https://127.0.0.1:$pa"
url_b="https://127.0.0.1:$pb"
[ "$(q "SELECT count(*) FROM schema_migrations")" -ge 9 ] &&
	ok "both replicas serve one PostgreSQL store (schema $(q "SELECT max(version) FROM schema_migrations"))" ||
	fail "the store was not migrated"

# The relay (tests/e2e/http_relay.py): one address, each request to the
# next replica in turn, as an HTTP load balancer in round-robin mode does.
# (An L4 relay that closed idle connections made the crossing depend on the
# TPM's speed: on a quiet machine all three rounds came within its idle
# window, on one connection, to one replica.)
relay_port=$(site_free_port)
python3 "$src/tests/e2e/http_relay.py" "$relay_port" tls/fleetd.crt tls/fleetd.key "$pa" "$pb" \
	>relay.log 2>&1 &
pids[2]=$!
url="https://127.0.0.1:$relay_port"
for _ in $(seq 1 50); do
	python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1]))).close()' \
		"$relay_port" 2>/dev/null && break
	sleep 0.1
done

metric() { # url series -> value (0 when absent)
	curl -sf --cacert tls/fleetd.crt "$1/metrics" | awk -v s="$2" '$1 == s { v = $2 } END { print v + 0 }'
}
rounds() { # url -> intake answer confirm counts (any outcome)
	curl -sf --cacert tls/fleetd.crt "$1/metrics" | awk '
		index($1, "fleetd_intake_total{") == 1 { i += $2 }
		index($1, "fleetd_answer_total{") == 1 { a += $2 }
		index($1, "fleetd_confirm_total{") == 1 { c += $2 }
		END { printf "%d %d %d\n", i, a, c }'
}

site_machine w "$serial" Ethernet21 52:54:00:00:00:21
site_boot w
attest() { # -> tink-attest's exit status
	"$site_tink" --url "$url" --ca tls/fleetd.crt --tcti "$TPM2TOOLS_TCTI" \
		--sysfs-root w/sys --lldp-file w/lldp.json --eventlog w/boot.log \
		--out-dir w/out --attempts 4 >>w/attest.log 2>&1
}

# ---- 1. one admission, its rounds on alternating replicas ---------------

attest || fail "tink-attest through the relay exited $?"
[ -s w/out/lak.pem ] && [ -s w/out/ldevid.pem ] && ok "tink-attest admitted worker-w through the relay" ||
	fail "no certificates in w/out"
read -r ia aa ca <<<"$(rounds "$url_a")"
read -r ib ab cb <<<"$(rounds "$url_b")"
echo "   rounds served: a intake=$ia answer=$aa confirm=$ca; b intake=$ib answer=$ab confirm=$cb"
{ [ "$ia" -ge 1 ] && [ $((ab + cb)) -ge 1 ]; } || { [ "$ib" -ge 1 ] && [ $((aa + ca)) -ge 1 ]; } &&
	ok "a session one replica started was finished by the other" ||
	fail "the rounds did not cross replicas"
[ "$(q "SELECT state FROM devices WHERE name = 'worker-w'")" = admitted ] &&
	ok "the shared store holds worker-w admitted" || fail "worker-w is $(q "SELECT state FROM devices WHERE name = 'worker-w'")"
[ "$(q "SELECT count(*) FROM certificates c JOIN devices d ON d.id = c.device_id WHERE d.name = 'worker-w' AND c.revoked_at IS NULL")" = 2 ] &&
	ok "its two certificates recorded once" || fail "certificates: $(q "SELECT count(*) FROM certificates c JOIN devices d ON d.id = c.device_id WHERE d.name = 'worker-w' AND c.revoked_at IS NULL")"
[ "$(q "SELECT count(*) FROM provisional_certs WHERE revoked_at IS NULL")" = 0 ] &&
	ok "no provisional certificate left unrevoked" || fail "provisional certificates left"
[ "$(q "SELECT count(*) FROM admission_sessions")" = 0 ] && ok "no session row left (the confirm ended it)" ||
	fail "session rows left: $(q "SELECT count(*) FROM admission_sessions")"
crossed=$(grep -c 'request to' relay.log)
[ "$crossed" -ge 3 ] && ok "$crossed requests through the relay" || fail "only $crossed requests"

# ---- 2. kill -9 of a replica; the machine's next try on the other --------

kill9 0
rm -f w/out/*
attest || fail "tink-attest with replica A dead exited $?"
[ -s w/out/lak.pem ] && ok "with A killed (-9), the machine was admitted again (the relay passes its requests to B)" ||
	fail "not admitted with A dead"
start a 0
[ "$(q "SELECT count(*) FROM provisional_certs WHERE revoked_at IS NULL")" = 0 ] &&
	ok "no provisional certificate left unrevoked after the kill" || fail "provisional certificates left after the kill"

# ---- 3. the pass: one replica at a time (P1) -----------------------------

for _ in $(seq 1 100); do
	oa=$(metric "$url_a" 'fleetd_pass_total{result="ok"}')
	ob=$(metric "$url_b" 'fleetd_pass_total{result="ok"}')
	[ $((oa + ob)) -ge 2 ] && break
	sleep 0.1
done
[ $((oa + ob)) -ge 2 ] && ok "passes ran on the replicas ($oa on A, $ob on B, each at its start)" ||
	fail "passes: $oa on A, $ob on B"
[ -s a/state/spire-nodes.json ] && ok "A's pass wrote spire-nodes.json" || fail "no spire-nodes.json from A"
python3 - a/state/spire-nodes.json <<'PY' && ok "spire-nodes.json is a document of the format" || fail "spire-nodes.json"
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if isinstance(d.get("eligible"), list) else 1)
PY
[ "$(q "SELECT state FROM devices WHERE name = 'worker-w'")" = admitted ] &&
	ok "worker-w still admitted after the kill and both restarts" || fail "worker-w changed"

echo "PASS: replicas_pg_e2e ($((SECONDS - started)) s)"
