#!/usr/bin/python3
"""Helpers for tests/talos/test_talosctl_fake.sh, independent of the fake
(tests/fakes/talosctl_fake.py): nothing here imports it.

  schema SCHEMA FILE          validate each document of a machine config with
                              jsonschema's Draft202012Validator: the v1alpha1
                              document against #/$defs/v1alpha1.Config, the
                              others against the definition whose kind enum
                              names them; print one line per error
                              ("<doc>: <path>: <message>"), exit 1 if any
  get FILE DOC PATH           print the JSON of a value (PATH dotted, DOC the
                              document index), or <absent>
  kinds FILE                  print each document's kind (v1alpha1 for the
                              legacy document), one per line
  set FILE OUT DOC PATH JSON  write FILE with the value at PATH set
  del FILE OUT DOC PATH...    write FILE with the values at PATHs removed
  pem SECRETS DIR             write each PEM of a secrets bundle to
                              DIR/<name>.crt / DIR/<name>.key
"""

import base64
import json
import os
import sys

import yaml


def load(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def dump(docs, path):
    with open(path, "w") as f:
        yaml.safe_dump_all(docs, f, sort_keys=False)


def walk(doc, path):
    cur = doc
    for p in path.split("."):
        if not isinstance(cur, dict) or p not in cur:
            return None, False
        cur = cur[p]
    return cur, True


def schema_check(schema_path, config_path):
    from jsonschema import Draft202012Validator
    with open(schema_path) as f:
        schema = json.load(f)
    defs = schema["$defs"]
    by_kind = {}
    for name, d in defs.items():
        kind = d.get("properties", {}).get("kind", {}).get("enum")
        if kind:
            by_kind[kind[0]] = name
    errors = []
    for i, doc in enumerate(load(config_path)):
        if "kind" in doc:
            name = by_kind.get(doc["kind"])
            if name is None:
                errors.append("%d: (document): no schema definition for kind %r"
                              % (i, doc["kind"]))
                continue
        else:
            name = "v1alpha1.Config"
        v = Draft202012Validator({"$ref": "#/$defs/" + name, "$defs": defs})
        for e in v.iter_errors(doc):
            where = ".".join(str(p) for p in e.absolute_path) or "(document)"
            errors.append("%d: %s: %s" % (i, where, e.message))
    for e in sorted(errors):
        print(e)
    return 1 if errors else 0


def main(argv):
    cmd = argv[1]
    if cmd == "schema":
        return schema_check(argv[2], argv[3])
    if cmd == "get":
        docs = load(argv[2])
        v, ok = walk(docs[int(argv[3])], argv[4]) if int(argv[3]) < len(docs) \
            else (None, False)
        print(json.dumps(v, sort_keys=True) if ok else "<absent>")
        return 0
    if cmd == "kinds":
        for d in load(argv[2]):
            print(d.get("kind", "v1alpha1"))
        return 0
    if cmd in ("set", "del"):
        docs = load(argv[2])
        doc = docs[int(argv[4])]
        paths = argv[5:6] if cmd == "set" else argv[5:]
        for path in paths:
            *parents, last = path.split(".")
            parent, ok = walk(doc, ".".join(parents)) if parents else (doc, True)
            if not ok or not isinstance(parent, dict):
                sys.exit("talos_yaml: no %s in %s" % (path, argv[2]))
            if cmd == "set":
                parent[last] = json.loads(argv[6])
            else:
                parent.pop(last, None)
        dump(docs, argv[3])
        return 0
    if cmd == "pem":
        with open(argv[2]) as f:
            bundle = yaml.safe_load(f)
        os.makedirs(argv[3], exist_ok=True)
        for name, pair in bundle["certs"].items():
            for kind in ("crt", "key"):
                if kind in pair:
                    with open(os.path.join(argv[3], "%s.%s" % (name, kind)), "wb") as f:
                        f.write(base64.b64decode(pair[kind]))
        return 0
    sys.exit("talos_yaml: unknown command %s" % cmd)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
