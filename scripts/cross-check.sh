#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Check that the series breaks no architecture that builds KVM in 6.1: for
# each, install Debian's cross compiler if it is missing, configure a small
# kernel with KVM built in (tinyconfig + defconfigs/cross/<arch>.config) in
# build/cross/<arch> (arm64: the kernel make check boots), build its KVM
# directory (which builds virt/kvm as well), then link vmlinux.  Prints one
# line per architecture and writes KTAP to build/results/cross-check.ktap;
# exits non-zero if any failed.  Reruns are incremental.
#
# usage: cross-check.sh [arch...]     arch: arm64 riscv64 s390x powerpc64le mips64
#                                     (all of them by default)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

ALL="arm64 riscv64 s390x powerpc64le mips64"
if [ $# -gt 0 ]; then
	arches=("$@")
else
	read -ra arches <<<"$ALL"
fi
for arch in "${arches[@]}"; do
	case " $ALL " in
	*" $arch "*) ;;
	*) die "unknown architecture '$arch' (one of: $ALL)" ;;
	esac
done

# Install the compiler if missing, configure and build one architecture,
# everything logged to $2; non-zero on failure.  arm64 is the kernel make
# check boots, built in build/arm64.
check_arch() {
	local arch=$1 log=$2 obj=$BUILD/cross/$1 kernel=cross/$1 karch cross out start

	if [ "$arch" = arm64 ]; then
		obj=$BUILD/arm64
		kernel=arm64
	fi

	karch=$(kernel_arch "$arch")
	cross=$(cross_prefix "$arch")
	mkdir -p "$obj" "${log%/*}"
	: >"$log"

	start=$(date +%s)
	if ! out=$("$TOP/scripts/deps.sh" --cross "$arch" 2>&1); then
		echo "$out" >>"$log"
		echo "error: could not install gcc-${cross%-}" >>"$log"
		return 1
	fi
	if [ -n "$out" ]; then
		echo "$out" >"${log%/*}/install.log"
		say "$arch: installed gcc-${cross%-} in $(($(date +%s) - start))s (log: ${log%/*}/install.log)"
	fi

	cc_version=$("${cross}gcc" --version | head -1)
	echo "compiler: $cc_version" >>"$log"
	say "$arch: $cc_version, ARCH=$karch, in ${obj#"$TOP"/}"

	"$TOP/scripts/config.sh" "$kernel" >>"$log" 2>&1 || return 1
	kmake "$arch" "$obj" -j"$NPROC" "arch/$karch/kvm/" >>"$log" 2>&1 || return 1
	if [ ! -f "$obj/virt/kvm/kvm_main.o" ]; then
		echo "error: arch/$karch/kvm/ built no virt/kvm/kvm_main.o: is KVM enabled?" >>"$log"
		return 1
	fi
	kmake "$arch" "$obj" -j"$NPROC" vmlinux >>"$log" 2>&1 || return 1
	if ! "${cross}nm" "$obj/vmlinux" | awk '$2 == "T" && $3 == "kvm_init" { f = 1 } END { exit !f }'; then
		echo "error: vmlinux has no kvm_init: KVM is not built in" >>"$log"
		return 1
	fi
}

mkdir -p "$RESULTS"
out=$RESULTS/cross-check.ktap
{
	echo "KTAP version 1"
	echo "# cross-check"
	echo "1..${#arches[@]}"
} >"$out"
report=()
i=0
failed=0
for arch in "${arches[@]}"; do
	i=$((i + 1))
	log=$BUILD/cross/$arch/build.log
	start=$(date +%s)
	cc_version=
	if check_arch "$arch" "$log"; then
		secs=$(($(date +%s) - start))
		echo "# $arch: $cc_version, ${secs}s" >>"$out"
		echo "ok $i $arch" >>"$out"
		report+=("$(printf '%-12s %-7s %s' "$arch" ok "KVM objects + vmlinux in ${secs}s")")
	else
		failed=$((failed + 1))
		detail=$(grep -E 'error:|Error [0-9]+|asked for|undefined reference' "$log" | head -8 || true)
		{ sed 's/^/# /' <<<"$detail"; echo "not ok $i $arch"; } >>"$out"
		report+=("$(printf '%-12s %-7s %s' "$arch" FAILED "(see ${log#"$TOP"/})")")
		sed 's/^/    /' <<<"$detail" >&2
	fi
done

say "cross-check: KVM on ${#arches[@]} architectures, $failed failed"
printf '  %s\n' "${report[@]}"
[ "$failed" = 0 ]
