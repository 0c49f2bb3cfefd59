#!/usr/bin/python3
"""terraform/netbox/folly, checked with the real HCL parser and the real schemas.

No terraform binary and no NetBox run here, so the module is read as data:

  * every .tf file is parsed by HashiCorp's HCL v2 parser (@cdktf/hcl2json from
    the npm registry, run with node) into JSON;
  * every resource type exists in the provider's schema pages
    (../shared/contracts/terraform-provider-netbox/*.md), every attribute or
    block set on a resource is in that page's "Required"/"Optional" lists (or
    is a Terraform meta-argument), and every required attribute is set;
  * the custom fields declared with netbox_custom_field are exactly the ones
    fleetd reads (derived from fleetd/inventory/netbox_json.c and checked
    against docs/netbox.md's table), on dcim.device, with the type the table
    gives; the ones the module fills from the nodes file are nodes-file keys
    (fleetd/inventory/nodes_file_parse.c) and the ones it leaves out are the
    ones fleetd alone writes;
  * netbox_device's lifecycle.ignore_changes covers what fleetd writes
    (status, custom_fields["ek_hash"], custom_fields["ek_hash_ecc"]) and what
    the owner sets (custom_fields["desired_action"]), and nothing Terraform
    owns (the binding);
  * the nodes file is read with yamldecode(file(var.nodes_file)) and the
    provider is e-breuninger/netbox with a version pinned;
  * every example nodes file validates against docs/nodes-file.schema.json
    (whose keys are the parser's) and is accepted by fleetd's own parser
    (nodes_file_check, tests/terraform/nodes_file_check.c);
  * and each check refuses a deliberately broken copy.

Environment: FLEET_SOURCE_DIR, FLEET_CONTRACTS (default
$FLEET_SOURCE_DIR/../shared/contracts), FLEET_NODES_FILE_CHECK (default
$FLEET_BINARY_DIR/tests/nodes_file_check), FLEET_NPM_PREFIX (where
`npm install --prefix DIR @cdktf/hcl2json` was run; default
/usr/local/lib/fleet-npm). Skips (77), saying what is missing, without node,
hcl2json, python3-yaml, python3-jsonschema or the contracts.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("FLEET_SOURCE_DIR") or os.path.normpath(os.path.join(HERE, "..", ".."))
CONTRACTS = os.environ.get("FLEET_CONTRACTS") or os.path.join(ROOT, "..", "shared", "contracts")
PAGES = os.path.join(CONTRACTS, "terraform-provider-netbox")
MODULE = os.path.join(ROOT, "terraform", "netbox", "folly")
SCHEMA = os.path.join(ROOT, "docs", "nodes-file.schema.json")
NPM_PREFIXES = [p for p in (os.environ.get("FLEET_NPM_PREFIX"), "/usr/local/lib/fleet-npm") if p]
INSTALL = ("apt-get install -y nodejs npm && "
           "npm install --prefix /usr/local/lib/fleet-npm @cdktf/hcl2json "
           "(or set FLEET_NPM_PREFIX to the prefix used)")

# Terraform's meta-arguments: valid in every resource block.
META = {"count", "for_each", "depends_on", "provider", "lifecycle", "provisioner", "connection"}


def skip(why):
    print("SKIP: " + why)
    sys.exit(77)


try:
    import yaml
except ImportError:
    skip("python3-yaml is not installed (apt-get install python3-yaml)")
try:
    import jsonschema
except ImportError:
    skip("python3-jsonschema is not installed (apt-get install python3-jsonschema)")

NODE = shutil.which("node") or shutil.which("nodejs")
if not NODE:
    skip("node is not installed: " + INSTALL)
HCL2JSON = None
for prefix in NPM_PREFIXES:
    cand = os.path.join(prefix, "node_modules", "@cdktf", "hcl2json")
    if os.path.isfile(os.path.join(cand, "package.json")):
        HCL2JSON = cand
        break
if not HCL2JSON:
    skip("@cdktf/hcl2json not found under %s: %s" % (", ".join(NPM_PREFIXES), INSTALL))
if not os.path.isdir(PAGES):
    skip("the provider schema pages are not at %s (../shared/contracts)" % PAGES)

CHECKER = os.environ.get("FLEET_NODES_FILE_CHECK") or os.path.join(
    os.environ.get("FLEET_BINARY_DIR") or os.path.join(ROOT, "build"), "tests", "nodes_file_check")
if not os.access(CHECKER, os.X_OK):
    skip("fleetd's nodes-file parser tool %s is not built (cmake --build build "
         "--target nodes_file_check)" % CHECKER)

failures = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)


# ---------------------------------------------------------------- HCL -> JSON

NODE_SCRIPT = r"""
const {parse} = require(process.argv[2]);
const fs = require('fs');
(async () => {
  const out = {};
  for (const f of process.argv.slice(3)) {
    try { out[f] = {json: await parse(f, fs.readFileSync(f, 'utf8'))}; }
    catch (e) { out[f] = {error: String(e && e.message || e)}; }
  }
  process.stdout.write(JSON.stringify(out));
})();
"""


def hcl_to_json(paths):
    """{path: parsed JSON} or {path: {"error": ...}} for each .tf file."""
    with tempfile.NamedTemporaryFile("w", suffix=".js", delete=False) as f:
        f.write(NODE_SCRIPT)
        script = f.name
    try:
        r = subprocess.run([NODE, script, HCL2JSON] + paths, capture_output=True, text=True,
                           timeout=120)
    finally:
        os.unlink(script)
    if r.returncode != 0:
        raise RuntimeError("hcl2json failed: " + r.stderr.strip())
    return json.loads(r.stdout)


def load_module(d):
    """(merged JSON of every .tf in d, [parse problems])."""
    files = sorted(glob.glob(os.path.join(d, "*.tf")))
    merged, problems = {}, []
    if not files:
        return merged, ["%s holds no .tf file" % d]
    for path, res in hcl_to_json(files).items():
        if "error" in res:
            problems.append("%s does not parse: %s" % (os.path.basename(path), res["error"]))
            continue
        for top, val in res["json"].items():
            if isinstance(val, list):
                merged.setdefault(top, []).extend(val)
            elif isinstance(val, dict):
                dst = merged.setdefault(top, {})
                for k, v in val.items():
                    if isinstance(v, dict) and isinstance(dst.get(k), dict):
                        dst[k].update(v)
                    else:
                        dst[k] = v
    return merged, problems


def resources(mod):
    """[(type, name, body)] of every resource block."""
    out = []
    for rtype, by_name in (mod.get("resource") or {}).items():
        for name, bodies in by_name.items():
            for body in bodies if isinstance(bodies, list) else [bodies]:
                out.append((rtype, name, body))
    return out


def locals_of(mod):
    out = {}
    for block in mod.get("locals") or []:
        out.update(block)
    return out


# ------------------------------------------------------ the provider's pages

BULLET = re.compile(r"^- `([a-z0-9_]+)` \(([^)]*)\)")


def provider_schemas():
    """{resource type: {"required": {attr: type}, "optional": {attr: type}}}."""
    out = {}
    for page in sorted(glob.glob(os.path.join(PAGES, "*.md"))):
        text = open(page, encoding="utf-8").read()
        m = re.search(r"^# (netbox_[a-z0-9_]+) \(Resource\)", text, re.M)
        if not m:
            continue
        attrs = {"required": {}, "optional": {}}
        section = None
        for line in text.splitlines():
            h = re.match(r"^#{2,} (.*)", line)
            if h:
                title = h.group(1).strip()
                section = {"Required": "required", "Optional": "optional"}.get(title)
                continue
            b = BULLET.match(line)
            if b and section:
                attrs[section][b.group(1)] = b.group(2)
        out[m.group(1)] = attrs
    return out


# --------------------------------------------------- what fleetd reads (tree)

def fleetd_custom_fields():
    """The custom fields fleetd's NetBox client reads (netbox_json.c)."""
    src = open(os.path.join(ROOT, "fleetd", "inventory", "netbox_json.c")).read()
    names = set(re.findall(r'\bTF\("([a-z0-9_]+)"', src))
    names |= set(re.findall(r'\bget_(?:tristate|ek_hash|custom_text)\((?:j, )?cf, "([a-z0-9_]+)"', src))
    return names


