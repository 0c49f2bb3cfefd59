#!/bin/sh
# tink-agent-autoid entrypoint: runs in HookOS (busybox sh) before tink-agent.
#
#   1. read fleet_ntp_server, fleet_attest_url and the CA pin (fleet_ca or
#      fleet_ca_file) from the kernel command line;
#   2. set the clock with `ntpd -n -q -p SERVER`;
#   3. run tink-attest against fleet_attest_url until fleetd answers;
#   4. if fleetd handed over a provision, check /worker/fleet/code and
#      /worker/fleet/proof (regular, ours, mode 0600);
#   5. exec the tink-agent command given as arguments (the image's CMD).
#
# Anything else -- a missing or ambiguous parameter, no clock, a refusal, an
# error, unsafe files -- ends here with a message and a non-zero exit: the
# machine must not take work it was not admitted for.  Values from the
# command line are data only: never evaluated, always quoted.
#
# Exit codes (docs/hookos-entrypoint.md):
#   2 configuration (command line, arguments, environment)
#   3 the clock could not be set
#   4 fleetd refused the machine, on every try
#   5 still pending, or fleetd unreachable, after every try
#   6 tink-attest failed (usage, TPM or local error, a protocol error on
#     every try, or did not run)
#
# Each tink-attest exit is handled by what a retry can fix (the table in
# docs/hookos-entrypoint.md): pending and unreachable (fleetd busy, late, or
# NetBox down included) are retried; a refusal is retried slowly, because
# everything fleetd refuses on is the owner's to change in NetBox or the
# class profile, not the machine's; a protocol error a few times (a fleetd
# mid-upgrade, a proxy answering in its place); a usage, TPM or local error
# never (this machine's own software, TPM or files: the same again).
#   7 /worker/fleet or the provision files are unsafe or incomplete

set -u
umask 077

PROG=tink-agent-autoid

# Spelled out rather than ranges so no locale changes what they match.
ALNUM='ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'
B64CHARS="${ALNUM}+/"

log() {
	printf '%s: %s\n' "$PROG" "$*" >&2
}

die() {
	code=$1
	shift
	printf '%s: %s\n' "$PROG" "$*" >&2
	printf '%s: tink-agent NOT started (exit %s)\n' "$PROG" "$code" >&2
	exit "$code"
}

# show VALUE: a claimed value made safe to log: printable ASCII, 120 bytes.
show() {
	printf '%s' "$1" | tr -c ' -~' '?' | head -c 120
}

# uint NAME VALUE MIN MAX: VALUE is a decimal integer in [MIN, MAX].
uint() {
	case $2 in
	'' | *[!0123456789]*) die 2 "$1 must be a decimal integer, got '$(show "$2")'" ;;
	esac
	if [ "${#2}" -gt 6 ] || [ "$2" -lt "$3" ] || [ "$2" -gt "$4" ]; then
		die 2 "$1 must be between $3 and $4, got '$(show "$2")'"
	fi
}

# ---------------------------------------------------------------- settings

# Where the kernel command line and the provisioning directory are. The
# defaults are HookOS's; a deployment that runs this elsewhere (and the
# tests) sets them, and a non-default value is said on stderr, so it is never
# in effect unnoticed.
CMDLINE_FILE=${FLEET_CMDLINE:-/proc/cmdline}
WORKER_DIR=${FLEET_WORKER_DIR:-/worker/fleet}
if [ "$CMDLINE_FILE" != /proc/cmdline ] || [ "$WORKER_DIR" != /worker/fleet ]; then
	log "command line from $(show "$CMDLINE_FILE"), provision to $(show "$WORKER_DIR")"
fi

