# shellcheck shell=bash
# swtpm-env.sh: a private, throwaway TPM 2.0 (swtpm) for tpm2-tools, for
# the tests and the demo. Source it, then:
#
#     swtpm_env_start [BANKS]   # BANKS like "sha256" (default) or "sha1,sha256"
#     tpm2_createek ...         # TPM2TOOLS_TCTI points at the private TPM
#     swtpm_env_stop            # also runs on EXIT (see below)
#
# The TPM is manufactured the way tests/tpm/swtpm_harness.c does it: state,
# swtpm_setup config and the swtpm_localca "manufacturer" CA all live in a
# private mktemp directory, never /var/lib or the user's ~/.config, with an
# RSA-2048 EK and an ECC P-384 EK and their certificates in NV.
#
# swtpm_env_start returns 77 (the ctest "skipped" code) when swtpm,
# swtpm_setup or swtpm_localca is missing, 1 when the TPM does not come up.
# Safe under `set -e`. It installs an EXIT trap that stops the TPM and removes its directory; a
# caller with its own EXIT trap should call swtpm_env_stop from it.
# Set FLEET_KEEP_SWTPM=1 to keep the directory for a post-mortem.
# Set SWTPM_ENV_CA to a directory to use it as the manufacturer CA's state:
# the first TPM creates the CA there, later ones reuse it, so several TPMs
# come from one manufacturer (one roots directory trusts them all).
#
# Exported after a successful start:
#   TPM2TOOLS_TCTI    swtpm:host=127.0.0.1,port=N
#   SWTPM_ENV_DIR     the private directory (state/, ca/, roots/)
#   SWTPM_ENV_ROOTS   the manufacturer CA certificates (root.pem, issuer.pem)
#
# The same TPM across power cycles (a machine rebooting), for the re-check
# tests (tests/e2e/reattest_e2e.sh):
#
#     swtpm_env_off             # TPM2_Shutdown(CLEAR), then the process
#                               # ends; its state stays in state/
#     swtpm_env_snapshot DIR    # while off: a copy of the state (DIR is new)
#     swtpm_env_on [DIR]        # the process starts again on that state (with
#                               # DIR, a snapshot's copy first): PCRs at their
#                               # reset values and resetCount one higher,
#                               # as after a real reboot
#     swtpm_env_reboot [DIR]    # off, then on
#
# The TPM keeps its seeds, EKs and NV; only TPM2TOOLS_TCTI's port may change
# (a new kernel-assigned pair), so re-read it after each of these. Still one
# TPM at a time: swtpm_env_start after swtpm_env_stop starts another.

# Every command here may fail (the process is already gone) and must not
# end the function early when the caller runs under `set -e`, or the
# directory would be left behind: hence the `|| true`s.
_swtpm_env_kill() {
	if [ -n "${SWTPM_ENV_PID:-}" ]; then
		kill "$SWTPM_ENV_PID" 2>/dev/null || true
		# Give it a moment to save state, then make sure.
		for _ in 1 2 3 4 5 6 7 8 9 10; do
			kill -0 "$SWTPM_ENV_PID" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$SWTPM_ENV_PID" 2>/dev/null || true
		wait "$SWTPM_ENV_PID" 2>/dev/null || true
		SWTPM_ENV_PID=
	fi
}

swtpm_env_stop() {
	_swtpm_env_kill
	if [ -n "${SWTPM_ENV_DIR:-}" ] && [ -z "${FLEET_KEEP_SWTPM:-}" ]; then
		rm -rf -- "$SWTPM_ENV_DIR"
		SWTPM_ENV_DIR=
	fi
}

