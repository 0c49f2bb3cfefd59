#!/usr/bin/env python3
"""spire_server_fake.py: a contract fake of the `spire-server` CLI.

Follows the CLI of SPIRE v1.15.3 (entry commands unchanged since 1.9) as read
from its sources (github.com/spiffe/spire, cmd/spire-server/cli/entry/
{show,create,update,delete}.go with create's -entryID and -hint flags,
cli/agent/{ban,list}.go; the -output json printer
pkg/common/cliprinter/internal/protojson; pkg/server/api/agent.go
ProtoFromAttestedNode; the tpm_devid attestor's selectors,
pkg/server/plugin/nodeattestor/tpmdevid/devid.go; the messages of
spire-api-sdk proto/spire/api/server/{entry,agent}/v1 and
proto/spire/api/types/{entry,agent}.proto). What it reproduces:

  * Go `flag` parsing: -name value, -name=value, --name; bool flags without a
    value; an unknown flag is "flag provided but not defined" and exit 1.
  * The CLI's error path (util.AdaptCommand): "Error: <err>" on stderr, exit 1;
    a gRPC error reads "rpc error: code = <Code> desc = <message>".
  * `entry show`: ListEntries is paged by the server (page_size 500, the
    CLI's listEntriesRequestPageSize); the CLI follows next_page_token itself
    and prints ONE ListEntriesResponse with every entry and an empty
    next_page_token.
  * `entry create` / `entry update` / `entry delete` with -output json print
    the Batch*EntryResponse and exit 0 even when a result's status is not OK;
    a failed create or update result carries the request's entry.
  * `agent list`: the CLI pages ListAgents itself (page size 1000) and prints
    ONE ListAgentsResponse {"agents": [Agent], "next_page_token": ""}; an
    Agent is {"id": {"trust_domain", "path"}, "attestation_type",
    "x509svid_serial_number", "x509svid_expires_at" (int64, so a string),
    "selectors": [{"type", "value"}], "banned", "can_reattest",
    "agent_version"}, banned being an empty serial number. A tpm agent is
    .../spire/agent/tpm/<EK hash> with tpm:pub_hash:<EK hash>; a tpm_devid
    agent is .../spire/agent/tpm_devid/<LDevID SHA-1> with
    tpm_devid:subject:cn:<CN>, tpm_devid:issuer:cn:<CN> and
    tpm_devid:ca:fingerprint:<SHA-1> per CA certificate of the chain.
  * `-node` sets the parent to spiffe://<td>/spire/server.
  * `agent ban`: BanAgentResponse is empty ("{}"); an unknown agent is
    NotFound "agent not found"; a non-agent ID is InvalidArgument.
  * protojson with UseProtoNames and EmitUnpopulated, re-marshaled by Go's
    encoding/json: keys sorted, compact, int64 fields as strings, one
    trailing newline, <>& escaped.

State: a JSON file named by SPIRE_FAKE_STATE:
  {"trust_domain": "fleet.example", "socket_path": optional,
   "page_size": optional, "entries": [Entry...],
   "agents": {"spiffe://.../spire/agent/...": {"banned": false,
              "attestation_type": "tpm", "selectors": [Selector...],
              "x509svid_serial_number": optional, "x509svid_expires_at": optional}},
   "inject": {"entry_status": {"<entry id>": {"code": 13, "message": "..."}},
              "show_error": "<desc>", "ban_error": {"<agent id>": "<desc>"},
              "agent_list_error": "<desc>", "agent_list_stdout": "<raw text>"}}
Every invocation's argv is appended, one JSON line, to SPIRE_FAKE_LOG if set.
"""
import hashlib
import json
import os
import re
import sys
import tempfile

DEFAULT_SOCKET = "/tmp/spire-server/private/api.sock"
PAGE_SIZE = 500

CODES = {0: "OK", 3: "InvalidArgument", 5: "NotFound", 6: "AlreadyExists",
         13: "Internal", 14: "Unavailable"}