# Tunables a deployment may set (container environment).
NTP_TRIES=${FLEET_NTP_TRIES:-5}
NTP_DELAY=${FLEET_NTP_DELAY:-5}
NTP_TIMEOUT=${FLEET_NTP_TIMEOUT:-30}
ATTEST_TRIES=${FLEET_ATTEST_TRIES:-120}
ATTEST_DELAY=${FLEET_ATTEST_DELAY:-30}
REFUSED_TRIES=${FLEET_REFUSED_TRIES:-12}
REFUSED_DELAY=${FLEET_REFUSED_DELAY:-300}
PROTOCOL_TRIES=${FLEET_PROTOCOL_TRIES:-3}
uint FLEET_NTP_TRIES "$NTP_TRIES" 1 100
uint FLEET_NTP_DELAY "$NTP_DELAY" 0 3600
uint FLEET_NTP_TIMEOUT "$NTP_TIMEOUT" 1 3600
uint FLEET_ATTEST_TRIES "$ATTEST_TRIES" 1 100000
uint FLEET_ATTEST_DELAY "$ATTEST_DELAY" 0 3600
uint FLEET_REFUSED_TRIES "$REFUSED_TRIES" 1 1000
uint FLEET_REFUSED_DELAY "$REFUSED_DELAY" 0 86400
uint FLEET_PROTOCOL_TRIES "$PROTOCOL_TRIES" 1 100

if [ "$#" -eq 0 ]; then
	die 2 "no tink-agent command given: the image's CMD (or the container's arguments) must name it"
fi

# ------------------------------------------------------ kernel command line

ntp_server=
ntp_server_n=0
attest_url=
attest_url_n=0
ca_b64=
ca_b64_n=0
ca_file=
ca_file_n=0

# take_param TOKEN: one kernel parameter, quotes removed the way the kernel's
# next_arg() removes them; remember the ones we own, count repeats.
take_param() {
	tok=$1
	case $tok in
	\"*) tok=${tok#\"} ; quoted=1 ;;
	*) quoted=0 ;;
	esac
	case $tok in
	*=*) name=${tok%%=*} ; val=${tok#*=} ; has_val=1 ;;
	*) name=$tok ; val= ; has_val=0 ;;
	esac
	case $val in
	\"*)
		val=${val#\"}
		val=${val%\"}
		quoted=0
		;;
	esac
	if [ "$quoted" = 1 ]; then
		if [ "$has_val" = 1 ]; then val=${val%\"}; else name=${name%\"}; fi
	fi
	case $name in
	fleet[-_]*) ;;
	*) return 0 ;;
	esac
	# The kernel treats - and _ alike in parameter names; so do we, so that
	# fleet-attest-url and fleet_attest_url are one (repeated) parameter.
	name=$(printf '%s' "$name" | tr '-' '_')
	if [ "$has_val" = 0 ]; then
		die 2 "kernel parameter $(show "$name") has no value (expected $(show "$name")=...)"
	fi
	case $name in
	fleet_ntp_server) ntp_server=$val ; ntp_server_n=$((ntp_server_n + 1)) ;;
	fleet_attest_url) attest_url=$val ; attest_url_n=$((attest_url_n + 1)) ;;
	fleet_ca) ca_b64=$val ; ca_b64_n=$((ca_b64_n + 1)) ;;
	fleet_ca_file) ca_file=$val ; ca_file_n=$((ca_file_n + 1)) ;;
	*) log "ignoring unknown kernel parameter $(show "$name")" ;;
	esac
}

