#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Install what the build and the emulator tests (QEMU, Bochs) need; idempotent and quiet when
# everything is already there.  With --cross, only Debian's cross compilers
# for the given architectures (cross-check.sh; not part of the default set).
#
# usage: deps.sh
#        deps.sh --cross <arch>...     arch: arm64 riscv64 s390x powerpc64le mips64
set -euo pipefail
. "$(dirname "$0")/lib.sh"

PACKAGES="linux-source-6.1 gcc make flex bison bc libelf-dev libssl-dev
libncurses-dev cpio xz-utils gzip gcc-aarch64-linux-gnu libc6-dev-arm64-cross
qemu-system-x86 qemu-system-arm busybox-static ccache sparse python3 python3-ply python3-git python3-docutils git
perl file kmod
bochs bochsbios vgabios isolinux syslinux-common xorriso
dpkg-dev ninja-build meson pkg-config libglib2.0-dev libpixman-1-dev zlib1g-dev libfdt-dev"

# Install those of the packages given that are missing, with apt.
# usage: install_missing <package>...
install_missing() {
	local p missing=
	for p in "$@"; do
		dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' ||
			missing="$missing $p"
	done

	SUDO=
	if [ "$(id -u)" != 0 ]; then
		command -v sudo >/dev/null || die "not root and no sudo: install as root:$missing"
		SUDO=sudo
	fi

	if [ -n "$missing" ]; then
		say "installing with apt:$missing"
		$SUDO apt-get update -q ||
			die "apt-get update failed; check the network and /etc/apt/sources.list"
		# shellcheck disable=SC2086
		DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends $missing ||
			die "apt-get install failed for:$missing"
	fi
}

if [ "${1:-}" = --cross ]; then
	shift
	[ $# -gt 0 ] || die "usage: deps.sh --cross <arch>..."
	pkgs=()
	for arch in "$@"; do
		cross=$(cross_prefix "$arch")
		[ -n "$cross" ] || die "no cross compiler for '$arch' (arm64 riscv64 s390x powerpc64le mips64)"
		pkgs+=("gcc-${cross%-}")
	done
	install_missing "${pkgs[@]}"
	exit 0
fi

# shellcheck disable=SC2086
install_missing $PACKAGES

[ -r "$SRC_TARBALL" ] || die "$SRC_TARBALL missing although linux-source-6.1 is installed"

# The arm64 guest's busybox comes from Debian's arm64 busybox-static, unpacked
# into the build directory (it is not installed on the host).
BB_ARM64=$BUILD/deps/busybox-arm64/bin/busybox
if [ ! -x "$BB_ARM64" ]; then
	say "fetching busybox-static:arm64 for the arm64 initramfs"
	if ! dpkg --print-foreign-architectures | grep -qx arm64; then
		$SUDO dpkg --add-architecture arm64
		$SUDO apt-get update -q || die "apt-get update failed after adding arm64"
	fi
	dl=$BUILD/deps/dl
	rm -rf "$dl" && mkdir -p "$dl"
	(cd "$dl" && apt-get download -q busybox-static:arm64 >/dev/null 2>&1) ||
		{ $SUDO apt-get update -q && (cd "$dl" && apt-get download -q busybox-static:arm64); } ||
		die "could not download busybox-static:arm64"
	rm -rf "$BUILD/deps/busybox-arm64"
	dpkg-deb -x "$dl"/busybox-static_*_arm64.deb "$BUILD/deps/busybox-arm64" ||
		die "could not unpack busybox-static:arm64"
	file "$BB_ARM64" | grep -q 'ARM aarch64' || die "$BB_ARM64 is not an arm64 binary"
	rm -rf "$dl"
fi
[ -x /bin/busybox ] || die "busybox-static is installed but /bin/busybox is missing"