class CLIError(Exception):
    pass


def rpc_error(code, desc):
    return CLIError("rpc error: code = %s desc = %s" % (CODES.get(code, "Unknown"), desc))


def load():
    path = os.environ["SPIRE_FAKE_STATE"]
    with open(path) as f:
        return path, json.load(f)


def save(path, state):
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=d)
    with os.fdopen(fd, "w") as f:
        json.dump(state, f, indent=1, sort_keys=True)
    os.replace(tmp, path)


def go_json(obj):
    s = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return s.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026") + "\n"


# name -> (kind, default); kind "str", "bool", "multi", "int"
COMMON = {"socketPath": ("str", DEFAULT_SOCKET), "output": ("str", "pretty")}
FLAGS = {
    ("entry", "show"): {"entryID": ("str", ""), "parentID": ("str", ""), "spiffeID": ("str", ""),
                        "selector": ("multi", None), "federatesWith": ("multi", None),
                        "downstream": ("bool", False), "matchFederatesWithOn": ("str", "superset"),
                        "matchSelectorsOn": ("str", "superset")},
    ("entry", "create"): {"entryID": ("str", ""), "parentID": ("str", ""), "spiffeID": ("str", ""),
                          "selector": ("multi", None), "federatesWith": ("multi", None),
                          "node": ("bool", False), "admin": ("bool", False),
                          "downstream": ("bool", False), "storeSVID": ("bool", False),
                          "ttl": ("int", 0), "x509SVIDTTL": ("int", 0), "jwtSVIDTTL": ("int", 0),
                          "entryExpiry": ("int", 0), "dns": ("multi", None), "hint": ("str", ""),
                          "data": ("str", "")},
    ("entry", "update"): {"entryID": ("str", ""), "parentID": ("str", ""), "spiffeID": ("str", ""),
                          "selector": ("multi", None), "federatesWith": ("multi", None),
                          "admin": ("bool", False), "downstream": ("bool", False),
                          "storeSVID": ("bool", False), "ttl": ("int", 0),
                          "x509SVIDTTL": ("int", 0), "jwtSVIDTTL": ("int", 0),
                          "entryExpiry": ("int", 0), "dns": ("multi", None), "hint": ("str", ""),
                          "data": ("str", "")},
    ("entry", "delete"): {"entryID": ("str", ""), "file": ("str", "")},
    ("agent", "ban"): {"spiffeID": ("str", "")},
    ("agent", "list"): {"selector": ("multi", None), "attestationType": ("str", ""),
                        "canReattest": ("str", ""), "banned": ("str", ""),
                        "expiresBefore": ("str", ""), "matchSelectorsOn": ("str", "superset")},
}


def parse_flags(spec, args):
    spec = dict(spec, **COMMON)
    out = {k: ([] if kind == "multi" else dflt) for k, (kind, dflt) in spec.items()}
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--" or not a.startswith("-") or a == "-":
            raise CLIError("unexpected argument %r" % a)
        name = a.lstrip("-")
        val = None
        if "=" in name:
            name, val = name.split("=", 1)
        if name not in spec:
            sys.stderr.write("flag provided but not defined: -%s\n" % name)
            sys.exit(1)
        kind = spec[name][0]
        if kind == "bool":
            out[name] = val is None or val in ("true", "1", "t", "T", "TRUE", "True")
        else:
            if val is None:
                i += 1
                if i == len(args):
                    sys.stderr.write("flag needs an argument: -%s\n" % name)
                    sys.exit(1)
                val = args[i]
            if kind == "multi":
                out[name].append(val)
            elif kind == "int":
                out[name] = int(val)
            else:
                out[name] = val
        i += 1
    if out["output"] not in ("json", "pretty"):
        raise CLIError("invalid value %r for flag -output" % out["output"])
    return out


