#!/bin/bash
# images/tink-agent-autoid/entrypoint.sh, driven under every POSIX shell we
# can find (dash; busybox sh with busybox's own applets first on PATH, as in
# HookOS).  Each case gets a fresh directory with a fake /proc/cmdline and
# fake ntpd, tink-attest and tink-agent on PATH; the fakes log their
# arguments one per [bracket] and exit with codes the case queues for them.
# Exit 77 (skip) when neither dash nor busybox is installed.
set -u

SRC=${FLEET_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
EP=$SRC/images/tink-agent-autoid/entrypoint.sh
[ -r "$EP" ] || { echo "entrypoint not found at $EP"; exit 1; }
command -v openssl >/dev/null || { echo "SKIP: openssl not installed"; exit 77; }

SHELLS=()
command -v dash >/dev/null && SHELLS+=(dash)
command -v busybox >/dev/null && SHELLS+=(busybox)
if [ "${#SHELLS[@]}" -eq 0 ]; then
	echo "SKIP: neither dash nor busybox is installed"
	exit 77
fi
command -v busybox >/dev/null || echo "note: busybox not installed, testing under dash only"

TOP=$(mktemp -d "${TMPDIR:-/tmp}/entrypoint-test.XXXXXX")
trap 'rm -rf -- "$TOP"' EXIT
FAILS=0
PASSES=0

# ------------------------------------------------------------ the CA pin
# A real DER certificate; keep generating until its base64 holds + and /,
# so the base64url case really exercises - and _.
for _ in $(seq 1 50); do
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-keyout "$TOP/ca.key" -subj /CN=fleetd-test-ca -days 1 \
		-outform DER -out "$TOP/ca.der" 2>/dev/null || { echo "openssl failed"; exit 1; }
	CA_B64=$(base64 -w0 "$TOP/ca.der")
	case $CA_B64 in *+*/* | */*+*) break ;; esac
done
CA_B64URL=$(printf '%s' "$CA_B64" | tr '+/' '-_' | tr -d '=')
case $CA_B64URL in *-*_* | *_*-*) ;; *) echo "could not make a certificate whose base64 has + and /"; exit 1 ;; esac
cp "$TOP/ca.der" "$TOP/ca-file.der"
openssl x509 -inform DER -in "$TOP/ca.der" -out "$TOP/ca-file.pem"

# ---------------------------------------------------------------- fakes
write_fakes() { # DIR
	mkdir -p "$1"
	cat >"$1/fake-common" <<'EOF'
# pop QUEUE: first line of a queue file (removed), or 0 when empty.
pop() {
	if [ -s "$1" ]; then
		c=$(head -n 1 "$1"); sed -i 1d "$1"; echo "$c"
	else
		echo 0
	fi
}
logargs() {
	{ printf '%s' "$1"; shift; for a in "$@"; do printf ' [%s]' "$a"; done; echo; } >>"$T/calls"
}
EOF
	cat >"$1/ntpd" <<'EOF'
#!/bin/sh
. "$T/bin/fake-common"
logargs ntpd "$@"
exit "$(pop "$T/ntpd.codes")"
EOF
	cat >"$1/tink-attest" <<'EOF'
#!/bin/sh
. "$T/bin/fake-common"
logargs tink-attest "$@"
out= ca=
while [ "$#" -gt 0 ]; do
	case $1 in
	--out-dir) out=$2; shift 2 ;;
	--ca) ca=$2; shift 2 ;;
	*) shift ;;
	esac
done
n=$(wc -l <"$T/calls")
[ -n "$ca" ] && cp -- "$ca" "$T/ca.seen.$n"
rc=$(pop "$T/attest.codes")
if [ "$rc" = 0 ] && [ -s "$T/attest.provision" ] && [ -n "$out" ]; then
	umask 077
	printf 'code-%s\n' "$n" >"$out/.code.tmp" && mv "$out/.code.tmp" "$out/code"
	case $(cat "$T/attest.provision") in
	normal) printf 'proof\n' >"$out/.proof.tmp" && mv "$out/.proof.tmp" "$out/proof" ;;
	proof0644) printf 'proof\n' >"$out/proof"; chmod 0644 "$out/proof" ;;
	proofsymlink) printf 'proof\n' >"$T/elsewhere"; ln -s "$T/elsewhere" "$out/proof" ;;
	codeonly) ;;
	esac
