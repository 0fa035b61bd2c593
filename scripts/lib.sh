# SPDX-License-Identifier: GPL-2.0
# Shared paths and helpers for the build scripts; sourced, not run.

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$TOP/build}
TREE=${TREE:-$BUILD/linux}              # the prepared kernel tree (a throwaway git repo)
SRC_TARBALL=${SRC_TARBALL:-/usr/src/linux-source-6.1.tar.xz}
RESULTS=$BUILD/results
# Bochs's CPU models: Intel VMX with EPT and VPID; AMD SVM with NRIP save.
BOCHS_VMX=corei7_haswell_4770
BOCHS_SVM_NRIP=trinity_apu
# The KVM selftests that need VMX (QEMU's TCG has none), for Bochs: the
# vmx_*, evmcs and nested_* ones but vmx_preemption_timer_test, which
# wedges Bochs 2.7's emulated CPU (README, "Known limits").
VMX_SELFTESTS='^x86_64/(vmx_([a-oq-z]|pmu)|evmcs_test|nested_)'
# Selftests that a baseline records as failing (timed out or not) give no
# verdict on that CPU: make check runs them this long, for what they
# exercise, not 90 s.
SELFTEST_NO_VERDICT_SECS=20
# Isolation on, and every VM's address space audited as the VM goes (each
# boot's isolation_audit case: at least one VM audited, no finding).
ISO="kvm.address_space_isolation=1 kvm.isolation_audit=1"
NPROC=$(nproc)
# The outer QEMU for x86_64 boots: Debian's 7.2 with our fixes (build-qemu.sh).
OUTER_QEMU=$BUILD/qemu/bin/qemu-system-x86_64

# Components applied on top of the pristine tree, in this order.
COMPONENTS="kernel-core virt-kvm arch-x86 arch-arm64-stubs"

say()  { printf '==> %s\n' "$*"; }
git_t() { git -C "$TREE" "$@"; }
warn() { printf 'warning: %s\n' "$*" >&2; }
die()  { printf 'error: %s\n' "$*" >&2; exit 1; }

# The entries of the series in the order they apply, one "<component>/<entry>"
# a line; the prepared tree has one commit for each, in the same order.
series_entries() {
	local comp entry
	for comp in $COMPONENTS; do
		[ -f "$TOP/$comp/series" ] || continue
		while read -r entry; do
			case "$entry" in ''|'#'*) continue ;; esac
			echo "$comp/$entry"
		done <"$TOP/$comp/series"
	done
}

# The files a patch file changes.
patch_files() {
	sed -n 's|^diff --git a/\([^ ]*\) b/.*|\1|p' "$1"
}

# The architectures we build, by their Debian/uname name: the kernel's
# ARCH= for each, and the CROSS_COMPILE= prefix of Debian's cross compiler
# (package gcc-<prefix without its last dash>); x86_64 is the host's gcc.
kernel_arch() {
	case "$1" in
	riscv64)     echo riscv ;;
	s390x)       echo s390 ;;
	powerpc64le) echo powerpc ;;
	mips64)      echo mips ;;
	*)           echo "$1" ;;
	esac
}
cross_prefix() {
	case "$1" in
	arm64)       echo aarch64-linux-gnu- ;;
	riscv64)     echo riscv64-linux-gnu- ;;
	s390x)       echo s390x-linux-gnu- ;;
	powerpc64le) echo powerpc64le-linux-gnu- ;;
	mips64)      echo mips64el-linux-gnuabi64- ;;	# Loongson64 is little endian
	esac
}

# Kernel make in the prepared tree, out of tree, through ccache.  ccache sees
# paths relative to the object directory (CCACHE_BASEDIR), so a tree and
# object directory side by side elsewhere under build/ share its results.
# usage: kmake <arch> <objdir> [make args...]
kmake() {
	local arch=$1 obj=$2 cross
	shift 2
	cross=$(cross_prefix "$arch")
	CCACHE_BASEDIR=$BUILD make -C "$TREE" O="$obj" ARCH="$(kernel_arch "$arch")" CROSS_COMPILE="$cross" \
		CC="ccache ${cross}gcc" HOSTCC="ccache gcc" \
		LOCALVERSION= DEBIAN_KERNEL_NO_CC_VERSION_CHECK=1 \
		KBUILD_BUILD_TIMESTAMP='2026-01-01' KBUILD_BUILD_USER=kvm-asi \
		KBUILD_BUILD_HOST=qemu "$@"
}

