#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
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
# Machine A's owner asked for a provision (desired_action: provision), so its
# confirm goes on to install it, against contract fakes of what cannot run
# here (talosctl v1.13, the Kubernetes v1.32 API with Tinkerbell's CRDs):
# its Talos configuration rendered and checked, its bootstrap token Secret
# and its Workflow created, its code wrapped to its TPM; the configuration
# fetched once with that code; its kubelet's CSR approved once; its token
# deleted; and the device active. (Skipped, saying so, without
# ../shared/contracts, which hold the real Talos schema and CRDs.)
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
# shellcheck source=swtpm-env.sh
. "$root/scripts/swtpm-env.sh"
# The site around fleetd (TLS, the cluster's fakes, classes, machines,
# fleetd.yaml), shared with the swtpm end-to-end tests.
# shellcheck source=demo-site.sh
. "$root/scripts/demo-site.sh"
site_bins "$b"
fleetctl=$site_fleetctl
reattest=$site_reattest

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
show() { printf '$ %s\n' "$*" >&2; "$@"; }

work=$(mktemp -d "${TMPDIR:-/tmp}/fleetd-demo.XXXXXX")
cleanup() {
  site_fleetd_stop || true
  site_kube_stop
  swtpm_env_stop
  [ -n "${FLEET_KEEP_DEMO:-}" ] || rm -rf -- "$work"
}
export SWTPM_ENV_CA="$work/manufacturer"   # one TPM manufacturer for A and B
start_tpm() { swtpm_env_start sha1,sha256; trap cleanup EXIT; }
cd "$work"

# A machine's sysfs, LLDP neighbour and firmware boot, as HookOS sees them.
machine() { # name serial port
  site_machine "$1" "$2" "$3"
  site_boot "$1"
}
attest() { # name -> tink-attest's exit status
  set +e
  show "$site_tink" --url "https://127.0.0.1:$port" --ca tls/fleetd.crt --sysfs-root "$1/sys" \
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
contracts="$root/../shared/contracts"
install_demo=
if [ -d "$contracts/tinkerbell" ] && [ -f "$contracts/talos/config.schema.json" ]; then
  install_demo=1
  # the owner's request: install machine A after its admission
  python3 - nodes.yaml <<'PY'
import sys
p = sys.argv[1]
t = open(p).read().replace("    expected_port: Ethernet11\n",
                           "    expected_port: Ethernet11\n    desired_action: provision\n", 1)
open(p, "w").write(t)
PY
else
  echo "(no ../shared/contracts: the installation steps are skipped)"
fi
cp "$root/tests/fwsim/worker.profile.yaml" profiles/worker.yaml
site_tls tls
show "$fleetctl" ca init state/ca --cn "fleetd demo identity CA"
port=$(site_free_port)
if [ -n "$install_demo" ]; then
  step "2b. The cluster side: the Kubernetes API and talosctl (contract fakes)"
  site_kube_start "$work/kube" "$contracts"
  api=$site_api
  kctl() { site_kctl "$@"; }
  kapi() { site_kapi "$@"; }
  echo "the folly API (fake, Kubernetes v1.32) on $api"
  # The Tinkerbell side: the namespace, the Template fleetd's Workflows
  # name, and machine A's Hardware (its MAC is the Workflow's device_1).
  kctl seed -X POST -H 'Content-Type: application/json' -d @- > /dev/null <<JSON
{"objects": [
  {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "tinkerbell"}},
  {"apiVersion": "tinkerbell.org/v1alpha1", "kind": "Hardware",
   "metadata": {"name": "worker-a", "namespace": "tinkerbell"},
   "spec": {"interfaces": [{"dhcp": {"mac": "52:54:00:00:00:01"}}]}}
]}
JSON
  python3 -c 'import json,sys,yaml; print(json.dumps({"objects":[yaml.safe_load(open(sys.argv[1]))]}))' \
    "$root/clusters/folly/tinkerbell/talos-install-template.yaml" |
    kctl seed -X POST -H 'Content-Type: application/json' -d @- > /dev/null
  # talosctl (the fake follows talosctl v1.13.9 and validates against the
  # real schema), the worker secrets bundle, the classes pinned by digest
  site_talos "$work"
  digest="sha256:$(printf 'demo installer' | sha256sum | cut -c1-64)"
  site_classes_json classes.json "$digest" worker:worker
  site_class_inputs class-inputs.json worker
  echo "classes.json pins worker to ghcr.io/folly/talos-installer-worker@$digest"
fi
site_fleetd_yaml "$work" "$port" ${install_demo:+--provision} > fleetd.yaml
site_fleetd_start fleetd.yaml fleetd.log ||
  { cat fleetd.log; echo "demo: fleetd did not start" >&2; exit 1; }
echo "fleetd is serving on https://127.0.0.1:$port"

step "3. Machine A boots HookOS: tink-attest proves it with its TPM"
machine a DEMO-A-0001 Ethernet11
attest a && rc=0 || rc=$?
[ "$rc" -eq 0 ] || { cat fleetd.log; echo "demo: machine A was not admitted ($rc)" >&2; exit 1; }
openssl x509 -in a/out/ldevid.pem -noout -subject -issuer -enddate

