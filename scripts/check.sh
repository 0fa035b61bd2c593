#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `make check`: build both architectures (x86_64 with the option on and
# off), the KVM selftests and the initramfs images, check the series (what
# `make check-series` does, and KVM on arm64), boot every test
# configuration in QEMU or Bochs, and end with one line: "N passed, N failed,
# N skipped".
set -euo pipefail
. "$(dirname "$0")/lib.sh"

start=$(date +%s)
fail_build() { echo "error: $*" >&2; echo "0 passed, 1 failed, 0 skipped"; exit 1; }

"$TOP/scripts/deps.sh" || fail_build "installing dependencies failed"
"$TOP/scripts/prepare.sh" || fail_build "preparing the kernel tree failed"
"$TOP/scripts/build-qemu.sh" || fail_build "building the outer QEMU failed"
rm -rf "$RESULTS"
mkdir -p "$RESULTS"

# The build after each patch (what `make check-series` does last) comes
# first: it steps the kernel tree from the first patch to the last and
# builds each step in build/x86_64, so the last step is the x86_64 kernel
# and the tree is built once, not once for the kernel and again going back
# to the first patch.
series_bisect_check
"$TOP/scripts/build-kernel.sh" x86_64 || fail_build "building the x86_64 kernel failed"

# The debug kernel (lockdep, KASAN, kmemleak) builds in the background,
# niced, on the CPU time that the steps below leave idle (single-threaded
# checks and emulators); it boots last.  From here on the tree stays on the
# series' last commit.
debug_log=$BUILD/x86_64-debug.log
say "building the x86_64-debug kernel and initramfs in the background (log: $debug_log)"
( nice -n 19 "$TOP/scripts/build-kernel.sh" x86_64-debug &&
  nice -n 19 "$TOP/scripts/mkinitramfs.sh" x86_64-debug "$BUILD/initramfs/x86_64-debug.cpio.gz" ) \
	>"$debug_log" 2>&1 &
debug_build=$!

for k in x86_64-noasi arm64; do
	"$TOP/scripts/build-kernel.sh" $k || fail_build "building the $k kernel failed"
done
"$TOP/scripts/build-selftests.sh" || fail_build "building the KVM selftests failed"
for k in x86_64 x86_64-noasi arm64; do
	"$TOP/scripts/mkinitramfs.sh" $k "$BUILD/initramfs/$k.cpio.gz" ||
		fail_build "building the $k initramfs failed"
done
"$TOP/scripts/mkinitramfs.sh" x86_64 "$BUILD/initramfs/x86_64-selftests.cpio.gz" --selftests ||
	fail_build "building the selftests initramfs failed"
"$TOP/scripts/mkinitramfs.sh" x86_64 "$BUILD/initramfs/x86_64-selftests-vmx.cpio.gz" \
	"--selftests=$VMX_SELFTESTS" || fail_build "building the VMX selftests initramfs failed"
"$TOP/scripts/mkinitramfs.sh" x86_64 "$BUILD/initramfs/x86_64-vmm.cpio.gz" --vmm ||
	fail_build "building the real-VMM initramfs failed"

# The rest of what `make check-series` checks, and KVM on arm64 as `make
# cross-check` does it (the other architectures' compilers and cold builds
# would add about 12 minutes on a fresh machine; README, "Sending the
# series").
say "the series: applies exactly, checkpatch --strict, documentation, kernel-doc, sparse and W=1"
series_static_checks
"$TOP/scripts/cross-check.sh" arm64 || true
BOOTS+=("$RESULTS/cross-check.ktap")

NPT=qemu64,+svm,+npt
SHADOW=qemu64,+svm
ARM64=max,pauth-impdef=on
# Console lines that start stack traces the tests cause on purpose.
NMI_TRACES=(--allow-trace "NMI backtrace for cpu" --allow-trace "sysrq: Show backtrace")