# parse_cmdline TEXT: split into parameters at spaces outside double quotes,
# as the kernel does.  TEXT has had every whitespace byte turned into a space.
parse_cmdline() {
	rest=$1
	tok=
	inq=0
	while [ -n "$rest" ]; do
		if [ "$inq" = 1 ]; then
			chunk=${rest%%\"*}
			if [ "$chunk" = "$rest" ]; then
				# Unterminated quote: the rest is this parameter.
				tok=$tok$rest
				rest=
				break
			fi
			tok=$tok$chunk\"
			rest=${rest#"$chunk"}
			rest=${rest#\"}
			inq=0
		else
			chunk=${rest%%[\" ]*}
			tok=$tok$chunk
			rest=${rest#"$chunk"}
			case $rest in
			\"*)
				tok=$tok\"
				rest=${rest#\"}
				inq=1
				;;
			' '*)
				rest=${rest#' '}
				if [ -n "$tok" ]; then take_param "$tok"; fi
				tok=
				;;
			esac
		fi
	done
	if [ -n "$tok" ]; then take_param "$tok"; fi
}

if [ ! -r "$CMDLINE_FILE" ]; then
	die 2 "cannot read the kernel command line from $(show "$CMDLINE_FILE")"
fi
# NUL and every whitespace byte become a space; 64 KiB is far above any
# kernel's COMMAND_LINE_SIZE, so more than that is not a command line.
if ! cmdline=$(head -c 65537 <"$CMDLINE_FILE" | tr '\000\011\012\013\014\015' '      '); then
	die 2 "cannot read the kernel command line from $(show "$CMDLINE_FILE")"
fi
if [ "${#cmdline}" -gt 65536 ]; then
	die 2 "kernel command line is longer than 64 KiB; refusing to parse it"
fi
parse_cmdline "$cmdline"

# once NAME COUNT: a parameter we need must appear exactly once.
once() {
	if [ "$2" -eq 0 ]; then
		die 2 "kernel parameter $1 is missing; the iPXE script must pass $1=..."
	fi
	if [ "$2" -gt 1 ]; then
		die 2 "kernel parameter $1 appears $2 times; refusing to guess which one is meant"
	fi
}
once fleet_ntp_server "$ntp_server_n"
once fleet_attest_url "$attest_url_n"
if [ "$ca_b64_n" -gt 0 ] && [ "$ca_file_n" -gt 0 ]; then
	die 2 "both fleet_ca and fleet_ca_file are given; pass exactly one CA pin"
fi
if [ "$ca_b64_n" -eq 0 ] && [ "$ca_file_n" -eq 0 ]; then
	die 2 "no CA pin: pass fleet_ca=<base64 DER certificate> or fleet_ca_file=/path"
fi
if [ "$ca_b64_n" -gt 0 ]; then once fleet_ca "$ca_b64_n"; fi
if [ "$ca_file_n" -gt 0 ]; then once fleet_ca_file "$ca_file_n"; fi

# fleet_ntp_server: a host name, IPv4 address or (bracketed) IPv6 address.
case $ntp_server in
'') die 2 "fleet_ntp_server is empty" ;;
[-.:]*) die 2 "fleet_ntp_server '$(show "$ntp_server")' is not a host name or address" ;;
*[!]"$ALNUM".:[-]*)
	die 2 "fleet_ntp_server '$(show "$ntp_server")' holds characters no host name or address has" ;;
esac
if [ "${#ntp_server}" -gt 253 ]; then
	die 2 "fleet_ntp_server is longer than 253 bytes"
fi

# fleet_attest_url: https only, no credentials, RFC 3986 characters only.
case $attest_url in
https://*) ;;
*) die 2 "fleet_attest_url '$(show "$attest_url")' is not an https:// URL; fleetd is reached over TLS only" ;;
esac
if [ "${#attest_url}" -gt 2048 ]; then
	die 2 "fleet_attest_url is longer than 2048 bytes"
fi
case $attest_url in
*[!]"$ALNUM"._~:/?#@!\$\&\'\(\)*+,\;=%[-]*)
	die 2 "fleet_attest_url '$(show "$attest_url")' holds characters a URL may not" ;;
esac
url_authority=${attest_url#https://}
url_authority=${url_authority%%[/?#]*}
case $url_authority in
'' | :*) die 2 "fleet_attest_url '$(show "$attest_url")' names no host" ;;
*@*) die 2 "fleet_attest_url carries credentials; the kernel command line is readable by every process" ;;
esac

# --------------------------------------------------------------- the CA pin

TMP_DIR=
cleanup() {
	if [ -n "$TMP_DIR" ]; then rm -rf -- "$TMP_DIR"; fi
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

# der_length FILE: the length a DER SEQUENCE at the start of FILE claims,
# header included; empty when FILE does not start with one.
der_length() {
	# od prints only decimal numbers; splitting them into words is the point.
	# shellcheck disable=SC2046
	set -- $(od -An -tu1 -N5 -v -- "$1")
	if [ "$#" -lt 2 ] || [ "$1" != 48 ]; then return 0; fi
	case $2 in
	129) [ "$#" -ge 3 ] && echo $((3 + $3)) ;;
	130) [ "$#" -ge 4 ] && echo $((4 + $3 * 256 + $4)) ;;
	131) [ "$#" -ge 5 ] && echo $((5 + $3 * 65536 + $4 * 256 + $5)) ;;
	*) [ "$2" -lt 128 ] && echo $((2 + $2)) ;;
	esac
	return 0
}

if [ "$ca_b64_n" -gt 0 ]; then
	if [ "${#ca_b64}" -gt 16384 ]; then
		die 2 "fleet_ca is longer than 16384 bytes"
	fi
	# base64url to base64, then the padding base64url leaves off.
	b64=$(printf '%s' "$ca_b64" | tr -- '-_' '+/')
	core=${b64%%=*}
	pad=${b64#"$core"}
	case $core in
	'' | *[!"$B64CHARS"]*)
		die 2 "fleet_ca is not base64 or base64url (only A-Z a-z 0-9 + / - _ and = padding)" ;;
	esac
	case $pad in
	'' | = | ==) ;;
	*) die 2 "fleet_ca has malformed padding" ;;
	esac
	case $(((${#core} + ${#pad}) % 4)):$((${#core} % 4)):$pad in
	0:*) ;;
	2:2:) b64=$core== ;;
	3:3:) b64=$core= ;;
	*) die 2 "fleet_ca has a length no base64 encoding has" ;;
	esac
	if ! TMP_DIR=$(mktemp -d "${TMPDIR:-/tmp}/$PROG.XXXXXX"); then
		die 2 "cannot create a private temporary directory for the CA pin"
	fi
	if ! printf '%s' "$b64" | base64 -d >"$TMP_DIR/ca.der" 2>/dev/null; then
		die 2 "fleet_ca does not decode as base64"
	fi
	der_size=$(wc -c <"$TMP_DIR/ca.der")
	der_size=$((der_size + 0))
	claimed=$(der_length "$TMP_DIR/ca.der")
	if [ -z "$claimed" ] || [ "$claimed" -ne "$der_size" ] || [ "$der_size" -lt 64 ]; then
		die 2 "fleet_ca does not decode to one DER certificate ($der_size bytes, not a whole DER SEQUENCE)"
	fi
	{
		printf '%s\n' '-----BEGIN CERTIFICATE-----'
		base64 <"$TMP_DIR/ca.der" | tr -d '\n' | fold -w 64
		printf '\n%s\n' '-----END CERTIFICATE-----'
	} >"$TMP_DIR/ca.pem" || die 2 "cannot write the CA pin to $TMP_DIR/ca.pem"
	ca_path=$TMP_DIR/ca.pem
	log "CA pin: $der_size-byte DER certificate from fleet_ca"
