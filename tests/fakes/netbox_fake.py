# Contract fake of the NetBox v4.2+ REST API (checked against netbox-community/netbox: dcim/filtersets.py DeviceFilterSet, core/filtersets.py ObjectChangeFilterSet, core/api/serializers_/change_logging.py, core/models/change_logging.py, netbox/api/pagination.py, netbox/api/authentication.py + users/tests/test_api.py (v4.5 token forms), extras/api/customfields.py, netbox/models/features.py CustomFieldsMixin.clean, netbox/api/viewsets/__init__.py (fields=/omit=/brief, PermissionDenied), dcim/api/serializers_/devices.py DeviceSerializer, utilities/serialization.py serialize_object, docs/integrations/rest-api.md; DRF's JSONRenderer and replace_query_param).
"""
What it reproduces, and only that (everything fleetd's NetBox client uses):

  GET   /api/dcim/devices/            filters: serial (iexact, repeatable, an
                                      empty value filters nothing), id;
                                      exclude=config_context; fields=, omit=,
                                      brief (4.0 dynamic fields, on every
                                      device answer); limit/offset
  GET   /api/dcim/devices/<id>/
  PATCH /api/dcim/devices/<id>/       status, custom_fields (merged into the
                                      stored ones; unknown names and values
                                      against a validation regex refused
                                      with NetBox's 400 bodies),
                                      name, serial; writes an object change
                                      by the token's user unless nothing
                                      changed (CHANGELOG_SKIP_EMPTY_CHANGES)
  GET   /api/core/object-changes/     filters: changed_object_type
                                      ("app.model"), changed_object_id,
                                      user_name, action; ordering (default
                                      -time, pk tiebreak); limit/offset

Auth as NetBox 4.5: "Token <v1>" and "Bearer nbt_<key>.<secret>"; a bad
token is 403 {"detail": "Invalid v1 token"} / {"detail": "Invalid v2
token"}; none is 403 "Authentication credentials were not provided.";
a read-only token writing, or a user without the model permission the
request needs (TokenPermissions.perms_map: GET dcim.view_device /
core.view_objectchange, PATCH dcim.change_device; a token's "perms", default
all three), is 403 "You do not have permission to perform this action." Pagination as OptionalLimitOffsetPagination:
PAGINATE_COUNT and MAX_PAGE_SIZE come from the seed (small, to force pages),
"next" is the request URL with limit/offset replaced.

The seed (JSON, argv) holds {"paginate_count", "max_page_size", "tokens":
{token: {"user", "write", "perms"}}, "custom_fields": [names], "devices": [{"id",
"name", "serial", "status", "primary_ip4", "custom_fields", "created_by"}]}.
Each seeded device gets a "create" object change by created_by.

Test control, no auth, under /_fake/ (never part of NetBox):
  POST /_fake/fail     {"status": 503, "count": 1, "after": 0,
                        "retry_after": "120" | "retry_after_in": 2}
                       the API requests after the next "after" ones fail,
                       as the proxy in front of NetBox fails them (nginx's
                       page; limit_req answers 503, or 429 when so set),
                       with a Retry-After header: verbatim, or an HTTP-date
                       that many seconds after the failing request
  POST /_fake/delay    {"ms": 3000, "count": 1}      next API requests stall
  POST /_fake/change   {"device": id, "user": "alice", "custom_fields": {},
                        "status": "...", "serial": "...", "time": iso?}
  POST /_fake/raw      {"path": "/api/...", "status": 200, "body": "...",
                        "content_type": "application/json", "location": None,
                        "count": 1}        the next answers for that path
  POST /_fake/create   {"device": {as in the seed}, "user": "mallory"}
  POST /_fake/delete   {"device": id, "user": "mallory"}
                       a device created or deleted through the UI, with its
                       "create" / "delete" object change
  POST /_fake/purge    {"device": id?, "before": iso?}
                       NetBox's housekeeping (core/jobs.py
                       SystemHousekeepingJob.clear_changelog: ObjectChange
                       rows older than CHANGELOG_RETENTION days deleted):
                       the object changes (of that device) older than
                       "before" (default: now) are gone; ids are never
                       handed out again
  POST /_fake/custom_field {"name": "ek_hash", "validation_regex": "^0",
                             "delete": false}
                       an administrator editing a custom field: its
                       validation regex (a PATCH leaving a value that does
                       not match is 400 {"__all__": [...]}), or deleting it
                       (a PATCH naming it is 400 {"custom_fields": {name:
                       "..."}}, as 4.5.8 and later answer)
  POST /_fake/proxy    {"strip_prefix": "/netbox"}   as behind a reverse
                       proxy mapping /netbox/ to NetBox's /: requests under
                       the prefix are served without it, and every link
                       (next, url) is built without it, as NetBox builds
                       them from the request it saw; "" turns it off
  POST /_fake/ignore_fields {"on": true}  answer devices whole whatever
                                          fields=/omit=/brief ask (as a
                                          NetBox before 4.0 does)
  POST /_fake/ignore_ordering {"on": true}  answer changes by id ascending
                                            whatever ordering asks (as DRF
                                            does with an ordering it ignores)
  GET  /_fake/log      {"log", "connections"} of /_fake/state alone
  GET  /_fake/state    devices, object changes, the request log (method,
                       path, query, proxied, conn: the number of the TCP
                       connection it came on, auth scheme, user, body) -
                       never tokens - and "connections", how many TCP
                       connections were accepted

Usage: netbox_fake.py CERT KEY SEED ; prints the port once listening.
"""
import copy
import datetime
import email.utils
import json
import re
import socket
import ssl
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlsplit

