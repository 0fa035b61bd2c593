#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `make check`: build both architectures and the KVM selftests, boot every
# test configuration in QEMU and end with "N passed, N failed, N skipped".
set -euo pipefail
. "$(dirname "$0")/lib.sh"

start=$(date +%s)
fail_build() { echo "error: $*" >&2; echo "0 passed, 1 failed, 0 skipped"; exit 1; }

"$TOP/scripts/deps.sh" || fail_build "installing dependencies failed"
"$TOP/scripts/prepare.sh" || fail_build "preparing the kernel tree failed"
for k in x86_64 arm64; do
	"$TOP/scripts/build-kernel.sh" $k || fail_build "building the $k kernel failed"
done
"$TOP/scripts/build-selftests.sh" || fail_build "building the KVM selftests failed"
"$TOP/scripts/mkinitramfs.sh" x86_64 "$BUILD/initramfs/x86_64.cpio.gz" &&
"$TOP/scripts/mkinitramfs.sh" x86_64 "$BUILD/initramfs/x86_64-selftests.cpio.gz" --selftests &&
"$TOP/scripts/mkinitramfs.sh" arm64 "$BUILD/initramfs/arm64.cpio.gz" ||
	fail_build "building an initramfs failed"

rm -rf "$RESULTS"
mkdir -p "$RESULTS"
X86_NPT=qemu64,+svm,+npt
X86_SHADOW=qemu64,+svm
ARM64=max,pauth-impdef=on

boot x86-npt        x86_64 x86_64 $X86_NPT    kunit,kvm-smoke
boot x86-shadow     x86_64 x86_64 $X86_SHADOW kvm-smoke
boot arm64          arm64  arm64  $ARM64      kunit,kvm-smoke
boot x86-selftests  x86_64 x86_64-selftests $X86_NPT kvm-selftests \
	--baseline kvm-selftests="$TOP/boot-tests/kvm-selftests.baseline" --timeout 3600

say "make check took $(( $(date +%s) - start ))s"
summarize
