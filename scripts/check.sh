#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `make check`: build both architectures (x86_64 with the option on and
# off), the KVM selftests and the initramfs images, check the patches, boot
# every test configuration in QEMU, and end with one line:
# "N passed, N failed, N skipped".
set -euo pipefail
. "$(dirname "$0")/lib.sh"

start=$(date +%s)
fail_build() { echo "error: $*" >&2; echo "0 passed, 1 failed, 0 skipped"; exit 1; }

"$TOP/scripts/deps.sh" || fail_build "installing dependencies failed"
"$TOP/scripts/prepare.sh" || fail_build "preparing the kernel tree failed"
for k in x86_64 x86_64-noasi arm64; do
	"$TOP/scripts/build-kernel.sh" $k || fail_build "building the $k kernel failed"
done
"$TOP/scripts/build-selftests.sh" || fail_build "building the KVM selftests failed"
for k in x86_64 x86_64-noasi arm64; do
	"$TOP/scripts/mkinitramfs.sh" $k "$BUILD/initramfs/$k.cpio.gz" ||
		fail_build "building the $k initramfs failed"
done
"$TOP/scripts/mkinitramfs.sh" x86_64 "$BUILD/initramfs/x86_64-selftests.cpio.gz" --selftests ||
	fail_build "building the selftests initramfs failed"

rm -rf "$RESULTS"
mkdir -p "$RESULTS"
say "checkpatch --strict on the series"
"$TOP/scripts/checkpatch.sh" || true
BOOTS+=("$RESULTS/checkpatch.ktap")

NPT=qemu64,+svm,+npt
SHADOW=qemu64,+svm
ARM64=max,pauth-impdef=on

# Option built in, isolation not enabled; then built out; then arm64.
boot x86-npt      x86_64       x86_64       $NPT    kunit,kvm-smoke
boot x86-shadow   x86_64       x86_64       $SHADOW kvm-smoke
boot x86-noasi    x86_64-noasi x86_64-noasi $NPT    kunit,kvm-smoke
boot arm64        arm64        arm64        $ARM64  kunit,kvm-smoke

# KVM's own selftests against the baseline recorded on the unmodified tree.
boot x86-selftests x86_64 x86_64-selftests $NPT kvm-selftests \
	--baseline kvm-selftests="$TOP/boot-tests/kvm-selftests.baseline" \
	--timeout 3600 --test-timeout 3000

say "make check took $(( $(date +%s) - start ))s"
summarize
