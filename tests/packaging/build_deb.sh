#!/bin/bash
# build_deb.sh: the Debian package, end to end (slow: a full release build).
# 1. dpkg-buildpackage -us -uc -b in a temporary copy of the tree (the
#    committed files only, git ls-files), with Debian's hardening flags;
#    the build log must hold no compiler warning.
# 2. lintian on the .deb: any E: fails.
# 3. dpkg -x into a throwaway root: the binaries, units, sysusers entry,
#    docs, man pages and example configuration are there; then the
#    installed fleetd --check-config passes on the packaged example config
#    with the files it names made by the installed fleetctl and openssl.
# Registered in ctest only with -DFLEET_PACKAGE_TEST=ON (tests/packaging.cmake).
set -u
src=${FLEET_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
for t in dpkg-buildpackage lintian openssl git; do
	command -v $t >/dev/null || { echo "SKIP: $t not installed"; exit 77; }
done
work=$(mktemp -d /tmp/fleetd-deb.XXXXXX)
[ -n "${KEEP:-}" ] || trap 'rm -rf "$work"' EXIT
die() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok: $*"; }

# 1. the build, in a copy of the committed tree
mkdir "$work/fleetd"
(cd "$src" && git ls-files -z | xargs -0 tar -cf - ) | tar -xf - -C "$work/fleetd" ||
	die "copying the tree"
start=$(date +%s)
(cd "$work/fleetd" && dpkg-buildpackage -us -uc -b -j"${JOBS:-2}") >"$work/build.log" 2>&1 ||
	{ tail -n 40 "$work/build.log"; die "dpkg-buildpackage failed"; }
ok "dpkg-buildpackage ($(($(date +%s) - start)) s)"
if grep -E 'warning:' "$work/build.log" | grep -v '^dpkg-' >"$work/warnings"; [ -s "$work/warnings" ]; then
	head -n 20 "$work/warnings"; die "the build printed warnings"
fi
grep -q -- '-D_FORTIFY_SOURCE=2' "$work/build.log" && grep -q -- '-fstack-protector-strong' "$work/build.log" ||
	die "the build did not use dpkg-buildflags' hardening flags"
ok "no compiler warning under dpkg-buildflags (hardening=+all)"
deb=$(ls "$work"/fleetd_*.deb) || die "no .deb"

# 2. lintian
lintian --tag-display-limit 0 "$deb" >"$work/lintian.txt" 2>&1
sed 's/^/  lintian: /' "$work/lintian.txt"
grep -q '^E: ' "$work/lintian.txt" && die "lintian reports errors"
ok "lintian: no E: ($(grep -c '^W: ' "$work/lintian.txt") W:)"

# 3. unpacked into a throwaway root
root="$work/root"
dpkg -x "$deb" "$root" || die "dpkg -x"
for f in usr/sbin/fleetd usr/bin/fleetctl usr/bin/tink-attest usr/bin/fleet-join \
	usr/bin/tpm-reattest usr/sbin/spire-server-fleet-entries \
	lib/systemd/system/fleetd.service lib/systemd/system/tpm-reattest.service \
	lib/systemd/system/tpm-reattest.timer \
	lib/systemd/system/spire-server-fleet-entries.service \
	lib/systemd/system/spire-server-fleet-entries.path \
	usr/lib/sysusers.d/fleetd.conf usr/share/fleetd/docs/configuration.md \
	usr/share/fleetd/profiles/worker-uefi-secureboot.yaml \
	usr/share/doc/fleetd/examples/fleetd.yaml usr/share/doc/fleetd/copyright \
	usr/share/man/man8/fleetd.8.gz usr/share/man/man8/fleetctl.8.gz \
	usr/share/man/man8/tink-attest.8.gz usr/share/man/man8/fleet-join.8.gz \
	usr/share/man/man8/tpm-reattest.8.gz usr/share/man/man8/spire-server-fleet-entries.8.gz; do
	[ -e "$root/$f" ] || [ -e "$root/usr/$f" ] || die "not in the package: /$f"
done
dpkg-deb -e "$deb" "$work/control" || die "dpkg-deb -e"
grep -q 'systemd-sysusers' "$work/control/postinst" || die "the postinst does not run systemd-sysusers"
grep -q "update-state 'fleetd.service'" "$work/control/postinst" || die "the postinst does not register fleetd.service"
ok "the package holds the binaries, units, sysusers entry, docs, man pages and example"

# The example configuration, its paths moved under the throwaway root, and
# the files it names made with the packaged programs.
cfg="$root/etc/fleetd/fleetd.yaml"
mkdir -p "$root/etc/fleetd/tls" "$root/etc/fleetd/roots" "$root/etc/fleetd/profiles" \
	"$root/var/lib/fleetd"
chmod 0700 "$root/var/lib/fleetd"
sed -e "s#/etc/fleetd#$root/etc/fleetd#g" -e "s#/var/lib/fleetd#$root/var/lib/fleetd#g" \
	"$root/usr/share/doc/fleetd/examples/fleetd.yaml" >"$cfg"
umask 077
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
	-subj "/CN=localhost" -keyout "$root/etc/fleetd/tls/fleetd.key" \
	-out "$root/etc/fleetd/tls/fleetd.crt" 2>/dev/null || die "TLS certificate"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
	-subj "/CN=packaging test EK root" -keyout /dev/null \
	-out "$root/etc/fleetd/roots/test-root.pem" 2>/dev/null || die "EK root"
cp "$root/usr/share/fleetd/profiles/worker-uefi-secureboot.yaml" \
	"$root/etc/fleetd/profiles/worker.yaml"
printf 'version: 1\nnodes: []\n' >"$root/etc/fleetd/nodes.yaml"
"$root/usr/bin/fleetctl" ca init "$root/var/lib/fleetd/ca" --cn "packaging test CA" \
	>/dev/null || die "the packaged fleetctl ca init"
"$root/usr/sbin/fleetd" --config "$cfg" --check-config --log-target stderr \
	>"$work/check.out" 2>&1 || { cat "$work/check.out"; die "fleetd --check-config"; }
ok "the packaged fleetd --check-config passes on the packaged example config"
"$root/usr/sbin/fleetd" --help | grep -q -- --check-config || die "fleetd --help"
MANPATH="$root/usr/share/man" man -l "$root/usr/share/man/man8/fleetd.8.gz" >/dev/null 2>&1 ||
	die "man -l fleetd.8.gz"
ok "the installed man page renders"
# 4. With FLEET_PACKAGE_INSTALL=1 (CI, a throwaway machine, as root): a real
#    install by apt (the maintainer scripts run: systemd-sysusers makes the
#    fleetd user, the units are registered), the installed fleetd's
#    --check-config on the packaged example, then the package removed.
if [ "${FLEET_PACKAGE_INSTALL:-}" = 1 ]; then
	[ "$(id -u)" -eq 0 ] || die "FLEET_PACKAGE_INSTALL=1 needs root"
	! dpkg-query -W fleetd >/dev/null 2>&1 || die "a fleetd package is installed already"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$deb" >"$work/install.log" 2>&1 ||
		{ tail -n 20 "$work/install.log"; die "apt-get install $(basename "$deb")"; }
	trap 'DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq fleetd >/dev/null 2>&1; rm -rf "$work"' EXIT
	getent passwd fleetd >/dev/null || die "the postinst made no fleetd user"
	[ -x /usr/sbin/fleetd ] && [ -f /lib/systemd/system/fleetd.service ] || die "not installed"
	sed -e "s#$root/usr/#/usr/#g" "$cfg" >"$work/installed.yaml"
	/usr/sbin/fleetd --config "$work/installed.yaml" --check-config --log-target stderr \
		>"$work/check2.out" 2>&1 || { cat "$work/check2.out"; die "the installed fleetd --check-config"; }
	ok "installed by apt: the fleetd user made, the installed fleetd --check-config passes"
	man -w fleetd >/dev/null 2>&1 || die "man fleetd: not installed where man looks"
	ok "man fleetd finds the installed page"
fi
echo "package test passed: $(basename "$deb")"
