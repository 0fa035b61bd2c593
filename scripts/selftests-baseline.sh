#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Record the verdicts of KVM's selftests on the unmodified tree -- a worktree
# of the pristine commit, with its own kernel (our x86_64 config without the
# feature's options) and selftests -- as the baseline `make check` compares
# every run against.  Re-record for a new kernel, QEMU or Bochs version
# only, and say why in the commit.
#   qemu-svm  (default) every selftest on QEMU's SVM: about half an hour;
#             boot-tests/kvm-selftests.baseline
#   bochs-vmx the VMX and nested ones ($VMX_SELFTESTS) on Bochs's VMX:
#             boot-tests/kvm-selftests-vmx.baseline
# usage: selftests-baseline.sh [qemu-svm | bochs-vmx]
set -euo pipefail
. "$(dirname "$0")/lib.sh"

model=${1:-qemu-svm}
case "$model" in
qemu-svm)
	only=
	out=$TOP/boot-tests/kvm-selftests.baseline
	"$TOP/scripts/build-qemu.sh"
	where="x86_64 guest on $("$OUTER_QEMU" --version | head -n 1),"
	how="-cpu qemu64,+svm,+npt -smp 2 (single-threaded TCG)"
	emulator=(qemu64,+svm,+npt --tcg-thread single)
	;;
bochs-vmx)
	only="=$VMX_SELFTESTS"
	out=$TOP/boot-tests/kvm-selftests-vmx.baseline
	where="the tests matching $VMX_SELFTESTS on Bochs $(dpkg-query -W -f '${Version}' bochs),"
	how="cpu model=$BOCHS_VMX, one CPU"
	emulator=("$BOCHS_VMX" --emulator bochs)
	;;
*) die "usage: selftests-baseline.sh [qemu-svm | bochs-vmx]" ;;
esac

"$TOP/scripts/prepare.sh"
pristine=$BUILD/linux-pristine
if [ ! -d "$pristine/.git" ] && [ ! -f "$pristine/.git" ]; then
	say "checking out the pristine tree in $pristine"
	git -C "$TREE" worktree prune
	git -C "$TREE" worktree add -q --detach "$pristine" pristine
fi
export TREE=$pristine
"$TOP/scripts/build-kernel.sh" x86_64-pristine
"$TOP/scripts/build-selftests.sh" x86_64-pristine
initrd=x86_64-pristine-selftests${only:+-$model}
"$TOP/scripts/mkinitramfs.sh" x86_64-pristine "$BUILD/initramfs/$initrd.cpio.gz" "--selftests$only"
mkdir -p "$RESULTS"
name=x86-selftests-baseline-$model
boot "$name" x86_64-pristine "$initrd" "${emulator[0]}" kvm-selftests "${emulator[@]:1}" \
	--timeout 3600 --test-timeout 3000
ktap=$RESULTS/$name.kvm-selftests.ktap
[ -f "$ktap" ] || die "the selftests boot produced no results"
{
	echo "# KVM selftests verdicts on the unmodified tree: linux-source-6.1"
	echo "# $(make -s -C "$TREE" kernelversion), $where"
	echo "# $how, defconfigs/x86_64.config, 90 s per test (180 s for dirty_log_perf_test and demand_paging_test)."
	echo "# pass = exit 0, skip = exit 4, fail = anything else; \"fail # timeout\": killed at the"
	echo "# timeout.  A failing test gives no verdict on this CPU (make check runs those for"
	echo "# $SELFTEST_NO_VERDICT_SECS s only, with isolation on)."
	sed -nE 's/^ok [0-9]+ (\S+) # SKIP.*/\1 skip/p; t
		 s/^ok [0-9]+ (\S+).*/\1 pass/p; t
		 s/^not ok [0-9]+ (\S+) # timeout.*/\1 fail # timeout/p; t
		 s/^not ok [0-9]+ (\S+).*/\1 fail/p' "$ktap"
} >"$out"
say "baseline: $(grep -c ' pass$' "$out") pass, $(grep -c ' skip$' "$out") skip, $(grep -cE ' fail( #.*)?$' "$out") fail -> $out"