STATUS_CHOICES = {
    "offline": "Offline", "active": "Active", "planned": "Planned", "staged": "Staged",
    "failed": "Failed", "inventory": "Inventory", "decommissioning": "Decommissioning",
}
ACTION_LABELS = {"create": "Created", "update": "Updated", "delete": "Deleted"}
TOKEN_PREFIX = "nbt_"
NO_PERMISSION = "You do not have permission to perform this action."
ALL_PERMS = ["dcim.view_device", "dcim.change_device", "core.view_objectchange"]


def needed_perm(method, path):
    """netbox/api/authentication.py TokenPermissions.perms_map for the model."""
    action = {"GET": "view", "HEAD": "view", "PATCH": "change", "PUT": "change"}.get(method)
    if path.startswith("/api/dcim/devices/"):
        return f"dcim.{action}_device" if action else None
    if path.startswith("/api/core/object-changes/"):
        return f"core.{action}_objectchange" if action else None
    return None


class State:
    def __init__(self, seed):
        self.lock = threading.Lock()
        self.paginate_count = int(seed.get("paginate_count", 2))
        self.max_page_size = int(seed.get("max_page_size", 2))
        self.tokens = seed["tokens"]
        self.cf_names = list(seed["custom_fields"])
        self.cf_regex = {}  # name -> the custom field's validation_regex
        self.devices = {}
        self.ips = {}
        self.changes = []
        self.next_change_id = 1  # a database sequence: purged ids stay used
        self.log = []
        self.fail = []      # the next failures: (status, retry_after, in)
        self.delays = []    # ms of the next delays
        self.raw = {}       # path -> list of canned answers
        self.ignore_ordering = False
        self.strip_prefix = ""  # behind a prefix-stripping reverse proxy
        self.connections = 0    # TCP connections accepted
        self.ignore_fields = False
        self.last_time = datetime.datetime.now(datetime.timezone.utc)
        for d in seed["devices"]:
            self.create(d, d.get("created_by", "admin"))

    def create(self, d, user):
        dev = {
            "id": int(d["id"]), "name": d.get("name"), "serial": d.get("serial", ""),
            "status": d.get("status", "planned"),
            "primary_ip4": None,
            "custom_field_data": dict(d.get("custom_fields", {})),
        }
        if d.get("primary_ip4"):
            ip_id = 1000 + dev["id"]
            self.ips[ip_id] = d["primary_ip4"]
            dev["primary_ip4"] = ip_id
        self.devices[dev["id"]] = dev
        self.record(dev["id"], "create", None, self.snapshot(dev), user)

    def now(self, at=None):
        if at:
            return datetime.datetime.fromisoformat(at.replace("Z", "+00:00"))
        t = datetime.datetime.now(datetime.timezone.utc)
        if t <= self.last_time:
            t = self.last_time + datetime.timedelta(microseconds=1)
        self.last_time = t
        return t

    # utilities/serialization.py serialize_object: Django's model serializer
    # (foreign keys as ids, choice fields as values), custom_field_data as
    # "custom_fields", with created/last_updated left out of the diff.
    def snapshot(self, dev):
        return {
            "name": dev["name"], "serial": dev["serial"], "status": dev["status"],
            "primary_ip4": dev["primary_ip4"], "primary_ip6": None, "oob_ip": None,
            "custom_fields": copy.deepcopy(dev["custom_field_data"]), "tags": [],
        }

    def record(self, dev_id, action, pre, post, user, at=None):
        dev = self.devices.get(dev_id)
        self.changes.append({
            "id": self.next_change_id, "time": self.now(at), "user_name": user,
            "request_id": str(uuid.uuid4()), "action": action,
            "changed_object_type": "dcim.device", "changed_object_id": dev_id,
            "object_repr": (dev or {}).get("name") or f"Device {dev_id}",
            "prechange_data": pre, "postchange_data": post,
        })
        self.next_change_id += 1

    def purge(self, dev_id, before):
        cut = self.now(before)  # now: later than every change recorded so far
        self.changes = [c for c in self.changes
                        if c["time"] >= cut or (dev_id is not None and
                                                c["changed_object_id"] != dev_id)]

    def apply(self, dev, patch, user, at=None):
        """Apply a device PATCH; return an error dict (HTTP 400) or None."""
        errors = {}
        if "status" in patch and patch["status"] not in STATUS_CHOICES:
            errors["status"] = [f"\"{patch['status']}\" is not a valid choice."]
        cf = patch.get("custom_fields")
        if cf is not None:
            if not isinstance(cf, dict):
                errors["custom_fields"] = ["Invalid data format. Custom field data must be "
                                           "passed as a dictionary mapping field names to "
                                           "their values."]
            else:
                # extras/api/customfields.py CustomFieldsDataField.to_internal_value
                # (4.5.8 and later): a field error nested under the name
                unknown = sorted(k for k in cf if k not in self.cf_names)
                if unknown:
                    errors["custom_fields"] = {
                        k: f"Custom field '{k}' does not exist for this object type."
                        for k in unknown}
        if errors:
            return errors
        # netbox/models/features.py CustomFieldsMixin.clean, through
        # full_clean(): a non-field error, which DRF renders under "__all__"
        merged = {**dev["custom_field_data"], **(cf or {})}
        for k, v in merged.items():
            rx = self.cf_regex.get(k)
            if rx and v not in (None, "") and isinstance(v, str) and not re.match(rx, v):
                return {"__all__": [f"Invalid value for custom field '{k}': Value must "
                                    f"match regex '{rx}'"]}
        pre = self.snapshot(dev)
        for k in ("name", "serial", "status"):
            if k in patch:
                dev[k] = patch[k]
        if cf:
            dev["custom_field_data"] = {**dev["custom_field_data"], **cf}
        post = self.snapshot(dev)
        if pre != post:
            self.record(dev["id"], "update", pre, post, user, at)
        return None

    # dcim/api/serializers_/devices.py DeviceSerializer (Meta.fields, in
    # order; nested objects in their brief form, counts as annotated),
    # DeviceWithConfigContextSerializer unless exclude=config_context.
    def device_json(self, dev, base, exclude):
        ip = dev["primary_ip4"]
        ip4 = None if ip is None else {
            "id": ip, "url": f"{base}/api/ipam/ip-addresses/{ip}/",
            "display": self.ips[ip], "family": {"value": 4, "label": "IPv4"},
            "address": self.ips[ip], "description": "", "dns_name": "",
            "nat_inside": None, "nat_outside": []}
        o = {
            "id": dev["id"], "url": f"{base}/api/dcim/devices/{dev['id']}/",
            "display_url": f"{base}/dcim/devices/{dev['id']}/",
            "display": dev["name"] or f"Device {dev['id']}", "name": dev["name"],
            "device_type": {"id": 1, "url": f"{base}/api/dcim/device-types/1/",
                            "display": "Generic",
                            "manufacturer": {"id": 1,
                                             "url": f"{base}/api/dcim/manufacturers/1/",
                                             "display": "Generic", "name": "Generic",
                                             "slug": "generic", "description": ""},
                            "model": "Generic", "slug": "generic", "description": "",
                            "device_count": len(self.devices)},
            "role": {"id": 1, "url": f"{base}/api/dcim/device-roles/1/", "display": "Worker",
                     "name": "Worker", "slug": "worker", "description": "",
                     "device_count": len(self.devices), "virtualmachine_count": 0,
                     "_depth": 0},
            "tenant": None, "platform": None, "serial": dev["serial"], "asset_tag": None,
            "site": {"id": 1, "url": f"{base}/api/dcim/sites/1/", "display": "Folly",
                     "name": "Folly", "description": "", "slug": "folly"},
            "location": None, "rack": None, "position": None, "face": None,
            "latitude": None, "longitude": None, "parent_device": None,
            "status": {"value": dev["status"],
                       "label": STATUS_CHOICES.get(dev["status"], dev["status"])},
            "airflow": None, "primary_ip": ip4, "primary_ip4": ip4, "primary_ip6": None,
            "oob_ip": None, "cluster": None, "virtual_chassis": None, "vc_position": None,
            "vc_priority": None, "description": "", "owner": None, "comments": "",
            "config_template": None, "local_context_data": None, "tags": [],
            "custom_fields": {n: dev["custom_field_data"].get(n) for n in self.cf_names},
            "created": "2026-01-01T00:00:00Z", "last_updated": "2026-01-01T00:00:00Z",
            "console_port_count": 0, "console_server_port_count": 0, "power_port_count": 2,
            "power_outlet_count": 0, "interface_count": 4, "front_port_count": 0,
            "rear_port_count": 0, "device_bay_count": 0, "module_bay_count": 0,
            "inventory_item_count": 0,
        }
        if "config_context" not in exclude:
            o["config_context"] = {}
        return o

    def select_fields(self, o, q):
        """netbox/api/viewsets BaseViewSet.field_kwargs and BaseModelSerializer.fields
        (4.0 and later): ?fields=a,b keeps only those top-level fields (a name
        that is no field is ignored), else ?omit=a,b drops those, else ?brief
        (any value) keeps Meta.brief_fields. Each parameter as QueryDict.get
        reads it: the last value."""
        if self.ignore_fields:
            return o  # as a NetBox before 4.0, or a proxy dropping the parameter
        fields = (q.get("fields") or [""])[-1]
        omit = (q.get("omit") or [""])[-1]
        if fields:
            keep = set(fields.split(","))
            return {k: v for k, v in o.items() if k in keep}
        if omit:
            drop = set(omit.split(","))
            return {k: v for k, v in o.items() if k not in drop}
        if (q.get("brief") or [""])[-1]:
            return {k: v for k, v in o.items()
                    if k in ("id", "url", "display", "name", "description")}
        return o

    def change_json(self, c, base):
        t = c["time"].astimezone(datetime.timezone.utc)
        return {
            "id": c["id"], "url": f"{base}/api/core/object-changes/{c['id']}/",
            "display_url": f"{base}/core/changelog/{c['id']}/",
            "display": f"dcim | device {c['object_repr']} "
                       f"{ACTION_LABELS[c['action']].lower()} by {c['user_name']}",
            "time": t.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "user": {"id": abs(hash(c["user_name"])) % 1000 + 1,
                     "url": f"{base}/api/users/users/1/", "display": c["user_name"],
                     "username": c["user_name"]},
            "user_name": c["user_name"], "request_id": c["request_id"],
            "action": {"value": c["action"], "label": ACTION_LABELS[c["action"]]},
            "changed_object_type": c["changed_object_type"],
            "changed_object_id": c["changed_object_id"],
            "changed_object": None, "object_repr": c["object_repr"], "message": "",
            "prechange_data": c["prechange_data"], "postchange_data": c["postchange_data"],
        }


