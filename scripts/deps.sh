#!/usr/bin/env bash
# Install everything fleetd's build, tests and demo need, from Debian 12's
# packages. Idempotent: installs only what is missing, and runs apt-get update
# only when something is.
set -euo pipefail

packages=(
  build-essential dpkg-dev cmake pkg-config clang libclang-rt-14-dev
  libssl-dev openssl
  libtss2-dev libtss2-tcti-swtpm0 tpm2-tools swtpm swtpm-tools
  libjansson-dev libyaml-dev libsqlite3-dev sqlite3 libpq-dev postgresql libsystemd-dev
  libcmocka-dev libmicrohttpd-dev libcurl4-openssl-dev
  jq python3 curl ca-certificates dash busybox shellcheck systemd
  python3-yaml python3-jsonschema
  # libfaketime: the renewal's end-to-end test runs fleetd and tpm-reattest
  # 61 days later than now (docs/testing.md, "Time"); tests only.
  faketime
  # Locale sources and localedef: test_json_view builds a locale whose
  # decimal point is a comma (docs/netbox.md); tests only.
  locales
  # Nix for the NixOS module's evaluation (issue 15); checks only.
  nix-bin
  # The man pages' check (groff warnings as failures, man -l) and the
  # Debian package's build and lintian (tests/packaging/build_deb.sh).
  groff-base man-db debhelper lintian
)
# Node.js and npm for the deployment checks' npm packages (below): the
# machine's own when it has them (a Node.js that bundles npm conflicts with
# Debian's npm package), else Debian's.
command -v npm >/dev/null 2>&1 || packages+=(nodejs npm)
# kubectl for the Kubernetes fake's test: Debian's kubernetes-client, unless
# a kubectl is already installed (another package's /usr/bin/kubectl, which
# kubernetes-client would collide with): the test runs whichever is there.
command -v kubectl >/dev/null 2>&1 || packages+=(kubernetes-client)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all ${#packages[@]} packages present"
else
  echo "deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# From the npm registry, pinned, into one prefix the tests look in
# (FLEET_NPM_PREFIX overrides it): HashiCorp's HCL v2 parser (terraform/'s
# test) and the GitHub Actions workflow validator (.github/'s test).
npm_prefix=${FLEET_NPM_PREFIX:-/usr/local/lib/fleet-npm}
npm_pkgs=(@cdktf/hcl2json@0.21.0 @action-validator/cli@0.6.0)
npm_missing=()
for p in "${npm_pkgs[@]}"; do
  [ -d "$npm_prefix/node_modules/${p%@*}" ] || npm_missing+=("$p")
done
if [ ${#npm_missing[@]} -gt 0 ]; then
  echo "deps: npm installing ${npm_missing[*]} into $npm_prefix"
  $SUDO mkdir -p "$npm_prefix"
  $SUDO npm install --silent --no-audit --no-fund --prefix "$npm_prefix" "${npm_missing[@]}"
fi
