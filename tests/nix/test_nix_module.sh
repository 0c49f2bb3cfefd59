#!/usr/bin/env bash
# test_nix_module.sh FLEETD: the NixOS modules of nix/ evaluated for real
# (Debian's nix-bin, nixpkgs' module system from ../shared/contracts) and
# held to the tree:
#   1. fleetd.yaml as the module renders it for tests/nix/example.nix (NetBox,
#      SPIRE, join) and for the file inventory passes `fleetd --check-config`
#      with every file it names made here: the module and the daemon agree
#      on every key; a freeform key fleetd does not know is refused by
#      fleetd (the module cannot know every key, the daemon does);
#   2. each unit (fleetd, tpm-reattest + timer, spire-server-fleet-entries +
#      path) carries exactly the directives of its file in the tree;
#   3. bad option values fail evaluation, naming the option.
# Skips (77) without nix-instantiate or ../shared/contracts/nixpkgs-lib.
# shellcheck source-path=SCRIPTDIR
set -euo pipefail

fleetd="${1:?usage: test_nix_module.sh FLEETD}"
src="${FLEET_SOURCE_DIR:?}"
nixlib="${FLEET_SHARED_DATA:-$src/../shared/data}/../contracts/nixpkgs-lib/lib"
if ! command -v nix-instantiate >/dev/null; then
	echo "SKIP: nix-instantiate is not installed (Debian: apt-get install nix-bin)"
	exit 77
fi
if [ ! -f "$nixlib/default.nix" ]; then
	echo "SKIP: nixpkgs' lib is not at $nixlib (../shared/contracts/nixpkgs-lib)"
	exit 77
fi
nixlib=$(cd "$nixlib" && pwd)

# shellcheck source=../../scripts/demo-site.sh
. "$src/scripts/demo-site.sh"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
umask 077 # fleetd reads its configuration and secrets only when private
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }

# nix-instantiate with the example and an optional override module; the
# state it wants (a store, a profile) stays in $work.
export NIX_STATE_DIR="$work/nix/var" NIX_LOG_DIR="$work/nix/log" HOME="$work"
evaluate() { # [override module expression]
	local a=(--eval --strict --json "$src/tests/nix/eval.nix" --arg nixpkgsLib "$nixlib")
	[ $# -eq 0 ] || a+=(--arg override "$1")
	nix-instantiate "${a[@]}"
}

# ---- 1. the rendered fleetd.yaml against fleetd ------------------------------

evaluate >"$work/eval.json" 2>"$work/eval.err" || {
	cat "$work/eval.err"
	echo "FAIL: the example configuration does not evaluate"
	exit 1
}
ok "tests/nix/example.nix evaluates (lib.evalModules, every assertion holds)"

site="$work/site" # what example.nix calls /run/fleetd-nix-test
mkdir -p "$site/roots" "$site/profiles" "$site/ca" "$site/join"
site_tls "$site/tls"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
	-subj "/CN=nix module test EK root" -keyout /dev/null -out "$site/roots/test.pem" 2>/dev/null
cp "$src/tests/fwsim/worker.profile.yaml" "$site/profiles/worker.yaml"
printf 'version: 1\nnodes: []\n' >"$site/nodes.yaml"
printf 'nbt_0123456789abcdef.0123456789abcdef0123456789abcdef01234567\n' >"$site/netbox.token"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
	-subj "/CN=nix module test identity CA" -addext basicConstraints=critical,CA:TRUE \
	-keyout "$site/ca/ca.key" -out "$site/ca/ca.crt" 2>/dev/null
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$site/join/seal.key" 2>/dev/null
openssl rand -hex 32 >"$site/join/tpm-challenge.key"

# The YAML as the module rendered it, its paths moved into $site.
render() { # eval.json out.yaml
	python3 - "$1" "$2" "$site" <<'PY'
import json, sys
y = json.load(open(sys.argv[1]))["yaml"]
open(sys.argv[2], "w").write(y.replace("/run/fleetd-nix-test", sys.argv[3]))
PY
}
check_config() { # name yaml
	if "$fleetd" --config "$2" --check-config >"$work/check.out" 2>&1; then
		ok "$1: fleetd --check-config accepts the rendered fleetd.yaml"
	else
		fail "$1: fleetd --check-config refuses the rendered fleetd.yaml:"
		sed 's/^/  /' "$work/check.out" "$2"
	fi
}
render "$work/eval.json" "$work/netbox.yaml"
check_config "NetBox, SPIRE, join" "$work/netbox.yaml"

file_inventory='{ lib, ... }: { homelab.fleetd = {
  inventory.kind = lib.mkForce "file";
  netbox.url = lib.mkForce null; netbox.tokenFile = lib.mkForce null;
  bindingAuthor = lib.mkForce null; join = lib.mkForce null;
  nodesFile = "/run/fleetd-nix-test/nodes.yaml"; }; }'