def netbox_doc_table():
    """docs/netbox.md's custom-field table: {name: (type, written by)}."""
    text = open(os.path.join(ROOT, "docs", "netbox.md")).read()
    out = {}
    for m in re.finditer(r"^\| `([a-z0-9_]+)` \| ([^|]+) \| ([^|]+) \|$", text, re.M):
        out[m.group(1)] = (m.group(2).split()[0].rstrip(":"), m.group(3).strip())
    return out


def parser_keys():
    """(node keys, required node keys, top-level keys) of nodes_file_parse.c."""
    src = open(os.path.join(ROOT, "fleetd", "inventory", "nodes_file_parse.c")).read()
    enum = re.search(r"enum \{([^}]*)\}", src).group(1)
    consts = [c.strip() for c in enum.split(",") if c.strip() and c.strip() != "N__N"]
    keys = re.findall(r'"([a-z0-9_]+)"', re.search(r"node_keys\[N__N\] = \{([^}]*)\}", src).group(1))
    req = re.search(r"required\[\] = \{([^}]*)\}", src).group(1)
    required = {keys[consts.index(c.strip())] for c in req.split(",") if c.strip()}
    top = re.findall(r'"([a-z0-9_]+)"', re.search(r"top\[\] = \{([^}]*)\}", src).group(1))
    return keys, required, top


