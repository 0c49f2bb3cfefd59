#!/usr/bin/python3
"""clusters/folly/monitoring/fleetd-alerts.yaml: a well-formed Prometheus rules
file whose control-plane alert fires on fleetd_reattest_failed_total.

Prometheus cannot run here, so this reads the file as data: the rules-file
shape (groups of named rules, nothing else), the alert's expr (the metric, the
role="controlplane" matcher, increase over 1h, > 0), a valid `for` duration,
severity critical, a summary and a description that send the reader to the
journal entry naming the node (the metric has no per-device label), and the
header comment stating the metric as the server side's contract. When
promtool is installed it checks the file too. Needs python3-yaml; skips (77)
without.
"""
import os
import re
import shutil
import subprocess
import sys

try:
    import yaml
except ImportError:
    print("SKIP: python3-yaml is not installed")
    sys.exit(77)

root = os.environ.get("FLEET_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
path = os.path.join(root, "clusters", "folly", "monitoring", "fleetd-alerts.yaml")
METRIC = "fleetd_reattest_failed_total"
failures = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)


with open(path) as f:
    text = f.read()
docs = [d for d in yaml.safe_load_all(text) if d is not None]
check(len(docs) == 1 and isinstance(docs[0], dict), "one YAML document, a mapping")
doc = docs[0] if docs and isinstance(docs[0], dict) else {}
check(set(doc) == {"groups"}, "a rules file: only `groups` at the top (not a PrometheusRule)")

# Prometheus's duration: units y w d h m s ms, largest first, at least one.
DURATION = re.compile(r"^((\d+)y)?((\d+)w)?((\d+)d)?((\d+)h)?((\d+)m)?((\d+)s)?((\d+)ms)?$")
LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
ALERT_KEYS = {"alert", "expr", "for", "keep_firing_for", "labels", "annotations"}


def duration_ok(v):
    return isinstance(v, str) and v != "" and DURATION.match(v) is not None


def templates_balanced(s):
    return s.count("{{") == s.count("}}") and "{{" in s


groups = doc.get("groups") or []
check(isinstance(groups, list) and groups, "groups is a non-empty list")
names = [g.get("name") for g in groups if isinstance(g, dict)]
check(len(names) == len(groups) and all(isinstance(n, str) and n for n in names),
      "every group has a name")
check(len(set(names)) == len(names), "group names are unique")

alerts = {}
for g in groups:
    if not isinstance(g, dict):
        continue
    check(set(g) <= {"name", "interval", "limit", "rules"}, "group %s: known keys only" % g.get("name"))
    if "interval" in g:
        check(duration_ok(g["interval"]), "group %s: interval is a duration" % g.get("name"))
    rules = g.get("rules") or []
    check(isinstance(rules, list) and rules, "group %s: rules is a non-empty list" % g.get("name"))
    for r in rules:
        if not isinstance(r, dict) or "alert" not in r:
            continue
        name = r["alert"]
        check(isinstance(name, str) and re.match(r"^[A-Za-z_:][A-Za-z0-9_:]*$", name) is not None,
              "alert %r: a valid name" % name)
        check(set(r) <= ALERT_KEYS, "alert %s: known keys only (%s)" % (name, sorted(set(r) - ALERT_KEYS)))
        check(isinstance(r.get("expr"), str) and r["expr"].strip(), "alert %s: has an expr" % name)
        if "for" in r:
            check(duration_ok(r["for"]), "alert %s: `for` %r is a duration" % (name, r["for"]))
        for key in ("labels", "annotations"):
            m = r.get(key) or {}
            check(isinstance(m, dict) and all(isinstance(k, str) and LABEL_NAME.match(k)
                                              and isinstance(v, str) for k, v in m.items()),
                  "alert %s: %s map label names to strings" % (name, key))
            for k, v in m.items() if isinstance(m, dict) else []:
                if isinstance(v, str) and "{{" in v:
                    check(templates_balanced(v), "alert %s: %s.%s templates balanced" % (name, key, k))
        alerts[name] = r

a = alerts.get("FleetdControlPlaneReattestFailed")
check(a is not None, "the control-plane re-check alert exists")
a = a or {}
expr = re.sub(r"\s+", "", a.get("expr", ""))
check(re.fullmatch(r"increase\(" + METRIC + r"\{([^}]*)\}\[1h\]\)>0", expr) is not None,
      "expr is increase(%s{...}[1h]) > 0 (it is %r)" % (METRIC, a.get("expr")))
matchers = re.search(r"\{([^}]*)\}", expr)
matchers = matchers.group(1).split(",") if matchers else []
check('role="controlplane"' in matchers, 'expr selects role="controlplane"')
check(all(m.startswith("role=") for m in matchers),
      "expr selects on no label beyond the contract's (role)")
check((a.get("labels") or {}).get("severity") == "critical", "severity critical")
ann = a.get("annotations") or {}
for k in ("summary", "description"):
    check(isinstance(ann.get(k), str) and ann[k].strip(), "%s is set" % k)
    check("$labels.device" not in (ann.get(k) or ""),
          "%s names no label the metric does not have" % k)
check("FLEET_EVENT=reattest-failed" in (ann.get("description") or ""),
      "the description names the journal entry that says which node")

# The header comment is the contract with the server side.
header = "\n".join(l for l in text.splitlines() if l.startswith("#"))
check(METRIC + '{role="controlplane"}' in header,
      "the header states the metric and its labels as the contract")
check("counter" in header, "the header says it is a counter")

promtool = shutil.which("promtool")
if promtool:
    p = subprocess.run([promtool, "check", "rules", path], capture_output=True, text=True)
    check(p.returncode == 0, "promtool check rules: " + (p.stdout + p.stderr).strip()[-300:])
else:
    print("note: promtool is not installed; the file was checked as data only")

if failures:
    print("%d failure(s)" % len(failures))
    sys.exit(1)
print("ok")
