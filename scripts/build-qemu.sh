#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Build the outer QEMU that boots our x86_64 kernels: Debian bookworm's
# own qemu source package (7.2, with every Debian patch), plus our fixes
# in qemu/ (upstream/ first, in upstream's form; then 7.2/, what 7.2
# lacks and upstream already has).  Only x86_64-softmmu with TCG and none
# of the optional features; firmware is Debian's (seabios, ipxe-qemu,
# qemu-system-data).  Built once into build/qemu through ccache, and
# again only when the Debian version or a patch changes.
#
# Why 7.2 and not bookworm-backports' 10.0.2: the KVM selftests baselines,
# every measurement in README.md and the known limits were taken on 7.2;
# a patched 7.2 differs from Debian's binary by exactly our patches.
#
# usage: build-qemu.sh          (the binary: $OUTER_QEMU of lib.sh)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

DIR=$BUILD/qemu
BIN=$OUTER_QEMU
DEBIAN_SOURCES=/etc/apt/sources.list.d/debian.sources
SRC_LIST=/etc/apt/sources.list.d/kvm-asi-deb-src.sources
PATCHES=("$TOP"/qemu/upstream/*.patch "$TOP"/qemu/7.2/*.patch)
# No debug information: with -g, ccache hashes the directory it compiles
# in, and a clone elsewhere (CI's) would miss everything.
CONFIGURE=(--target-list=x86_64-softmmu --enable-tcg --without-default-features
	   --disable-docs --disable-user --disable-tools --disable-werror --disable-debug-info
	   --firmwarepath=/usr/share/qemu:/usr/share/seabios:/usr/lib/ipxe/qemu)

# Debian's source lists name binary packages only: add the same suites
# for sources, once.
ensure_deb_src() {
	apt-get source --print-uris -qq qemu >/dev/null 2>&1 && return 0
	[ -r "$DEBIAN_SOURCES" ] || die "no $DEBIAN_SOURCES to take the deb-src suites from"
	local sudo=
	[ "$(id -u)" = 0 ] || sudo=sudo
	say "adding deb-src entries for Debian's suites ($SRC_LIST)"
	sed 's/^Types: deb$/Types: deb-src/' "$DEBIAN_SOURCES" | $sudo tee "$SRC_LIST" >/dev/null ||
		die "could not write $SRC_LIST"
	$sudo apt-get update -q >/dev/null || die "apt-get update failed after adding $SRC_LIST"
	apt-get source --print-uris -qq qemu >/dev/null 2>&1 ||
		die "apt-get source qemu still fails with $SRC_LIST"
}

ensure_deb_src
version=$(apt-cache showsrc qemu | sed -n 's/^Version: //p' | sort -V | tail -n 1)
case "$version" in
1:7.2*) ;;
*) die "Debian's qemu source is $version; the patches in qemu/ are for 7.2" ;;
esac
stamp=$( { echo "$version"; printf '%s\n' "${CONFIGURE[@]}"; cat "${PATCHES[@]}"; } | sha256sum | cut -c1-16)
if [ -x "$BIN" ] && [ "$(cat "$DIR/stamp" 2>/dev/null)" = "$stamp" ]; then
	say "outer QEMU up to date: $("$BIN" --version | head -n 1)"
	exit 0
fi

start=$(date +%s)
say "building the outer QEMU: Debian qemu $version + ${#PATCHES[@]} patches of qemu/ (log: $DIR/build.log)"
rm -rf "$DIR"
mkdir -p "$DIR/dl"
log=$DIR/build.log
(cd "$DIR/dl" && apt-get source -q --download-only "qemu=$version") >"$log" 2>&1 ||
	{ tail -n 20 "$log" >&2; die "could not download Debian's qemu $version source"; }
dpkg-source -x --no-check "$DIR"/dl/qemu_*.dsc "$DIR/src" >>"$log" 2>&1 ||
	{ tail -n 20 "$log" >&2; die "could not unpack Debian's qemu source"; }
rm -rf "$DIR/dl"

# upstream/ is in upstream's layout, where 7.2's tcg/sysemu/ is tcg/system/.
for p in "${PATCHES[@]}"; do
	sed 's|target/i386/tcg/system/|target/i386/tcg/sysemu/|g' "$p" |
		patch -d "$DIR/src" -p1 --forward --fuzz=0 --no-backup-if-mismatch >>"$log" 2>&1 ||
		die "${p#"$TOP"/} does not apply to Debian's qemu $version (log: $log)"
	say "  applied ${p#"$TOP"/qemu/}"
done

mkdir -p "$DIR/src/build"
patches=${#PATCHES[@]}
# configure names the compiler to meson, so ccache goes into that name.
(cd "$DIR/src/build" &&
	CC="ccache gcc" CCACHE_BASEDIR=$DIR ../configure --prefix="$DIR" "${CONFIGURE[@]}" \
		--with-pkgversion="Debian $version + kvm-asi: $patches patches") >>"$log" 2>&1 ||
	{ tail -n 30 "$log" >&2; die "configuring QEMU failed (log: $log)"; }
CCACHE_BASEDIR=$DIR ninja -C "$DIR/src/build" -j"$NPROC" qemu-system-x86_64 >>"$log" 2>&1 ||
	{ grep -E 'error' "$log" | head -20 >&2; die "building QEMU failed (log: $log)"; }
mkdir -p "$(dirname "$BIN")"
cp "$DIR/src/build/qemu-system-x86_64" "$BIN"
echo "$stamp" >"$DIR/stamp"
say "built the outer QEMU in $(( $(date +%s) - start ))s: $("$BIN" --version | head -n 1)"
