#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Build the test initramfs for one of our kernels: busybox, boot-tests/init,
# the in-guest tests, the kernel's modules and, with --selftests, KVM's
# selftests (--selftests=REGEX: only those whose names match); with --vmm, a real VMM for kvm-vmm: Debian's QEMU with its
# libraries and firmware, and a Linux guest (this kernel and a tiny
# initramfs of its own).  Written with the kernel's own gen_init_cpio, so
# device nodes and ownership need no root.
# usage: mkinitramfs.sh <kernel> <output.cpio.gz> [--selftests[=REGEX] | --vmm]
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage="usage: mkinitramfs.sh <kernel> <output> [--selftests[=REGEX] | --vmm]"
kernel=${1:?$usage}
out=${2:?$usage}
extra=${3:-}
case "$extra" in ''|--selftests|--selftests=?*|--vmm) ;; *) die "$usage" ;; esac
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
guest_list=$(mktemp)
selected=$(mktemp)
trap 'rm -f "$list" "$guest_list" "$selected"' EXIT

# gen_init_cpio lines for a file and the directories above it that are not
# listed yet (in $dirs_done).
dirs_done=" "
with_dirs() {	# <destination> <source> <mode>
	local d=${1%/*} parents=
	while [ -n "$d" ] && [ "${dirs_done#* $d }" = "$dirs_done" ]; do
		parents="$d $parents"
		dirs_done="$dirs_done$d "
		d=${d%/*}
	done
	for d in $parents; do
		echo "dir $d 0755 0 0"
	done
	echo "file $1 $2 $3 0 0"
}

# The real VMM of kvm-vmm: QEMU, the libraries it links (at the paths the
# dynamic loader looks them up), the firmware a -kernel boot of an i440FX
# machine reads, and the guest it boots.
vmm_files() {
	local qemu=/usr/bin/qemu-system-x86_64 lib fw
	[ -x "$qemu" ] || die "$qemu missing (run 'make deps')"
	dirs_done=" /bin /sbin /usr /usr/bin /dev /proc /sys /tmp /tests /lib /lib/modules /root "
	with_dirs "$qemu" "$qemu" 0755
	for lib in $(ldd "$qemu" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'); do
		with_dirs "$lib" "$(readlink -f "$lib")" 0755
	done
	for fw in /usr/share/seabios/bios-256k.bin /usr/share/qemu/linuxboot_dma.bin \
		  /usr/share/qemu/kvmvapic.bin; do
		[ -r "$fw" ] || die "$fw missing (run 'make deps')"
		with_dirs "/usr/share/qemu-asi/${fw##*/}" "$(readlink -f "$fw")" 0644
	done
	# The guest: this kernel, and an init that prints a marker and powers off.
	{
		echo "dir /bin 0755 0 0"
		echo "dir /proc 0755 0 0"
		echo "dir /dev 0755 0 0"
		echo "nod /dev/console 0600 0 0 c 5 1"
		echo "file /bin/busybox $busybox 0755 0 0"
		echo "file /init $TOP/boot-tests/guest/init 0755 0 0"
	} >"$guest_list"
	mkdir -p "$BUILD/initramfs"
	"$gen" "$guest_list" | gzip -9 >"$BUILD/initramfs/$kernel-guest.cpio.gz"
	with_dirs /guest/bzImage "$obj/arch/x86/boot/bzImage" 0644
	with_dirs /guest/initrd.gz "$BUILD/initramfs/$kernel-guest.cpio.gz" 0644
}
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
	selftests=$BUILD/selftests/$kernel
	case "$extra" in
	--selftests*)
		[ -f "$selftests/tests.list" ] || die "KVM selftests for $kernel not built"
		echo "dir /selftests 0755 0 0"
		echo "dir /selftests/kvm 0755 0 0"
		;;
	esac
	case "$extra" in
	--selftests)
		add_tree "$selftests" /selftests/kvm
		;;
	--selftests=*)
		# Only the matching tests, and a tests.list naming just them.
		grep -E "${extra#--selftests=}" "$selftests/tests.list" >"$selected" ||
			die "no KVM selftest matches '${extra#--selftests=}'"
		dirs_done="$dirs_done/selftests /selftests/kvm "
		echo "file /selftests/kvm/tests.list $selected 0644 0 0"
		while read -r t; do
			with_dirs "/selftests/kvm/$t" "$selftests/$t" 0755
		done <"$selected"
		;;
	esac
	[ "$extra" = --vmm ] && vmm_files
} >"$list"

mkdir -p "$(dirname "$out")"
"$gen" "$list" | gzip -1 >"$out.tmp"
mv "$out.tmp" "$out"
say "initramfs $out: $(du -h "$out" | cut -f1)"
