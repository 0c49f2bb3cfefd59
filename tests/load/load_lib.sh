# shellcheck shell=bash
# shellcheck source-path=SCRIPTDIR/../../scripts
# load_lib.sh: what tests/load/load_admission.sh and load_soak.sh share: a
# site as scripts/demo.sh builds it (fleetd behind real HTTPS, the
# nodes-file inventory, a fresh identity CA; scripts/demo-site.sh), but
# with N machines, each a swtpm of its own from one manufacturer, booted by
# the firmware simulator, planned in the nodes file with its EK binding,
# and sending from its own loopback address (bind_shim.c); the forger
# (load_forger.c); fleetd's /proc figures; percentiles.
#
# Source it, then load_init WORKDIR. Every process it starts (swtpm,
# fleetd, tink-attest runs, the forger) is stopped by load_cleanup, which
# load_init installs as the EXIT trap; a test with its own cleanup calls it.
#
#   load_tpms N                 manufacture and start N TPMs (2 at a time),
#                               machine i in $load_work/m$i (i = 1..N):
#                               LOAD_TCTI[i], its EKs dumped (m$i/ek.*)
#   load_nodes_yaml N           nodes.yaml: LOAD-0001..N, planned, bound to
#                               each TPM's EKs, expected_port Ethernet<i>
#   load_fleetd_start [YAML [site_fleetd_yaml options]]
#                               fleetd.yaml (+ YAML, top-level) and fleetd; load_fleetd_pid, load_port
#   load_attest I RESULTS       tink-attest for machine I from 127.0.1.I;
#                               appends "I rc milliseconds" to RESULTS
#   load_round N RESULTS        all N machines at once; waits for them
#   load_flood_start SECONDS SOURCES   the forger in the background
#   load_flood_stop             stop it; its JSON counts in $load_flood_out
#   load_cpu_ticks              fleetd's utime+stime (clock ticks)
#   load_rss_kb, load_fds       fleetd's VmRSS (kB), open descriptors
#   load_pct P FILE             the P-th percentile of the numbers in FILE

load_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

load_skip() { echo "SKIP: $*"; exit 77; }

load_init() {
	local tool
	for tool in swtpm swtpm_setup swtpm_localca python3 openssl curl; do
		command -v "$tool" >/dev/null 2>&1 || load_skip "$tool not installed"
	done
	: "${FLEET_BINARY_DIR:?FLEET_BINARY_DIR (the build tree) is required}"
	load_forger="${LOAD_FORGER:-$FLEET_BINARY_DIR/tests/load_forger}"
	load_shim="${LOAD_BIND_SHIM:-$FLEET_BINARY_DIR/tests/libload_bind_shim.so}"
	[ -x "$load_forger" ] && [ -f "$load_shim" ] || load_skip "load_forger or the bind shim not built"
	# shellcheck source=../../scripts/demo-site.sh disable=SC1091
	. "$load_root/scripts/demo-site.sh"
	site_bins "$FLEET_BINARY_DIR"
	# LOAD_FLEETD: another fleetd binary (e.g. build-asan's) against this
	# build's clients.
	[ -n "${LOAD_FLEETD:-}" ] && site_fleetd="$LOAD_FLEETD"
	load_work="$1"
	mkdir -p "$load_work"
	load_pids=()
	LOAD_TCTI=()
	LOAD_TPM_PID=()
	load_flood_pid=
	trap load_cleanup EXIT
	trap 'exit 130' INT TERM
}

load_cleanup() {
	local rc=$? p
	trap - EXIT
	set +e # a process already gone must not end the cleanup
	[ -n "${load_flood_pid:-}" ] && kill "$load_flood_pid" 2>/dev/null
	# The background loops (a round's runs, the soak's workers, the
	# sampler) and whatever they run now (a tink-attest): each loop
	# stopped first so it starts nothing more, then its whole tree ended.
	local tree=()
	for p in "${load_pids[@]}"; do
		kill -STOP "$p" 2>/dev/null
	done
	for p in "${load_pids[@]}"; do
		tree+=("$p" $(_load_descendants "$p"))
	done
	for p in "${tree[@]}"; do
		kill -9 "$p" 2>/dev/null
	done
	site_fleetd_stop >/dev/null 2>&1 || true
	for p in "${LOAD_TPM_PID[@]}"; do
		kill "$p" 2>/dev/null
	done
	sleep 0.2
	for p in "${LOAD_TPM_PID[@]}" "${load_pids[@]}" ${load_flood_pid:+"$load_flood_pid"}; do
		kill -9 "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	if [ -n "${FLEET_KEEP_TEST_DIR:-}" ] || { [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] && [ -n "${LOAD_KEEP_ON_FAILURE:-}" ]; }; then
		echo "load: kept $load_work"
	else
		rm -rf -- "$load_work"
	fi
	exit "$rc"
}

