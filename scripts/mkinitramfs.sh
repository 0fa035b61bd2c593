#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Build the test initramfs for one of our kernels: busybox, boot-tests/init,
# the in-guest tests, the kernel's modules and, with --selftests, KVM's
# selftests.  Written with the kernel's own gen_init_cpio, so device nodes
# and ownership need no root.
# usage: mkinitramfs.sh <kernel> <output.cpio.gz> [--selftests]
set -euo pipefail
. "$(dirname "$0")/lib.sh"

kernel=${1:?usage: mkinitramfs.sh <kernel> <output> [--selftests]}
out=${2:?usage: mkinitramfs.sh <kernel> <output> [--selftests]}
selftests=${3:-}
case "$kernel" in
arm64) arch=arm64; busybox=$BUILD/deps/busybox-arm64/bin/busybox ;;
*)     arch=x86_64; busybox=/bin/busybox ;;
esac
obj=$BUILD/$kernel
[ -x "$busybox" ] || die "$busybox missing (run 'make deps')"
[ -d "$obj/usr/include/linux" ] || die "no uapi headers in $obj (build the $kernel kernel first)"

gen=$BUILD/tools/gen_init_cpio
if [ ! -x "$gen" ] || [ "$TREE/usr/gen_init_cpio.c" -nt "$gen" ]; then
	mkdir -p "$BUILD/tools"
	gcc -O2 -o "$gen" "$TREE/usr/gen_init_cpio.c"
fi

say "building in-guest tests for $arch"
make -s -C "$TOP/boot-tests" ARCH="$arch" OUT="$BUILD/tests/$arch" HEADERS="$obj/usr/include"

list=$(mktemp)
trap 'rm -f "$list"' EXIT
{
	for d in /bin /sbin /usr /usr/bin /dev /proc /sys /tmp /tests /lib /lib/modules /root; do
		echo "dir $d 0755 0 0"
	done
	echo "nod /dev/console 0600 0 0 c 5 1"
	echo "nod /dev/null 0666 0 0 c 1 3"
	echo "file /bin/busybox $busybox 0755 0 0"
	echo "file /init $TOP/boot-tests/init 0755 0 0"
	for t in "$BUILD/tests/$arch"/*; do
		echo "file /tests/${t##*/} $t 0755 0 0"
	done
	# Everything below these directories, as it is.
	add_tree() {	# <source dir> <destination>
		local src=$1 dst=$2 p
		(cd "$src" && find . -mindepth 1 ! -name build ! -name source | sort) | while read -r p; do
			p=${p#./}
			if [ -L "$src/$p" ]; then
				echo "slink $dst/$p $(readlink "$src/$p") 0777 0 0"
			elif [ -d "$src/$p" ]; then
				echo "dir $dst/$p 0755 0 0"
			else
				echo "file $dst/$p $src/$p $(stat -c %a "$src/$p") 0 0"
			fi
		done
	}
	[ -d "$obj/modules-install/lib/modules" ] && add_tree "$obj/modules-install/lib/modules" /lib/modules
	if [ "$selftests" = --selftests ]; then
		[ -f "$BUILD/selftests/$kernel/tests.list" ] || die "KVM selftests for $kernel not built"
		echo "dir /selftests 0755 0 0"
		echo "dir /selftests/kvm 0755 0 0"
		add_tree "$BUILD/selftests/$kernel" /selftests/kvm
	fi
} >"$list"

mkdir -p "$(dirname "$out")"
"$gen" "$list" | gzip -1 >"$out.tmp"
mv "$out.tmp" "$out"
say "initramfs $out: $(du -h "$out" | cut -f1)"
