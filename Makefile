# SPDX-License-Identifier: GPL-2.0
# KVM address space isolation: one entry point for building and testing.
#
#   make                 install what is missing, prepare the tree, build the
#                        x86_64 kernel, boot it in QEMU and run the smoke test
#   make check           build both architectures and run every test
#   make check-qemu      is an outer QEMU fit for make check [QEMU=binary]
#   make bench           what isolation costs per exit class (off against on),
#                        on QEMU SVM, Bochs VMX and Bochs SVM+NRIP, two SMT
#                        cores (Bochs VMX, QEMU EPYC); on Bochs VMX also
#                        against flushing L1D on every VM-entry [MODELS=...]
#   make series          the series as git format-patch output in build/series/
#   make check-series    checkpatch, sparse, W=1, kernel-doc, a build after each patch
#   make cross-check     KVM still builds on arm64, riscv64, s390x, powerpc64le, mips64
#   make help            everything else

SHELL := /bin/bash
S     := scripts
ARCH  ?= x86_64

.PHONY: all bench bench-hlt deps prepare kernel-x86_64 kernel-x86_64-noasi kernel-x86_64-debug kernel-arm64 selftests \
	check check-qemu menuconfig series check-series cross-check checkpatch sparse docs bisect-build \
	selftests-baseline clean distclean help

all:
	@$(S)/main.sh

check:
	@$(S)/check.sh

# Does this QEMU deliver an interrupt injected at VMRUN once (kvm-irq-once)?
check-qemu:
	@$(S)/check-qemu.sh $(QEMU)

# What isolation costs per exit class, isolation off against on in one run.
bench:
	@$(S)/bench.sh $(MODELS)

# kvm-bench's HLT class alone in RUNS boots with isolation on (50).
bench-hlt:
	@$(S)/bench-hlt.sh $(RUNS)

deps:
	@$(S)/deps.sh

prepare: deps
	@$(S)/prepare.sh

# Explicit rules: make skips pattern rules for .PHONY targets.
kernel-x86_64 kernel-x86_64-noasi kernel-x86_64-debug kernel-arm64: prepare
	@$(S)/build-kernel.sh $(@:kernel-%=%)

selftests: kernel-x86_64
	@$(S)/build-selftests.sh

# make menuconfig [ARCH=x86_64|arm64]: our configuration in the prepared tree.
menuconfig: prepare
	@$(S)/menuconfig.sh $(ARCH)

# The series as git format-patch output in build/series/, with a cover
# letter, ready to mail (PREFIX="PATCH v2" changes the subject prefix).
series: prepare
	@$(S)/series.sh

# Everything a reviewer's robot would run on the series (see the script).
check-series:
	@$(S)/check-series.sh

# KVM objects and a final link on every other architecture with KVM in 6.1
# (installs the cross compilers it needs).  ARCHS="riscv64 s390x" for some.
cross-check: prepare
	@$(S)/cross-check.sh $(ARCHS)

# checkpatch.pl --strict on every patch of the series.
checkpatch: prepare
	@$(S)/checkpatch.sh

# sparse and W=1 on the C files the series touches.
sparse: kernel-x86_64
	@$(S)/check-sparse.sh

# The documentation page and the kernel-doc of everything the series touches.
docs: prepare
	@$(S)/check-docs.sh

# The x86_64 kernel built after each patch of the series, in order.
bisect-build: prepare
	@$(S)/bisect-build.sh

# Re-record a KVM selftests baseline (see boot-tests/README.md first):
# MODEL=qemu-svm (every test, the default) or MODEL=bochs-vmx (the VMX ones).
selftests-baseline: selftests
	@$(S)/selftests-baseline.sh $(MODEL)

clean:
	rm -rf build/x86_64 build/x86_64-noasi build/x86_64-debug build/x86_64-w1 build/arm64 build/tests build/initramfs \
		build/selftests build/results build/series build/each build/cross

distclean:
	rm -rf build

help:
	@sed -n 's/^#   \{0,1\}//p' Makefile | sed -n '1,/^$$/p'
	@echo "Targets: all check check-qemu [QEMU=binary] bench bench-hlt deps prepare kernel-{x86_64,x86_64-noasi,x86_64-debug,arm64}"
	@echo "         selftests menuconfig [ARCH=x86_64|arm64] series check-series cross-check"
	@echo "         checkpatch sparse docs bisect-build selftests-baseline [MODEL=qemu-svm|bochs-vmx]"
	@echo "         clean distclean"
