#!/usr/bin/env bash
# talos_fake_contract: the talosctl contract fake (tests/fakes/talosctl_fake.py)
# against the real Talos v1.13.9 machine-config JSON Schema in
# ../shared/contracts/talos, checked by an independent validator
# (tests/talos/talos_yaml.py: jsonschema's Draft202012Validator, none of the
# fake's code). Skips (77) when ../shared/contracts or Debian's python3-yaml /
# python3-jsonschema are absent.
set -uo pipefail

src=${FLEET_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
schema=${FLEET_TALOS_SCHEMA:-$src/../shared/contracts/talos/config.schema.json}
py=/usr/bin/python3
fake=$src/tests/fakes/talosctl_fake.py
helper() { "$py" "$src/tests/talos/talos_yaml.py" "$@"; }

if [ ! -f "$schema" ]; then
	echo "SKIP: no Talos schema at $schema (../shared/contracts is absent)"
	exit 77
fi
if ! $py -c 'import yaml, jsonschema' 2>/dev/null; then
	echo "SKIP: $py lacks python3-yaml or python3-jsonschema (scripts/deps.sh installs them)"
	exit 77
fi
command -v openssl >/dev/null || { echo "SKIP: no openssl"; exit 77; }
export FLEET_TALOS_SCHEMA=$schema

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

# run NAME CMD...: stdout to $work/NAME.out, stderr to $work/NAME.err, status in $rc
run() {
	local name=$1
	shift
	"$@" >"$work/$name.out" 2>"$work/$name.err"
	rc=$?
}

# expect_eq WHAT GOT WANT
expect_eq() {
	if [ "$2" == "$3" ]; then pass "$1"; else fail "$1: got [$2], want [$3]"; fi
}

# expect_fail NAME WANT_STDERR_SUBSTRING: the last run failed and said so
expect_fail() {
	if [ "$rc" -eq 0 ]; then
		fail "$1: exit 0, expected a failure"
	elif ! grep -qF -- "$2" "$work/$1.err"; then
		fail "$1: exit $rc but stderr lacks [$2]: $(head -c 600 "$work/$1.err")"
	else
		pass "$1 (exit $rc: $(head -1 <<<"$2"))"
	fi
}

get() { helper get "$1" "$2" "$3"; }

# check WHAT CMD...: CMD succeeds (its output kept in $work/check.out)
check() {
	local what=$1
	shift
	if "$@" >"$work/check.out" 2>&1; then pass "$what"; else fail "$what: $(head -c 600 "$work/check.out")"; fi
}
not() { ! "$@"; }

# ---------------------------------------------------------------- (4) secrets
secret_checks() { # FILE LABEL
	local f=$1 label=$2 d=$work/pem-$2
	expect_eq "$label: secrets file mode (talosctl writes 0600)" "$(stat -c %a "$f")" 600
	helper pem "$f" "$d" || { fail "$label: secrets bundle does not decode"; return; }
	local name org
	for name in etcd k8s k8saggregator os; do
		case $name in etcd) org="O = etcd" ;; k8s) org="O = kubernetes" ;;
		k8saggregator) org="" ;; os) org="O = talos" ;; esac
		if ! openssl x509 -noout -in "$d/$name.crt" 2>"$work/x509.err"; then
			fail "$label: certs.$name.crt is not an X.509 PEM: $(cat "$work/x509.err")"
			continue
		fi
		expect_eq "$label: certs.$name.crt subject" \
			"$(openssl x509 -noout -subject -nameopt oneline -in "$d/$name.crt" | sed 's/^subject= *//')" "$org"
		check "$label: certs.$name.crt is a CA" grep -q 'CA:TRUE' \
			<(openssl x509 -noout -ext basicConstraints -in "$d/$name.crt")
		# the key is a real private key and the certificate's own
		sed 's/ED25519 PRIVATE KEY/PRIVATE KEY/' "$d/$name.key" >"$d/$name.key.pkcs8"
		if [ "$(openssl pkey -pubout -in "$d/$name.key.pkcs8" 2>/dev/null)" == \
			"$(openssl x509 -noout -pubkey -in "$d/$name.crt")" ]; then
			pass "$label: certs.$name.key matches its certificate"
		else
			fail "$label: certs.$name.key is not the key of certs.$name.crt"
		fi
	done
	expect_eq "$label: etcd/k8s/aggregator keys are SEC1 EC, os is Ed25519" \
		"$(head -1 -q "$d/etcd.key" "$d/k8s.key" "$d/k8saggregator.key" "$d/os.key" | tr '\n' ' ')" \
		"-----BEGIN EC PRIVATE KEY----- -----BEGIN EC PRIVATE KEY----- -----BEGIN EC PRIVATE KEY----- -----BEGIN ED25519 PRIVATE KEY----- "
	expect_eq "$label: service account key is RSA-4096 (PKCS#1)" \
		"$(head -1 "$d/k8sserviceaccount.key"; openssl rsa -noout -text -in "$d/k8sserviceaccount.key" 2>/dev/null | head -1)" \
		"$(printf '%s\n%s' '-----BEGIN RSA PRIVATE KEY-----' 'Private-Key: (4096 bit, 2 primes)')"
	local k
	for k in secrets.bootstraptoken trustdinfo.token; do
		check "$label: $k is [a-z0-9]{6}.[a-z0-9]{16}" \
			grep -qE '^"[0-9a-z]{6}\.[0-9a-z]{16}"$' <(get "$f" 0 $k)
	done
	for k in cluster.id cluster.secret secrets.secretboxencryptionsecret; do
		expect_eq "$label: $k is 32 base64 bytes" "$($py -c 'import base64,json,sys
