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

# Bytes after the certificate that are not 0x00/0xFF padding (a published
# Nuvoton file has 0x11 fill) are not part of it: the signature covers the
# DER alone, so the hash is the certificate's.
first=$(ls "$data"/*.der | head -1)
trim_der "$first" "$tmp/clean.der"
want=$("$FLEETCTL" ek hash "$tmp/clean.der")
{ cat "$tmp/clean.der"; printf 'GARBAGE\x11\x11\x11'; } >"$tmp/garbage.der"
got=$("$FLEETCTL" ek hash "$tmp/garbage.der") ||
	{ echo "FAIL: trailing fill refused"; exit 1; }
[ "$got" = "$want" ] || { echo "FAIL: trailing fill: $got, want $want"; exit 1; }
echo "ok: trailing fill accepted"

# The same, in the 7-byte TCG stored-certificate header (0x1001, type 0x00,
# size of what follows, 0x1002), built here.
size=$(stat -c %s "$tmp/clean.der")
hex_size=$(printf '%04x' $((size + 2)))
{ printf '\x10\x01\x00'; printf "\\x${hex_size:0:2}\\x${hex_size:2:2}"; printf '\x10\x02'
  cat "$tmp/clean.der"; head -c 64 /dev/zero | tr '\0' '\377'; } >"$tmp/nv.bin"
got=$("$FLEETCTL" ek hash "$tmp/nv.bin") || { echo "FAIL: TCG header refused"; exit 1; }
[ "$got" = "$want" ] || { echo "FAIL: TCG header: $got, want $want"; exit 1; }
echo "ok: TCG stored-certificate header"

# Every real RSA certificate with its key labelled id-RSAES-OAEP (the OID's
# last byte patched): ek_hash is still Go's MarshalPKIXPublicKey hash, i.e.
# openssl's of the rsaEncryption form (SPIRE's tpm:pub_hash).
m=0
for f in "$data"/*; do
	case "$f" in *.chain.pem | *.md) continue ;; esac
	name=$(basename "$f")
	hex=$(xxd -p "$tmp/$name.der" | tr -d '\n')
	oid=06092a864886f70d010101
	case "$hex" in *"$oid"*) ;; *) continue ;; esac
	want=$(openssl x509 -inform der -in "$tmp/$name.der" -noout -pubkey |
		openssl pkey -pubin -outform der | sha256sum | cut -d' ' -f1)
	printf '%s' "${hex/$oid/06092a864886f70d010107}" | xxd -r -p >"$tmp/$name.oaep.der"
	if openssl x509 -inform der -in "$tmp/$name.oaep.der" -noout -pubkey >/dev/null 2>&1; then
		echo "FAIL: $name: openssl reads the OAEP-labelled key; the relabel did not take"
		exit 1
	fi
	got=$("$FLEETCTL" ek hash "$tmp/$name.oaep.der")
	[ "$got" = "$want" ] ||
		{ echo "FAIL: $name as OAEP: fleetctl ek hash says $got, openssl says $want"; exit 1; }
	m=$((m + 1))
done
[ "$m" -ge 3 ] || { echo "FAIL: only $m certificates relabelled"; exit 1; }
echo "ok: OAEP-labelled keys hash as rsaEncryption ($m)"

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

# --at takes RFC 3339, as fleetd prints every time, and UNIX seconds still.
for at in 2030-01-01T00:00:00Z 2060-01-01T00:00:00Z 2030-01-01T02:00:00+02:00 1893456000; do
	out=$("$FLEETCTL" ek verify --roots "$tmp/stm" --at "$at" "$data/stmicro-1.der") ||
		{ echo "FAIL: ek verify --at $at: '$out'"; exit 1; }
	[ "$out" = ok ] || { echo "FAIL: ek verify --at $at: '$out'"; exit 1; }
done
for at in 2001-09-09T01:46:40Z 2001-09-09T03:46:40+02:00; do
	set +e
	out=$("$FLEETCTL" ek verify --roots "$tmp/stm" --at "$at" "$data/stmicro-1.der")
	rc=$?
	set -e
	[ "$rc" -eq 1 ] && [ "$out" = "refused: ek-chain-not-yet-valid" ] ||
		{ echo "FAIL: ek verify --at $at: exit $rc, '$out'"; exit 1; }
done
# Bad values: usage (exit 2), a message naming the value and the forms.
for at in 2030-02-30T00:00:00Z 2030-01-01 2030-01-01T00:00:00 "2030-01-01 00:00:00Z" \
	2030-01-01T25:00:00Z 2030-01-01T00:00:00+24:00 1969-12-31T23:59:59Z tomorrow -5 0 ""; do
	set +e
	err=$("$FLEETCTL" ek verify --roots "$tmp/stm" --at "$at" "$data/stmicro-1.der" 2>&1 >/dev/null)
	rc=$?
	set -e
	[ "$rc" -eq 2 ] && grep -qF -- "--at '$at' is not an RFC 3339 time" <<<"$err" ||
		{ echo "FAIL: ek verify --at '$at': exit $rc, '$err'"; exit 1; }
done
echo "ok: ek verify --at RFC 3339"
