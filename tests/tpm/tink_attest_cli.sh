# tink_attest_cli.sh: the tink-attest program itself, on a private swtpm,
# against small local listeners that log every connection and request:
#
#   no TPM (the TCTI points at a closed port)  -> exit 3, nothing connects
#   fleetd unreachable (a closed port)          -> exit 4 after --attempts
#                                                  tries with backoff
#   fleetd answering 503                        -> retried, then exit 4
#   fleetd answering 400                        -> exit 5, never retried
#   the pin from a kernel command line          -> the server is trusted
#   a server whose certificate is not the pin's -> exit 4, one handshake,
#                                                  no request sent
#   no CA pin                                   -> exit 2
#
# A TPM that dies mid-session is tested in-process (test_tink_attest.c),
# where the transport can kill the swtpm between two rounds.
set -u

: "${TINK_ATTEST:?TINK_ATTEST must name the tink-attest binary}"
: "${FLEET_SOURCE_DIR:?}"
for tool in openssl python3; do
	command -v "$tool" >/dev/null 2>&1 || { echo "SKIP: $tool not found"; exit 77; }
done

. "$FLEET_SOURCE_DIR/scripts/swtpm-env.sh"
swtpm_env_start sha256
rc=$?
[ "$rc" -eq 77 ] && exit 77
[ "$rc" -ne 0 ] && { echo "FAIL: swtpm did not start"; exit 1; }

W="$SWTPM_ENV_DIR/work"
mkdir "$W" && cd "$W" || exit 1
fails=0
LISTENER_PID=
cleanup() {
	[ -n "$LISTENER_PID" ] && kill "$LISTENER_PID" 2>/dev/null
	swtpm_env_stop
}
trap cleanup EXIT

# The machine: sysfs, an LLDP neighbour, an event log (any bytes: nothing
# here gets as far as fleetd judging it).
mkdir -p sys/class/dmi/id sys/class/net/eno1/device
echo "CLI-0001" >sys/class/dmi/id/product_serial
echo "fleetd-sim-1.0" >sys/class/dmi/id/bios_version
echo "b4:96:91:00:00:01" >sys/class/net/eno1/address
printf '%s' '{"lldp":{"interface":{"eno1":{"via":"LLDP","chassis":{"leaf":{"id":{"type":"mac","value":"0c:42:a1:00:07:00"}}},"port":{"id":{"type":"ifname","value":"Ethernet12"}}}}}}' >lldp.json
printf 'not a real log' >eventlog.bin

# fleetd's CA (the pin), a server certificate it signed, and a rogue CA
# with its own server certificate for 127.0.0.1.
mkcert() { # NAME CA_NAME: NAME.crt/.key for 127.0.0.1, signed by CA_NAME
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-keyout "$1.key" -subj "/CN=127.0.0.1" -out "$1.csr" >>openssl.log 2>&1 &&
		printf 'subjectAltName=IP:127.0.0.1\n' >"$1.ext" &&
		openssl x509 -req -in "$1.csr" -CA "$2.crt" -CAkey "$2.key" -CAcreateserial \
			-days 2 -extfile "$1.ext" -out "$1.crt" >>openssl.log 2>&1
}
mkca() {
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-keyout "$1.key" -subj "/CN=$1" -days 2 -out "$1.crt" >>openssl.log 2>&1
}
{ mkca fleetca && mkcert server fleetca && mkca rogueca && mkcert rogue rogueca; } ||
	{ cat openssl.log; exit 1; }

# listen STATUS CERT KEY: a one-thread HTTPS (or, with CERT "-", plain TCP)
# server answering every request with STATUS; it logs "connection" per
# accept and "request <line>" per request read. Sets LPORT, LLOG.
cat >listener.py <<'PY'
import os, re, socket, ssl, sys
port_file, log, status, cert, key = sys.argv[1:6]
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(16)
with open(port_file + ".tmp", "w") as f:
    f.write(str(s.getsockname()[1]))
os.rename(port_file + ".tmp", port_file)
ctx = None
if cert != "-":
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
def note(line):
    with open(log, "a") as f:
        f.write(line + "\n")
while True:
    c, _ = s.accept()
    note("connection")
    try:
        c.settimeout(5)
        if ctx:
            c = ctx.wrap_socket(c, server_side=True)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = c.recv(65536)
            if not chunk:
                break
            data += chunk
        if b"\r\n\r\n" not in data:
            continue
        head, _, body = data.partition(b"\r\n\r\n")
        m = re.search(rb"(?i)\r\ncontent-length:\s*(\d+)", head)
        want = int(m.group(1)) if m else 0
        while len(body) < want:
            chunk = c.recv(65536)
            if not chunk:
                break
            body += chunk
        note("request " + head.split(b"\r\n")[0].decode("ascii", "replace"))
        c.sendall(b"HTTP/1.1 %d Test\r\nContent-Type: application/json\r\n"
                  b"Content-Length: 2\r\nConnection: close\r\n\r\n{}" % int(status))
    except Exception as e:
        note("error " + type(e).__name__)
    finally:
        c.close()