print(len(base64.b64decode(json.loads(sys.argv[1]).replace("-","+").replace("_","/"))))' \
			"$(get "$f" 0 $k)" 2>&1)" 32
	done
	expect_eq "$label: no aescbc secret next to the secretbox one" \
		"$(get "$f" 0 secrets.aescbcencryptionsecret)" "<absent>"
}

run secrets "$fake" gen secrets -o secrets.yaml
if [ $rc -eq 0 ]; then secret_checks secrets.yaml default; else fail "gen secrets: exit $rc: $(cat secrets.err)"; fi
run secrets-openssl env FAKE_TALOSCTL_CRYPTO=openssl "$fake" gen secrets -o secrets-openssl.yaml
if [ $rc -eq 0 ]; then
	secret_checks secrets-openssl.yaml openssl-cli
else
	fail "gen secrets (openssl): exit $rc: $(cat secrets-openssl.err)"
fi
run secrets-again "$fake" gen secrets -o secrets.yaml
expect_fail secrets-again 'file "secrets.yaml" already exists, use --force to overwrite'
run secrets-force "$fake" gen secrets -o secrets.yaml --force
expect_eq "gen secrets --force overwrites" "$rc" 0

# ---------------------------------------------------------------- (1) gen config
digest=ghcr.io/siderolabs/installer@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
cat >node.yaml <<EOF
machine:
  install:
    diskSelector:
      serial: S4EWNX0N123456
    image: $digest
cluster:
  token: abcdef.0123456789abcdef
---
apiVersion: v1alpha1
kind: HostnameConfig
auto: off
hostname: worker-7
EOF
gen_worker() { # NAME OUT PATCH...
	local name=$1 out=$2
	shift 2
	local patches=()
	for p in "$@"; do patches+=(--config-patch "$p"); done
	run "$name" "$fake" gen config folly https://10.0.0.1:6443 --with-secrets secrets.yaml \
		--kubernetes-version v1.34.1 --talos-version v1.13.9 \
		--install-image ghcr.io/siderolabs/installer:v1.13.9 --install-disk /dev/sda \
		"${patches[@]}" --output-types worker --output "$out" --force \
		--with-docs=false --with-examples=false
}
gen_worker gen-worker worker.yaml @node.yaml
if [ $rc -ne 0 ]; then
	fail "gen config worker: exit $rc: $(cat gen-worker.err)"