if evaluate "$file_inventory" >"$work/file.json" 2>"$work/eval.err"; then
	render "$work/file.json" "$work/file.yaml"
	check_config "the file inventory" "$work/file.yaml"
else
	fail "the file inventory does not evaluate: $(cat "$work/eval.err")"
fi

# The other way: a key only settings carries, which fleetd must refuse.
if evaluate '{ homelab.fleetd.settings.sessions.ttl_secs = 900; }' >"$work/typo.json" 2>"$work/eval.err"; then
	render "$work/typo.json" "$work/typo.yaml"
	if "$fleetd" --config "$work/typo.yaml" --check-config >"$work/check.out" 2>&1; then
		fail "fleetd accepts settings.sessions.ttl_secs, a key it does not have"
	else
		ok "a misspelt freeform key (settings.sessions.ttl_secs) is refused by fleetd: $(grep -m1 "^fleetd: .*unknown key 'ttl_secs'" "$work/check.out" || head -n1 "$work/check.out")"
	fi
else
	fail "settings.sessions.ttl_secs does not evaluate: $(cat "$work/eval.err")"
fi

# A test-only switch is said out loud: NixOS prints config.warnings.
if evaluate '{ homelab.fleetd.join.tpm.allow_uncertified_ek = true; }' >"$work/warn.json" 2>"$work/eval.err" &&
	python3 -c 'import json,sys; w=json.load(open(sys.argv[1]))["warnings"]; sys.exit(not any("allow_uncertified_ek" in x for x in w))' "$work/warn.json"; then
	ok "join.tpm.allow_uncertified_ek = true is warned about"
else
	fail "join.tpm.allow_uncertified_ek = true gives no warning $(cat "$work/eval.err")"
fi

# ---- 2. the units against the tree's ------------------------------------------

python3 - "$work/eval.json" "$src" <<'PY' || failures=$((failures + 1))
import json, os, re, sys

ev = json.load(open(sys.argv[1]))
src = sys.argv[2]
url = "https://fleetd.folly.example:8443"  # example.nix's homelab.tpmReattest.url

def parse(path):
    """{section: {key: [values]}} of a unit file, in order."""
    out, sec = {}, None
    for line in open(path):
        line = line.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            sec = out.setdefault(line[1:-1], {})
            continue
        k, v = line.split("=", 1)
        sec.setdefault(k, []).append(canon(v))
    return out

def canon(v):
    """systemd's booleans: yes/true/on and no/false/off are one value each."""
    return {"true": "yes", "on": "yes", "false": "no", "off": "no"}.get(v, v)

def norm(v):
    if v is True:
        return ["yes"]
    if v is False:
        return ["no"]
    if isinstance(v, list):
        return [x for e in v for x in norm(e)]
    return [canon(str(v))]

def program(line):
    """ExecStart without where the binary is: /usr/sbin or the store's bin."""
    argv = line.replace("${FLEETD_URL}", url).split()
    return [os.path.basename(argv[0])] + argv[1:]

def docs(vals):
    return [os.path.basename(v) for v in vals]

def nixos(kind, name):
    """The unit NixOS would write, as {section: {key: [values]}}."""
    u = ev["systemd"][kind][name]
    unit = {"Description": [u["description"]]}
    for opt, key in (("documentation", "Documentation"), ("wants", "Wants"), ("after", "After")):
        if u.get(opt):
            unit[key] = u[opt]
    for k, v in u.get("unitConfig", {}).items():
        unit[k] = norm(v)
    body = {k: norm(v) for k, v in u.get(kind[:-1] + "Config", {}).items()}
    for k, v in u.get("environment", {}).items():
        body.setdefault("Environment", []).append(f"{k}={v}")
    out = {"Unit": unit, {"services": "Service", "timers": "Timer", "paths": "Path"}[kind]: body}
    if u.get("wantedBy"):
        out["Install"] = {"WantedBy": u["wantedBy"]}
    return out