PY
listen() {
	[ -n "$LISTENER_PID" ] && { kill "$LISTENER_PID" 2>/dev/null; wait "$LISTENER_PID" 2>/dev/null; }
	LLOG="$W/listener.$1.$RANDOM.log"
	: >"$LLOG"
	rm -f port
	python3 listener.py port "$LLOG" "$1" "$2" "$3" &
	LISTENER_PID=$!
	for _ in $(seq 1 100); do [ -s port ] && break; sleep 0.05; done
	LPORT=$(cat port) || { echo "FAIL: listener did not start"; exit 1; }
}

# run EXPECTED_EXIT ARGS...: run tink-attest, keep stderr in err.txt and the
# seconds it took in SECS.
run() {
	local want="$1" start end code
	shift
	start=$(date +%s.%N)
	"$TINK_ATTEST" --sysfs-root "$W/sys" --lldp-file "$W/lldp.json" \
		--eventlog "$W/eventlog.bin" --out-dir "$W" "$@" >out.txt 2>err.txt
	code=$?
	end=$(date +%s.%N)
	SECS=$(echo "$end - $start" | bc 2>/dev/null || python3 -c "print($end - $start)")
	if [ "$code" -ne "$want" ]; then
		echo "FAIL: tink-attest $* => exit $code (want $want)"
		cat err.txt
		fails=$((fails + 1))
		return 1
	fi
	return 0
}
check() { # DESCRIPTION COMMAND...
	local what="$1"
	shift
	if "$@"; then
		echo "ok: $what"
	else
		echo "FAIL: $what"
		echo "--- stderr:"; cat err.txt
		[ -n "${LLOG:-}" ] && { echo "--- listener:"; cat "$LLOG"; }
		fails=$((fails + 1))
	fi
}
count() { grep -c "^$1" "$LLOG"; }

# 1. No TPM: exit 3, a message naming the TCTI, and not one connection.
listen 200 server.crt server.key
run 3 --url "https://127.0.0.1:$LPORT" --ca fleetca.crt --tcti "swtpm:host=127.0.0.1,port=1" &&
	check "no TPM: a clear message" grep -q 'no usable TPM, nothing sent.*swtpm:host=127.0.0.1,port=1' err.txt
sleep 0.2
check "no TPM: nothing reached the server" test "$(count connection)" -eq 0

# 2. fleetd unreachable: a port nobody listens on (the listener's, closed).
kill "$LISTENER_PID"; wait "$LISTENER_PID" 2>/dev/null; LISTENER_PID=
run 4 --url "https://127.0.0.1:$LPORT" --ca fleetca.crt --attempts 3 --timeout 5 &&
	check "unreachable: exit 4 names fleetd" grep -q 'fleetd unreachable' err.txt
check "unreachable: three attempts, two waits" \
	test "$(grep -c 'attempt [123]/3 failed' err.txt)" -eq 3 -a \
	"$(grep -c 'retrying in' err.txt)" -eq 2
# Full jitter: the two waits are at most 0.5 s and 1 s; the TPM work and
# three refused connections add a few seconds at most.
check "unreachable: backoff is bounded (${SECS}s)" \
	python3 -c "import sys; sys.exit(0 if $SECS < 20 else 1)"

# 3. 503: retried like a connection error, then exit 4; TCTI from the
# environment (swtpm-env.sh exported TPM2TOOLS_TCTI).
listen 503 server.crt server.key
run 4 --url "https://127.0.0.1:$LPORT/" --ca fleetca.crt --attempts 3 &&
	check "503: three requests, then exit 4" test "$(count 'request POST /v1/attest/intake')" -eq 3

# 4. 400: fleetd read the request and refused it; asking again is pointless.
listen 400 server.crt server.key
run 5 --url "https://127.0.0.1:$LPORT" --ca fleetca.crt --attempts 3 &&
	check "400: exit 5 with the status" grep -q 'HTTP 400' err.txt
check "400: exactly one request" test "$(count 'request POST')" -eq 1

# 4b. The pin from a kernel command line (base64 DER, as HookOS gets it):
# the same server is trusted through it, so the request gets through.
openssl x509 -in fleetca.crt -outform DER -out fleetca.der &&
	printf 'BOOT_IMAGE=vmlinuz fleet_ca=%s console=ttyS0\n' "$(base64 -w0 fleetca.der)" >cmdline
listen 400 server.crt server.key
run 5 --url "https://127.0.0.1:$LPORT" --ca-cmdline="$W/cmdline" --attempts 1 &&
	check "pin from the command line: TLS verified, request sent" \
		test "$(count 'request POST /v1/attest/intake')" -eq 1

# 5. A server that is not fleetd (its CA is not the pin): the handshake
# fails, nothing is posted, and trying again would change nothing.
listen 200 rogue.crt rogue.key
run 4 --url "https://127.0.0.1:$LPORT" --ca fleetca.crt --attempts 3 &&
	check "unpinned server: the certificate is named" grep -qi 'certificate' err.txt
check "unpinned server: one handshake, no request" \
	test "$(count connection)" -eq 1 -a "$(count request)" -eq 0

# 6. No pin at all is a usage error, before the TPM is touched.
run 2 --url "https://127.0.0.1:$LPORT" &&
	check "no CA: usage" grep -q 'exactly one of --ca FILE or --ca-cmdline' err.txt

if [ "$fails" -ne 0 ]; then
	echo "$fails check(s) failed"
	exit 1
fi
echo "all tink-attest CLI checks passed"