# ---------------------------------------------------------------- the checks

def check_resources(mod, schemas):
    """Problems: unknown resource types, unknown or missing attributes."""
    probs = []
    for rtype, name, body in resources(mod):
        if rtype not in schemas:
            probs.append("resource type %s is not in the provider's schema pages" % rtype)
            continue
        s = schemas[rtype]
        for attr in body:
            if attr not in s["required"] and attr not in s["optional"] and attr not in META:
                probs.append("%s.%s sets %s, which %s's schema does not have"
                             % (rtype, name, attr, rtype))
        for attr in s["required"]:
            if attr not in body:
                probs.append("%s.%s lacks the required %s" % (rtype, name, attr))
    return probs


def declared_fields(mod):
    """{custom field name: body (with the for_each value merged in)}."""
    out = {}
    loc = locals_of(mod)
    for rtype, name, body in resources(mod):
        if rtype != "netbox_custom_field":
            continue
        fe = body.get("for_each")
        if fe is None:
            out[str(body.get("name"))] = dict(body)
            continue
        m = re.fullmatch(r"\$\{local\.([a-z0-9_]+)\}", str(fe))
        src = loc.get(m.group(1)) if m else None
        if not isinstance(src, dict) or body.get("name") != "${each.key}":
            out["<unreadable for_each %s>" % fe] = {}
            continue
        for k, v in src.items():
            b = dict(body)
            b["name"] = k
            b["each"] = v if isinstance(v, dict) else {}
            out[k] = b
    return out


def field_type(b):
    t = b.get("type")
    if t == "${each.value.type}":
        t = b["each"].get("type")
    return t


