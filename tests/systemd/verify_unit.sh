#!/usr/bin/env bash
# verify_unit.sh: fleetd/fleetd.service and fleetd/fleetd.sysusers as systemd
# 252 (Debian 12) reads them, without a running systemd:
#   - systemd-analyze verify finds nothing to say (in a scratch root that
#     holds systemd's own units and a stand-in /usr/sbin/fleetd, since verify
#     checks that ExecStart exists);
#   - systemd-analyze security --offline keeps the exposure at or below 1.4
#     ("--threshold=14"): removing a sandboxing directive fails this test;
#   - the unit carries the directives docs/operations.md promises;
#   - systemd-sysusers accepts the sysusers entry and would create the user.
# Skips (77) when systemd-analyze is not installed.
set -euo pipefail
src="${FLEET_SOURCE_DIR:?}"
unit="$src/fleetd/fleetd.service"
sysusers="$src/fleetd/fleetd.sysusers"

if ! command -v systemd-analyze >/dev/null; then
  echo "SKIP: systemd-analyze is not installed (apt-get install systemd)"
  exit 77
fi

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/usr/sbin" "$root/usr/lib/systemd" "$root/etc/systemd/system"
cp -r /usr/lib/systemd/system "$root/usr/lib/systemd/"
cp /bin/true "$root/usr/sbin/fleetd"
cp "$unit" "$root/etc/systemd/system/fleetd.service"

out=$(systemd-analyze verify --root="$root" /etc/systemd/system/fleetd.service 2>&1) || {
  echo "FAIL: systemd-analyze verify:"; echo "$out"; exit 1; }
if [ -n "$out" ]; then
  echo "FAIL: systemd-analyze verify has something to say:"; echo "$out"; exit 1
fi
echo "ok: systemd-analyze verify"

if ! score=$(systemd-analyze security --offline=yes --threshold=14 "$unit" 2>&1); then
  echo "FAIL: exposure above 1.4:"; echo "$score" | tail -25; exit 1
fi
echo "ok: $(echo "$score" | grep 'Overall exposure')"

for d in 'Type=notify' 'WatchdogSec=30s' 'User=fleetd' 'Group=fleetd' 'DynamicUser=no' \
         'StateDirectory=fleetd' 'StateDirectoryMode=0750' 'ConfigurationDirectory=fleetd' \
         'ProtectSystem=strict' 'NoNewPrivileges=yes' 'CapabilityBoundingSet=' \
         'UMask=0077' 'Restart=on-failure' 'SystemCallFilter=@system-service' \
         'RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX' 'MemoryDenyWriteExecute=yes'; do
  grep -qxF "$d" "$unit" || { echo "FAIL: $unit lacks the line '$d'"; exit 1; }
done
echo "ok: directives present"

mkdir -p "$root/su/etc"
if command -v systemd-sysusers >/dev/null; then
  out=$(systemd-sysusers --dry-run --root="$root/su" "$sysusers" 2>&1)
  echo "$out" | grep -q "Creating user 'fleetd'" || {
    echo "FAIL: systemd-sysusers:"; echo "$out"; exit 1; }
  echo "ok: systemd-sysusers would create user fleetd"
else
  echo "note: systemd-sysusers not installed; the sysusers entry was not checked"
fi
