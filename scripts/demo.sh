#!/usr/bin/env bash
# The main job of the README: fleetd admitting machines, for real, on this
# machine. fleetd runs with the nodes-file inventory and a fresh identity
# CA behind real HTTPS; each machine is a real TPM 2.0 (swtpm) booted by the
# firmware simulator, and runs the real tink-attest.
#
#   machine A: planned, its EKs approved in the nodes file -> admitted
#              (three rounds: intake, answer, confirm; LAK + LDevID issued)
#   machine B: planned, same manufacturer, but its EK is not the approved
#              one -> refused, journaled, the binding untouched
#   machine C: a serial the inventory does not know -> a pending claim
#
# Then it prints what an operator looks at: the verdicts, the device, the
# claim, fleetd's metrics. Installs its own dependencies and builds first.
# scripts/evidence-walk.sh is the same evidence checked step by step with
# fleetctl and tpm2-tools, without the daemon.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# FLEET_DEMO_BUILD_DIR: run against binaries already built there (the e2e
# test does); otherwise install dependencies and build first.
b="${FLEET_DEMO_BUILD_DIR:-}"
if [ -z "$b" ]; then
  ./scripts/deps.sh
  cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build build -j"$(nproc)" >/dev/null
  b="$root/build"
fi
fleetd="$b/fleetd/fleetd"
fleetctl="$b/fleetctl/fleetctl"
fwsim="$b/tests/fleet-fwsim"
tink="$b/tink-attest/tink-attest"

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
show() { printf '$ %s\n' "$*" >&2; "$@"; }

# shellcheck source=swtpm-env.sh
. "$root/scripts/swtpm-env.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/fleetd-demo.XXXXXX")
fleetd_pid=
cleanup() {
  [ -n "$fleetd_pid" ] && kill "$fleetd_pid" 2>/dev/null && wait "$fleetd_pid" 2>/dev/null
  swtpm_env_stop
  [ -n "${FLEET_KEEP_DEMO:-}" ] || rm -rf -- "$work"
}
export SWTPM_ENV_CA="$work/manufacturer"   # one TPM manufacturer for A and B
start_tpm() { swtpm_env_start sha1,sha256; trap cleanup EXIT; }
cd "$work"