def check_custom_fields(mod, wanted, table, node_keys):
    probs = []
    decl = declared_fields(mod)
    for f in sorted(set(decl) - wanted):
        probs.append("custom field %s is declared but fleetd does not read it" % f)
    for f in sorted(wanted - set(decl)):
        probs.append("custom field %s, which fleetd reads, is not declared" % f)
    for f, b in sorted(decl.items()):
        if f not in wanted:
            continue
        if "dcim.device" not in (b.get("content_types") or []):
            probs.append("custom field %s is not on dcim.device" % f)
        if field_type(b) != table[f][0]:
            probs.append("custom field %s has type %s; docs/netbox.md says fleetd accepts %s"
                         % (f, field_type(b), table[f][0]))
        from_file = b.get("each", {}).get("from_nodes_file")
        fleetd_only = table[f][1] == "fleetd alone"
        if from_file is not None and bool(from_file) == fleetd_only:
            probs.append("custom field %s: from_nodes_file is %s, but it is written by %s"
                         % (f, from_file, table[f][1]))
        if from_file and f not in node_keys:
            probs.append("custom field %s is filled from the nodes file, which has no such key" % f)
    return probs


def ignore_list(body):
    out = set()
    for lc in body.get("lifecycle") or []:
        ic = lc.get("ignore_changes") or []
        if isinstance(ic, str):  # ignore_changes = all
            out.add(ic)
            continue
        for e in ic:
            e = re.sub(r"^\$\{(.*)\}$", r"\1", str(e)).replace(" ", "")
            out.add(e)
    return out


def must_ignore(table):
    """What a plan must never revert: status (fleetd writes it) and every
    custom field written by fleetd or by the owner."""
    need = {"status"}
    for f, (_, who) in table.items():
        if who in ("fleetd alone", "the owner"):
            need.add('custom_fields["%s"]' % f)
    return need


def check_ignore_changes(mod, table):
    probs = []
    devices = [(n, b) for t, n, b in resources(mod) if t == "netbox_device"]
    if not devices:
        probs.append("no netbox_device resource")
    need = must_ignore(table)
    terraform_owned = {'custom_fields["%s"]' % f for f, (_, who) in table.items()
                       if who.startswith("Terraform")}
    for name, body in devices:
        ign = ignore_list(body)
        for e in sorted(need - ign):
            probs.append("netbox_device.%s: lifecycle.ignore_changes lacks %s" % (name, e))
        for e in sorted(ign & (terraform_owned | {"custom_fields", "all"})):
            probs.append("netbox_device.%s: lifecycle.ignore_changes has %s, which Terraform "
                         "owns (a plan would never apply the declaration)" % (name, e))
    return probs


def check_wiring(mod):
    probs = []
    loc = json.dumps(locals_of(mod))
    if "yamldecode(file(var.nodes_file))" not in loc:
        probs.append("the nodes file is not read with yamldecode(file(var.nodes_file))")
    if "nodes_file" not in (mod.get("variable") or {}):
        probs.append("no variable nodes_file")
    pinned = False
    for tf in mod.get("terraform") or []:
        for rp in tf.get("required_providers") or []:
            nb = rp.get("netbox") or {}
            pinned = nb.get("source") == "e-breuninger/netbox" and bool(nb.get("version"))
    if not pinned:
        probs.append("required_providers does not pin netbox = e-breuninger/netbox with a version")
    for t, n, b in resources(mod):
        if t == "netbox_device" and b.get("for_each") is None:
            probs.append("netbox_device.%s is not one per node (no for_each)" % n)
    return probs


def module_problems(d, ctx):
    mod, probs = load_module(d)
    if probs:
        return {"parse": probs}
    return {
        "parse": [],
        "resources": check_resources(mod, ctx["schemas"]),
        "custom fields": check_custom_fields(mod, ctx["wanted"], ctx["table"], ctx["node_keys"]),
        "ignore_changes": check_ignore_changes(mod, ctx["table"]),
        "wiring": check_wiring(mod),
    }


def schema_problems(path, validator):
    try:
        doc = yaml.safe_load(open(path))
    except yaml.YAMLError as e:
        return ["not YAML: %s" % e]
    return ["%s: %s" % ("/".join(str(p) for p in e.absolute_path) or "(top)", e.message)
            for e in validator.iter_errors(doc)]