# Every process below pid $1 (by parent pid).
_load_descendants() {
	local c
	for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do
		echo "$c"
		_load_descendants "$c"
	done
}

# A port pair the kernel hands out as free (swtpm-env.sh's way).
_load_port_pair() {
	python3 -c 'import socket
for _ in range(50):
    a = socket.socket(); a.bind(("127.0.0.1", 0)); p = a.getsockname()[1]
    b = socket.socket()
    try:
        b.bind(("127.0.0.1", p + 1)); print(p); break
    except OSError:
        pass
    finally:
        a.close(); b.close()'
}

# One TPM's state in $1 (the manufacturer CA shared in $load_work/ca).
_load_tpm_make() {
	local d="$1" ca="$load_work/ca"
	mkdir -p -m 0700 "$d/state"
	cat >"$d/localca.conf" <<EOF
statedir = $ca
signingkey = $ca/signkey.pem
issuercert = $ca/issuercert.pem
certserial = $ca/certserial
EOF
	printf '%s\n' '--platform-manufacturer fleetd-test' '--platform-version 2.1' \
		'--platform-model swtpm' >"$d/localca.options"
	cat >"$d/swtpm_setup.conf" <<EOF
create_certs_tool = $(command -v swtpm_localca)
create_certs_tool_config = $d/localca.conf
create_certs_tool_options = $d/localca.options
active_pcr_banks = sha1,sha256
EOF
	swtpm_setup --tpm2 --tpmstate "$d/state" --config "$d/swtpm_setup.conf" \
		--overwrite --create-ek-cert --lock-nvram --pcr-banks sha1,sha256 \
		>"$d/setup.log" 2>&1 || { cat "$d/setup.log" >&2; return 1; }
}

# Start machine i's swtpm; LOAD_TCTI[i], LOAD_TPM_PID[i].
_load_tpm_run() {
	local i="$1" d="$load_work/m$1" port pid _
	for _ in 1 2 3 4 5 6 7 8; do
		port=$(_load_port_pair) || return 1
		swtpm socket --tpm2 --tpmstate "dir=$d/state" \
			--server "type=tcp,port=$port,bindaddr=127.0.0.1" \
			--ctrl "type=tcp,port=$((port + 1)),bindaddr=127.0.0.1" \
			--flags not-need-init,startup-clear >>"$d/swtpm.log" 2>&1 &
		pid=$!
		for _ in $(seq 1 50); do
			kill -0 "$pid" 2>/dev/null || break
			if TPM2TOOLS_TCTI="swtpm:host=127.0.0.1,port=$port" tpm2_getrandom 4 >/dev/null 2>&1 &&
				kill -0 "$pid" 2>/dev/null; then
				LOAD_TCTI[i]="swtpm:host=127.0.0.1,port=$port"
				LOAD_TPM_PID[i]=$pid
				return 0
			fi
			sleep 0.1
		done
		# Gone already after a port clash; under `set -e` a failed kill
		# would end the run instead of trying the next pair.
		kill -9 "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	echo "load: swtpm $i did not start" >&2
	return 1
}

load_tpms() {
	local n="$1" i
	command -v tpm2_getrandom >/dev/null 2>&1 || load_skip "tpm2-tools not installed"
	mkdir -p -m 0700 "$load_work/ca"
	# The first makes the manufacturer CA; the rest two at a time.
	_load_tpm_make "$load_work/m1" || return 1
	export -f _load_tpm_make
	export load_work
	seq 2 "$n" | xargs -P 2 -I{} bash -c '_load_tpm_make "$load_work/m{}"' || return 1
	mkdir -p "$load_work/roots"
	cp "$load_work/ca/swtpm-localca-rootca-cert.pem" "$load_work/roots/root.pem"
	cp "$load_work/ca/issuercert.pem" "$load_work/roots/issuer.pem"
	for i in $(seq 1 "$n"); do
		_load_tpm_run "$i" || return 1
		(
			cd "$load_work" &&
				site_machine "m$i" "$(load_serial "$i")" "Ethernet$i" \
					"$(printf '52:54:00:00:%02x:%02x' $((i / 256)) $((i % 256)))" &&
				TPM2TOOLS_TCTI=${LOAD_TCTI[i]} site_boot "m$i" >/dev/null &&
				"$load_forger" ek "${LOAD_TCTI[i]}" "m$i/ek" 2>/dev/null
		) || { echo "load: machine $i could not be set up" >&2; return 1; }
		echo "$(load_serial "$i") Ethernet$i $load_work/m$i/ek" >>"$load_work/victims"
	done
}

load_serial() { printf 'LOAD-%04d' "$1"; }

