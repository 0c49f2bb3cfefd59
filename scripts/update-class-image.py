#!/usr/bin/python3
"""update-class-image.py: pin a class's Talos installer image in classes.json.

usage: update-class-image.py [--file clusters/folly/fleet/classes.json] CLASS REF

REF is REGISTRY/PATH@sha256:<64 lowercase hex> (a tag before the @ is allowed and
dropped: the digest alone says which image). The class must exist in the file and
install (role worker or controlplane); REF's repository must be the class's `image`
(fleetd's rule K2: the workflow pins the image the file names, never another).
The digest is written into the class's `digest`; the file is rewritten
deterministically (2-space indent, key order kept, trailing newline) through a
temporary file and a rename, and left untouched when nothing changes. The result
is checked against fleet/classes.schema.json when python3-jsonschema is present.

Used by .github/workflows/talos-images.yml after each build; run it locally the
same way. Exit status: 0 written or unchanged, 1 refused, 2 usage.
"""
import json
import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = os.path.join(HERE, "..", "clusters", "folly", "fleet", "classes.json")
REF_RE = re.compile(r"^(?P<repo>[a-z0-9.-]+(?::[0-9]+)?(?:/[a-z0-9._-]+)+)"
                    r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?"
                    r"@(?P<digest>sha256:[0-9a-f]{64})$")


def refuse(msg):
    print("update-class-image: refused: " + msg, file=sys.stderr)
    return 1


def render(doc):
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def main(argv):
    path = DEFAULT
    args = list(argv)
    if len(args) >= 2 and args[0] == "--file":
        path = args[1]
        args = args[2:]
    if len(args) != 2 or args[0].startswith("-"):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    cls, ref = args
    m = REF_RE.match(ref)
    if not m:
        return refuse("%s: not REGISTRY/PATH[:TAG]@sha256:<64 lowercase hex>" % ref)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        doc = json.loads(text, object_pairs_hook=dup_refusing)
    except (OSError, ValueError) as e:
        return refuse("%s: %s" % (path, e))
    classes = doc.get("classes") if isinstance(doc, dict) else None
    if not isinstance(classes, dict) or cls not in classes:
        return refuse("%s: no class %r (classes: %s)" % (
            path, cls, ", ".join(sorted(classes or {})) or "none"))
    c = classes[cls]
    if c.get("role") not in ("worker", "controlplane"):
        return refuse("class %s: role %r installs nothing, it has no image" % (cls, c.get("role")))
    if c.get("image") != m.group("repo"):
        return refuse("class %s: %s is not the class's image %s" % (cls, m.group("repo"),
                                                                  c.get("image")))
    c["digest"] = m.group("digest")
    err = schema_error(doc)
    if err:
        return refuse("%s after the update: %s" % (path, err))
    new = render(doc)
    if new == text:
        print("update-class-image: %s: class %s already pins %s" % (path, cls, c["digest"]))
        return 0
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".classes.", dir=d)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(new)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, os.stat(path).st_mode & 0o777)
        os.rename(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    print("update-class-image: %s: class %s now pins %s@%s" % (path, cls, c["image"], c["digest"]))
    return 0


def dup_refusing(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise ValueError("duplicate key %r" % k)
        out[k] = v
    return out


def schema_error(doc):
    try:
        import jsonschema
    except ImportError:
        return None
    p = os.path.join(HERE, "..", "clusters", "folly", "fleet", "classes.schema.json")
    if not os.path.isfile(p):
        return None
    with open(p) as f:
        schema = json.load(f)
    errs = list(jsonschema.Draft202012Validator(schema).iter_errors(doc))
    return "; ".join(e.message for e in errs[:3]) if errs else None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