# A machine's sysfs, LLDP neighbour and firmware boot, as HookOS sees them.
machine() { # name serial port
  mkdir -p "$1/sys/class/dmi/id" "$1/sys/class/net/eth0" "$1/out"
  echo "$2" > "$1/sys/class/dmi/id/product_serial"
  echo "4c4c4544-0000-1000-8000-$(printf '%012d' "${#2}")" > "$1/sys/class/dmi/id/product_uuid"
  echo "fleetd-sim-1.0" > "$1/sys/class/dmi/id/bios_version"
  echo "52:54:00:00:00:0${#1}" > "$1/sys/class/net/eth0/address"
  ln -sfn /dev/null "$1/sys/class/net/eth0/device"
  cat > "$1/lldp.json" <<JSON
{"lldp":{"interface":{"eth0":{"via":"LLDP","chassis":{"leaf-1":{"id":{"type":"mac","value":"aa:bb:cc:00:00:01"}}},"port":{"id":{"type":"ifname","value":"$3"}}}}}}
JSON
  "$fwsim" --events "$root/tests/fwsim/worker.events.yaml" --out "$1/boot.log"
}
attest() { # name -> tink-attest's exit status
  set +e
  show "$tink" --url "https://127.0.0.1:$port" --ca tls/fleetd.crt --sysfs-root "$1/sys" \
    --lldp-file "$1/lldp.json" --eventlog "$1/boot.log" --out-dir "$1/out" --attempts 3
  local rc=$?
  set -e
  return "$rc"
}

step "1. Machine A and machine B come from one TPM manufacturer"
start_tpm
tpm2_nvread 0x01c00002 -o a-ek.der 2>/dev/null
tpm2_nvread 0x01c00016 -o a-ek-ecc.der 2>/dev/null
a_ek=$("$fleetctl" ek hash a-ek.der)
a_ek_ecc=$("$fleetctl" ek hash a-ek-ecc.der)
echo "machine A: ek_hash $a_ek"
echo "           ek_hash_ecc $a_ek_ecc"
mkdir -p roots && cp "$SWTPM_ENV_ROOTS"/*.pem roots/

step "2. The operator declares both in the nodes file; fleetd starts"
# B is approved for an EK it does not have (say, the board was swapped).
other=$(printf 'b%.0s' $(seq 64))
cat > nodes.yaml <<YAML
version: 1
nodes:
  - name: worker-a
    serial: DEMO-A-0001
    status: planned
    primary_ip4: 10.0.0.11
    class: worker
    install_disk: /dev/nvme0n1
    install_disk_serial: "S4EWNX0R111"
    bmc_type: ipmi
    tpm_version: "2.0"
    amt: false
    secure_boot_expected: true
    expected_port: Ethernet11
    approved_ek_hash: $a_ek
    approved_ek_hash_ecc: $a_ek_ecc
  - name: worker-b
    serial: DEMO-B-0002
    status: planned
    primary_ip4: 10.0.0.12
    class: worker
    install_disk: /dev/nvme0n1
    install_disk_serial: "S4EWNX0R222"
    bmc_type: ipmi
    tpm_version: "2.0"
    amt: false
    secure_boot_expected: true
    expected_port: Ethernet12
    approved_ek_hash: $other
    approved_ek_hash_ecc: $other
YAML
chmod 0644 nodes.yaml
mkdir -p profiles tls state && chmod 0700 state
cp "$root/tests/fwsim/worker.profile.yaml" profiles/worker.yaml
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
  -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
  -keyout tls/fleetd.key -out tls/fleetd.crt 2>/dev/null
show "$fleetctl" ca init state/ca --cn "fleetd demo identity CA"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > fleetd.yaml <<YAML
listen:
  address: 127.0.0.1
  port: $port
tls:
  cert: $work/tls/fleetd.crt
  key: $work/tls/fleetd.key
state_dir: $work/state
roots_dir: $work/roots
ca_dir: $work/state/ca
profiles_dir: $work/profiles
classes:
  worker: worker.yaml
inventory:
  kind: file
  file:
    path: $work/nodes.yaml
YAML
"$fleetd" --config fleetd.yaml > fleetd.log 2>&1 &
fleetd_pid=$!
for _ in $(seq 1 50); do
  curl -sf --cacert tls/fleetd.crt "https://127.0.0.1:$port/healthz" >/dev/null && break
  sleep 0.1
done
curl -sf --cacert tls/fleetd.crt "https://127.0.0.1:$port/healthz" >/dev/null ||
  { cat fleetd.log; echo "demo: fleetd did not start" >&2; exit 1; }
echo "fleetd is serving on https://127.0.0.1:$port"

step "3. Machine A boots HookOS: tink-attest proves it with its TPM"
machine a DEMO-A-0001 Ethernet11
attest a && rc=0 || rc=$?
[ "$rc" -eq 0 ] || { cat fleetd.log; echo "demo: machine A was not admitted ($rc)" >&2; exit 1; }
openssl x509 -in a/out/ldevid.pem -noout -subject -issuer -enddate

step "4. Machine B boots HookOS with an EK nobody approved"
swtpm_env_stop
start_tpm
machine b DEMO-B-0002 Ethernet12
attest b && rc=0 || rc=$?
[ "$rc" -eq 11 ] || { cat fleetd.log; echo "demo: machine B should be refused (11), got $rc" >&2; exit 1; }
echo "refused, as it must be: the nodes file approves another EK"

step "5. An unknown machine boots HookOS"
machine c DEMO-C-0003 Ethernet13
attest c && rc=0 || rc=$?
[ "$rc" -eq 10 ] || { cat fleetd.log; echo "demo: machine C should be pending (10), got $rc" >&2; exit 1; }
echo "pending: a claim for the operator, and no access"

step "6. What the operator sees"
show "$fleetctl" verdicts --state-dir "$work/state"
show "$fleetctl" device show worker-a --state-dir "$work/state"
show "$fleetctl" claims --state-dir "$work/state"
echo; echo "fleetd's journal (stderr here):"; grep -E "refused|admitted|claim" fleetd.log | tail -5 || true
echo; echo "metrics:"
curl -sf --cacert tls/fleetd.crt "https://127.0.0.1:$port/metrics" | grep -E '^fleetd_(intake|verdicts)' || true

step "Done: one machine admitted, one refused for its EK, one left pending."