fi
exit "$rc"
EOF
	cat >"$1/tink-agent" <<'EOF'
#!/bin/sh
. "$T/bin/fake-common"
echo "$$" >"$T/agent.pid"
logargs tink-agent "$@"
exit 0
EOF
	chmod +x "$1/ntpd" "$1/tink-attest" "$1/tink-agent"
}

# Busybox applets the entrypoint uses, first on PATH in the busybox runs.
BB_TOOLS="head tr od wc mktemp base64 fold stat id dirname mkdir chmod rm sleep timeout"
BBIN=$TOP/busybox-bin
if command -v busybox >/dev/null; then
	mkdir -p "$BBIN"
	for t in $BB_TOOLS; do ln -s "$(command -v busybox)" "$BBIN/$t"; done
fi

# ------------------------------------------------------------ harness
# new_case NAME CMDLINE: fresh T; the command line is written verbatim.
new_case() {
	CASE=$1
	T=$TOP/$SH_NAME-$(printf '%s' "$CASE" | tr -c 'A-Za-z0-9' _)
	mkdir -p "$T/worker" "$T/tmp"
	write_fakes "$T/bin"
	printf '%s\n' "$2" >"$T/cmdline"
	: >"$T/calls"
	EXTRA_ENV=()
	CASE_FAILED=0
}

# run [ARGS...]: the entrypoint with ARGS (default: a tink-agent command line
# whose arguments need exact preservation).  Sets RC and EP_PID.
AGENT_ARGS=(tink-agent --tinkerbell-url "grpc://tink.example:42113" "two words" '$(touch pwned-arg)' '')
run() {
	local args=("$@")
	if [ "$#" -eq 0 ]; then args=("${AGENT_ARGS[@]}"); fi
	if [ "${1:-}" = --no-args ]; then args=(); fi
	local path=$T/bin:/usr/local/bin:/usr/bin:/bin
	local shcmd=(dash)
	if [ "$SH_NAME" = busybox ]; then
		path=$T/bin:$BBIN:/usr/local/bin:/usr/bin:/bin
		shcmd=(busybox sh)
	fi
	(cd "$T" && exec env -i PATH="$path" T="$T" HOME="$T" TMPDIR="$T/tmp" \
		FLEET_CMDLINE="$T/cmdline" \
		FLEET_WORKER_DIR="$T/worker/fleet" \
		FLEET_NTP_DELAY=0 FLEET_ATTEST_DELAY=0 FLEET_REFUSED_DELAY=0 "${EXTRA_ENV[@]}" \
		"${shcmd[@]}" "$EP" "${args[@]}") >"$T/out" 2>"$T/err" &
	EP_PID=$!
	wait "$EP_PID"
	RC=$?
}

fail() {
	echo "FAIL [$SH_NAME] $CASE: $*"
	CASE_FAILED=1
}
end_case() {
	if [ "$CASE_FAILED" = 0 ]; then
		PASSES=$((PASSES + 1))
	else
		FAILS=$((FAILS + 1))
		echo "---- stderr:"; sed 's/^/    /' "$T/err"
		echo "---- calls:"; sed 's/^/    /' "$T/calls"
	fi
}
expect_rc() { [ "$RC" = "$1" ] || fail "exit $RC, expected $1"; }
expect_err() { grep -qF -- "$1" "$T/err" || fail "stderr lacks: $1"; }
calls_of() { grep -c "^$1\\( \\|\$\\)" "$T/calls"; }
expect_calls() { local n; n=$(calls_of "$1"); [ "$n" = "$2" ] || fail "$1 called $n times, expected $2"; }
expect_no_agent() {
	expect_calls tink-agent 0
	[ ! -e "$T/agent.pid" ] || fail "tink-agent started"
	expect_err "tink-agent NOT started"
}
mode_of() { stat -c '%a' -- "$1"; }
expect_provision() {
	local f
	for f in code proof; do
		if [ -L "$T/worker/fleet/$f" ] || [ ! -f "$T/worker/fleet/$f" ]; then
			fail "$f is not a regular file"
		elif [ "$(mode_of "$T/worker/fleet/$f")" != 600 ]; then
			fail "$f has mode $(mode_of "$T/worker/fleet/$f")"
		fi
	done
}
# The agent ran as the entrypoint's own process (exec), with exactly ARGS.
expect_agent_execd() {
	local want
	want=$(printf 'tink-agent'; for a in "${AGENT_ARGS[@]:1}"; do printf ' [%s]' "$a"; done)
	[ "$(grep '^tink-agent' "$T/calls")" = "$want" ] ||
		fail "tink-agent args: $(grep '^tink-agent' "$T/calls"), expected $want"
	[ -s "$T/agent.pid" ] && [ "$(cat "$T/agent.pid")" = "$EP_PID" ] ||
		fail "tink-agent pid $(cat "$T/agent.pid" 2>/dev/null) is not the entrypoint's ($EP_PID): not exec'd"
	[ ! -e "$T/pwned-arg" ] || fail "an agent argument was evaluated"
}
# The decoded pin tink-attest saw is the certificate, byte for byte.
expect_ca_seen() {
	local seen
	seen=$(ls "$T"/ca.seen.* 2>/dev/null | head -n 1)
	[ -n "$seen" ] || { fail "tink-attest got no --ca file"; return; }
	openssl x509 -in "$seen" -outform DER -out "$T/seen.der" 2>/dev/null ||
		{ fail "--ca file is not a PEM certificate"; return; }
	cmp -s "$T/seen.der" "$TOP/ca.der" || fail "--ca certificate differs from fleet_ca"
}