def parse_id(s):
    m = re.fullmatch(r"spiffe://([a-z0-9._-]+)(/[A-Za-z0-9._/-]*)?", s or "")
    if not m or (m.group(2) or "").endswith("/") or "//" in (m.group(2) or ""):
        raise CLIError("scheme is missing or invalid" if not s.startswith("spiffe://")
                       else "path cannot have a trailing slash or empty segments")
    return {"trust_domain": m.group(1), "path": m.group(2) or ""}


def parse_selector(s):
    if ":" not in s:
        raise CLIError("selector \"%s\" must be formatted as type:value" % s)
    t, v = s.split(":", 1)
    if not t or not v:
        raise CLIError("selector \"%s\" must be formatted as type:value" % s)
    return {"type": t, "value": v}


def id_str(i):
    return "spiffe://%s%s" % (i["trust_domain"], i["path"])


def entry_proto(e):
    """Every field of types.Entry, as protojson with EmitUnpopulated."""
    return {"id": e.get("id", ""), "spiffe_id": e["spiffe_id"], "parent_id": e["parent_id"],
            "selectors": e.get("selectors", []), "x509_svid_ttl": e.get("x509_svid_ttl", 0),
            "federates_with": e.get("federates_with", []), "admin": e.get("admin", False),
            "downstream": e.get("downstream", False), "expires_at": str(e.get("expires_at", 0)),
            "dns_names": e.get("dns_names", []),
            "revision_number": str(e.get("revision_number", 0)),
            "store_svid": e.get("store_svid", False), "jwt_svid_ttl": e.get("jwt_svid_ttl", 0),
            "hint": e.get("hint", ""), "created_at": str(e.get("created_at", 0))}


def check_socket(state, flags):
    want = state.get("socket_path")
    if want is not None and flags["socketPath"] != want:
        raise CLIError("connection error: desc = \"transport: error while dialing: dial unix "
                       "%s: connect: no such file or directory\"" % flags["socketPath"])


def server_list_page(state, token, size):
    """The server side of ListEntries: one page and the next token."""
    entries = state["entries"]
    start = int(token) if token else 0
    page = entries[start:start + size]
    nxt = str(start + size) if start + size < len(entries) else ""
    return page, nxt


def cmd_show(state, f):
    check_socket(state, f)
    if state.get("inject", {}).get("show_error"):
        raise CLIError("error fetching entries: " +
                       str(rpc_error(14, state["inject"]["show_error"])))
    size = int(state.get("page_size", PAGE_SIZE))
    entries, token = [], ""
    while True:  # the CLI's own loop over next_page_token
        page, token = server_list_page(state, token, size)
        entries.extend(page)
        if token == "":
            break
    if f["entryID"]:
        entries = [e for e in entries if e.get("id") == f["entryID"]]
        if not entries:
            raise CLIError("error fetching entry ID %s: %s" %
                           (f["entryID"], rpc_error(5, "entry not found")))
    entries = sorted(entries, key=lambda e: (id_str(e["spiffe_id"]), id_str(e["parent_id"]),
                                             [(s["type"], s["value"]) for s in e["selectors"]]))
    if f["output"] == "json":
        sys.stdout.write(go_json({"entries": [entry_proto(e) for e in entries],
                                  "next_page_token": ""}))
    else:
        sys.stdout.write("Found %d %s\n" % (len(entries), "entry" if len(entries) == 1 else "entries"))
    return False


