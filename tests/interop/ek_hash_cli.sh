#!/usr/bin/env bash
# `fleetctl ek hash` on every real EK certificate in ../shared/data/ek-certs
# equals what an operator gets from openssl alone:
#   openssl x509 -pubkey | openssl pkey -pubin -outform der | sha256sum
# NV padding is trimmed for openssl here with the DER's own outer length
# (30 82 LL LL), not with fleetctl, so the two sides stay independent.
set -euo pipefail

: "${FLEETCTL:?FLEETCTL not set}"
data="${FLEET_SHARED_DATA:-}/ek-certs"
if [ ! -d "$data" ]; then
	echo "SKIP: $data not found (the shared real-world data is not beside this checkout)"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The DER certificate inside a file: PEM as is, DER cut at its outer length.
trim_der() {
	local f=$1 out=$2
	if grep -q -- '-----BEGIN CERTIFICATE-----' "$f"; then
		openssl x509 -in "$f" -outform der -out "$out"
		return
	fi
	local hdr len
	hdr=$(head -c 4 "$f" | od -An -tx1 | tr -d ' \n')
	case "$hdr" in
	3082*) len=$((16#${hdr:4:4} + 4)) ;;
	3081*) len=$((16#${hdr:4:2} + 3)) ;;
	*) echo "FAIL: $f does not start with a DER SEQUENCE" >&2; return 1 ;;
	esac
	head -c "$len" "$f" >"$out"
}

n=0
for f in "$data"/*; do
	case "$f" in *.chain.pem | *.md) continue ;; esac
	name=$(basename "$f")
	trim_der "$f" "$tmp/$name.der"
	want=$(openssl x509 -inform der -in "$tmp/$name.der" -noout -pubkey |
		openssl pkey -pubin -outform der | sha256sum | cut -d' ' -f1)
	got=$("$FLEETCTL" ek hash "$f")
	if [ "$got" != "$want" ]; then
		echo "FAIL: $name: fleetctl ek hash says $got, openssl says $want"
		exit 1
	fi
	echo "ok: $name $got"
	n=$((n + 1))
done
if [ "$n" -lt 4 ]; then
	echo "FAIL: only $n certificates checked"
	exit 1
fi

# A certificate with bytes after it that are not padding is refused (exit 1)
# with the offset of the first such byte.
first=$(ls "$data"/*.der | head -1)
trim_der "$first" "$tmp/clean.der"
size=$(stat -c %s "$tmp/clean.der")
{ cat "$tmp/clean.der"; printf 'GARBAGE'; } >"$tmp/garbage.der"
set +e
err=$("$FLEETCTL" ek hash "$tmp/garbage.der" 2>&1 >/dev/null)
rc=$?
set -e
if [ "$rc" -ne 1 ] || ! grep -q "at byte $size" <<<"$err"; then
	echo "FAIL: trailing garbage: exit $rc, '$err' (want exit 1 naming byte $size)"
	exit 1
fi
echo "ok: trailing garbage refused at byte $size"

# `ek show` names the TPM from the critical SAN directoryName.
show=$("$FLEETCTL" ek show "$data/infineon-1.der")
grep -qx 'tpm-model: SLB 9670 TPM2.0' <<<"$show" || { echo "FAIL: ek show: $show"; exit 1; }
grep -qx 'subject: (empty)' <<<"$show" || { echo "FAIL: ek show subject: $show"; exit 1; }
echo "ok: ek show"

# `ek verify`: ok from the leaf's own chain, refused (exit 1) from another
# maker's, refused as not yet valid before the leaf existed.
split_chain() {
	mkdir -p "$2"
	awk -v d="$2" '/-----BEGIN CERTIFICATE-----/{n++} n{print > (d "/ca" n ".pem")}' "$1"
}
split_chain "$data/stmicro-1.chain.pem" "$tmp/stm"
split_chain "$data/nuvoton-1.chain.pem" "$tmp/nuvo"
[ "$("$FLEETCTL" ek verify --roots "$tmp/stm" "$data/stmicro-1.der")" = ok ] ||
	{ echo "FAIL: ek verify stmicro"; exit 1; }
set +e
out=$("$FLEETCTL" ek verify --roots "$tmp/nuvo" "$data/stmicro-1.der")
rc=$?
out2=$("$FLEETCTL" ek verify --roots "$tmp/stm" --at 1000000000 "$data/stmicro-1.der")
rc2=$?
set -e
[ "$rc" -eq 1 ] && [ "$out" = "refused: ek-chain-untrusted" ] ||
	{ echo "FAIL: ek verify against nuvoton roots: exit $rc, '$out'"; exit 1; }
[ "$rc2" -eq 1 ] && [ "$out2" = "refused: ek-chain-not-yet-valid" ] ||
	{ echo "FAIL: ek verify --at 2001: exit $rc2, '$out2'"; exit 1; }
echo "ok: ek verify"
