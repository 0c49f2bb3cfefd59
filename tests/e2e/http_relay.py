#!/usr/bin/env python3
"""http_relay.py PORT CERT KEY BACKEND_PORT...: one HTTPS address in front of
several fleetd replicas, as an HTTP load balancer in round-robin mode is
(nginx's upstream, HAProxy's mode http). It ends TLS with CERT/KEY (fleetd's
own certificate, so clients pin the same one) and hands each request, not
each connection, to the next replica over a new TLS connection: a client
that keeps one connection for all its rounds still has them land on
alternating replicas, however fast they come. A replica that refuses the
connection is skipped for the next one (nginx's proxy_next_upstream error);
when none takes it the client's connection is closed.

Prints "request to <port> <method> <path>" per request handed on, and
"replica <port> refused: next" per replica skipped. Used by
tests/e2e/replicas_pg_e2e.sh and tests/e2e/join_tpm_e2e.sh.
"""
import socket, ssl, sys, threading
port, crt, key = int(sys.argv[1]), sys.argv[2], sys.argv[3]
backends = [int(p) for p in sys.argv[4:]]
turn = [0]
lock = threading.Lock()
server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
server_ctx.load_cert_chain(crt, key)
client_ctx = ssl.create_default_context(cafile=crt)

def read_head(f):
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        line = f.readline(65537)
        if not line or len(head) > 65536:
            return None
        head += line
    return head

def headers(head):
    lines = head.split(b"\r\n")[1:]
    return [l for l in lines if l]

def name(h):
    return h.split(b":")[0].strip().lower()

def length(hs):
    for h in hs:
        if name(h) == b"content-length":
            return int(h.partition(b":")[2].strip())
    return 0

def forward(req, what):
    """req to the next replica that takes the connection: its whole answer."""
    for _ in backends:
        with lock:
            be = backends[turn[0] % len(backends)]
            turn[0] += 1
        try:
            raw = socket.create_connection(("127.0.0.1", be), timeout=60)
        except OSError:
            print("replica", be, "refused: next", flush=True)
            continue
        print("request to", be, what, flush=True)
        with client_ctx.wrap_socket(raw, server_hostname="127.0.0.1") as u:
            u.sendall(req)
            out = b""
            while True:
                d = u.recv(65536)
                if not d:
                    return out
                out += d
    return None

def serve(c):
    try:
        c = server_ctx.wrap_socket(c, server_side=True)
        f = c.makefile("rb")
        while True:
            head = read_head(f)
            if head is None:
                return
            hs = headers(head)
            keep = [h for h in hs if name(h) not in (b"connection", b"expect", b"keep-alive")]
            if any(name(h) == b"expect" for h in hs):
                c.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
            body = f.read(length(hs))
            req = b"\r\n".join([head.split(b"\r\n")[0]] + keep + [b"Connection: close", b"", b""]) + body
            line = head.split(b"\r\n")[0].split(b" ")
            resp = forward(req, b" ".join(line[:2]).decode("ascii", "replace"))
            if not resp:
                return  # no replica answered: the client sees the connection end
            rhead, _, rbody = resp.partition(b"\r\n\r\n")
            rhs = [h for h in headers(rhead + b"\r\n") if name(h) not in (b"connection", b"keep-alive")]
            framed = any(name(h) == b"content-length" for h in rhs)
            c.sendall(b"\r\n".join([rhead.split(b"\r\n")[0]] + rhs +
                                    ([] if framed else [b"Connection: close"]) + [b"", b""]) + rbody)
            if not framed:
                return
    except (OSError, ValueError, ssl.SSLError):
        pass
    finally:
        try: c.close()
        except OSError: pass

s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", port)); s.listen(64)
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