def entry_from_flags(state, f, create):
    if len(f["selector"]) < 1:
        raise CLIError("at least one selector is required")
    if create and f["node"] and f["federatesWith"]:
        raise CLIError("node entries can not federate")
    if not create and not f["entryID"]:
        raise CLIError("entry ID is required")
    if not f["parentID"] and not (create and f["node"]):
        raise CLIError("a parent ID is required" +
                       (" if the node flag is not set" if create else ""))
    if not f["spiffeID"]:
        raise CLIError("a SPIFFE ID is required")
    sid = parse_id(f["spiffeID"])
    parent = ({"trust_domain": sid["trust_domain"], "path": "/spire/server"}
              if create and f["node"] else parse_id(f["parentID"]))
    return {"id": f["entryID"], "spiffe_id": sid, "parent_id": parent,
            "selectors": [parse_selector(s) for s in f["selector"]],
            "admin": f["admin"], "downstream": f["downstream"], "dns_names": f["dns"],
            "federates_with": f["federatesWith"], "hint": f["hint"],
            "x509_svid_ttl": f["x509SVIDTTL"] or f["ttl"], "jwt_svid_ttl": f["jwtSVIDTTL"],
            "expires_at": f["entryExpiry"], "store_svid": f["storeSVID"]}


def injected(state, eid):
    st = state.get("inject", {}).get("entry_status", {}).get(eid)
    return (st["code"], st["message"]) if st else None


def td_check(state, e):
    td = state["trust_domain"]
    for k in ("spiffe_id", "parent_id"):
        if e[k]["trust_domain"] != td:
            return (3, "invalid %s: \"%s\" is not a member of trust domain \"%s\"" %
                    (k.replace("_", " "), id_str(e[k]), td))
    return None


def same_selectors(a, b):
    key = lambda s: (s["type"], s["value"])
    return sorted(a, key=key) == sorted(b, key=key)


def cmd_create(state, f):
    check_socket(state, f)
    e = entry_from_flags(state, f, True)
    bad = injected(state, e["id"]) or td_check(state, e)
    if not bad and e["id"] and (len(e["id"]) > 255 or
                                not all(0x21 <= ord(c) <= 0x7e for c in e["id"])):
        bad = (3, "failed to convert entry: invalid entry ID")
    if not bad:
        for x in state["entries"]:
            if e["id"] and x.get("id") == e["id"]:
                bad = (6, "entry with this ID already exists")
            elif (x["spiffe_id"] == e["spiffe_id"] and x["parent_id"] == e["parent_id"]
                  and same_selectors(x["selectors"], e["selectors"])):
                bad = (6, "similar entry already exists")
    changed = False
    if bad:
        result = {"status": {"code": bad[0], "message": bad[1]}, "entry": entry_proto(e)}
    else:
        if not e["id"]:
            e["id"] = "%08x-0000-4000-8000-%012x" % (len(state["entries"]), len(state["entries"]))
        e["created_at"] = 1764478800
        e["revision_number"] = 0
        state["entries"].append(e)
        changed = True
        result = {"status": {"code": 0, "message": "OK"}, "entry": entry_proto(e)}
    sys.stdout.write(go_json({"results": [result]}))
    return changed


def cmd_update(state, f):
    check_socket(state, f)
    e = entry_from_flags(state, f, False)
    bad = injected(state, e["id"]) or td_check(state, e)
    cur = next((x for x in state["entries"] if x.get("id") == e["id"]), None)
    if not bad and cur is None:
        bad = (5, "entry not found")
    if bad:
        result = {"status": {"code": bad[0], "message": bad[1]}, "entry": entry_proto(e)}
        sys.stdout.write(go_json({"results": [result]}))
        return False
    e["created_at"] = cur.get("created_at", 0)
    e["revision_number"] = int(cur.get("revision_number", 0)) + 1
    state["entries"][state["entries"].index(cur)] = e
    sys.stdout.write(go_json({"results": [{"status": {"code": 0, "message": "OK"},
                                           "entry": entry_proto(e)}]}))
    return True


def cmd_delete(state, f):
    check_socket(state, f)
    if not f["entryID"]:
        raise CLIError("an entry ID is required")
    eid = f["entryID"]
    bad = injected(state, eid)
    cur = next((x for x in state["entries"] if x.get("id") == eid), None)
    if not bad and cur is None:
        bad = (5, "entry not found")
    if bad:
        sys.stdout.write(go_json({"results": [{"status": {"code": bad[0], "message": bad[1]},
                                               "id": eid}]}))
        return False
    state["entries"].remove(cur)
    sys.stdout.write(go_json({"results": [{"status": {"code": 0, "message": "OK"}, "id": eid}]}))
    return True


