#!/usr/bin/env bash
# Install everything fleetd's build, tests and demo need, from Debian 12's
# packages. Idempotent: installs only what is missing, and runs apt-get update
# only when something is.
set -euo pipefail

packages=(
  build-essential dpkg-dev cmake pkg-config clang libclang-rt-14-dev
  libssl-dev openssl
  libtss2-dev libtss2-tcti-swtpm0 tpm2-tools swtpm swtpm-tools
  libjansson-dev libyaml-dev libsqlite3-dev sqlite3 libsystemd-dev
  libcmocka-dev libmicrohttpd-dev libcurl4-openssl-dev
  jq python3 curl ca-certificates dash busybox shellcheck systemd
  python3-yaml python3-jsonschema
  # libfaketime: the renewal's end-to-end test runs fleetd and tpm-reattest
  # 61 days later than now (docs/testing.md, "Time"); tests only.
  faketime
)
# kubectl for the Kubernetes fake's test: Debian's kubernetes-client, unless
# a kubectl is already installed (another package's /usr/bin/kubectl, which
# kubernetes-client would collide with): the test runs whichever is there.
command -v kubectl >/dev/null 2>&1 || packages+=(kubernetes-client)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
