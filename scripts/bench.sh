#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `make bench`: for each CPU model, boot the x86_64 kernel twice with the
# same settings, isolation off then on, run kvm-bench in each, and print
# the table that pairs them (also in build/results/bench-<model>.json, and
# all tables in bench.txt for the cover letter of `make series`).
#
# The models: QEMU's TCG (AMD SVM without NRIP save), and Bochs's Intel
# VMX and AMD SVM with NRIP save, where CPUID and MSR exits can stay
# inside isolation.  Bochs runs shorter repetitions: it is slower.
#
# usage: bench.sh [model...]      model: qemu-svm bochs-vmx bochs-svm-nrip (all)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# model: emulator, CPU, what it is, kvm-bench's seconds and repetitions
declare -A EMULATOR=([qemu-svm]=qemu [bochs-vmx]=bochs [bochs-svm-nrip]=bochs)
declare -A CPU=([qemu-svm]=qemu64,+svm,+npt [bochs-vmx]=$BOCHS_VMX
		[bochs-svm-nrip]=$BOCHS_SVM_NRIP)
declare -A WHAT=([qemu-svm]="QEMU TCG, -cpu qemu64,+svm,+npt: AMD SVM with NPT, no NRIP save, 2 vCPUs"
		 [bochs-vmx]="Bochs, $BOCHS_VMX: Intel VMX with EPT and VPID, 1 vCPU"
		 [bochs-svm-nrip]="Bochs, $BOCHS_SVM_NRIP: AMD SVM with NPT and NRIP save, 1 vCPU")
declare -A BENCH=([qemu-svm]=1,3 [bochs-vmx]=0.5,3 [bochs-svm-nrip]=0.5,3)

models=("$@")
[ ${#models[@]} -gt 0 ] || models=(qemu-svm bochs-vmx bochs-svm-nrip)
for m in "${models[@]}"; do
	[ -n "${CPU[$m]:-}" ] || die "no model '$m' (qemu-svm bochs-vmx bochs-svm-nrip)"
done

start=$(date +%s)
build_x86_64
rc=0
# bench.txt and the tree it measured go into the cover letter of `make series`.
rm -f "$RESULTS/bench.txt" "$RESULTS/bench.tree"
for m in "${models[@]}"; do
	for iso in off on; do
		extra=
		[ $iso = on ] && extra=kvm.address_space_isolation=1
		boot "x86-bench-$m-$iso" x86_64 x86_64 "${CPU[$m]}" kvm-bench \
			--emulator "${EMULATOR[$m]}" --timeout 900 \
			--append "pti=on kvm.page_fault_stack=0 asi.bench=${BENCH[$m]} $extra"
	done
	say "$m: exits per second, isolation off and on (median of the pairs, spread), per 1000 VM-exits"
	{
		echo "${WHAT[$m]}"
		"$TOP/boot-tests/bench.py" "$RESULTS/x86-bench-$m-off.kvm-bench.ktap" \
			"$RESULTS/x86-bench-$m-on.kvm-bench.ktap" "$RESULTS/bench-$m.json" || rc=1
		echo
	} | tee -a "$RESULTS/bench.txt"
done
[ "$rc" = 0 ] && [ ${#models[@]} = 3 ] && git -C "$TREE" rev-parse asi >"$RESULTS/bench.tree"
summarize || rc=1
say "make bench took $(( $(date +%s) - start ))s"
exit $rc