# Boot a kernel with the runner (QEMU, or Bochs with --emulator bochs) and
# remember its KTAP for the summary.
# usage: boot <name> <kernel> <initramfs> <cpu> <tests> [runner args...]
BOOTS=()
boot() {
	local name=$1 kernel=$2 initrd=$3 cpu=$4 tests=$5 arch=x86_64 image=arch/x86/boot/bzImage
	shift 5
	if [ "$kernel" = arm64 ]; then
		arch=arm64
		image=arch/arm64/boot/Image
	fi
	# x86_64 on QEMU runs on the outer QEMU we build (a later --qemu wins).
	local qemu=()
	[ "$arch" = x86_64 ] && [[ " $* " != *" --emulator bochs "* ]] && qemu=(--qemu "$OUTER_QEMU")
	BOOTS+=("$RESULTS/$name.ktap")
	rm -rf "$RESULTS/$name".*
	"$TOP/boot-tests/run-boot.py" --arch "$arch" --kernel "$BUILD/$kernel/$image" \
		--initrd "$BUILD/initramfs/$initrd.cpio.gz" --cpu "$cpu" --tests "$tests" \
		--name "$name" --results "$RESULTS" "${qemu[@]}" "$@" || true
}

# As boot, in the background, for boots on a single-threaded emulator (one
# CPU each): two of them side by side take the time of the longer one.
# boots_wait waits for every boot_bg so far.
BOOT_PIDS=()
boot_bg() {
	BOOTS+=("$RESULTS/$1.ktap")
	boot "$@" &
	BOOT_PIDS+=($!)
}
boots_wait() {
	local pid
	for pid in "${BOOT_PIDS[@]}"; do
		wait "$pid" || true
	done
	BOOT_PIDS=()
}

# The one-line verdict over every boot so far; exit status 1 on any failure.
summarize() {
	say "summary"
	"$TOP/boot-tests/summarize.py" "${BOOTS[@]}"
}

# Each NAME's KTAP file joins BOOTS, an old one removed first: a check
# that dies early leaves no old verdict.
expect_results() {
	local k
	mkdir -p "$RESULTS"
	for k; do
		rm -f "$RESULTS/$k.ktap"
		BOOTS+=("$RESULTS/$k.ktap")
	done
}

# The checks of the series that read it rather than build it, for `make
# check` and `make check-series`: applies exactly, checkpatch, docs and
# kernel-doc, sparse and W=1 (on a copy of the built x86_64 tree), and
# what the isolation layer and KVM export (from the built x86_64 tree, and
# from the option's objects built without its debugging aids).
series_static_checks() {
	expect_results apply checkpatch docs kernel-doc sparse exports production
	"$TOP/scripts/check-apply.sh" || true
	"$TOP/scripts/checkpatch.sh" || true
	"$TOP/scripts/check-docs.sh" || true
	"$TOP/scripts/check-sparse.sh" || true
	say "exports: namespaced, used by KVM, no per-CPU or writable data, no entry code"
	"$TOP/scripts/check-exports.py" "$BUILD/x86_64" >"$RESULTS/exports.ktap" ||
		echo "error: exports: see $RESULTS/exports.ktap" >&2
	"$TOP/scripts/check-production.sh" || true
}

# The x86_64 kernel built after each patch (bisect-build.sh).
series_bisect_check() {
	expect_results bisect
	"$TOP/scripts/bisect-build.sh" || true
}

# What `make` and `make bench` start with: dependencies, the prepared tree,
# the x86_64 kernel and its test initramfs.
build_x86_64() {
	"$TOP/scripts/deps.sh"
	"$TOP/scripts/prepare.sh"
	"$TOP/scripts/build-qemu.sh"
	"$TOP/scripts/build-kernel.sh" x86_64
	"$TOP/scripts/mkinitramfs.sh" x86_64 "$BUILD/initramfs/x86_64.cpio.gz"
	mkdir -p "$RESULTS"
}

# The kernel parameter that limits the selftests BASELINE records as
# failing to SECS (SELFTEST_NO_VERDICT_SECS; 0: not run), nothing if there
# are none.
# usage: selftest_limits BASELINE [SECS]
selftest_limits() {
	local limits secs=${2:-$SELFTEST_NO_VERDICT_SECS}
	limits=$(sed -nE "s/^(\S+) fail( #.*)?$/\1:$secs/p" "$1" | paste -sd, -)
	[ -z "$limits" ] || echo "asi.selftest_limit=$limits"
}