# The option built in: isolation off and on, with PTI on and off, on nested
# paging and shadow paging; kvm-isolation checks the counters either way.
# Isolation without PTI runs on an AMD EPYC model, where PTI is off by
# default: there every kernel mapping but the cpu_entry_area's must be
# non-global, and qemu64 with pti=off and isolation off is the control.
# EPYC has no IBPB, so the kernel warns about SRSO microcode, on one line
# with no stack trace.  EPYC-IBPB has it with our QEMU (qemu/7.2/0002-...):
# on shadow paging with VMSCAPE's IBPB before a return to user mode after a
# VM-exit (vmscape=force: the kernel assumes a guest is not affected), and
# on the SMT boots below with an IBPB after every VM-exit, which isolation
# defers where asked (asi_ibpb=defer).  The KUnit suites run in the first
# boot, which must run the isolation suite with all its cases.
EPYC=EPYC,+svm,+npt
EPYC_IBPB=EPYC-IBPB,+svm,+npt
EPYC_IBPB_SHADOW=EPYC-IBPB,+svm,-npt
SRSO_NOTICE=(--allow-trace "Speculative Return Stack Overflow: WARNING: See ")
boot x86-npt-ption-isooff     x86_64 x86_64 $NPT    kunit,kvm-smoke,kvm-isolation \
	--append "pti=on asi.kunit=asi:22"
# A short kvm-bench: no isolation fault in any exit class but fresh memory.
boot x86-npt-ption-isoon      x86_64 x86_64 $NPT    kvm-smoke,kvm-isolation,kvm-secrets,kvm-trace,kvm-debugfs,kvm-bench,kvm-irq-once \
	--append "pti=on $ISO asi.bench=0.2,1"
boot x86-npt-ptioff-isooff    x86_64 x86_64 $NPT    kvm-smoke,kvm-isolation --append "pti=off"
# Isolation asked for only when kvm.ko loads, not at boot: refused, saying
# what to pass (task structs and SRCU data are laid out for it at boot).
boot x86-npt-isoload-refused  x86_64 x86_64 $NPT    kvm-asked-at-load,kvm-smoke \
	--append "pti=on asi.kvm_params=address_space_isolation=1"
# The layer's own parameter: asi=on at boot lays the kernel out for
# isolation without using it, and KVM may then ask for it when it loads.
boot x86-npt-asion-isoload    x86_64 x86_64 $NPT    kvm-smoke,kvm-isolation \
	--append "pti=off asi=on asi.kvm_params=address_space_isolation=1"
boot x86-epyc-npt-ptioff-isoon x86_64 x86_64 $EPYC  kvm-smoke,kvm-isolation,kvm-secrets,kvm-debugfs \
	--append "pti=off $ISO" "${SRSO_NOTICE[@]}"
boot x86-shadow-ption-isooff  x86_64 x86_64 $SHADOW kvm-smoke,kvm-isolation --append "pti=on"
boot x86-shadow-ption-isoon   x86_64 x86_64 $SHADOW kvm-smoke,kvm-isolation,kvm-secrets --append "pti=on $ISO"
boot x86-shadow-ptioff-isooff x86_64 x86_64 $SHADOW kvm-smoke,kvm-isolation --append "pti=off"
boot x86-epyc-shadow-ptioff-isoon x86_64 x86_64 $EPYC_IBPB_SHADOW kvm-smoke,kvm-isolation,kvm-secrets \
	--append "pti=off $ISO vmscape=force"

# A minute of exit-heavy vCPUs (more than CPUs), VM churn, thread
# replacement and NMIs, isolated, with one QEMU thread per vCPU so that
# they really run in parallel.  On shadow paging: with nested paging,
# QEMU 7.2's emulated SVM corrupts guests under vCPU and VM churn,
# isolation or not (README, "Known limits").
boot x86-stress           x86_64 x86_64 $SHADOW kvm-stress --append "pti=on $ISO" \
	"${NMI_TRACES[@]}" --tcg-thread multi --timeout 600
# kvm-isolation with both CPUs really running at once: its I/O bus
# replacement races a vCPU on the other CPU only then.
boot x86-mttcg-isoon      x86_64 x86_64 $SHADOW kvm-isolation --append "pti=on $ISO" \
	--tcg-thread multi

# The outer emulator itself: every x86_64 QEMU boot runs on the QEMU
# build-qemu.sh built, where an interrupt injected at VMRUN is delivered
# once (x86-npt-ption-isoon's kvm-irq-once).  The control: Debian's own
# QEMU 7.2 must show kvm-irq-once a second delivery, or that test could
# not fail.
boot x86-debian-qemu-control  x86_64 x86_64 $NPT    kvm-irq-once --append "pti=on asi.irq_once=300,twice" \
	--qemu /usr/bin/qemu-system-x86_64