def parser_result(path):
    r = subprocess.run([CHECKER, path], capture_output=True, text=True, timeout=30)
    return r.returncode, (r.stdout + r.stderr).strip()


# ------------------------------------------------------------------ the tree

def main():
    schemas = provider_schemas()
    check({"netbox_device", "netbox_custom_field"} <= set(schemas),
          "the schema pages describe netbox_device and netbox_custom_field (%d resources)"
          % len(schemas))
    check("custom_fields" in schemas.get("netbox_device", {}).get("optional", {})
          and schemas["netbox_device"]["optional"]["custom_fields"].startswith("Map"),
          "netbox_device.custom_fields is a map (so ignore_changes takes custom_fields[\"key\"])")

    wanted = fleetd_custom_fields()
    table = netbox_doc_table()
    check(len(wanted) >= 13, "fleetd's NetBox client reads %d custom fields: %s"
          % (len(wanted), ", ".join(sorted(wanted))))
    check(set(table) == wanted,
          "docs/netbox.md's custom-field table names the fields netbox_json.c reads "
          "(only in the doc: %s; only in the code: %s)"
          % (sorted(set(table) - wanted), sorted(wanted - set(table))))
    node_keys, required, top = parser_keys()
    ctx = {"schemas": schemas, "wanted": wanted, "table": table, "node_keys": node_keys}

    # The module as it is.
    res = module_problems(MODULE, ctx)
    for what, probs in res.items():
        check(not probs, "module: %s%s" % (what, "" if not probs else ": " + "; ".join(probs)))

    # The nodes-file schema is the parser's.
    schema = json.load(open(SCHEMA))
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    node = schema["$defs"]["node"]
    check(set(schema["properties"]) == set(top) and set(schema["required"]) == set(top),
          "schema: the top-level keys are the parser's (%s)" % ", ".join(top))
    check(set(node["properties"]) == set(node_keys),
          "schema: the node keys are the parser's node_keys (only in the schema: %s; only in "
          "the parser: %s)" % (sorted(set(node["properties"]) - set(node_keys)),
                               sorted(set(node_keys) - set(node["properties"]))))
    check(set(node["required"]) == required,
          "schema: the required node keys are the parser's (%s)" % ", ".join(sorted(required)))
    check(node.get("additionalProperties") is False and
          schema.get("additionalProperties") is False, "schema: unknown keys are refused")
    md = open(os.path.join(ROOT, "docs", "nodes-file.md")).read()
    check("nodes-file.schema.json" in md, "docs/nodes-file.md refers to docs/nodes-file.schema.json")

    examples = sorted(glob.glob(os.path.join(MODULE, "examples", "*.yaml")))
    check(bool(examples), "the module has example nodes files (%d)" % len(examples))
    for ex in examples:
        rel = os.path.relpath(ex, ROOT)
        probs = schema_problems(ex, validator)
        check(not probs, "%s validates against docs/nodes-file.schema.json%s"
              % (rel, "" if not probs else ": " + "; ".join(probs)))
        rc, out = parser_result(ex)
        check(rc == 0, "%s is accepted by fleetd's parser: %s" % (rel, out.splitlines()[-1]
                                                                 if out else rc))

    # ------------------------------------------------ broken copies refused
    tmp = tempfile.mkdtemp(prefix="tf-broken-")
    try:
        def broken_module(label, filename, old, new, category, expect):
            d = os.path.join(tmp, re.sub(r"\W+", "_", label))
            shutil.copytree(MODULE, d)
            p = os.path.join(d, filename)
            text = open(p).read()
            if old not in text:
                check(False, "broken copy '%s': %s holds %r to break" % (label, filename, old))
                return
            open(p, "w").write(text.replace(old, new, 1))
            probs = module_problems(d, ctx).get(category, [])
            hit = [x for x in probs if expect in x]
            check(bool(hit), "broken copy refused, %s: %s" % (label, hit[0] if hit else
                                                              "NOT CAUGHT (%s)" % probs))

        broken_module("an unknown attribute on netbox_device", "main.tf",
                      "  tags           = var.tags\n",
                      "  tags           = var.tags\n  rack_unit      = 3\n",
                      "resources", "sets rack_unit")
        broken_module("a resource type the provider does not have", "main.tf",
                      'resource "netbox_device" "node" {',
                      'resource "netbox_device_primary_ipv4" "x" {\n  device_id = 1\n}\n\n'
                      'resource "netbox_device" "node" {',
                      "resources", "netbox_device_primary_ipv4 is not in")
        broken_module("a required attribute left out", "main.tf",
                      "  site_id        = var.site_id\n", "", "resources",
                      "lacks the required site_id")
        broken_module("a missing ignore_changes entry (ek_hash_ecc)", "main.tf",
                      '      custom_fields["ek_hash_ecc"],\n', "", "ignore_changes",
                      'lacks custom_fields["ek_hash_ecc"]')
        broken_module("a missing ignore_changes entry (status)", "main.tf",
                      "      status,\n", "", "ignore_changes", "lacks status")
        broken_module("ignore_changes on the binding", "main.tf",
                      '      custom_fields["desired_action"],\n',
                      '      custom_fields["desired_action"],\n'
                      '      custom_fields["approved_ek_hash"],\n', "ignore_changes",
                      'has custom_fields["approved_ek_hash"]')
        broken_module("a custom field fleetd does not read", "main.tf",
                      "  custom_fields = {\n    class = {",
                      "  custom_fields = {\n    rack_colour = {\n      type = \"text\", "
                      "from_nodes_file = true, regex = null\n      description = \"x\"\n    }\n"
                      "    class = {", "custom fields", "rack_colour is declared but fleetd "
                      "does not read it")
        broken_module("a custom field fleetd reads left out", "main.tf",
                      "    expected_port = {", "    expected_port_x = {", "custom fields",
                      "expected_port, which fleetd reads, is not declared")
        broken_module("a boolean field declared as text", "main.tf",
                      'type = "boolean", from_nodes_file = true, regex = null\n'
                      '      description = "fleetd: the machine has Intel AMT"',
                      'type = "text", from_nodes_file = true, regex = null\n'
                      '      description = "fleetd: the machine has Intel AMT"',
                      "custom fields", "amt has type text")
        broken_module("an HCL syntax error", "main.tf", "resource \"netbox_device\" \"node\" {",
                      "resource \"netbox_device\" \"node\" {{", "parse", "does not parse")
        broken_module("the provider not pinned", "versions.tf", '      version = "', '      #  = "',
                      "wiring", "does not pin")

        def broken_nodes(label, old, new, expect_schema):
            p = os.path.join(tmp, re.sub(r"\W+", "_", label) + ".yaml")
            text = open(examples[0]).read()
            if old not in text:
                check(False, "broken nodes file '%s': the example holds %r" % (label, old))
                return
            open(p, "w").write(text.replace(old, new, 1))
            probs = schema_problems(p, validator)
            hit = [x for x in probs if expect_schema in x]
            check(bool(hit), "broken nodes file refused by the schema, %s: %s"
                  % (label, hit[0] if hit else "NOT CAUGHT (%s)" % probs))
            rc, out = parser_result(p)
            check(rc == 1, "broken nodes file refused by fleetd's parser, %s: %s"
                  % (label, out.splitlines()[-1] if out else rc))

        broken_nodes("a node missing a required key (class)", "    class: control-plane\n", "",
                     "'class' is a required property")
        broken_nodes("an unknown key", "    bmc_type: ipmi\n",
                     "    bmc_type: ipmi\n    bmc_typo: ipmi\n", "'bmc_typo' was unexpected")
        broken_nodes("a malformed EK hash", "approved_ek_hash: 3f1c", "approved_ek_hash: 3F1C",
                     "does not match")
        broken_nodes("a status that is not NetBox's", "status: staged", "status: ready",
                     "is not one of")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