def paginate(state, items, base, path, query, render=lambda x: x):
    """OptionalLimitOffsetPagination + DRF's replace_query_param; only the
    page's items are rendered (a 10,000-device seed stays quick)."""
    try:
        limit = int(query["limit"][-1]) if "limit" in query else state.paginate_count
        if limit < 0:
            raise ValueError
        limit = state.max_page_size if limit == 0 else min(limit, state.max_page_size)
    except ValueError:
        limit = state.paginate_count
    try:
        offset = max(0, int(query.get("offset", ["0"])[-1]))
    except ValueError:
        offset = 0
    page = [render(x) for x in items[offset:offset + limit]]

    def link(off):
        q = {k: v for k, v in query.items()}
        q["limit"] = [str(limit)]
        if off <= 0:
            q.pop("offset", None)
        else:
            q["offset"] = [str(off)]
        # rest_framework/utils/urls.py replace_query_param: parse_qs, then
        # urlencode(sorted(...)), so "," comes back as %2C
        return f"{base}{path}?{urlencode(sorted(q.items()), doseq=True)}"

    nxt = link(offset + limit) if offset + limit < len(items) else None
    prev = link(offset - limit) if offset > 0 else None
    return {"count": len(items), "next": nxt, "previous": prev, "results": page}


class Handler(BaseHTTPRequestHandler):
    server_version = "nginx"
    sys_version = ""
    # Persistent connections, as NetBox behind nginx or gunicorn keeps them:
    # every answer carries Content-Length, and each accepted connection is
    # numbered so a test can tell how many a client opened.
    protocol_version = "HTTP/1.1"

    def setup(self):
        with self.server.state.lock:
            self.server.state.connections += 1
            self.conn_id = self.server.state.connections
        # nginx's tcp_nodelay (on by default for keep-alive connections): the
        # headers and the body go out as they are written, not after the
        # client's delayed ACK
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.request = self.server.ssl_ctx.wrap_socket(self.request, server_side=True)
        super().setup()

    def handle(self):
        try:
            super().handle()
        except (ssl.SSLError, ConnectionError, socket.timeout, OSError):
            pass

    def log_message(self, fmt, *args):
        pass

    @property
    def state(self):
        return self.server.state

    def send(self, status, obj=None, raw=None, ctype="application/json", location=None,
             extra=None):
        # rest_framework/renderers.py JSONRenderer: compact separators,
        # ensure_ascii off (UNICODE_JSON), UTF-8
        body = raw.encode() if raw is not None else json.dumps(
            obj, separators=(",", ":"), ensure_ascii=False).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            if location:
                self.send_header("Location", location)
            for k, v in (extra or {}).items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Vary", "Accept")
            self.end_headers()
            self.wfile.write(body)
        except (ssl.SSLError, ConnectionError, OSError):
            pass

    def body_json(self):
        n = int(self.headers.get("Content-Length") or 0)
        data = self.rfile.read(n) if n else b""
        if not data:
            return None, data
        try:
            return json.loads(data), data
        except ValueError:
            return ValueError, data

    def do_GET(self):
        self.dispatch("GET")

    def do_PATCH(self):
        self.dispatch("PATCH")

    def do_POST(self):
        self.dispatch("POST")

    def dispatch(self, method):
        u = urlsplit(self.path)
        if u.path.startswith("/_fake/"):
            return self.control(method, u.path)
        path, proxied = u.path, False
        prefix = self.state.strip_prefix
        if prefix and path.startswith(prefix + "/"):
            # a reverse proxy that maps <prefix>/ to NetBox's /: NetBox sees
            # (and builds its links from) the path without the prefix
            path, proxied = path[len(prefix):], True
        body, raw_body = self.body_json() if method != "GET" else (None, b"")
        st = self.state
        auth = self.headers.get("Authorization", "")
        scheme, _, tok = auth.partition(" ")
        with st.lock:
            user, write, denied, perms = None, False, None, []
            if not auth:
                denied = "Authentication credentials were not provided."
            elif scheme == "Token":
                entry = st.tokens.get(tok)
                if entry is None or tok.startswith(TOKEN_PREFIX):
                    denied = "Invalid v1 token"
            elif scheme == "Bearer":
                entry = st.tokens.get(tok)
                if entry is None or not tok.startswith(TOKEN_PREFIX):
                    denied = "Invalid v2 token"
            else:
                denied = "Authentication credentials were not provided."
            if not denied:
                user, write = entry["user"], entry.get("write", True)
                perms = entry.get("perms", ALL_PERMS)
            st.log.append({"method": method, "path": path, "query": u.query,
                           "proxied": proxied, "conn": self.conn_id,
                           "scheme": scheme if scheme in ("Token", "Bearer") else "",
                           "user": user, "body": raw_body.decode("utf-8", "replace")})
            delay = st.delays.pop(0) if st.delays else 0
            fail = st.fail.pop(0) if st.fail else None
            canned = None
            if st.raw.get(path):
                canned = st.raw[path].pop(0)
        if delay:
            time.sleep(delay / 1000.0)
        if fail:
            fail, retry_after, retry_in = fail
            if retry_in is not None:
                retry_after = email.utils.formatdate(time.time() + retry_in, usegmt=True)
        if fail == 500:
            # netbox/api/views handle_rest_api_exception: a JSON 500
            return self.send(500, {"error": "database connection lost",
                                   "exception": "OperationalError",
                                   "netbox_version": "4.2.9", "python_version": "3.12.3"})
        if fail:
            return self.send(fail, raw=f"<html><head><title>{fail}</title></head><body>"
                             f"<center><h1>{fail}</h1></center><hr><center>nginx</center>"
                             "</body></html>", ctype="text/html",
                             extra={"Retry-After": retry_after} if retry_after else None)
        if denied:
            return self.send(403, {"detail": denied})
        need = needed_perm(method, path)
        if need and need not in perms:
            # DRF's PermissionDenied: the same words for every permission
            return self.send(403, {"detail": NO_PERMISSION})
        if canned:
            return self.send(canned.get("status", 200), raw=canned["body"],
                             ctype=canned.get("content_type", "application/json"),
                             location=canned.get("location"))
        base = f"https://{self.headers.get('Host')}"
        q = parse_qs(u.query, keep_blank_values=True)
        parts = [p for p in path.split("/") if p]
        with st.lock:
            if parts == ["api", "dcim", "devices"] and method == "GET":
                return self.list_devices(base, path, q)
            if parts[:3] == ["api", "dcim", "devices"] and len(parts) == 4:
                return self.one_device(method, parts[3], base, q, user, write, body)
            if parts == ["api", "core", "object-changes"] and method == "GET":
                return self.list_changes(base, path, q)
        self.send(404, {"detail": "Not found."})

    def list_devices(self, base, path, q):
        st = self.state
        devs = sorted(st.devices.values(), key=lambda d: ((d["name"] or ""), d["id"]))
        serials = [s for s in q.get("serial", []) if s != ""]
        if serials:
            # MultiValueCharFilter(lookup_expr='iexact'): UPPER(serial) = UPPER(v)
            wanted = {s.upper() for s in serials}
            devs = [d for d in devs if d["serial"].upper() in wanted]
        ids = [i for i in q.get("id", []) if i != ""]
        if ids:
            try:
                want = {int(i) for i in ids}
            except ValueError:
                return self.send(400, {"id": ["Enter a number."]})
            devs = [d for d in devs if d["id"] in want]
        exclude = q.get("exclude", [])
        self.send(200, paginate(st, devs, base, path, q,
                                lambda d: st.select_fields(st.device_json(d, base, exclude), q)))

    def one_device(self, method, ident, base, q, user, write, body):
        st = self.state
        dev = st.devices.get(int(ident)) if ident.isdigit() else None
        if dev is None:
            return self.send(404, {"detail": "No Device matches the given query."})
        if method == "PATCH":
            if not write:
                return self.send(403, {"detail": NO_PERMISSION})
            if body is ValueError or not isinstance(body, dict):
                return self.send(400, {"detail": "JSON parse error"})
            err = st.apply(dev, body, user)
            if err:
                return self.send(400, err)
        elif method != "GET":
            return self.send(405, {"detail": f"Method \"{method}\" not allowed."})
        self.send(200, st.select_fields(st.device_json(dev, base, q.get("exclude", [])), q))

    def list_changes(self, base, path, q):
        st = self.state
        ch = list(st.changes)
        types = [t for t in q.get("changed_object_type", []) if t]
        if types:
            ch = [c for c in ch if c["changed_object_type"] in types]
        ids = [i for i in q.get("changed_object_id", []) if i]
        if ids:
            ch = [c for c in ch if str(c["changed_object_id"]) in ids]
        names = [n for n in q.get("user_name", []) if n]
        if names:
            ch = [c for c in ch if c["user_name"] in names]
        actions = [a for a in q.get("action", []) if a]
        if actions:
            ch = [c for c in ch if c["action"] in actions]
        order = (q.get("ordering") or ["-time"])[-1]
        if st.ignore_ordering or order.lstrip("-") not in ("time", "id"):
            order = "id" if st.ignore_ordering else "-time"
        # netbox/api/filter_backends.py OrderingFilter: the term, then pk
        ch.sort(key=lambda c: c["id"])
        ch.sort(key=lambda c: c[order.lstrip("-")], reverse=order.startswith("-"))
        self.send(200, paginate(st, ch, base, path, q, lambda c: st.change_json(c, base)))

    def control(self, method, path):
        st = self.state
        body, _ = self.body_json() if method == "POST" else (None, b"")
        body = body if isinstance(body, dict) else {}
        with st.lock:
            if path == "/_fake/log" and method == "GET":
                return self.send(200, {"log": st.log, "connections": st.connections})
            if path == "/_fake/state" and method == "GET":
                return self.send(200, {
                    "devices": [{**{k: v for k, v in d.items() if k != "custom_field_data"},
                                 "custom_fields": d["custom_field_data"]}
                                for d in st.devices.values()],
                    "changes": [st.change_json(c, "https://fake") for c in st.changes],
                    "log": st.log, "connections": st.connections})
            if path == "/_fake/fail":
                st.fail += [None] * int(body.get("after", 0))
                st.fail += [(int(body.get("status", 503)), body.get("retry_after"),
                             body.get("retry_after_in"))] * int(body.get("count", 1))
            elif path == "/_fake/delay":
                st.delays += [int(body["ms"])] * int(body.get("count", 1))
            elif path == "/_fake/raw":
                st.raw.setdefault(body["path"], []).extend([body] * int(body.get("count", 1)))
            elif path == "/_fake/create":
                if int(body["device"]["id"]) in st.devices:
                    return self.send(400, {"detail": "that id exists"})
                st.create(body["device"], body["user"])
            elif path == "/_fake/delete":
                dev = st.devices.get(int(body["device"]))
                if dev is None:
                    return self.send(404, {"detail": "no such device"})
                st.record(dev["id"], "delete", st.snapshot(dev), None, body["user"])
                del st.devices[dev["id"]]
            elif path == "/_fake/purge":
                dev = body.get("device")
                st.purge(int(dev) if dev is not None else None, body.get("before"))
            elif path == "/_fake/custom_field":
                # an administrator editing (or deleting) a custom field
                name = body["name"]
                if body.get("delete"):
                    if name in st.cf_names:
                        st.cf_names.remove(name)
                    st.cf_regex.pop(name, None)
                else:
                    if name not in st.cf_names:
                        st.cf_names.append(name)
                    if body.get("validation_regex"):
                        st.cf_regex[name] = body["validation_regex"]
                    else:
                        st.cf_regex.pop(name, None)
            elif path == "/_fake/proxy":
                st.strip_prefix = body.get("strip_prefix", "")
            elif path == "/_fake/ignore_fields":
                st.ignore_fields = bool(body.get("on", True))
            elif path == "/_fake/ignore_ordering":
                st.ignore_ordering = bool(body.get("on", True))
            elif path == "/_fake/change":
                dev = st.devices.get(int(body["device"]))
                if dev is None:
                    return self.send(404, {"detail": "no such device"})
                patch = {k: body[k] for k in ("custom_fields", "status", "serial", "name")
                         if k in body}
                err = st.apply(dev, patch, body["user"], body.get("time"))
                if err:
                    return self.send(400, err)
            else:
                return self.send(404, {"detail": "unknown control"})
        self.send(200, {"ok": True})


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # a client that rejects our certificate, or hangs up mid-delay


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: netbox_fake.py CERT KEY SEED")
    cert, key, seed_path = sys.argv[1:]
    with open(seed_path) as f:
        seed = json.load(f)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    srv = Server(("127.0.0.1", 0), Handler)
    srv.ssl_ctx = ctx
    srv.state = State(seed)
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