# A real VMM: Debian's QEMU with -accel kvm boots a Linux guest to a marker,
# five times with the in-kernel irqchip and five with the split one,
# isolation on (no isolation fault allowed), and as the control three
# times each with isolation off.  Every guest must reach its marker on its
# first boot, within 60 s (a guest boot takes 5-15 s).
boot x86-vmm-isoon        x86_64 x86_64-vmm $NPT kvm-vmm --append "pti=on $ISO asi.vmm=5,60" \
	--timeout 1800
boot x86-vmm-isooff       x86_64 x86_64-vmm $NPT kvm-vmm --append "pti=on asi.vmm=3,60" \
	--timeout 1800

# Bochs: Intel VMX (EPT, VPID) and AMD SVM with NRIP save, which QEMU's
# TCG lacks; one vCPU.  CPUID and MSR exits must stay inside on both.
# Bochs 2.7's SVM resets the emulated host on a guest triple fault.
VMX=$BOCHS_VMX
SVM_NRIP=$BOCHS_SVM_NRIP
boot x86-bochs-vmx-isoon  x86_64 x86_64 $VMX kvm-smoke,kvm-isolation,kvm-secrets,kvm-trace,kvm-debugfs,kvm-bench \
	--emulator bochs --append "pti=on $ISO asi.bench=0.2,1"
boot x86-bochs-vmx-isooff x86_64 x86_64 $VMX kvm-smoke,kvm-isolation --emulator bochs --append "pti=on"
# Without PTI, on a CPU with PCIDs: restricted PCIDs next to the kernel's,
# and a non-global kernel with no PTI to make it so.
boot x86-bochs-vmx-ptioff-isoon x86_64 x86_64 $VMX kvm-smoke,kvm-isolation,kvm-secrets \
	--emulator bochs --append "pti=off $ISO"
# AMD CPUs ask for no flush after a trip; asi_flush= makes this one flush
# L1D and run VERW, so that SVM's VM-entry performs them.
boot x86-bochs-svm-isoon  x86_64 x86_64 $SVM_NRIP kvm-smoke,kvm-isolation,kvm-secrets,kvm-trace,kvm-debugfs \
	--emulator bochs --append "pti=on $ISO asi.no_triple_fault asi_flush=l1d,verw"
# SMT: the two threads of one core (Bochs count=1:1:2).  kvm-smt runs a
# vCPU that leaves isolation thousands of times beside one that runs guest
# code: the kernel's checker must count 0 violations of the sibling rule
# while leaves held or kicked the sibling; the control, with the sibling
# handling off (asi_smt=off), must count violations.
boot x86-bochs-vmx-smt    x86_64 x86_64 $VMX kvm-smt,kvm-smoke --emulator bochs --threads 2 \
	--append "pti=on $ISO"
boot x86-bochs-vmx-smt-control x86_64 x86_64 $VMX kvm-smt --emulator bochs --threads 2 \
	--append "pti=on $ISO asi_smt=off"
# The same on SVM: QEMU's EPYC model with topoext, which our QEMU offers
# to TCG (qemu/upstream/0002-...), one core of two threads; the flushes
# forced as above.  Bochs's AMD models show no siblings.  With IBPB and
# SMT, the kernel can run an IBPB after every VM-exit (SRSO's ibpb-vmexit:
# Zen 1 without SMT is not affected), which kvm-isolation checks is
# deferred to the next move out with asi_ibpb=defer, and not without it
# (the SVME guest's exits, not isolated).
boot x86-epyc-smt         x86_64 x86_64 $EPYC_IBPB kvm-smt,kvm-smoke,kvm-isolation --smp 1 --threads 2 \
	--append "pti=on $ISO asi_flush=l1d,verw spec_rstack_overflow=ibpb-vmexit asi_ibpb=defer"
boot x86-epyc-smt-control x86_64 x86_64 $EPYC_IBPB kvm-smt --smp 1 --threads 2 \
	--append "pti=on $ISO asi_smt=off asi_flush=l1d,verw spec_rstack_overflow=ibpb-vmexit"
# A short VMX stress on two CPUs: 3 vCPUs, VM churn, vCPU threads
# replaced, NMIs to both CPUs (taken in guest mode: VMX's NMI exits).
boot x86-bochs-vmx-stress x86_64 x86_64 $VMX kvm-stress --emulator bochs --smp 2 \
	--append "pti=on $ISO asi.stress=20,3,1,1,1" "${NMI_TRACES[@]}" --timeout 900

