# shellcheck shell=bash
# demo-site.sh: the site around fleetd, as scripts/demo.sh and the swtpm
# end-to-end tests (tests/e2e/reattest_e2e.sh) stand it up on one machine:
# fleetd's TLS certificate, the Kubernetes API and talosctl (contract fakes,
# tests/fakes/), classes.json and class-inputs.json, a machine's sysfs, LLDP
# neighbour and firmware boot, fleetd.yaml, and fleetd itself. Source it
# (after scripts/swtpm-env.sh when the machines need a TPM), then call
# site_bins first. Nothing here prints unless it fails; the callers say what
# they do. Every path it takes is absolute unless said otherwise.
#
#   site_bins BUILD_DIR          site_fleetd, site_fleetctl, site_fwsim,
#                                site_tink, site_reattest (the built binaries)
#   site_free_port               a TCP port the kernel hands out as free
#   site_tls DIR                 DIR/fleetd.crt and DIR/fleetd.key, self-signed
#                                for 127.0.0.1 (fleetd's HTTPS, the pin)
#   site_kube_start DIR CONTRACTS
#                                the Kubernetes v1.32 API fake with Tinkerbell's
#                                CRDs (from CONTRACTS, ../shared/contracts) and a
#                                service account token; writes DIR/ca.pem,
#                                DIR/kubeconfig, DIR/sa-token; sets site_kube_pid,
#                                site_api, site_sa_token, site_kube_dir
#   site_kctl PATH [curl args]   the fake's test control, /_fake/PATH
#   site_kapi URL [curl args]    the API as fleetd's service account
#   site_kube_stop
#   site_talos DIR               site_talosctl (the talosctl fake) and the worker
#                                secrets bundle DIR/talos-secrets.yaml (0600)
#   site_classes_json FILE DIGEST CLASS:ROLE ...
#                                classes.json: each class's role, pinned to one
#                                installer image by DIGEST
#   site_class_inputs FILE CLASS ...
#                                class-inputs.json: clusters/folly's inputs, kept
#                                to the classes named
#   site_machine NAME SERIAL PORT [MAC]
#                                NAME/sys (DMI serial, uuid, bios_version
#                                fleetd-sim-1.0, eth0), NAME/lldp.json (leaf-1's
#                                PORT), NAME/out; NAME is relative to the cwd
#   site_boot NAME [EVENTS]      the firmware boot into the TPM at
#                                $TPM2TOOLS_TCTI, its log in NAME/boot.log
#                                (EVENTS: tests/fwsim/worker.events.yaml)
#   site_fleetd_yaml WORK PORT [--class NAME=FILE]... [--provision]
#                    [--spire TRUST_DOMAIN]
#                                fleetd.yaml on stdout for the layout under WORK:
#                                tls/fleetd.{crt,key}, state/ (the store; the
#                                identity CA in state/ca), roots/, profiles/,
#                                nodes.yaml (the nodes-file inventory); with
#                                --provision also classes.json, class-inputs.json,
#                                talos-secrets.yaml and kube/kubeconfig (after
#                                site_talos WORK and site_kube_start WORK/kube)
#   site_fleetd_start CONFIG LOG [fleetd args]
#                                fleetd in the background (site_fleetd_pid), its
#                                log appended to LOG; 0 once /healthz answers
#   site_fleetd_stop             SIGTERM, and its exit status (0: a clean stop)
#   site_healthz                 whether fleetd answers /healthz now
#
# The caller's EXIT trap should call site_fleetd_stop and site_kube_stop
# (and swtpm_env_stop).

site_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# shellcheck disable=SC2034 # for the callers
site_bins() {
	site_fleetd="$1/fleetd/fleetd"
	site_fleetctl="$1/fleetctl/fleetctl"
	site_fwsim="$1/tests/fleet-fwsim"
	site_tink="$1/tink-attest/tink-attest"
	site_reattest="$1/tpm-reattest/tpm-reattest"
}

site_free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# The site's TLS certificates last 100 days: tests/e2e/reattest_e2e.sh runs
# fleetd and tpm-reattest 61 days ahead (its renewal phase) against them.
site_tls() {
	mkdir -p "$1"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 100 \
		-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
		-keyout "$1/fleetd.key" -out "$1/fleetd.crt" 2>/dev/null
}

