# SPDX-License-Identifier: GPL-2.0
# Shared paths and helpers for the build scripts; sourced, not run.

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$TOP/build}
TREE=${TREE:-$BUILD/linux}              # the prepared kernel tree (a throwaway git repo)
SRC_TARBALL=${SRC_TARBALL:-/usr/src/linux-source-6.1.tar.xz}
RESULTS=$BUILD/results
NPROC=$(nproc)

# Components applied on top of the pristine tree, in this order.
COMPONENTS="virt-kvm arch-x86 arch-arm64-stubs"

say()  { printf '==> %s\n' "$*"; }
warn() { printf 'warning: %s\n' "$*" >&2; }
die()  { printf 'error: %s\n' "$*" >&2; exit 1; }

# Kernel make in the prepared tree, out of tree, through ccache.
# usage: kmake <arch> <objdir> [make args...]
kmake() {
	local arch=$1 obj=$2 cross=
	shift 2
	[ "$arch" = arm64 ] && cross=aarch64-linux-gnu-
	make -C "$TREE" O="$obj" ARCH="$arch" CROSS_COMPILE="$cross" \
		CC="ccache ${cross}gcc" HOSTCC="ccache gcc" \
		LOCALVERSION= DEBIAN_KERNEL_NO_CC_VERSION_CHECK=1 \
		KBUILD_BUILD_TIMESTAMP='2026-01-01' KBUILD_BUILD_USER=kvm-asi \
		KBUILD_BUILD_HOST=qemu "$@"
}

# Boot a kernel in QEMU with the runner and remember its KTAP for the summary.
# usage: boot <name> <kernel> <initramfs> <cpu> <tests> [runner args...]
BOOTS=()
boot() {
	local name=$1 kernel=$2 initrd=$3 cpu=$4 tests=$5 arch=x86_64 image=arch/x86/boot/bzImage
	shift 5
	if [ "$kernel" = arm64 ]; then
		arch=arm64
		image=arch/arm64/boot/Image
	fi
	BOOTS+=("$RESULTS/$name.ktap")
	rm -f "$RESULTS/$name".*
	"$TOP/boot-tests/run-qemu.py" --arch "$arch" --kernel "$BUILD/$kernel/$image" \
		--initrd "$BUILD/initramfs/$initrd.cpio.gz" --cpu "$cpu" --tests "$tests" \
		--name "$name" --results "$RESULTS" "$@" || true
}

# The one-line verdict over every boot so far; exit status 1 on any failure.
summarize() {
	say "summary"
	"$TOP/boot-tests/summarize.py" "${BOOTS[@]}"
}

# What `make` and `make bench` start with: dependencies, the prepared tree,
# the x86_64 kernel and its test initramfs.
build_x86_64() {
	"$TOP/scripts/deps.sh"
	"$TOP/scripts/prepare.sh"
	"$TOP/scripts/build-kernel.sh" x86_64
	"$TOP/scripts/mkinitramfs.sh" x86_64 "$BUILD/initramfs/x86_64.cpio.gz"
	mkdir -p "$RESULTS"
}