_swtpm_env_listening() {
	# A connect to the control port; swtpm serves it once it is ready.
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

swtpm_env_start() {
	local banks="${1:-sha256}" d tool
	for tool in swtpm swtpm_setup swtpm_localca; do
		if ! command -v "$tool" >/dev/null 2>&1; then
			echo "swtpm-env: $tool not found; skipping" >&2
			return 77
		fi
	done
	d=$(mktemp -d "${TMPDIR:-/tmp}/fleet-swtpm.XXXXXX") || return 1
	SWTPM_ENV_DIR=$d
	trap swtpm_env_stop EXIT
	mkdir -m 0700 "$d/state" "$d/roots" || return 1
	local ca="${SWTPM_ENV_CA:-$d/ca}"
	# Only the CA's own directory need be private (its parents are the caller's).
	# shellcheck disable=SC2174
	mkdir -p -m 0700 "$ca" || return 1

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
active_pcr_banks = $banks
EOF
	if ! swtpm_setup --tpm2 --tpmstate "$d/state" --config "$d/swtpm_setup.conf" \
		--overwrite --create-ek-cert --lock-nvram --pcr-banks "$banks" \
		>"$d/setup.log" 2>&1; then
		echo "swtpm-env: swtpm_setup failed; see $d/setup.log" >&2
		return 1
	fi
	cp "$ca/swtpm-localca-rootca-cert.pem" "$d/roots/root.pem" &&
		cp "$ca/issuercert.pem" "$d/roots/issuer.pem" || return 1
	_swtpm_env_run "$d"
}

# The swtpm process on the state in $1/state; 0 once it answers.
_swtpm_env_run() {
	local d="$1" port
	# A port pair the kernel hands out as free (as tests/tpm/swtpm_harness.c
	# does), then proof that the TPM answering there is ours: under parallel
	# tests another swtpm may hold a port we probed, so "something listens"
	# is not enough. On a clash swtpm exits and we try another pair.
	for _ in 1 2 3 4 5 6 7 8; do
		port=$(python3 -c 'import socket
for _ in range(50):
    a = socket.socket(); a.bind(("127.0.0.1", 0)); p = a.getsockname()[1]
    b = socket.socket()
    try:
        b.bind(("127.0.0.1", p + 1)); print(p); break
    except OSError:
        pass
    finally:
        a.close(); b.close()') || return 1
		swtpm socket --tpm2 --tpmstate "dir=$d/state" \
			--server "type=tcp,port=$port,bindaddr=127.0.0.1" \
			--ctrl "type=tcp,port=$((port + 1)),bindaddr=127.0.0.1" \
			--flags not-need-init,startup-clear >>"$d/swtpm.log" 2>&1 &
		SWTPM_ENV_PID=$!
		for _ in $(seq 1 50); do
			kill -0 "$SWTPM_ENV_PID" 2>/dev/null || break
			if _swtpm_env_listening "$((port + 1))" &&
				TPM2TOOLS_TCTI="swtpm:host=127.0.0.1,port=$port" \
					tpm2_getrandom 4 >/dev/null 2>&1 &&
				kill -0 "$SWTPM_ENV_PID" 2>/dev/null; then
				export TPM2TOOLS_TCTI="swtpm:host=127.0.0.1,port=$port"
				export SWTPM_ENV_DIR
				export SWTPM_ENV_ROOTS="$d/roots"
				return 0
			fi
			sleep 0.1
		done
		# A swtpm that lost the port race has exited already: kill and
		# wait then fail, and under the caller's `set -e` that would end
		# the caller silently (exit 1, no message) instead of trying the
		# next pair. tests/tpm/swtpm_env_cli.sh forces such a clash.
		kill -9 "$SWTPM_ENV_PID" 2>/dev/null || true
		wait "$SWTPM_ENV_PID" 2>/dev/null || true
		SWTPM_ENV_PID=
	done
	echo "swtpm-env: swtpm did not start; see $d/swtpm.log" >&2
	return 1
}

# The power cycles (see the top). A TPM must have been started.
# An orderly power-off, as an OS shuts down or reboots: TPM2_Shutdown(CLEAR)
# first (Linux sends it), so the next Startup(CLEAR) is a TPM Reset
# (resetCount + 1) and not a disorderly one, which the TPM counts as a
# dictionary-attack failure: a few would lock out every DA-protected key,
# such as the AK.
swtpm_env_off() {
	if [ -z "${SWTPM_ENV_DIR:-}" ]; then
		echo "swtpm-env: no TPM to power off" >&2
		return 1
	fi
	if [ -n "${SWTPM_ENV_PID:-}" ] && ! tpm2_shutdown -c >/dev/null 2>&1; then
		echo "swtpm-env: TPM2_Shutdown failed; powering off anyway" >&2
	fi
	_swtpm_env_kill
}

swtpm_env_snapshot() {
	if [ -z "${SWTPM_ENV_DIR:-}" ] || [ -n "${SWTPM_ENV_PID:-}" ]; then
		echo "swtpm-env: a snapshot is taken of a TPM that is off" >&2
		return 1
	fi
	if [ -e "$1" ]; then
		echo "swtpm-env: $1 exists; a snapshot goes to a new directory" >&2
		return 1
	fi
	cp -a "$SWTPM_ENV_DIR/state" "$1"
}

swtpm_env_on() {
	if [ -z "${SWTPM_ENV_DIR:-}" ] || [ -n "${SWTPM_ENV_PID:-}" ]; then
		echo "swtpm-env: no TPM that is off to power on" >&2
		return 1
	fi
	if [ -n "${1:-}" ]; then
		[ -d "$1" ] || { echo "swtpm-env: no snapshot $1" >&2; return 1; }
		rm -rf -- "$SWTPM_ENV_DIR/state" &&
			cp -a "$1" "$SWTPM_ENV_DIR/state" || return 1
	fi
	_swtpm_env_run "$SWTPM_ENV_DIR"
}

swtpm_env_reboot() {
	swtpm_env_off && swtpm_env_on "$@"
}
