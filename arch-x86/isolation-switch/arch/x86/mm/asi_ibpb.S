/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Address space isolation (ASI): the IBPB the kernel runs after every
 * VM-exit (X86_FEATURE_IBPB_ON_VMEXIT: spec_rstack_overflow=ibpb-vmexit,
 * and VMSCAPE with it), deferred while the CPU is isolated when
 * asi_ibpb=defer asks for it (asi_ibpb_setup()).
 *
 * Isolated, the guest's branch predictions can steer only code running on
 * the restricted table, but into anything that table maps, not only the
 * VM's own data: hence asked for, never the default.  The barrier is
 * needed before code runs on full mappings, so the next move there runs
 * it (asi_leave(), an NMI, #MC or #DB, a page fault:
 * asi_ibpb_before_host()), once for all the VM-exits handled inside since.
 */
#include <linux/linkage.h>
#include <asm/nospec-branch.h>
#include <asm/percpu.h>

.pushsection .noinstr.text, "ax"

/*
 * Called where the VM-exit path would call entry_ibpb, and clobbers no more
 * than it: RAX, RCX, RDX and the flags.
 */
SYM_FUNC_START(asi_vmexit_ibpb)
	cmpb	$0, PER_CPU_VAR(asi_ibpb_deferring)
	jnz	1f
	jmp	entry_ibpb
1:
	/* Nothing runs down this path until the test above is resolved. */
	lfence
	movb	$1, PER_CPU_VAR(asi_ibpb_pending)
	incq	PER_CPU_VAR(asi_ibpb_deferred)
	RET
SYM_FUNC_END(asi_vmexit_ibpb)

.popsection
