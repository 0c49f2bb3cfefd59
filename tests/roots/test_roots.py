#!/usr/bin/python3
"""roots/: the manifest is the real manufacturer CAs, and fetch-roots refuses any other.

- every manifest entry's sha256 is the SHA-256 of the DER of the real file of that
  vendor in ../shared/data/ek-roots (FLEET_SHARED_DATA), its subject is that file's,
  and no shared CA is missing from the manifest;
- no entry is a test root (a subject or vendor naming test/fake/example/swtpm);
- fetch-roots --from the shared dir installs them all, and fleetd's loader takes the
  directory: `fleetctl ek verify --roots OUT` (FLEETCTL) says ok for the real
  Nuvoton and STMicro EKs of ../shared/data/ek-certs;
- refused, vendor and both fingerprints named, nothing installed (an existing --out
  left as it was): a copy with one byte changed; a different real CA under another's
  file name; a PEM with two certificates.
Skips (77) without the shared data or openssl.
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

root = os.environ.get("FLEET_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
shared = os.environ.get("FLEET_SHARED_DATA") or os.path.join(root, "..", "shared", "data")
ekroots = os.path.join(shared, "ek-roots")
ekcerts = os.path.join(shared, "ek-certs")
tool = os.path.join(root, "roots", "fetch-roots")
fleetctl = os.environ.get("FLEETCTL")
failures = []

if not os.path.isdir(ekroots):
    print("SKIP: the shared EK roots are not here (%s); set FLEET_SHARED_DATA" % ekroots)
    sys.exit(77)
if not shutil.which("openssl"):
    print("SKIP: openssl is not installed")
    sys.exit(77)


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)


def der_of(path):
    return subprocess.run(["openssl", "x509", "-in", path, "-outform", "DER"],
                          capture_output=True, check=True).stdout


def subject_of(path):
    out = subprocess.run(["openssl", "x509", "-in", path, "-noout", "-subject", "-nameopt",
                          "RFC2253"], capture_output=True, text=True, check=True).stdout
    return out.strip()[len("subject="):]


def run(*args):
    return subprocess.run([tool] + list(args), capture_output=True, text=True)


manifest = json.load(open(os.path.join(root, "roots", "manifest.json")))
certs = manifest["certificates"]
by_fp = {}
for f in sorted(os.listdir(ekroots)):
    by_fp.setdefault(hashlib.sha256(der_of(os.path.join(ekroots, f))).hexdigest(), []).append(f)

for c in certs:
    p = os.path.join(ekroots, c["file"])
    real = hashlib.sha256(der_of(p)).hexdigest() if os.path.isfile(p) else None
    check(real == c["sha256"], "%s %s: the manifest's sha256 is that of %s" % (
        c["vendor"], c["id"], c["file"]))
    if real:
        check(subject_of(p) == c["subject"], "%s %s: the subject is the certificate's" % (
            c["vendor"], c["id"]))
    for alias in c.get("also_in", []):
        check(hashlib.sha256(der_of(os.path.join(ekroots, alias))).hexdigest() == c["sha256"],
              "%s %s: %s is the same certificate" % (c["vendor"], c["id"], alias))
    check(c["url"] == "unverified" or c["url"].startswith(("http://", "https://")),
          "%s %s: url is a URL or says unverified" % (c["vendor"], c["id"]))
    check(isinstance(c.get("url_verified"), str) and c["url_verified"].startswith(
        ("verified", "unverified")) and (c["url"] != "unverified"
                                         or c["url_verified"].startswith("unverified")),
          "%s %s: url_verified says how the URL was confirmed, or unverified" % (
              c["vendor"], c["id"]))
    text = (c["subject"] + " " + c["vendor"]).lower()
    check(not any(w in text for w in ("test", "fake", "example", "swtpm", "dummy")),
          "%s %s: not a test root" % (c["vendor"], c["id"]))
listed = {c["sha256"] for c in certs}
check(set(by_fp) == listed, "every real CA of %s is in the manifest, once (%d)" % (
    ekroots, len(listed)))
check(len(listed) == len(certs), "no certificate is listed twice")

tmp = tempfile.mkdtemp(prefix="fleet-roots-")
try:
    out = os.path.join(tmp, "roots")
    r = run("--from", ekroots, "--out", out)
    check(r.returncode == 0, "fetch-roots --from the shared dir installs (%s)" % r.stderr.strip())
    installed = sorted(os.listdir(out)) if os.path.isdir(out) else []
    check(installed == sorted(c["id"] + ".pem" for c in certs),
          "one PEM per manifest entry is installed (%d)" % len(installed))
    for name in installed:
        check(hashlib.sha256(der_of(os.path.join(out, name))).hexdigest()
              == next(c["sha256"] for c in certs if c["id"] + ".pem" == name),
              "%s is installed byte-exact" % name)
        break
    check(not [n for n in os.listdir(tmp) if n != "roots"], "no temporary directory is left")
    r = run("--from", ekroots, "--out", out)
    check(r.returncode == 0 and sorted(os.listdir(out)) == installed,
          "a second run replaces the directory with the same tree")

    if not fleetctl or not os.access(fleetctl, os.X_OK):
        print("SKIP (part): FLEETCTL is not set to fleetctl; the loader check is not run")
    else:
        for ek, want in (("nuvoton-1.der", "ok"), ("stmicro-1.der", "ok")):
            r = subprocess.run([fleetctl, "ek", "verify", "--roots", out,
                                os.path.join(ekcerts, ek)], capture_output=True, text=True)
            check(r.returncode == 0 and r.stdout.strip() == want,
                  "fleetctl ek verify --roots <installed> %s: %s (%s%s)" % (
                      ek, want, r.stdout.strip(), r.stderr.strip()))

    def refused(what, src, vendor, expected, actual):
        before = sorted(os.listdir(out))
        fresh = os.path.join(tmp, "fresh")
        r1 = run("--from", src, "--out", out)
        r2 = run("--from", src, "--out", fresh)
        check(r1.returncode == 1 and r2.returncode == 1, what + ": refused (exit 1)")
        check(vendor in r1.stderr and expected in r1.stderr and actual in r1.stderr,
              what + ": the refusal names %s, the expected and the actual fingerprint" % vendor)
        check(sorted(os.listdir(out)) == before and not os.path.exists(fresh)
              and not [n for n in os.listdir(tmp) if n not in ("roots", "src")],
              what + ": nothing installed, the installed directory unchanged")
        print("   " + r1.stderr.strip().splitlines()[0])

    def copy_shared():
        src = os.path.join(tmp, "src")
        shutil.rmtree(src, ignore_errors=True)
        shutil.copytree(ekroots, src)
        return src

    # One byte changed inside the DER of Nuvoton's Root CA 2111.
    victim = next(c for c in certs if c["id"] == "NUVO_2111")
    src = copy_shared()
    der = bytearray(der_of(os.path.join(ekroots, victim["file"])))
    der[len(der) // 2] ^= 0x01
    with open(os.path.join(src, victim["file"]), "wb") as f:
        f.write(der)
    refused("a Nuvoton root with one byte changed", src, victim["vendor"], victim["sha256"],
            hashlib.sha256(der).hexdigest())

    # A different real CA (Intel's root) under STMicro's intermediate's name.
    victim = next(c for c in certs if c["id"] == "STM_RSA_05I")
    other = next(c for c in certs if c["id"] == "INTEL_RT")
    src = copy_shared()
    shutil.copy(os.path.join(ekroots, other["file"]), os.path.join(src, victim["file"]))
    refused("Intel's root under STMicro's intermediate's name", src, victim["vendor"],
            victim["sha256"], other["sha256"])

    # Two certificates in one file: the right one followed by another.
    victim = next(c for c in certs if c["id"] == "INF_RSA_010RT")
    src = copy_shared()
    with open(os.path.join(src, victim["file"]), "ab") as f:
        f.write(open(os.path.join(ekroots, other["file"]), "rb").read())
    r = run("--from", src, "--out", os.path.join(tmp, "fresh"))
    check(r.returncode == 1 and victim["vendor"] in r.stderr and "not one" in r.stderr
          and not os.path.exists(os.path.join(tmp, "fresh")),
          "a PEM with two certificates is refused, the vendor named, nothing installed")
finally:
    shutil.rmtree(tmp)

if failures:
    print("%d failed" % len(failures))
    sys.exit(1)
print("all passed")
