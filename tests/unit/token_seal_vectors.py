#!/usr/bin/env python3
"""The known-answer vector of lib/token_seal.c (TS12) and the seeds of
tests/fuzz/corpus/fuzz_token_seal/, computed without fleetd's code.

  tests/unit/token_seal_vectors.py            print the vector (C source)
  tests/unit/token_seal_vectors.py --seeds D  write the fuzz seeds into D

The sealing is done here with Python's `cryptography` package (ECDH, HKDF,
AES-GCM of OpenSSL underneath, but none of lib/token_seal.c: the byte layout,
the salt, the info and the AAD are rebuilt from docs/join-tokens.md). Each
step is then checked again with the openssl command line where it has one:
the ECDH secret with `openssl pkeyutl -derive`, the HKDF key with `openssl
kdf ... HKDF` (the CLI has no AES-GCM, so the last step rests on
`cryptography` alone). tests/unit/test_token_seal.c holds the output.
"""
import hashlib
import os
import subprocess
import sys
import tempfile

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

MAGIC = b"fsl1"
INFO_LABEL = b"fleetd seal v1"


def scalar(label):
    """A fixed P-256 scalar: SHA-256 of a label (below the order)."""
    d = int.from_bytes(hashlib.sha256(label).digest(), "big")
    assert 0 < d < 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
    return d


def key(d):
    return ec.derive_private_key(d, ec.SECP256R1())


def spki(k):
    return k.public_key().public_bytes(serialization.Encoding.DER,
                                       serialization.PublicFormat.SubjectPublicKeyInfo)


def point(k):
    return k.public_key().public_bytes(serialization.Encoding.X962,
                                       serialization.PublicFormat.UncompressedPoint)


def seal(recipient, eph, nonce, purpose, pt):
    """(sealed bytes, Z, key, salt, info) as docs/join-tokens.md says."""
    r_spki = spki(recipient)
    r_hash = hashlib.sha256(r_spki).digest()
    z = eph.exchange(ec.ECDH(), recipient.public_key())
    salt = point(eph) + r_hash
    info = INFO_LABEL + b"\x00" + purpose
    k = HKDF(algorithm=hashes.SHA256(), length=32, salt=salt, info=info).derive(z)
    header = MAGIC + r_hash[:8] + point(eph) + nonce
    aad = header + b"\x00" + purpose
    return header + AESGCM(k).encrypt(nonce, pt, aad), z, k, salt, info


def pem_of(k, private):
    if private:
        return k.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                               serialization.NoEncryption())
    return k.public_key().public_bytes(serialization.Encoding.PEM,
                                       serialization.PublicFormat.SubjectPublicKeyInfo)


def openssl_check(recipient, eph, z, k, salt, info):
    """The ECDH and HKDF steps again with the openssl CLI; False if absent."""
    try:
        subprocess.run(["openssl", "version"], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        return False
    with tempfile.TemporaryDirectory() as d:
        ep, rp = os.path.join(d, "eph.pem"), os.path.join(d, "recipient.pub.pem")
        open(ep, "wb").write(pem_of(eph, True))
        open(rp, "wb").write(pem_of(recipient, False))
        out = subprocess.run(["openssl", "pkeyutl", "-derive", "-inkey", ep, "-peerkey", rp],
                             check=True, capture_output=True).stdout
        assert out == z, "openssl pkeyutl -derive disagrees on Z"
    out = subprocess.run(["openssl", "kdf", "-keylen", "32", "-kdfopt", "digest:SHA256",
                          "-kdfopt", "hexkey:" + z.hex(), "-kdfopt", "hexsalt:" + salt.hex(),
                          "-kdfopt", "hexinfo:" + info.hex(), "HKDF"],
                         check=True, capture_output=True, text=True).stdout
    assert bytes.fromhex(out.strip().replace(":", "")) == k, "openssl kdf disagrees on the key"
    return True


def c_bytes(name, b):
    lines = ["static const uint8_t %s[%d] = {" % (name, len(b))]
    for i in range(0, len(b), 12):
        lines.append("\t" + " ".join("0x%02x," % x for x in b[i:i + 12]))
    lines.append("};")
    return "\n".join(lines)


# The KAT (tests/unit/test_token_seal.c test_kat).
KAT_RECIPIENT = scalar(b"fleetd token_seal KAT recipient")
KAT_EPHEMERAL = scalar(b"fleetd token_seal KAT ephemeral")
KAT_NONCE = bytes(range(12))
KAT_PURPOSE = b"join-token"
KAT_PT = b"fleet-join-token:0123456789abcdef"

# The fuzz target's fixed key (tests/fuzz/fuzz_token_seal.c) and its seeds'
# ephemeral key and nonce.
FUZZ_KEY = scalar(b"fleetd fuzz_token_seal fixed key")
FUZZ_EPHEMERAL = scalar(b"fleetd fuzz_token_seal seed ephemeral")
FUZZ_PURPOSE = b"join-token"


def seeds(outdir):
    r, e = key(FUZZ_KEY), key(FUZZ_EPHEMERAL)
    nonce = bytes.fromhex("a0a1a2a3a4a5a6a7a8a9aaab")
    good = seal(r, e, nonce, FUZZ_PURPOSE, b"fleet-join-token:seed")[0]
    big = seal(r, e, nonce, FUZZ_PURPOSE, bytes((i * 7) & 0xff for i in range(4096)))[0]
    one = seal(r, e, nonce, FUZZ_PURPOSE, b"x")[0]
    other = seal(r, e, nonce, b"discovery", b"fleet-join-token:seed")[0]
    other_key = seal(key(KAT_RECIPIENT), e, nonce, FUZZ_PURPOSE, b"fleet-join-token:seed")[0]
    off_curve = bytearray(good)
    off_curve[12 + 64] ^= 0x01  # the last byte of Y
    tampered = bytearray(good)
    tampered[-1] ^= 0x80
    version = bytearray(good)
    version[3] = ord("2")
    out = {
        "valid.seal": good,
        "valid-max.seal": big,
        "valid-one-byte.seal": one,
        "other-purpose.seal": other,
        "other-key.seal": other_key,
        "off-curve.seal": bytes(off_curve),
        "tampered-tag.seal": bytes(tampered),
        "version-2.seal": bytes(version),
        "truncated.seal": good[:104],
    }
    os.makedirs(outdir, exist_ok=True)
    for name, b in out.items():
        open(os.path.join(outdir, name), "wb").write(b)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--seeds":
        seeds(sys.argv[2])
        return
    r, e = key(KAT_RECIPIENT), key(KAT_EPHEMERAL)
    sealed, z, k, salt, info = seal(r, e, KAT_NONCE, KAT_PURPOSE, KAT_PT)
    checked = openssl_check(r, e, z, k, salt, info)
    print("/* tests/unit/token_seal_vectors.py; openssl CLI check of Z and the HKDF key: %s */"
          % ("passed" if checked else "not run (no openssl)"))
    print(c_bytes("kat_recipient_d", KAT_RECIPIENT.to_bytes(32, "big")))
    print(c_bytes("kat_ephemeral_d", KAT_EPHEMERAL.to_bytes(32, "big")))
    print(c_bytes("kat_recipient_spki", spki(r)))
    print(c_bytes("kat_z", z))
    print(c_bytes("kat_key", k))
    print(c_bytes("kat_sealed", sealed))
    print(c_bytes("fuzz_key_d", FUZZ_KEY.to_bytes(32, "big")))


if __name__ == "__main__":
    main()
