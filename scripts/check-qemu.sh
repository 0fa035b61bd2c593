#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `make check-qemu [QEMU=binary]`: is an outer QEMU fit to run make check's
# x86_64 boots?  Boots the x86_64 kernel on it (default: the one
# build-qemu.sh builds) with kvm-irq-once, which fails when an interrupt
# injected at VMRUN is delivered twice; a few minutes once the kernel is
# built.  `make check-qemu QEMU=/usr/bin/qemu-system-x86_64` fails on
# Debian's 7.2.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

qemu=${1:-$OUTER_QEMU}
build_x86_64
[ -x "$qemu" ] || die "$qemu is not an executable"
boot x86-qemu-irq-once x86_64 x86_64 qemu64,+svm,+npt kvm-irq-once --append "pti=on" \
	--qemu "$qemu"
summarize
