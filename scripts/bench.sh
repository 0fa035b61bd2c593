#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `make bench`: for each CPU model, boot the x86_64 kernel twice with the
# same settings, isolation off then on, run kvm-bench in each, and print
# the table that pairs them (also in build/results/bench-<model>.json, and
# all tables in bench.txt for the cover letter of `make series`).
#
# The models: QEMU's TCG (AMD SVM without NRIP save), and Bochs's Intel
# VMX and AMD SVM with NRIP save, where CPUID and MSR exits can stay
# inside isolation; and Bochs's VMX and QEMU's EPYC on one core of two
# sibling threads, where the run with isolation on holds siblings out of
# guest mode.  Bochs
# runs shorter repetitions: it is slower.  On Bochs's VMX, whose CPU has
# L1TF, a third boot runs isolation off with KVM flushing L1D on every
# VM-entry (vmentry_l1d_flush=always), the alternative to isolation, and
# a second table compares it with isolation on, which flushes after trips.
# QEMU's EPYC runs with an IBPB after every VM-exit
# (spec_rstack_overflow=ibpb-vmexit), which isolation defers to the next
# move out (asi_ibpb=defer): its table counts IBPBs per 1000 VM-exits, off
# and on.
#
# usage: bench.sh [model...]      model: qemu-svm bochs-vmx bochs-svm-nrip bochs-vmx-smt qemu-epyc-smt (all)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# model: emulator, CPU, what it is, kvm-bench's seconds and repetitions
ALL_MODELS=(qemu-svm bochs-vmx bochs-svm-nrip bochs-vmx-smt qemu-epyc-smt)
declare -A EMULATOR=([qemu-svm]=qemu [bochs-vmx]=bochs [bochs-svm-nrip]=bochs [bochs-vmx-smt]=bochs
		     [qemu-epyc-smt]=qemu)
declare -A CPU=([qemu-svm]=qemu64,+svm,+npt [bochs-vmx]=$BOCHS_VMX
		[bochs-svm-nrip]=$BOCHS_SVM_NRIP [bochs-vmx-smt]=$BOCHS_VMX
		[qemu-epyc-smt]=EPYC-IBPB,+svm,+npt)
declare -A WHAT=([qemu-svm]="QEMU TCG, -cpu qemu64,+svm,+npt: AMD SVM with NPT, no NRIP save, 2 vCPUs"
		 [bochs-vmx]="Bochs, $BOCHS_VMX: Intel VMX with EPT and VPID, 1 vCPU"
		 [bochs-svm-nrip]="Bochs, $BOCHS_SVM_NRIP: AMD SVM with NPT and NRIP save, 1 vCPU"
		 [bochs-vmx-smt]="Bochs, $BOCHS_VMX: Intel VMX, one core of 2 sibling threads"
		 [qemu-epyc-smt]="QEMU TCG, -cpu EPYC-IBPB,+svm,+npt (topoext), spec_rstack_overflow=ibpb-vmexit asi_ibpb=defer: AMD SVM, one core of 2 sibling threads")
declare -A BENCH=([qemu-svm]=1,3 [bochs-vmx]=0.5,3 [bochs-svm-nrip]=0.5,3 [bochs-vmx-smt]=0.5,3
		  [qemu-epyc-smt]=1,3)
declare -A TOPOLOGY=([bochs-vmx-smt]="--threads 2" [qemu-epyc-smt]="--smp 1 --threads 2")
# Kernel parameters of a model's every run.
declare -A APPEND=([qemu-epyc-smt]="spec_rstack_overflow=ibpb-vmexit asi_ibpb=defer")
# Isolation off with an L1D flush on every VM-entry: where the CPU has L1TF.
declare -A ALWAYS=([bochs-vmx]=1)

models=("$@")
[ ${#models[@]} -gt 0 ] || models=("${ALL_MODELS[@]}")
for m in "${models[@]}"; do
	[ -n "${CPU[$m]:-}" ] || die "no model '$m' (${ALL_MODELS[*]})"
done

start=$(date +%s)
build_x86_64
rc=0
# bench.txt and the tree it measured go into the cover letter of `make series`.
rm -f "$RESULTS/bench.txt" "$RESULTS/bench.tree"
for m in "${models[@]}"; do
	runs=(off on)
	against=()
	if [ -n "${ALWAYS[$m]:-}" ]; then
		runs+=(always)
		against=(--against-always "$RESULTS/x86-bench-$m-always.kvm-bench.ktap")
	fi
	for run in "${runs[@]}"; do
		case $run in
		on) extra=kvm.address_space_isolation=1 ;;
		always) extra=kvm_intel.vmentry_l1d_flush=always ;;
		*) extra= ;;
		esac
		# shellcheck disable=SC2086
		boot "x86-bench-$m-$run" x86_64 x86_64 "${CPU[$m]}" kvm-bench \
			--emulator "${EMULATOR[$m]}" --timeout 900 ${TOPOLOGY[$m]:-} \
			--append "pti=on kvm.page_fault_stack=0 asi.bench=${BENCH[$m]} ${APPEND[$m]:-} $extra"
	done
	say "$m: exits per second, isolation off and on (median of the pairs, spread), per 1000 VM-exits"
	{
		echo "${WHAT[$m]}"
		"$TOP/boot-tests/bench.py" "$RESULTS/x86-bench-$m-off.kvm-bench.ktap" \
			"$RESULTS/x86-bench-$m-on.kvm-bench.ktap" "$RESULTS/bench-$m.json" \
			"${against[@]}" || rc=1
		echo
	} | tee -a "$RESULTS/bench.txt"
done
[ "$rc" = 0 ] && [ ${#models[@]} = ${#ALL_MODELS[@]} ] && git -C "$TREE" rev-parse asi >"$RESULTS/bench.tree"
summarize || rc=1
say "make bench took $(( $(date +%s) - start ))s"
exit $rc