if [ -n "$install_demo" ]; then
  step "3b. The owner asked for a provision: rendered, token and Workflow, code wrapped to A's TPM"
  { [ -s a/out/code ] && [ -s a/out/proof ]; } ||
    { cat fleetd.log; echo "demo: machine A got no provision" >&2; exit 1; }
  echo "tink-attest activated the code with A's TPM: a/out/code ($(wc -c < a/out/code) hex digits) and a/out/proof"
  show "$fleetctl" provisions --state-dir "$work/state"
  kapi "$api/api/v1/namespaces/kube-system/secrets" |
    python3 -c 'import json,sys; [print("secret", i["metadata"]["name"], i["type"]) for i in json.load(sys.stdin)["items"]]'
  kapi "$api/apis/tinkerbell.org/v1alpha1/namespaces/tinkerbell/workflows" |
    python3 -c 'import json,sys; [print("workflow", i["metadata"]["name"], "template", i["spec"]["templateRef"], "hardware", i["spec"]["hardwareRef"]) for i in json.load(sys.stdin)["items"]]'
  grep -E 'event=(provision-started|desired-action-cleared)' fleetd.log | tail -2 || true

  step "3c. Talos fetches its configuration with the code: once"
  code=$(cat a/out/code)
  show curl -sS --cacert tls/fleetd.crt -o a/config.yaml -w 'HTTP %{http_code}, %{size_download} bytes\n' \
    "https://127.0.0.1:$port/config?code=$code"
  again=$(curl -sS --cacert tls/fleetd.crt -o /dev/null -w '%{http_code}' "https://127.0.0.1:$port/config?code=$code")
  echo "the same code again: HTTP $again (burned)"
  [ "$again" = 410 ] || { cat fleetd.log; echo "demo: a second GET of the code was not refused" >&2; exit 1; }
  token=$(python3 -c 'import sys,yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d and d.get("cluster"):
        print(d["cluster"]["token"])' a/config.yaml)
  echo "the configuration's cluster.token: ${token%%.*}.<secret>"

  step "3d. Its kubelet asks for its first client certificate with that token"
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout a/kubelet.key \
    -out a/kubelet.csr -subj '/O=system:nodes/CN=system:node:worker-a' 2>/dev/null
  req=$(base64 -w0 a/kubelet.csr)
  curl -sS --cacert kube/ca.pem -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    -X POST "$api/apis/certificates.k8s.io/v1/certificatesigningrequests" -o /dev/null -d @- <<JSON
{"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
 "metadata": {"name": "node-csr-worker-a"},
 "spec": {"request": "$req", "signerName": "kubernetes.io/kube-apiserver-client-kubelet",
          "usages": ["digital signature", "client auth"]}}
JSON
  csr="$api/apis/certificates.k8s.io/v1/certificatesigningrequests/node-csr-worker-a"
  for _ in $(seq 1 100); do
    kapi "$csr" | grep -q '"Approved"' && break
    sleep 0.1
  done
  kapi "$csr" | grep -q '"Approved"' || { cat fleetd.log; echo "demo: fleetd did not approve the CSR" >&2; exit 1; }
  echo "fleetd approved node-csr-worker-a (system:bootstrap:${token%%.*}, CN=system:node:worker-a)"
  # what kube-controller-manager's signer does next
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout a/issued.key \
    -out a/issued.pem -days 1 -subj '/O=system:nodes/CN=system:node:worker-a' 2>/dev/null
  python3 -c 'import json,sys; print(json.dumps({"name": "node-csr-worker-a", "certificate": open(sys.argv[1]).read()}))' \
    a/issued.pem | kctl certificate -X POST -H 'Content-Type: application/json' -d @- > /dev/null
  secret="$api/api/v1/namespaces/kube-system/secrets/bootstrap-token-${token%%.*}"
  for _ in $(seq 1 100); do
    [ "$(kapi -o /dev/null -w '%{http_code}' "$secret")" = 404 ] && break
    sleep 0.1
  done
  [ "$(kapi -o /dev/null -w '%{http_code}' "$secret")" = 404 ] ||
    { cat fleetd.log; echo "demo: the token Secret was not deleted" >&2; exit 1; }
  echo "the certificate is issued: fleetd deleted bootstrap-token-${token%%.*}"
  show "$fleetctl" provisions --all --state-dir "$work/state"
  state=$("$fleetctl" device show worker-a --state-dir "$work/state" --json |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["device"]["state"])')
  echo "worker-a is $state"
  [ "$state" = active ] || { echo "demo: worker-a is not active" >&2; exit 1; }

  step "3e. An hour later: tpm-reattest re-checks the running node with its LAK"
  set +e
  show "$reattest" --url "https://127.0.0.1:$port" --ca tls/fleetd.crt --lak-cert a/out/lak.pem \
    --eventlog a/boot.log --sysfs-root a/sys --lldp-file a/lldp.json --attempts 2
  rc=$?
  set -e
  [ "$rc" -eq 0 ] || { cat fleetd.log; echo "demo: the hourly check of machine A did not pass ($rc)" >&2; exit 1; }
  echo "the hourly check passed: a fresh nonce, a LAK-signed quote of the class's PCRs and network report, the log replayed"
fi

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

if [ -n "$install_demo" ]; then
  step "Done: one machine admitted and installed (configuration fetched once, kubelet bootstrapped once, token deleted, active), one refused for its EK, one left pending."
else
  step "Done: one machine admitted, one refused for its EK, one left pending."
fi