# The option built out, and arm64.
boot x86-noasi            x86_64-noasi x86_64-noasi $NPT kunit,kvm-smoke
boot arm64                arm64  arm64  $ARM64  kunit,kvm-smoke

# KVM's own selftests against the baseline recorded on the unmodified tree,
# isolation off and on.  An isolation fault fails this boot like any other
# (page_fault_stack=0 keeps the log short if one comes back).
# max_guest_memory_test fills the guest's memory until the OOM killer stops
# it, which prints a stack trace.
# Those the baseline records as failing give no verdict: they run for
# $SELFTEST_NO_VERDICT_SECS s with isolation on, for what they exercise,
# and not at all with it off, where the series' hooks are idle.
SELFTESTS_BASELINE=$TOP/boot-tests/kvm-selftests.baseline
SELFTEST_LIMITS=$(selftest_limits "$SELFTESTS_BASELINE")
SELFTEST_SKIPS=$(selftest_limits "$SELFTESTS_BASELINE" 0)
SELFTESTS=(--baseline kvm-selftests="$SELFTESTS_BASELINE"
	   --allow-trace "max_guest_memor invoked oom-killer"
	   --timeout 3600 --test-timeout 3000)
# Side by side: each emulator is single-threaded, so each gets a CPU.
boot_bg x86-selftests-isooff x86_64 x86_64-selftests $NPT kvm-selftests --append "pti=on $SELFTEST_SKIPS" \
	"${SELFTESTS[@]}"
boot_bg x86-selftests-isoon  x86_64 x86_64-selftests $NPT kvm-selftests \
	--append "pti=on $ISO kvm.page_fault_stack=0 $SELFTEST_LIMITS" "${SELFTESTS[@]}"
boots_wait

# The VMX and nested selftests ($VMX_SELFTESTS), which QEMU's TCG cannot
# run, on Bochs's VMX against a baseline recorded there on the unmodified
# tree (make selftests-baseline MODEL=bochs-vmx), isolation off and on.
VMX_SELFTESTS_ARGS=(--emulator bochs --timeout 900 --test-timeout 800
		    --baseline kvm-selftests="$TOP/boot-tests/kvm-selftests-vmx.baseline")
# Side by side, as above.
boot_bg x86-bochs-vmx-selftests-isooff x86_64 x86_64-selftests-vmx $VMX kvm-selftests \
	--append "pti=on" "${VMX_SELFTESTS_ARGS[@]}"
boot_bg x86-bochs-vmx-selftests-isoon  x86_64 x86_64-selftests-vmx $VMX kvm-selftests \
	--append "pti=on $ISO kvm.page_fault_stack=0" "${VMX_SELFTESTS_ARGS[@]}"
boots_wait

# Lockdep, KASAN and kmemleak watching the isolated path: the KUnit suite,
# kvm-isolation and a short stress (without NMIs: on this emulated CPU
# too few land while isolated to count on one; x86-stress covers them),
# isolation on, then what kmemleak found.
say "waiting for the x86_64-debug kernel (log: $debug_log)"
if wait "$debug_build"; then
	# Lockdep makes isolation run degraded (it maps all of the kernel's
	# data; kvm-isolation checks that the kernel says so and is tainted),
	# and still every VM is audited as it goes, with no finding: lockdep's
	# ranges end on page boundaries, and KASAN's metadata after vCPUs,
	# emulator contexts and task structs is on pages of its own.
	boot x86-debug-isoon  x86_64-debug x86_64-debug $NPT kunit,kvm-isolation,kvm-trace,kvm-stress,kmemleak \
		--append "pti=on $ISO asi.kunit=asi:22 asi.stress=10,3,0,1,1" \
		--timeout 1500
else
	tail -n 20 "$debug_log" >&2
	BOOTS+=("$RESULTS/x86-debug-isoon.ktap")
	printf 'KTAP version 1\n1..1\nnot ok 1 build # building the x86_64-debug kernel failed: %s\n' \
		"$debug_log" >"$RESULTS/x86-debug-isoon.ktap"
fi

say "make check took $(( $(date +%s) - start ))s"
summarize
