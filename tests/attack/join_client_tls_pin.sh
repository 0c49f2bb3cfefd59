#!/usr/bin/env bash
# join_client_tls_pin.sh: fleet-join takes an answer signed by fleetd's
# TLS key, with a "node certificate" that TLS key issued.
#
# The join answer is signed by the CA key so that it is the join service's
# word, whatever carried it (lib/join_wire.h JW10(b): "the pinned join
# service key ... none other"). But --ca is one file of pins holding both
# fleetd's TLS certificate and the CA (as tests/e2e/join_e2e.sh and the
# README pin them), and tink-attest/join_client.c pin_of() takes ANY pinned
# certificate whose kid matches the envelope, then joined_check() checks
# the leaf against that same certificate (issuer name and signature) --
# never that it is a CA (basicConstraints) or THE CA. Whoever holds the TLS
# key (a TLS-terminating proxy, a stolen server key) answers "joined" with
# a leaf of its own making for any node id, and fleet-join writes it as the
# machine's identity and exits 0.
#
# This runs no fleetd: a fake join service with only the TLS key.
# shellcheck source=join_lib.sh
. "$(dirname "$0")/join_lib.sh"
site_fleetd_stop >/dev/null 2>&1 || true
python3 -c 'import cryptography' 2>/dev/null || skip "python3-cryptography not found (the fake server signs with it)"
fport=$(site_free_port)
cat >fake.py <<'PY'
import base64, datetime, hashlib, http.server, json, ssl, sys
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
port, crt, key = int(sys.argv[1]), sys.argv[2], sys.argv[3]
tls_cert = x509.load_pem_x509_certificate(open(crt, "rb").read())
tls_key = serialization.load_pem_private_key(open(key, "rb").read(), None)
b = lambda x: base64.urlsafe_b64encode(x).decode().rstrip("=")
ub = lambda s: base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))
spki = tls_cert.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
kid = hashlib.sha256(spki).hexdigest()[:16]
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        csr_der = ub(req["csr"])
        csr = x509.load_der_x509_csr(csr_der)
        now = datetime.datetime.now(datetime.timezone.utc)
        leaf = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "node_evil")]))
                .issuer_name(tls_cert.subject).public_key(csr.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
                .add_extension(x509.SubjectAlternativeName([x509.UniformResourceIdentifier("spiffe://evil.test/node/node_evil")]), critical=False)
                .sign(tls_key, hashes.SHA256()))
        body = json.dumps({"v": 1, "status": "joined", "node_id": "node_evil",
                           "chain": [b(leaf.public_bytes(serialization.Encoding.DER))],
                           "csr_sha256": hashlib.sha256(csr_der).hexdigest()}, separators=(",", ":")).encode()
        sig = tls_key.sign(body, ec.ECDSA(hashes.SHA256()))
        out = json.dumps({"v": 1, "body": b(body), "sig": b(sig), "kid": kid}, separators=(",", ":")).encode()
        self.send_response(200); self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out))); self.end_headers(); self.wfile.write(out)
srv = http.server.HTTPServer(("127.0.0.1", port), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); ctx.load_cert_chain(crt, key)
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
print("ready", flush=True)
srv.serve_forever()
PY
python3 fake.py "$fport" tls/fleetd.crt tls/fleetd.key >fake.out 2>fake.err &
fpid=$!
for _ in $(seq 1 50); do grep -q ready fake.out 2>/dev/null && break; sleep 0.1; done
tok t1 --pool pool-a --role node
fj join --server "https://127.0.0.1:$fport" --ca "$ca" --tls-ca "$tlsca" --seal-pub state/join/seal.pub --token-file t1 \
	--key-out evil.key --cert-out evil.pem --timeout 5
kill "$fpid" 2>/dev/null || true
if [ "$rc" = 0 ]; then
	defect "fleet-join accepted a join answer and a node certificate signed by the TLS key, not the CA: joined as $node ($(sans evil.pem | head -n1))"
else
	held "an answer signed by the TLS key: exit $rc: $(head -c 200 err.txt)"
fi
finish
