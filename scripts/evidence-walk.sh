#!/usr/bin/env bash
# The evidence walk: one machine's evidence, checked the way fleetd
# checks it, on a real TPM 2.0 (swtpm) with its own manufacturer CA.
#
#   1. the machine's EK certificates, read from TPM NV, chained to the
#      manufacturer's roots, and their ek_hash;
#   2. a firmware boot measured into the TPM (fleet-fwsim: Secure Boot on,
#      shim and GRUB) with its event log;
#   3. an attestation key quotes the PCRs over a fresh nonce; fleetctl
#      verifies the quote against the log's replay;
#   4. the class's boot-policy profile admits the log; the same profile
#      refuses a machine that booted with Secure Boot off;
#   5. the AK certifies an LDevID key; fleetd's identity CA issues the LAK
#      and LDevID certificates;
#   6. a tampered quote (another nonce) is refused.
#
# Installs its own dependencies (scripts/deps.sh) and builds first.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# FLEET_DEMO_BUILD_DIR: run against binaries already built there (the e2e
# test does); otherwise install dependencies and build first.
build="${FLEET_DEMO_BUILD_DIR:-}"
if [ -z "$build" ]; then
  ./scripts/deps.sh
  cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build build -j"$(nproc)" >/dev/null
  build="$root/build"
fi
fleetctl="$build/fleetctl/fleetctl"
fwsim="$build/tests/fleet-fwsim"

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
show() { printf '$ %s\n' "$*" >&2; "$@"; }

# shellcheck source=swtpm-env.sh
. "$root/scripts/swtpm-env.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/fleetd-demo.XXXXXX")
cleanup() { swtpm_env_stop; [ -n "${FLEET_KEEP_DEMO:-}" ] || rm -rf -- "$work"; }
# swtpm_env_start sets its own EXIT trap; ours replaces it and calls it.
start_tpm() { swtpm_env_start sha1,sha256; trap cleanup EXIT; }
start_tpm
cd "$work"
flush() { tpm2_flushcontext -t; tpm2_flushcontext -s; }

step "1. The machine's endorsement keys, as the TPM manufacturer certified them"
tpm2_nvread 0x01c00002 -o ek-rsa.der 2>/dev/null
tpm2_nvread 0x01c00016 -o ek-ecc.der 2>/dev/null
show "$fleetctl" ek show ek-rsa.der
show "$fleetctl" ek verify --roots "$SWTPM_ENV_ROOTS" ek-rsa.der
show "$fleetctl" ek verify --roots "$SWTPM_ENV_ROOTS" ek-ecc.der
echo "ek_hash     = $("$fleetctl" ek hash ek-rsa.der)   (what NetBox's approved_ek_hash must say)"
echo "ek_hash_ecc = $("$fleetctl" ek hash ek-ecc.der)"

step "2. The firmware boots and measures itself into the TPM"
show "$fwsim" --events "$root/tests/fwsim/worker.events.yaml" --out boot.log
"$fleetctl" eventlog show boot.log > boot.txt
head -n 12 boot.txt
echo "   ... ($(wc -l < boot.txt) lines; the whole list: fleetctl eventlog show)"
show "$fleetctl" eventlog replay --json boot.log > replay.json
cat replay.json; echo

step "3. An attestation key quotes the PCRs over fleetd's nonce"
nonce=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
selection=sha256:0,1,2,3,4,5,7
tpm2_createek -c ek.ctx -G rsa -u ek.pub >/dev/null; flush
tpm2_createak -C ek.ctx -c ak.ctx -G ecc -g sha256 -s ecdsa -u ak.pub -n ak.name >/dev/null; flush
tpm2_quote -c ak.ctx -l "$selection" -q "$nonce" -m quote.msg -s quote.sig -g sha256 >/dev/null; flush
cp ak.pub ak-machine-a.pub
echo "nonce: $nonce"
show "$fleetctl" quote verify --ak ak.pub --attest quote.msg --sig quote.sig --nonce "$nonce" \
  --selection "$selection" --pcrs replay.json

step "4. The class's boot policy admits what this machine booted"
show "$fleetctl" policy check --profile "$root/tests/fwsim/worker.profile.yaml" --log boot.log \
  --pcrs replay.json --bios fleetd-sim-1.0
echo
echo "The same class, a machine that booted with Secure Boot off:"
sed 's/name: SecureBoot, guid: global, data: "01"/name: SecureBoot, guid: global, data: "00"/' \
  "$root/tests/fwsim/worker.events.yaml" > insecure.events.yaml
grep -q 'data: "00"' insecure.events.yaml
swtpm_env_stop
start_tpm
"$fwsim" --events insecure.events.yaml --out insecure.log
set +e
show "$fleetctl" policy check --profile "$root/tests/fwsim/worker.profile.yaml" --log insecure.log \
  --bios fleetd-sim-1.0
rc=$?
set -e
[ "$rc" -eq 1 ] || { echo "demo: expected a refusal (exit 1), got $rc" >&2; exit 1; }

step "5. The AK certifies an LDevID key; fleetd's CA issues both certificates"
tpm2_createek -c ek.ctx -G rsa >/dev/null; flush
tpm2_createak -C ek.ctx -c ak.ctx -G ecc -g sha256 -s ecdsa -u ak.pub >/dev/null; flush
tpm2_createprimary -C o -G ecc -c srk.ctx >/dev/null; flush
tpm2_create -C srk.ctx -G ecc256:ecdsa-sha256 \
  -a 'fixedtpm|fixedparent|sensitivedataorigin|userwithauth|sign' \
  -u ldevid.pub -r ldevid.priv >/dev/null; flush
tpm2_load -C srk.ctx -u ldevid.pub -r ldevid.priv -c ldevid.ctx >/dev/null; flush
tpm2_certify -c ldevid.ctx -C ak.ctx -g sha256 -o certify.msg -s certify.sig >/dev/null; flush
show "$fleetctl" certify verify --ak ak.pub --key ldevid.pub --attest certify.msg \
  --sig certify.sig --nonce 00ff55aa
show "$fleetctl" ca init ca --cn "fleetd demo identity CA"
show "$fleetctl" ca issue ca --kind lak --key ak.pub --name worker-a --serial DEMO0001 --out lak.pem
show "$fleetctl" ca issue ca --kind ldevid --key ldevid.pub --name worker-a --serial DEMO0001 \
  --out ldevid.pem
openssl x509 -in ldevid.pem -noout -subject -issuer -dates

step "6. A replayed quote is refused"
other=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
set +e
echo "machine A's quote from step 3, presented against a new nonce:"
show "$fleetctl" quote verify --ak ak-machine-a.pub --attest quote.msg --sig quote.sig \
  --nonce "$other" --selection "$selection" --pcrs replay.json
rc=$?
set -e
[ "$rc" -eq 1 ] || { echo "demo: expected a refusal (exit 1), got $rc" >&2; exit 1; }

step "Done: one machine admitted, two refused, each for a stated reason."