# What differs by design, and why.
NOT_COMPARED = {
    # The URL is an option (homelab.tpmReattest.url), not a file beside the unit.
    ("tpm-reattest.service", "Service", "EnvironmentFile"),
}
bad = 0
for f, kind, name in (
    ("fleetd/fleetd.service", "services", "fleetd"),
    ("tpm-reattest/tpm-reattest.service", "services", "tpm-reattest"),
    ("tpm-reattest/tpm-reattest.timer", "timers", "tpm-reattest"),
    ("spire-server-fleet-entries/spire-server-fleet-entries.service", "services", "spire-server-fleet-entries"),
    ("spire-server-fleet-entries/spire-server-fleet-entries.path", "paths", "spire-server-fleet-entries"),
):
    want, got = parse(os.path.join(src, f)), nixos(kind, name)
    base = os.path.basename(f)
    diffs = []
    for sec in sorted(set(want) | set(got)):
        w, g = want.get(sec, {}), got.get(sec, {})
        for k in sorted(set(w) | set(g)):
            if (base, sec, k) in NOT_COMPARED:
                continue
            wv, gv = w.get(k), g.get(k)
            if k == "ExecStart" and wv and gv:
                wv, gv = program(wv[0]), program(gv[0])
            if k == "Documentation" and wv and gv:
                wv, gv = docs(wv), docs(gv)
            if wv != gv:
                diffs.append(f"[{sec}] {k}: {base} has {wv}, the module {gv}")
    n = sum(len(s) for s in want.values())
    if diffs:
        bad += 1
        print(f"FAIL: {base} and the module's {name} differ:")
        for d in diffs:
            print("  " + d)
    else:
        print(f"ok: the module's {name} {kind[:-1]} has {base}'s {n} directives, each equal")
sys.exit(1 if bad else 0)
PY

# ---- 3. bad values are refused, naming the option ------------------------------

refused() { # what option-name override
	if evaluate "$3" >/dev/null 2>"$work/refused.err"; then
		fail "$1 evaluates"
	elif grep -q -F "$2" "$work/refused.err"; then
		ok "$1 refused: $(grep -m1 -F "$2" "$work/refused.err" | sed 's/^ *//; s/^error: //' | cut -c1-220)"
	else
		fail "$1 refused without naming $2: $(head -c 600 "$work/refused.err")"
	fi
}
F='{ lib, ... }: { homelab.fleetd'
refused "port 70000" homelab.fleetd.listen.port "$F.listen.port = lib.mkForce 70000; }"
refused "a relative token file" homelab.fleetd.netbox.tokenFile "$F.netbox.tokenFile = lib.mkForce \"netbox.token\"; }"
refused "a token file in the Nix store" homelab.fleetd.netbox.tokenFile \
	"$F.netbox.tokenFile = lib.mkForce \"\${builtins.storeDir}/0000-netbox.token\"; }"
refused "a token file given as a Nix path" homelab.fleetd.netbox.tokenFile "$F.netbox.tokenFile = lib.mkForce /etc/hostname; }"
refused "a TLS key in the Nix store" homelab.fleetd.tls.key "$F.tls.key = lib.mkForce \"/nix/store/0000-fleetd.key\"; }"
refused "an unknown inventory kind" homelab.fleetd.inventory.kind "$F.inventory.kind = lib.mkForce \"ldap\"; }"
refused "an http:// NetBox" homelab.fleetd.netbox.url "$F.netbox.url = lib.mkForce \"http://netbox.example.org/\"; }"
refused "NetBox without bindingAuthor (an assertion)" homelab.fleetd.bindingAuthor "$F.bindingAuthor = lib.mkForce null; }"
refused "settings.listen.port besides listen.port" homelab.fleetd.settings.listen.port \
	"$F.settings.listen.port = 9443; }"
refused "a class whose profile climbs out of profilesDir" homelab.fleetd.classes \
	"$F.classes = lib.mkForce { worker = \"../worker.yaml\"; }; }"
refused "an upper-case SPIRE trust domain" homelab.fleetd.spire.trustDomain "$F.spire.trustDomain = lib.mkForce \"Folly\"; }"
refused "a profiles dir with .." homelab.fleetd.profilesDir "$F.profilesDir = lib.mkForce \"/etc/fleetd/../profiles\"; }"
refused "a state dir outside /var/lib" homelab.fleetd.stateDir "$F.stateDir = lib.mkForce \"/srv/fleetd\"; }"
refused "an unknown join.discovery_approval" homelab.fleetd.join.discovery_approval \
	"$F.join.discovery_approval = lib.mkForce \"sometimes\"; }"
refused "an http:// fleetd for tpm-reattest" homelab.tpmReattest.url \
	'{ lib, ... }: { homelab.tpmReattest.url = lib.mkForce "http://fleetd.example"; }'

if [ "$failures" -ne 0 ]; then
	echo "$failures check(s) failed"
	exit 1
fi
echo "all checks passed"