URL=https://fleetd.example:8443/v1/attest
BASE="console=ttyS0,115200 ip=dhcp fleet_ntp_server=ntp.example fleet_attest_url=$URL"

cases() {
	# -------------------------------------------------- happy path
	new_case "happy path, base64url pin, provision" "$BASE fleet_ca=$CA_B64URL quiet"
	echo normal >"$T/attest.provision"
	run
	expect_rc 0
	[ "$(grep '^ntpd' "$T/calls")" = "ntpd [-n] [-q] [-p] [ntp.example]" ] ||
		fail "ntpd args: $(grep '^ntpd' "$T/calls")"
	grep -q "^tink-attest \\[--url\\] \\[$URL\\] \\[--ca\\] \\[$T/tmp/[^]]*\\] \\[--out-dir\\] \\[$T/worker/fleet\\]\$" "$T/calls" ||
		fail "tink-attest args: $(grep '^tink-attest' "$T/calls")"
	expect_ca_seen
	expect_provision
	[ "$(mode_of "$T/worker/fleet")" = 700 ] || fail "/worker/fleet mode $(mode_of "$T/worker/fleet")"
	expect_agent_execd
	[ -z "$(ls -A "$T/tmp")" ] || fail "private temp dir left behind: $(ls -A "$T/tmp")"
	# Order: clock, then attestation, then the agent.
	[ "$(cut -d' ' -f1 "$T/calls" | tr '\n' ' ')" = "ntpd tink-attest tink-agent " ] ||
		fail "call order: $(cut -d' ' -f1 "$T/calls" | tr '\n' ' ')"
	end_case

	new_case "quoted parameters, padded base64 pin" \
		"\"fleet_attest_url=$URL\" fleet_ntp_server=\"ntp.example\" fleet_ca=\"$CA_B64\""
	echo normal >"$T/attest.provision"
	run
	expect_rc 0
	grep -qF "tink-attest [--url] [$URL] [--ca]" "$T/calls" || fail "quoted url not unquoted"
	grep -qF "ntpd [-n] [-q] [-p] [ntp.example]" "$T/calls" || fail "quoted server not unquoted"
	expect_ca_seen
	expect_agent_execd
	end_case

	new_case "fleet_ca_file pin" "$BASE fleet_ca_file=$TOP/ca-file.pem"
	run
	expect_rc 0
	grep -qF "[--ca] [$TOP/ca-file.pem] [--out-dir]" "$T/calls" || fail "--ca is not the fleet_ca_file path"
	expect_agent_execd
	end_case

	new_case "admitted without provision, stale files removed" "$BASE fleet_ca=$CA_B64URL"
	mkdir -m 0700 "$T/worker/fleet"
	echo old >"$T/worker/fleet/code"
	ln -s "$T/cmdline" "$T/worker/fleet/proof"
	run
	expect_rc 0
	[ ! -e "$T/worker/fleet/code" ] && [ ! -L "$T/worker/fleet/proof" ] ||
		fail "stale code/proof from before this run survived"
	[ -e "$T/cmdline" ] || fail "removing the stale proof link removed its target"
	expect_agent_execd
	end_case

	new_case "worker dir with loose mode is tightened" "$BASE fleet_ca=$CA_B64URL"
	mkdir -m 0755 "$T/worker/fleet"
	echo normal >"$T/attest.provision"
	run
	expect_rc 0
	[ "$(mode_of "$T/worker/fleet")" = 700 ] || fail "/worker/fleet left at $(mode_of "$T/worker/fleet")"
	end_case

	# ------------------------------------------- command line refusals
	new_case "missing fleet_attest_url" "fleet_ntp_server=ntp.example fleet_ca=$CA_B64URL"
	run
	expect_rc 2
	expect_err "fleet_attest_url is missing"
	expect_calls ntpd 0
	expect_calls tink-attest 0
	expect_no_agent
	end_case

	new_case "missing fleet_ntp_server" "fleet_attest_url=$URL fleet_ca=$CA_B64URL"
	run
	expect_rc 2
	expect_err "fleet_ntp_server is missing"
	expect_calls tink-attest 0
	expect_no_agent
	end_case

	new_case "missing CA pin" "$BASE"
	run
	expect_rc 2
	expect_err "no CA pin"
	expect_calls tink-attest 0
	expect_no_agent
	end_case

	new_case "both CA pins" "$BASE fleet_ca=$CA_B64URL fleet_ca_file=$TOP/ca-file.pem"
	run
	expect_rc 2
	expect_err "both fleet_ca and fleet_ca_file"
	expect_no_agent
	end_case

	new_case "http URL refused" \
		"fleet_ntp_server=ntp.example fleet_attest_url=http://fleetd.example/v1/attest fleet_ca=$CA_B64URL"
	run
	expect_rc 2
	expect_err "not an https:// URL"
	expect_calls ntpd 0
	expect_calls tink-attest 0
	expect_no_agent
	end_case

	new_case "URL with credentials refused" \
		"fleet_ntp_server=ntp.example fleet_attest_url=https://user:pw@fleetd.example/ fleet_ca=$CA_B64URL"
	run
	expect_rc 2
	expect_err "carries credentials"
	expect_calls tink-attest 0
	expect_no_agent
	end_case

	new_case "repeated fleet_attest_url refused" "$BASE fleet_ca=$CA_B64URL fleet_attest_url=$URL"
	run
	expect_rc 2
	expect_err "fleet_attest_url appears 2 times"
	expect_calls ntpd 0
	expect_calls tink-attest 0
	expect_no_agent
	end_case

	new_case "repeat spelled with dashes refused" \
		"$BASE fleet_ca=$CA_B64URL fleet-attest-url=https://other.example/"
	run
	expect_rc 2
	expect_err "fleet_attest_url appears 2 times"
	expect_calls tink-attest 0
	expect_no_agent
	end_case

	new_case "parameter without value refused" "$BASE fleet_ca"
	run
	expect_rc 2
	expect_err "fleet_ca has no value"
	expect_no_agent
	end_case

	new_case "fleet_ca that is not a certificate" "$BASE fleet_ca=$(printf 'hello world, not DER' | base64 -w0)"
	run
	expect_rc 2
	expect_err "does not decode to one DER certificate"
	expect_calls tink-attest 0
	expect_no_agent
	end_case

	new_case "fleet_ca with trailing bytes" "$BASE fleet_ca=$(cat "$TOP/ca.der" "$TOP/ca.der" | base64 -w0)"
	run
	expect_rc 2
	expect_err "does not decode to one DER certificate"
	expect_no_agent
	end_case

	new_case "no tink-agent command" "$BASE fleet_ca=$CA_B64URL"
	run --no-args
	expect_rc 2
	expect_err "no tink-agent command given"
	expect_calls tink-attest 0
	end_case

	new_case "non-default paths are said on stderr" "$BASE fleet_ca=$CA_B64URL"
	run
	expect_rc 0
	expect_err "command line from"
	end_case

	# ------------------------------------ values are data, never code
	new_case "metacharacters in ntp server not executed" ""
	printf '%s\n' "fleet_ntp_server=\"\$(touch $T/pwned1)\" fleet_attest_url=$URL fleet_ca=$CA_B64URL \`touch\${IFS}$T/pwned0\`" >"$T/cmdline"
	run
	expect_rc 2
	[ ! -e "$T/pwned1" ] && [ ! -e "$T/pwned0" ] || fail "a command line value was executed"
	expect_err "fleet_ntp_server"
	expect_calls ntpd 0
	expect_no_agent
	end_case

	# A URL whose $(...) and ; are legal RFC 3986 characters reaches
	# tink-attest verbatim, and nothing runs.
	new_case "metacharacters in URL passed verbatim, not executed" ""
	EVIL_URL="https://fleetd.example/a\$(touch\$IFS$T/pwned2);touch\$IFS$T/pwned3&x='\$(id)'"
	printf '%s\n' "fleet_ntp_server=ntp.example fleet_attest_url=$EVIL_URL fleet_ca=$CA_B64URL" >"$T/cmdline"
	run
	expect_rc 0
	grep -qF "tink-attest [--url] [$EVIL_URL] [--ca]" "$T/calls" || fail "URL not passed verbatim"
	[ ! -e "$T/pwned2" ] && [ ! -e "$T/pwned3" ] || fail "a URL value was executed"
	end_case

	new_case "metacharacters in CA file path not executed" ""
	printf '%s\n' "$BASE fleet_ca_file=/etc/\`touch\${IFS}$T/pwned4\`;touch\${IFS}$T/pwned5" >"$T/cmdline"
	run
	expect_rc 2
	[ ! -e "$T/pwned4" ] && [ ! -e "$T/pwned5" ] || fail "a path value was executed"
	expect_err "fleet_ca_file"
	expect_no_agent
	end_case

	# ---------------------------------------------------------- clock
	new_case "ntpd failing every try refuses" "$BASE fleet_ca=$CA_B64URL"
	printf '1\n1\n1\n1\n' >"$T/ntpd.codes"
	EXTRA_ENV=(FLEET_NTP_TRIES=3)
	run
	expect_rc 3
	expect_calls ntpd 3
	expect_calls tink-attest 0
	expect_err "could not set the clock"
	expect_no_agent
	end_case

	new_case "ntpd failing once then setting the clock" "$BASE fleet_ca=$CA_B64URL"
	printf '1\n0\n' >"$T/ntpd.codes"
	EXTRA_ENV=(FLEET_NTP_TRIES=3)
	run
	expect_rc 0
	expect_calls ntpd 2
	expect_calls tink-attest 1
	expect_agent_execd
	end_case

	# --------------------------------------------------- attestation
	new_case "pending, pending, then admitted" "$BASE fleet_ca=$CA_B64URL"
	printf '10\n10\n0\n' >"$T/attest.codes"
	echo normal >"$T/attest.provision"
	EXTRA_ENV=(FLEET_ATTEST_TRIES=5)
	run
	expect_rc 0
	expect_calls tink-attest 3
	expect_provision
	expect_agent_execd
	end_case

	new_case "unreachable, then admitted" "$BASE fleet_ca=$CA_B64URL"
	printf '4\n0\n' >"$T/attest.codes"
	run
	expect_rc 0
	expect_calls tink-attest 2
	expect_agent_execd
	end_case

	new_case "pending on every try gives up" "$BASE fleet_ca=$CA_B64URL"
	printf '10\n10\n10\n10\n10\n' >"$T/attest.codes"
	EXTRA_ENV=(FLEET_ATTEST_TRIES=3)
	run
	expect_rc 5
	expect_calls tink-attest 3
	expect_err "giving up after 3 tries"
	expect_no_agent
	end_case

	# A refusal is the owner's to fix in NetBox: the next try after the fix
	# is admitted, with no one at the machine.
	new_case "refused, then admitted after the owner's fix" "$BASE fleet_ca=$CA_B64URL"
	printf '11\n11\n0\n' >"$T/attest.codes"
	run
	expect_rc 0
	expect_calls tink-attest 3
	expect_err "Refusal 2 of 12"
	expect_agent_execd
	end_case

	new_case "refused on every try gives up" "$BASE fleet_ca=$CA_B64URL"
	printf '11\n11\n11\n11\n11\n' >"$T/attest.codes"
	EXTRA_ENV=(FLEET_REFUSED_TRIES=3)
	run
	expect_rc 4
	expect_calls tink-attest 3
	expect_err "fleetd refused this machine (tink-attest exit 11) 3 times"
	expect_no_agent
	end_case

	new_case "refusals and waits have their own budgets" "$BASE fleet_ca=$CA_B64URL"
	printf '10\n11\n10\n11\n0\n' >"$T/attest.codes"
	EXTRA_ENV=(FLEET_ATTEST_TRIES=3 FLEET_REFUSED_TRIES=3)
	run
	expect_rc 0
	expect_calls tink-attest 5
	expect_agent_execd
	end_case

	new_case "protocol error retried" "$BASE fleet_ca=$CA_B64URL"
	printf '5\n0\n' >"$T/attest.codes"
	run
	expect_rc 0
	expect_calls tink-attest 2
	expect_agent_execd
	end_case

	new_case "protocol errors in a row give up" "$BASE fleet_ca=$CA_B64URL"
	printf '5\n4\n5\n5\n0\n' >"$T/attest.codes"
	EXTRA_ENV=(FLEET_PROTOCOL_TRIES=2)
	run
	expect_rc 6
	expect_calls tink-attest 4
	expect_err "protocol error with fleetd (exit 5), 2 times in a row"
	expect_no_agent
	end_case

	new_case "local error is not retried" "$BASE fleet_ca=$CA_B64URL"
	printf '6\n0\n' >"$T/attest.codes"
	run
	expect_rc 6
	expect_calls tink-attest 1
	expect_err "local error"
	expect_no_agent
	end_case

	new_case "TPM error is not retried" "$BASE fleet_ca=$CA_B64URL"
	printf '3\n0\n' >"$T/attest.codes"
	run
	expect_rc 6
	expect_calls tink-attest 1
	expect_err "TPM error"
	expect_no_agent
	end_case

	new_case "tink-attest killed (unexpected exit)" "$BASE fleet_ca=$CA_B64URL"
	printf '137\n0\n' >"$T/attest.codes"
	run
	expect_rc 6
	expect_calls tink-attest 1
	expect_no_agent
	end_case

	# -------------------------------------------------- provision files
	new_case "proof with mode 0644 refused" "$BASE fleet_ca=$CA_B64URL"
	echo proof0644 >"$T/attest.provision"
	run
	expect_rc 7
	expect_err "has mode 644, not 0600"
	expect_no_agent
	end_case

	new_case "proof that is a symlink refused" "$BASE fleet_ca=$CA_B64URL"
	echo proofsymlink >"$T/attest.provision"
	run
	expect_rc 7
	expect_err "is a symbolic link"
	expect_no_agent
	end_case

	new_case "code without proof refused" "$BASE fleet_ca=$CA_B64URL"
	echo codeonly >"$T/attest.provision"
	run
	expect_rc 7
	expect_err "no proof"
	expect_no_agent
	end_case

	new_case "worker dir that is a symlink refused" "$BASE fleet_ca=$CA_B64URL"
	mkdir "$T/elsewhere-dir"
	ln -s "$T/elsewhere-dir" "$T/worker/fleet"
	run
	expect_rc 7
	expect_err "is a symbolic link"
	expect_calls tink-attest 0
	expect_no_agent
	end_case

	new_case "missing /worker mount refused" "$BASE fleet_ca=$CA_B64URL"
	rmdir "$T/worker"
	run
	expect_rc 7
	expect_err "is the host's /worker mounted"
	expect_calls tink-attest 0
	expect_no_agent
	end_case
}

for SH_NAME in "${SHELLS[@]}"; do
	cases
done

# The entrypoint is POSIX sh as shellcheck reads it, when shellcheck is here.
if command -v shellcheck >/dev/null; then
	SH_NAME=shellcheck CASE="shellcheck -s sh" CASE_FAILED=0 T=$TOP
	: >"$TOP/calls"
	shellcheck -s sh "$EP" >"$TOP/err" 2>&1 || fail "shellcheck reports problems"
	end_case
else
	echo "note: shellcheck not installed, not run"
fi

echo "entrypoint: $PASSES passed, $FAILS failed (shells: ${SHELLS[*]})"
[ "$FAILS" -eq 0 ]