else
	expect_eq "gen config says what it wrote" "$(cat gen-worker.err)" "Created worker.yaml"
	expect_eq "documents written (v1alpha1 + HostnameConfig, as 1.13 generates)" \
		"$(helper kinds worker.yaml | tr '\n' ' ')" "v1alpha1 HostnameConfig "
	# the independent validator: the only schema error is `persist`, which the
	# real talosctl 1.13.9 writes (stability testdata) and the schema omits
	# (docgen:nodoc); everything else validates
	helper schema "$schema" worker.yaml >schema.out
	expect_eq "worker config against the real schema: only the real 'persist' departs" \
		"$(cat schema.out)" "0: (document): Additional properties are not allowed ('persist' was unexpected)"
	expect_eq "persist: true is written, as talosctl 1.13.9 writes it" "$(get worker.yaml 0 persist)" true
	helper del worker.yaml no-persist.yaml 0 persist
	check "worker config without persist validates against #/\$defs/v1alpha1.Config" \
		helper schema "$schema" no-persist.yaml
	# the validator is not vacuous: it refuses the README's known-bad value
	helper set worker.yaml disk5.yaml 0 machine.install.disk 5
	helper schema "$schema" disk5.yaml >schema3.out
	check "the independent validator refuses machine.install.disk: 5" \
		grep -qF "0: machine.install.disk: 5 is not of type 'string'" schema3.out
	# exactly the patched values, merged (not replaced) into the generated ones
	expect_eq "machine.install.diskSelector" "$(get worker.yaml 0 machine.install.diskSelector)" '{"serial": "S4EWNX0N123456"}'
	expect_eq "machine.install.image pinned by digest" "$(get worker.yaml 0 machine.install.image)" "\"$digest\""
	expect_eq "cluster.token is the node's bootstrap token" "$(get worker.yaml 0 cluster.token)" '"abcdef.0123456789abcdef"'
	expect_eq "HostnameConfig hostname" "$(get worker.yaml 1 hostname)" '"worker-7"'
	expect_eq "HostnameConfig auto" "$(get worker.yaml 1 auto)" '"off"'
	expect_eq "machine.install.disk kept (strategic merge)" "$(get worker.yaml 0 machine.install.disk)" '"/dev/sda"'
	expect_eq "machine.install.wipe kept" "$(get worker.yaml 0 machine.install.wipe)" false
	expect_eq "machine.type" "$(get worker.yaml 0 machine.type)" '"worker"'
	expect_eq "machine.token is the bundle's trustd token" "$(get worker.yaml 0 machine.token)" "$(get secrets.yaml 0 trustdinfo.token)"
	expect_eq "machine.ca.crt is the bundle's Talos CA" "$(get worker.yaml 0 machine.ca.crt)" "$(get secrets.yaml 0 certs.os.crt)"
	expect_eq "machine.ca.key is empty on a worker" "$(get worker.yaml 0 machine.ca.key)" '""'
	expect_eq "cluster.ca.crt is the bundle's Kubernetes CA" "$(get worker.yaml 0 cluster.ca.crt)" "$(get secrets.yaml 0 certs.k8s.crt)"
	expect_eq "cluster.ca.key is empty on a worker" "$(get worker.yaml 0 cluster.ca.key)" '""'
	expect_eq "cluster.id" "$(get worker.yaml 0 cluster.id)" "$(get secrets.yaml 0 cluster.id)"
	expect_eq "cluster.secret" "$(get worker.yaml 0 cluster.secret)" "$(get secrets.yaml 0 cluster.secret)"
	expect_eq "cluster.controlPlane.endpoint" "$(get worker.yaml 0 cluster.controlPlane.endpoint)" '"https://10.0.0.1:6443"'
	expect_eq "cluster.clusterName" "$(get worker.yaml 0 cluster.clusterName)" '"folly"'
	expect_eq "kubelet image follows --kubernetes-version" "$(get worker.yaml 0 machine.kubelet.image)" '"ghcr.io/siderolabs/kubelet:v1.34.1"'
	for k in cluster.aggregatorCA cluster.serviceAccount cluster.etcd cluster.secretboxEncryptionSecret; do
		expect_eq "a worker carries no $k" "$(get worker.yaml 0 $k)" "<absent>"
	done
	run gen-again "$fake" gen config folly https://10.0.0.1:6443 --with-secrets secrets.yaml \
		-t worker -o worker.yaml
	expect_fail gen-again 'file "worker.yaml" already exists, use --force to overwrite'
	run gen-stdout "$fake" gen config folly https://10.0.0.1:6443 --with-secrets secrets.yaml \
		--kubernetes-version v1.34.1 --install-disk /dev/sda --config-patch @node.yaml \
		-t controlplane -o - --with-docs=false --with-examples=false
	expect_eq "controlplane to stdout carries the CA keys" \
		"$(get gen-stdout.out 0 machine.ca.key)" "$(get secrets.yaml 0 certs.os.key)"
fi

# ---------------------------------------------------------------- (2) validate
run validate-ok "$fake" validate --config worker.yaml --mode metal --strict
expect_eq "validate --mode metal --strict passes on the worker config" "$rc $(cat validate-ok.out)" "0 worker.yaml is valid for metal mode"

helper del worker.yaml nodisk.yaml 0 machine.install.disk machine.install.diskSelector
run validate-nodisk "$fake" validate --config nodisk.yaml --mode metal --strict
expect_fail validate-nodisk "either install disk or diskSelector should be defined"
run validate-nodisk-cloud "$fake" validate --config nodisk.yaml --mode cloud --strict
expect_eq "no install disk is fine in cloud mode (metal only)" "$rc" 0