site_kube_pid=
site_kube_start() {
	local dir="$1" contracts="$2" _
	mkdir -p "$dir"
	printf 'subjectAltName=IP:127.0.0.1\n' >"$dir/srv.ext"
	(cd "$dir" &&
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key \
			-out ca.pem -days 100 -subj /CN=folly-kube-ca 2>/dev/null &&
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout srv.key \
			-out srv.csr -subj /CN=kube-apiserver 2>/dev/null &&
		openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem \
			-days 100 -extfile srv.ext 2>/dev/null) || return 1
	site_sa_token=$(openssl rand -hex 24)
	printf '%s,system:serviceaccount:tinkerbell:fleetd,uid-fleetd,"system:serviceaccounts"\n' \
		"$site_sa_token" >"$dir/tokens.csv"
	python3 "$site_root/tests/fakes/kube_apiserver_fake.py" \
		--tls-cert-file "$dir/srv.pem" --tls-private-key-file "$dir/srv.key" \
		--token-auth-file "$dir/tokens.csv" --enable-bootstrap-token-auth \
		--crd "$contracts/tinkerbell/tinkerbell.org_workflows.yaml" \
		--crd "$contracts/tinkerbell/tinkerbell.org_templates.yaml" \
		--crd "$contracts/tinkerbell/tinkerbell.org_hardware.yaml" \
		>"$dir/port" 2>"$dir/fake.log" &
	site_kube_pid=$!
	for _ in $(seq 1 100); do
		[ -s "$dir/port" ] && break
		sleep 0.1
	done
	[ -s "$dir/port" ] || { cat "$dir/fake.log" >&2; echo "demo-site: the Kubernetes API fake did not start" >&2; return 1; }
	site_api="https://127.0.0.1:$(head -n1 "$dir/port")"
	site_kube_dir="$dir"
	cat >"$dir/kubeconfig" <<KCFG
apiVersion: v1
kind: Config
clusters:
- name: folly
  cluster:
    server: $site_api
    certificate-authority: $dir/ca.pem
users:
- name: fleetd
  user:
    tokenFile: $dir/sa-token
contexts:
- name: folly
  context: {cluster: folly, user: fleetd}
current-context: folly
KCFG
	printf '%s\n' "$site_sa_token" >"$dir/sa-token"
	chmod 0600 "$dir/kubeconfig" "$dir/sa-token"
}

site_kctl() { curl -sS --cacert "$site_kube_dir/ca.pem" "$site_api/_fake/$1" "${@:2}"; }
site_kapi() { curl -sS --cacert "$site_kube_dir/ca.pem" -H "Authorization: Bearer $site_sa_token" "$@"; }

# The fake ends on SIGTERM with 143: not the caller's failure.
site_kube_stop() {
	if [ -n "$site_kube_pid" ]; then
		kill "$site_kube_pid" 2>/dev/null || true
		wait "$site_kube_pid" 2>/dev/null || true
		site_kube_pid=
	fi
}

# talosctl: the fake follows talosctl v1.13.9 and validates against the real
# schema (../shared/contracts/talos).
site_talos() {
	site_talosctl="$site_root/tests/fakes/talosctl_fake.py"
	"$site_talosctl" gen secrets -o "$1/talos-secrets.yaml" >/dev/null &&
		chmod 0600 "$1/talos-secrets.yaml"
}

site_classes_json() {
	local file="$1" digest="$2" sep="" cr
	shift 2
	{
		printf '{"version": 1, "classes": {'
		for cr in "$@"; do
			printf '%s"%s": {"role": "%s", "talos_version": "v1.13.9",\n  "image": "ghcr.io/folly/talos-installer-%s", "digest": "%s"}' \
				"$sep" "${cr%%:*}" "${cr#*:}" "${cr%%:*}" "$digest"
			sep=", "
		done
		printf '}}\n'
	} >"$file"
}

site_class_inputs() {
	local file="$1"
	shift
	python3 - "$site_root/clusters/folly/fleet/class-inputs.json" "$file" "$@" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["classes"] = {k: d["classes"][k] for k in sys.argv[3:]}
json.dump(d, open(sys.argv[2], "w"), indent=2)
PY
}

