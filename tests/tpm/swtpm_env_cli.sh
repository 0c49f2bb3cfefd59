#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# swtpm_env_cli.sh: scripts/swtpm-env.sh under `set -e`, as the e2e tests
# source it, when the port pair it picked is taken before swtpm binds it (two
# tests in parallel, each asking the kernel for a free pair). swtpm then exits
# at once; the helper must try another pair and bring the TPM up, not end its
# caller. Before the fix a reboot that lost this race ended reattest_e2e with
# exit 1 and no message (the `kill -9` of the swtpm already gone failed under
# `set -e`); CI saw it once.
#
# The race is made certain here: the first pair the helper asks for is one we
# hold open (python3 below answers the helper's port question once with it),
# for the first start and again for a reboot.
set -euo pipefail

: "${FLEET_SOURCE_DIR:?}"
for tool in swtpm swtpm_setup swtpm_localca tpm2_getrandom tpm2_shutdown tpm2_readclock; do
	command -v "$tool" >/dev/null 2>&1 || { echo "SKIP: $tool not found"; exit 77; }
done

work=$(mktemp -d) # under $TMPDIR, or /tmp
holder=
finish() {
	local rc=$?
	if [ -n "$holder" ]; then kill "$holder" 2>/dev/null || true; fi
	swtpm_env_stop 2>/dev/null || true
	rm -rf -- "$work"
	[ "$rc" -eq 0 ] || echo "FAIL: exit $rc"
	exit "$rc"
}

# A pair held: two bound sockets, so swtpm fails to bind either. Bound, not
# listening: a connect there is refused, where a listener would take the
# helper's tpm2_getrandom probe and never answer it.
real_python=$(command -v python3)
"$real_python" - "$work/held" <<'PY' &
import socket, sys, time
for _ in range(200):
    a = socket.socket(); a.bind(("127.0.0.1", 0)); p = a.getsockname()[1]
    b = socket.socket()
    try:
        b.bind(("127.0.0.1", p + 1))
    except OSError:
        a.close(); b.close(); continue
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(str(p))
    import os; os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    time.sleep(600)
    break
PY
holder=$!
for _ in $(seq 1 100); do [ -s "$work/held" ] && break; sleep 0.05; done
[ -s "$work/held" ] || { echo "FAIL: could not hold a port pair"; exit 1; }
held=$(cat "$work/held")

# The helper's port question (its only python3 call) answered with the held
# pair once per armed file, then by the real python3.
python3() {
	if [ -e "$work/armed" ]; then
		rm -f -- "$work/armed"
		echo "$held"
		return 0
	fi
	"$real_python" "$@"
}

# shellcheck source=../../scripts/swtpm-env.sh
. "$FLEET_SOURCE_DIR/scripts/swtpm-env.sh"
trap finish EXIT # swtpm_env_start installs its own; ours goes back after it

fails=0
check() { # what command...
	local what="$1"
	shift
	if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fails=$((fails + 1)); fi
}

touch "$work/armed"
swtpm_env_start sha256 || { echo "FAIL: swtpm_env_start after a clash: $?"; exit 1; }
trap finish EXIT
check "the first start answered its port question with the held pair" test ! -e "$work/armed"
check "the first start came up on another pair than the held one" \
	test "$TPM2TOOLS_TCTI" != "swtpm:host=127.0.0.1,port=$held"
check "the TPM answers" tpm2_getrandom 4 -o /dev/null
before=$(tpm2_readclock | awk '/reset_count/ { print $2 }')

# The reboot, with errexit in force exactly as reattest_e2e.sh calls it: a
# plain command, not the left side of || (which would turn errexit off).
touch "$work/armed"
swtpm_env_reboot "" # no snapshot: the same state
check "the reboot answered its port question with the held pair" test ! -e "$work/armed"
check "the reboot came up on another pair than the held one" \
	test "$TPM2TOOLS_TCTI" != "swtpm:host=127.0.0.1,port=$held"
after=$(tpm2_readclock | awk '/reset_count/ { print $2 }')
check "the rebooted TPM is the same TPM, reset once (resetCount $before -> $after)" \
	test "$after" -eq $((before + 1))
grep -q . "$SWTPM_ENV_DIR/swtpm.log" &&
	echo "   (swtpm's log of the lost races: $(grep -c . "$SWTPM_ENV_DIR/swtpm.log") line(s))"

[ "$fails" -eq 0 ] || exit 1
echo "PASS"