run validate-disk5 "$fake" validate --config disk5.yaml --mode metal --strict
expect_fail validate-disk5 "machine.install.disk: 5 is not of type 'string'"

helper set worker.yaml unknown.yaml 0 machine.install.bogus true
run validate-unknown "$fake" validate --config unknown.yaml --mode metal --strict
expect_fail validate-unknown "unknown keys found during decoding:
machine:
    install:
        bogus: true"

helper set worker.yaml http.yaml 0 cluster.controlPlane.endpoint '"http://10.0.0.1:6443"'
run validate-http "$fake" validate --config http.yaml --mode metal --strict
expect_fail validate-http "cluster.controlPlane.endpoint: 'http://10.0.0.1:6443' does not match '^https://'"

helper set worker.yaml ext.yaml 0 machine.install.extensions '[{"image": "ghcr.io/siderolabs/iscsi-tools:v0.1.6"}]'
run validate-warn "$fake" validate --config ext.yaml --mode metal
expect_eq "a warning alone passes without --strict" "$rc $(grep -c '^WARNING: .machine.install.extensions is deprecated' validate-warn.err)" "0 1"
run validate-strict "$fake" validate --config ext.yaml --mode metal --strict
expect_fail validate-strict "warning: .machine.install.extensions is deprecated"

# the hostname trap: a HostnameConfig patch without auto: off
sed 's/^auto: off$//' node.yaml >node-noauto.yaml
gen_worker gen-noauto worker-noauto.yaml @node-noauto.yaml
run validate-noauto "$fake" validate --config worker-noauto.yaml --mode metal
expect_fail validate-noauto "HostnameConfig: 'auto' and 'hostname' cannot be set at the same time"

run validate-noschema env FLEET_TALOS_SCHEMA="$work/absent.json" "$fake" validate --config worker.yaml --mode metal
expect_fail validate-noschema "JSON Schema is needed and was not found at $work/absent.json"

run validate-mode "$fake" validate --config worker.yaml --mode bare-metal
expect_fail validate-mode 'unknown runtime mode: "bare-metal"'

# ---------------------------------------------------------------- patches
printf 'machine:\n  install:\n    bogus: 1\n' >bad-patch.yaml
gen_worker gen-badpatch bad.yaml @bad-patch.yaml
expect_fail gen-badpatch "error parsing config JSON patch: error decoding document /v1alpha1/ (line 1): unknown keys found during decoding:"
gen_worker gen-json6902 j.yaml '[{"op": "add", "path": "/machine/install/wipe", "value": true}]'
expect_fail gen-json6902 "JSON6902 patches are not supported for multi-document machine configuration"
gen_worker gen-nopatch nopatch.yaml @absent-patch.yaml
expect_fail gen-nopatch "error parsing config JSON patch: open absent-patch.yaml: no such file or directory"

# ---------------------------------------------------------------- (3) cobra errors
for cmdline in "gen config folly https://10.0.0.1:6443 --bogus" "gen secrets --bogus" "validate --bogus"; do
	# shellcheck disable=SC2086
	run unknown-flag "$fake" $cmdline
	expect_eq "talosctl $cmdline: exit 1, first line 'unknown flag: --bogus'" \
		"$rc $(head -1 unknown-flag.err)" "1 unknown flag: --bogus"
	# talosctl's root command sets SilenceErrors and prints the bare error:
	# no cobra "Error: " prefix (cmd/talosctl/cmd/root.go Execute)
	check "talosctl $cmdline: no 'Error:' prefix" not grep -q '^Error:' unknown-flag.err
	check "talosctl $cmdline: usage follows" grep -q '^Usage:' unknown-flag.err
done
run unknown-cmd "$fake" bogus
expect_eq "unknown command: exit 1" "$rc $(head -1 unknown-cmd.err)" '1 unknown command "bogus" for "talosctl"'
run args "$fake" gen config folly
expect_eq "gen config with one argument" "$rc $(head -1 args.err)" "1 accepts 2 arg(s), received 1"
run required "$fake" validate --config worker.yaml
expect_eq "validate without --mode" "$rc $(head -1 required.err)" '1 required flag(s) "mode" not set'
run scheme "$fake" gen config folly http://10.0.0.1:6443
expect_eq "gen config refuses a non-https endpoint" "$rc $(head -1 scheme.err)" "1 the control plane endpoint URL should have scheme https://"
run version "$fake" version --client
expect_eq "version --client" "$rc $(grep -c $'^\tTag:         v1.13.9$' version.out)" "0 1"

if [ $failures -ne 0 ]; then
	echo "$failures failure(s)"
	exit 1
fi
echo "all talosctl fake checks passed"