# A machine's sysfs and LLDP neighbour, as HookOS (and later the running
# node) sees them. The default MAC and uuid follow the name's and the
# serial's lengths, as the demo's machines always had them.
site_machine() { # name serial port [mac]
	local mac="${4:-52:54:00:00:00:0${#1}}"
	mkdir -p "$1/sys/class/dmi/id" "$1/sys/class/net/eth0" "$1/out"
	echo "$2" >"$1/sys/class/dmi/id/product_serial"
	echo "4c4c4544-0000-1000-8000-$(printf '%012d' "${#2}")" >"$1/sys/class/dmi/id/product_uuid"
	echo "fleetd-sim-1.0" >"$1/sys/class/dmi/id/bios_version"
	echo "$mac" >"$1/sys/class/net/eth0/address"
	ln -sfn /dev/null "$1/sys/class/net/eth0/device"
	cat >"$1/lldp.json" <<JSON
{"lldp":{"interface":{"eth0":{"via":"LLDP","chassis":{"leaf-1":{"id":{"type":"mac","value":"aa:bb:cc:00:00:01"}}},"port":{"id":{"type":"ifname","value":"$3"}}}}}}
JSON
}

# The firmware's boot: the events measured into a fresh TPM (just started
# or rebooted) and their log.
site_boot() { # name [events]
	"$site_fwsim" --events "${2:-$site_root/tests/fwsim/worker.events.yaml}" --out "$1/boot.log"
}

site_fleetd_yaml() {
	local work="$1" port="$2" provision="" spire="" classes=()
	shift 2
	while [ $# -gt 0 ]; do
		case "$1" in
		--class) classes+=("$2"); shift 2 ;;
		--provision) provision=1; shift ;;
		--spire) spire="$2"; shift 2 ;;
		*) echo "site_fleetd_yaml: unknown option $1" >&2; return 2 ;;
		esac
	done
	[ ${#classes[@]} -gt 0 ] || classes=(worker=worker.yaml)
	cat <<YAML
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
YAML
	local c
	for c in "${classes[@]}"; do
		printf '  %s: %s\n' "${c%%=*}" "${c#*=}"
	done
	cat <<YAML
inventory:
  kind: file
  file:
    path: $work/nodes.yaml
YAML
	if [ -n "$spire" ]; then
		printf 'spire:\n  trust_domain: %s\n' "$spire"
	fi
	if [ -n "$provision" ]; then
		cat <<YAML
provision:
  classes_file: $work/classes.json
  class_inputs_file: $work/class-inputs.json
  talosctl: $site_talosctl
  secrets_file: $work/talos-secrets.yaml
  kubeconfig: $work/kube/kubeconfig
  tools_image: ghcr.io/folly/fleet-tools@sha256:$(printf 'tools' | sha256sum | cut -c1-64)
  config_host: 127.0.0.1:$port
YAML
	fi
}

site_fleetd_pid=
# NAME=VALUE words fleetd is started with (env(1)), e.g. a shifted clock.
site_fleetd_env=()
site_fleetd_start() { # config log [fleetd args]
	local config="$1" log="$2" _
	shift 2
	site_fleetd_tls=$(sed -n 's/^  cert: //p' "$config" | head -n1)
	site_fleetd_url="https://127.0.0.1:$(sed -n 's/^  port: //p' "$config" | head -n1)"
	env "${site_fleetd_env[@]}" "$site_fleetd" --config "$config" "$@" >>"$log" 2>&1 &
	site_fleetd_pid=$!
	for _ in $(seq 1 50); do
		site_healthz && return 0
		sleep 0.1
	done
	site_healthz
}

site_healthz() {
	curl -sf --cacert "$site_fleetd_tls" "$site_fleetd_url/healthz" >/dev/null
}

site_fleetd_stop() {
	local rc=0
	if [ -n "$site_fleetd_pid" ]; then
		kill "$site_fleetd_pid" 2>/dev/null || true
		wait "$site_fleetd_pid" 2>/dev/null || rc=$?
		site_fleetd_pid=
	fi
	return "$rc"
}