load_nodes_yaml() {
	local n="$1" i
	{
		echo "version: 1"
		echo "nodes:"
		for i in $(seq 1 "$n"); do
			cat <<YAML
  - name: load-$i
    serial: $(load_serial "$i")
    status: planned
    primary_ip4: 10.1.$((i / 200)).$((i % 200 + 10))
    class: worker
    install_disk: /dev/nvme0n1
    install_disk_serial: "S4LOAD$i"
    bmc_type: ipmi
    tpm_version: "2.0"
    amt: false
    secure_boot_expected: true
    expected_port: Ethernet$i
    approved_ek_hash: $("$site_fleetctl" ek hash "$load_work/m$i/ek.rsa.der")
    approved_ek_hash_ecc: $("$site_fleetctl" ek hash "$load_work/m$i/ek.ecc.der")
YAML
		done
	} >"$load_work/nodes.yaml"
	chmod 0644 "$load_work/nodes.yaml"
}

load_fleetd_start() {
	local extra="${1:-}"
	shift || true
	mkdir -p "$load_work/profiles" "$load_work/tls" "$load_work/state"
	chmod 0700 "$load_work/state"
	cp "$load_root/tests/fwsim/worker.profile.yaml" "$load_work/profiles/worker.yaml"
	site_tls "$load_work/tls"
	"$site_fleetctl" ca init "$load_work/state/ca" --cn "fleetd load identity CA" >/dev/null
	load_port=$(site_free_port)
	{
		site_fleetd_yaml "$load_work" "$load_port" "$@"
		printf '%s' "$extra"
	} >"$load_work/fleetd.yaml"
	: >"$load_work/fleetd.log"
	site_fleetd_start "$load_work/fleetd.yaml" "$load_work/fleetd.log" ||
		{ cat "$load_work/fleetd.log" >&2; echo "load: fleetd did not start" >&2; return 1; }
	load_fleetd_pid=$site_fleetd_pid
}

load_now_ms() { echo $(($(date +%s%N) / 1000000)); }

load_attest() {
	local i="$1" out="$2" t0 rc=0 d="$load_work/m$1"
	rm -rf "$d/out" && mkdir -p "$d/out"
	t0=$(load_now_ms)
	# (an ASan tink-attest wants its runtime first; the shim only forwards)
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
		LD_PRELOAD="$load_shim" LOAD_BIND_ADDR="127.0.1.$i" LOAD_BIND_PORT="$load_port" \
		TPM2TOOLS_TCTI="${LOAD_TCTI[i]}" "$site_tink" --url "https://127.0.0.1:$load_port" \
		--ca "$load_work/tls/fleetd.crt" --sysfs-root "$d/sys" --lldp-file "$d/lldp.json" \
		--eventlog "$d/boot.log" --out-dir "$d/out" --attempts "${LOAD_ATTEMPTS:-8}" \
		>>"$d/tink.log" 2>&1 || rc=$?
	echo "$i $rc $(($(load_now_ms) - t0))" >>"$out"
}

load_round() {
	local n="$1" out="$2" i
	local pids=()
	: >"$out"
	for i in $(seq 1 "$n"); do
		load_attest "$i" "$out" &
		pids+=($!)
		load_pids+=($!)
	done
	for i in "${pids[@]}"; do
		wait "$i" 2>/dev/null || true
	done
	load_pids=()
}

load_flood_start() { # seconds sources
	load_flood_out="$load_work/flood.$RANDOM.json"
	"$load_forger" flood --port "$load_port" --ca "$load_work/tls/fleetd.crt" \
		--victims "$load_work/victims" --sources "$2" --seconds "$1" \
		>"$load_flood_out" 2>"$load_flood_out.err" &
	load_flood_pid=$!
}

load_flood_stop() {
	[ -n "$load_flood_pid" ] || return 0
	kill -TERM "$load_flood_pid" 2>/dev/null || true # it may have ended on its own
	wait "$load_flood_pid" 2>/dev/null || true
	load_flood_pid=
}

load_cpu_ticks() { awk '{print $14 + $15}' "/proc/$load_fleetd_pid/stat"; }
load_rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$load_fleetd_pid/status"; }
load_fds() { find "/proc/$load_fleetd_pid/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }

# Nearest-rank percentile of the numbers in $2.
load_pct() {
	sort -n "$2" | awk -v p="$1" '{v[NR] = $1} END {
		if (NR == 0) { print "nan"; exit }
		r = int((p / 100) * NR + 0.999999); if (r < 1) r = 1; if (r > NR) r = NR; print v[r] }'
}

# One metric series' value from /metrics (0 when absent).
load_metric() {
	curl -sf --cacert "$load_work/tls/fleetd.crt" "https://127.0.0.1:$load_port/metrics" |
		awk -v s="$1" '$1 == s {print $2; found = 1} END {if (!found) print 0}'
}