else
	case $ca_file in
	/*) ;;
	*) die 2 "fleet_ca_file '$(show "$ca_file")' is not an absolute path" ;;
	esac
	case $ca_file in
	*[!"$ALNUM"._/+@%,:=-]*)
		die 2 "fleet_ca_file '$(show "$ca_file")' holds characters outside A-Z a-z 0-9 . _ / + @ % , : = -" ;;
	esac
	if [ ! -f "$ca_file" ] || [ ! -r "$ca_file" ] || [ ! -s "$ca_file" ]; then
		die 2 "fleet_ca_file '$(show "$ca_file")' is not a readable, non-empty regular file"
	fi
	ca_path=$ca_file
	log "CA pin: $(show "$ca_file")"
fi

# ----------------------------------------------------------- /worker/fleet

# owner_mode PATH: "uid:octal-mode" of PATH itself (never its target).
owner_mode() {
	stat -c '%u:%a' -- "$1" 2>/dev/null
}

MY_UID=$(id -u)
worker_parent=$(dirname -- "$WORKER_DIR")
if [ ! -d "$worker_parent" ] || [ -L "$worker_parent" ]; then
	die 7 "$(show "$worker_parent") is not a directory; is the host's /worker mounted into this container?"
fi
if [ -L "$WORKER_DIR" ]; then
	die 7 "$(show "$WORKER_DIR") is a symbolic link; refusing to write a provision through it"
fi
if [ ! -e "$WORKER_DIR" ]; then
	mkdir -m 0700 -- "$WORKER_DIR" || die 7 "cannot create $(show "$WORKER_DIR")"
fi
if [ -L "$WORKER_DIR" ] || [ ! -d "$WORKER_DIR" ]; then
	die 7 "$(show "$WORKER_DIR") is not a directory"
fi
om=$(owner_mode "$WORKER_DIR") || die 7 "cannot stat $(show "$WORKER_DIR")"
if [ "${om%%:*}" != "$MY_UID" ]; then
	die 7 "$(show "$WORKER_DIR") belongs to uid ${om%%:*}, not to us (uid $MY_UID)"
fi
if [ "${om#*:}" != 700 ]; then
	log "$(show "$WORKER_DIR") had mode ${om#*:}; setting 0700"
	chmod 0700 -- "$WORKER_DIR" || die 7 "cannot chmod $(show "$WORKER_DIR")"
fi

# A code or proof already there is not this boot's: remove it before asking,
# so what is there afterwards came from this run of tink-attest.
clear_provision() {
	for f in "$WORKER_DIR/code" "$WORKER_DIR/proof"; do
		if [ -e "$f" ] || [ -L "$f" ]; then
			if [ -d "$f" ] && [ ! -L "$f" ]; then
				die 7 "$(show "$f") is a directory; refusing to go on"
			fi
			rm -f -- "$f" || die 7 "cannot remove stale $(show "$f")"
			log "removed stale $(show "$f")"
		fi
	done
}
clear_provision

command -v ntpd >/dev/null 2>&1 || die 3 "ntpd not found on PATH"
command -v tink-attest >/dev/null 2>&1 || die 6 "tink-attest not found on PATH"

# --------------------------------------------------------------- the clock

# Without a right clock fleetd's certificate cannot be checked honestly and
# the challenge deadline means nothing, so no clock means no attestation.
if command -v timeout >/dev/null 2>&1; then
	with_timeout() { timeout "$NTP_TIMEOUT" "$@"; }
else
	with_timeout() { "$@"; }
fi
try=1
while :; do
	if with_timeout ntpd -n -q -p "$ntp_server"; then
		log "clock set from $(show "$ntp_server")"
		break
	else
		rc=$?
	fi
	if [ "$try" -ge "$NTP_TRIES" ]; then
		die 3 "could not set the clock from $(show "$ntp_server") in $NTP_TRIES tries (ntpd exit $rc); TLS and the challenge deadline need a right clock"
	fi
	log "ntpd -n -q -p $(show "$ntp_server") failed (exit $rc), try $try of $NTP_TRIES; again in ${NTP_DELAY}s"
	try=$((try + 1))
	sleep "$NTP_DELAY"
done

# ------------------------------------------------------------- attestation

# Three budgets: tries that wait for fleetd or the owner's approval
# (pending, unreachable), refusals, and protocol errors in a row. Each ends
# the script when spent; none resets another, so the whole is bounded by
# their sum.
try=1
refused=0
protocol=0
while :; do
	clear_provision
	if tink-attest --url "$attest_url" --ca "$ca_path" --out-dir "$WORKER_DIR"; then
		rc=0
	else
		rc=$?
	fi
	case $rc in
	0) log "fleetd admitted this machine" ; break ;;
	10) what="pending: fleetd holds a claim for this machine until its binding is approved" ;;
	4) what="fleetd unreachable at $(show "$attest_url") (or busy, or its inventory did not answer)" ;;
	11)
		refused=$((refused + 1))
		if [ "$refused" -ge "$REFUSED_TRIES" ]; then
			die 4 "fleetd refused this machine (tink-attest exit 11) $refused times; see fleetd's journal for the reason"
		fi
		log "fleetd refused this machine (tink-attest exit 11); its journal says why. Refusal $refused of $REFUSED_TRIES: a fix in NetBox or the class profile takes effect at the next try, in ${REFUSED_DELAY}s"
		sleep "$REFUSED_DELAY"
		continue
		;;
	5)
		protocol=$((protocol + 1))
		if [ "$protocol" -ge "$PROTOCOL_TRIES" ]; then
			die 6 "tink-attest protocol error with fleetd (exit 5), $protocol times in a row"
		fi
		what="tink-attest protocol error with fleetd (exit 5), $protocol of $PROTOCOL_TRIES in a row"
		;;
	2) die 6 "tink-attest usage error (exit 2); a retry would run the same command" ;;
	3) die 6 "tink-attest TPM error (exit 3): no TPM, a TPM failure, or EKs that do not match their certificates" ;;
	6) die 6 "tink-attest local error (exit 6): this machine's identity, event log or output files" ;;
	*) die 6 "tink-attest failed with unexpected exit $rc" ;;
	esac
	if [ "$rc" != 5 ]; then protocol=0; fi
	if [ "$try" -ge "$ATTEST_TRIES" ]; then
		die 5 "$what; giving up after $ATTEST_TRIES tries"
	fi
	log "$what; try $try of $ATTEST_TRIES, again in ${ATTEST_DELAY}s"
	try=$((try + 1))
	sleep "$ATTEST_DELAY"
done

# ------------------------------------------------------------ the provision

# check_secret PATH: a regular file (not a link), ours, mode 0600, not empty.
# A wrong mode is refused, not repaired: a secret that was readable by others
# may already have been read.
check_secret() {
	if [ -L "$1" ]; then
		die 7 "$(show "$1") is a symbolic link; refusing it"
	fi
	if [ ! -f "$1" ]; then
		die 7 "$(show "$1") is not a regular file"
	fi
	om=$(owner_mode "$1") || die 7 "cannot stat $(show "$1")"
	if [ "${om%%:*}" != "$MY_UID" ]; then
		die 7 "$(show "$1") belongs to uid ${om%%:*}, not to us (uid $MY_UID)"
	fi
	if [ "${om#*:}" != 600 ]; then
		die 7 "$(show "$1") has mode ${om#*:}, not 0600; it may have been read by others, refusing it"
	fi
	if [ ! -s "$1" ]; then
		die 7 "$(show "$1") is empty"
	fi
}

code_there=0
proof_there=0
if [ -e "$WORKER_DIR/code" ] || [ -L "$WORKER_DIR/code" ]; then code_there=1; fi
if [ -e "$WORKER_DIR/proof" ] || [ -L "$WORKER_DIR/proof" ]; then proof_there=1; fi
case $code_there$proof_there in
11)
	check_secret "$WORKER_DIR/code"
	check_secret "$WORKER_DIR/proof"
	log "provision ready in $(show "$WORKER_DIR") (code, proof)"
	;;
00) log "admitted without a provision; no code or proof written" ;;
10) die 7 "tink-attest wrote a code but no proof; refusing a half provision" ;;
01) die 7 "tink-attest wrote a proof but no code; refusing a half provision" ;;
esac

# ----------------------------------------------------------------- tink-agent

if ! command -v "$1" >/dev/null 2>&1; then
	die 2 "tink-agent command '$(show "$1")' not found"
fi
cleanup
trap - EXIT TERM INT
log "starting $(show "$1")"
exec "$@"
