#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Record the KVM selftests verdicts of the current tree as the baseline that
# `make check` compares every run against.  The committed baseline was
# recorded on the unmodified tree (our series empty); re-record only for a
# new kernel or QEMU version, and say why in the commit.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

"$TOP/scripts/mkinitramfs.sh" x86_64 "$BUILD/initramfs/x86_64-selftests.cpio.gz" --selftests
mkdir -p "$RESULTS"
boot x86-selftests-baseline x86_64 x86_64-selftests qemu64,+svm,+npt kvm-selftests --timeout 3600
ktap=$RESULTS/x86-selftests-baseline.kvm-selftests.ktap
[ -f "$ktap" ] || die "the selftests boot produced no results"
out=$TOP/boot-tests/kvm-selftests.baseline
{
	echo "# KVM selftests verdicts: linux-source-6.1 $(make -s -C "$TREE" kernelversion),"
	echo "# $(git -C "$TREE" rev-list --count pristine..HEAD) commits of ours applied, x86_64 guest on"
	echo "# $(qemu-system-x86_64 --version | head -n 1), -cpu qemu64,+svm,+npt -smp 2."
	echo "# pass = exit 0, skip = exit 4, fail = anything else or the timeout."
	sed -nE 's/^ok [0-9]+ (\S+) # SKIP.*/\1 skip/p; t; s/^ok [0-9]+ (\S+).*/\1 pass/p; s/^not ok [0-9]+ (\S+).*/\1 fail/p' "$ktap"
} >"$out"
say "baseline: $(grep -c ' pass$' "$out") pass, $(grep -c ' skip$' "$out") skip, $(grep -c ' fail$' "$out") fail -> $out"