def cmd_ban(state, f):
    check_socket(state, f)
    if not f["spiffeID"]:
        raise CLIError("a SPIFFE ID is required")
    aid = parse_id(f["spiffeID"])
    if aid["trust_domain"] != state["trust_domain"] or not aid["path"].startswith("/spire/agent/"):
        raise rpc_error(3, "invalid agent ID: \"%s\" is not an agent in trust domain \"%s\"" %
                        (f["spiffeID"], state["trust_domain"]))
    err = state.get("inject", {}).get("ban_error", {}).get(f["spiffeID"])
    if err:
        raise rpc_error(13, err)
    agent = state.get("agents", {}).get(f["spiffeID"])
    if agent is None:
        raise rpc_error(5, "agent not found")
    changed = not agent.get("banned", False)
    agent["banned"] = True
    sys.stdout.write(go_json({}) if f["output"] == "json" else "Agent banned successfully\n")
    return changed


def agent_proto(aid, a):
    """Every field of types.Agent, as protojson with EmitUnpopulated."""
    banned = a.get("banned", False)
    serial = "" if banned else a.get(
        "x509svid_serial_number", str(int(hashlib.sha1(aid.encode()).hexdigest()[:12], 16)))
    return {"id": parse_id(aid), "attestation_type": a.get("attestation_type", ""),
            "x509svid_serial_number": serial,
            "x509svid_expires_at": str(a.get("x509svid_expires_at", 1764482400)),
            "selectors": a.get("selectors", []), "banned": banned,
            "can_reattest": a.get("can_reattest", a.get("attestation_type") == "tpm_devid"),
            "agent_version": a.get("agent_version", "")}


def cmd_agent_list(state, f):
    check_socket(state, f)
    inj = state.get("inject", {})
    if inj.get("agent_list_error"):
        raise rpc_error(14, inj["agent_list_error"])
    if "agent_list_stdout" in inj:
        sys.stdout.write(inj["agent_list_stdout"])
        return False
    agents = []
    for aid, a in state.get("agents", {}).items():
        if f["attestationType"] and a.get("attestation_type", "") != f["attestationType"]:
            continue
        if f["banned"] in ("true", "false") and a.get("banned", False) != (f["banned"] == "true"):
            continue
        want = [parse_selector(x) for x in f["selector"]]
        have = a.get("selectors", [])
        if want and f["matchSelectorsOn"] == "superset" and not all(w in have for w in want):
            continue
        agents.append(agent_proto(aid, a))
    if f["output"] == "json":
        sys.stdout.write(go_json({"agents": agents, "next_page_token": ""}))
    else:
        sys.stdout.write("Found %d attested %s:\n" % (len(agents), "agent" if len(agents) == 1
                                                       else "agents"))
    return False


COMMANDS = {("entry", "show"): cmd_show, ("entry", "create"): cmd_create,
            ("entry", "update"): cmd_update, ("entry", "delete"): cmd_delete,
            ("agent", "ban"): cmd_ban, ("agent", "list"): cmd_agent_list}


def main(argv):
    log = os.environ.get("SPIRE_FAKE_LOG")
    if log:
        with open(log, "a") as f:
            f.write(json.dumps(argv[1:]) + "\n")
    key = tuple(argv[1:3])
    if key not in COMMANDS:
        sys.stderr.write("Usage: spire-server [--version] [--help] <command> [<args>]\n")
        return 127
    path, state = load()
    try:
        flags = parse_flags(FLAGS[key], argv[3:])
        changed = COMMANDS[key](state, flags)
    except CLIError as e:
        sys.stderr.write("Error: %s\n" % e)
        return 1
    if changed:
        save(path, state)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
