// SPDX-License-Identifier: GPL-2.0
/*
 * Address space isolation (ASI): what a trip to full mappings leaves in the
 * core, and what clears it before untrusted code runs again.
 *
 * A trip -- a leave, an NMI, #MC or #DB taken while isolated, or a sibling
 * thread's move to host code (asi_smt.c) -- may bring any host data into the
 * core's L1D and CPU buffers.  The user calls asi_flush_trip() last before
 * it runs untrusted code (KVM: right before VM-entry, interrupts off, after
 * its last instrumentable call), and an NMI, #MC or #DB that returns to the
 * restricted table calls it on its way out; it performs what this CPU needs,
 * chosen once at set-up from the CPU's bugs:
 *
 *  - an L1D flush where L1TF applies: the IA32_FLUSH_CMD MSR, or where the
 *    microcode has none, reading a buffer twice the L1D's size, which every
 *    restricted table maps;
 *  - VERW where MDS, TAA, MMIO stale data, RFDS or TSA apply.
 *
 * asi_flush=l1d,verw (either or both) adds what the CPU's bugs do not ask
 * for; with mitigations=off they ask for nothing.  Each action performed
 * is counted by kind, and each trip taken.
 *
 * Predictors: with asi_ibpb=defer, where the kernel runs IBPB after every
 * VM-exit (X86_FEATURE_IBPB_ON_VMEXIT), an isolated CPU defers it to its
 * next move to full mappings (asi_ibpb.S), which runs it, with the RSB
 * fill entry_ibpb() adds where IBPB leaves the RSB alone, once for all the
 * VM-exits handled inside since.  The kernel's other mitigations on
 * VM-exit (retpolines or IBRS, its RSB fill, the IBPB before a return to
 * user mode) stay as they are.
 */

#define pr_fmt(fmt) "asi: " fmt

#include <linux/cpu.h>
#include <linux/cpufeature.h>
#include <linux/gfp.h>
#include <linux/init.h>
#include <linux/string.h>

#include <asm/asi.h>
#include <asm/msr.h>
#include <asm/nospec-branch.h>

#include "asi.h"

/* Twice a 32 KiB L1D: its replacement is not exactly LRU. */
#define ASI_L1D_FLUSH_ORDER	4
/* The L1D's line; L1_CACHE_BYTES may be larger, and would skip lines. */
#define ASI_L1D_LINE		64

/* The actions a trip asks for: ASI_TRIP_FLUSH_*, read while isolated. */
static unsigned int asi_trip_flush_mask __asi_data;
/* asi_flush=: actions added to what the CPU's bugs ask for. */
static unsigned int asi_trip_flush_forced __ro_after_init;
/* The software L1D flush's buffer, mapped in the core; NULL with the MSR. */
static void *asi_l1d_flush_buf __asi_data;
/* asi_ibpb=defer: defer the IBPB after VM-exit to the next move out. */
static bool asi_ibpb_defer_asked __ro_after_init;
/* ... and it is: asked, the kernel runs one, not degraded (asi_ibpb.S). */
bool asi_defer_ibpb __asi_data;

DEFINE_PER_CPU_ASI(bool, asi_ibpb_deferring);
DEFINE_PER_CPU_ASI(bool, asi_ibpb_pending);
DEFINE_PER_CPU_ASI(u64, asi_ibpb_deferred);
EXPORT_SYMBOL_NS_GPL(asi_vmexit_ibpb, ASI);

static int __init asi_flush_parse(char *arg)
{
	unsigned int mask = 0;
	char *opt;

	if (!arg)
		return -EINVAL;
	while ((opt = strsep(&arg, ",")) != NULL) {
		if (!strcmp(opt, "l1d"))
			mask |= ASI_TRIP_FLUSH_L1D;
		else if (!strcmp(opt, "verw"))
			mask |= ASI_TRIP_FLUSH_VERW;
		else
			return -EINVAL;
	}
	asi_trip_flush_forced = mask;
	return 0;
}
early_param("asi_flush", asi_flush_parse);

static int __init asi_ibpb_parse(char *arg)
{
	if (!arg || strcmp(arg, "defer"))
		return -EINVAL;
	asi_ibpb_defer_asked = true;
	return 0;
}
early_param("asi_ibpb", asi_ibpb_parse);

/*
 * What this CPU's bugs ask to clear after host code ran on the core;
 * nothing with mitigations=off, as for the kernel's own flushes.
 */
static unsigned int asi_trip_flushes_needed(void)
{
	unsigned int mask = 0;

	if (cpu_mitigations_off())
		return 0;
	if (boot_cpu_has_bug(X86_BUG_L1TF))
		mask |= ASI_TRIP_FLUSH_L1D;
	if (boot_cpu_has_bug(X86_BUG_MDS) || boot_cpu_has_bug(X86_BUG_TAA) ||
	    boot_cpu_has_bug(X86_BUG_MMIO_STALE_DATA) ||
	    boot_cpu_has_bug(X86_BUG_RFDS) || boot_cpu_has_bug(X86_BUG_TSA))
		mask |= ASI_TRIP_FLUSH_VERW;
	return mask;
}

/**
 * asi_flush_setup() - choose what a trip asks for, and map what it needs
 * @core: the core instance, mapped in every restricted table
 *
 * Return: 0, or -ENOMEM when the software L1D flush's buffer could not be
 * allocated or mapped.
 */
int asi_flush_setup(struct asi *core)
{
	unsigned int mask = asi_trip_flushes_needed() | asi_trip_flush_forced;
	int i, ret;

	if ((mask & ASI_TRIP_FLUSH_L1D) && !boot_cpu_has(X86_FEATURE_FLUSH_L1D)) {
		asi_l1d_flush_buf = (void *)__get_free_pages(GFP_KERNEL, ASI_L1D_FLUSH_ORDER);
		if (!asi_l1d_flush_buf)
			return -ENOMEM;
		/* Pages of their own content, that nothing merges into one. */
		for (i = 0; i < 1 << ASI_L1D_FLUSH_ORDER; i++)
			memset(asi_l1d_flush_buf + i * PAGE_SIZE, i + 1, PAGE_SIZE);
		/* On failure, the caller frees it once the core is gone. */
		ret = asi_map(core, asi_l1d_flush_buf, PAGE_SIZE << ASI_L1D_FLUSH_ORDER,
			      ASI_PTE, "core");
		if (ret)
			return ret;
	}
	WRITE_ONCE(asi_trip_flush_mask, mask);
	pr_info("after each trip out of isolation: %s%s%s%s\n",
		mask & ASI_TRIP_FLUSH_L1D ? "L1D flush " : "",
		!(mask & ASI_TRIP_FLUSH_L1D) ? "" :
		asi_l1d_flush_buf ? "(software), " : "(MSR), ",
		mask & ASI_TRIP_FLUSH_VERW ? "VERW" : "",
		mask ? "" : "nothing to clear on this CPU");
	return 0;
}

/**
 * asi_ibpb_setup() - defer the IBPB after VM-exit, where asked and sound
 * @degraded: why isolation runs degraded, or NULL
 *
 * With asi_ibpb=defer, where the kernel runs an IBPB after every VM-exit
 * (X86_FEATURE_IBPB_ON_VMEXIT), an isolated CPU leaves it to its next
 * move to full mappings.  Until then guest-trained predictions can steer
 * the code that runs on the restricted table into anything that table
 * maps, not only what the CPU touched: an administrator's choice, and
 * never where isolation runs degraded (it maps host data then).
 */
void asi_ibpb_setup(const char *degraded)
{
	if (!asi_ibpb_defer_asked)
		return;
	if (!boot_cpu_has(X86_FEATURE_IBPB_ON_VMEXIT))
		pr_info("asi_ibpb=defer: the kernel runs no IBPB after VM-exit, nothing to defer\n");
	else if (degraded)
		pr_warn("asi_ibpb=defer refused: isolation runs degraded\n");
	else
		WRITE_ONCE(asi_defer_ibpb, true);
	if (asi_defer_ibpb)
		pr_info("the IBPB after each VM-exit: at the next move out of isolation (asi_ibpb=defer; the vulnerabilities files still say \"on VMEXIT\")\n");
}

/**
 * asi_flush_teardown() - free what asi_flush_setup() took
 *
 * After the core instance, which mapped the buffer, is gone; also when
 * asi_flush_setup() failed.
 */
void asi_flush_teardown(void)
{
	WRITE_ONCE(asi_trip_flush_mask, 0);
	WRITE_ONCE(asi_defer_ibpb, false);
	if (asi_l1d_flush_buf)
		free_pages((unsigned long)asi_l1d_flush_buf, ASI_L1D_FLUSH_ORDER);
	asi_l1d_flush_buf = NULL;
}

/**
 * asi_trip_flushes() - what a trip asks for on this machine
 *
 * Return: ASI_TRIP_FLUSH_* bits, and ASI_TRIP_IBPB.
 */
unsigned int asi_trip_flushes(void)
{
	return READ_ONCE(asi_trip_flush_mask) | (READ_ONCE(asi_defer_ibpb) ? ASI_TRIP_IBPB : 0);
}
EXPORT_SYMBOL_NS_GPL(asi_trip_flushes, ASI);

/**
 * __asi_covers_l1d() - will the trip's flushes flush L1D before this entry?
 *
 * Through asi_covers_l1d().  True on a CPU that is isolated now, where
 * trips ask for the L1D flush: whatever host code ran on the core since
 * this CPU's last VM-entry marked a trip then (its leave, an NMI, #MC or
 * #DB, a sibling's host code), so a hypervisor's own conditional L1D
 * flush would flush a second time.
 *
 * Return: true when the hypervisor may skip its conditional flush.
 */
noinstr bool __asi_covers_l1d(void)
{
	return this_cpu_read(asi_cpu.cr3) &&
	       (READ_ONCE(asi_trip_flush_mask) & ASI_TRIP_FLUSH_L1D);
}
EXPORT_SYMBOL_NS_GPL(__asi_covers_l1d, ASI);

/* Read the buffer twice L1D's size: first into the TLB, then the cache. */
static __always_inline void asi_l1d_flush_sw(void)
{
	unsigned long size = PAGE_SIZE << ASI_L1D_FLUSH_ORDER, off;
	const u8 *buf = asi_l1d_flush_buf;
	unsigned int eax = 0, ebx, ecx = 0, edx;

	for (off = 0; off < size; off += PAGE_SIZE)
		(void)READ_ONCE(buf[off]);
	/* Serialise, so that the fill below does not start early. */
	asm volatile("cpuid" : "+a" (eax), "=b" (ebx), "+c" (ecx), "=d" (edx) :: "memory");
	for (off = 0; off < size; off += ASI_L1D_LINE)
		(void)READ_ONCE(buf[off]);
	asm volatile("lfence" ::: "memory");
}

/**
 * __asi_flush_trip() - clear what trips since the last call left in the core
 *
 * Through asi_flush_trip(), with interrupts off.  Nothing when there was no
 * trip since the last call on this CPU.
 *
 * Return: whether there was one.
 */
noinstr bool __asi_flush_trip(void)
{
	struct asi_stats *s = this_cpu_ptr(&asi_cpu.stats);
	unsigned int mask;

	if (!this_cpu_read(asi_trip))
		return false;
	this_cpu_write(asi_trip, false);
	s->trips_flushed++;
	mask = READ_ONCE(asi_trip_flush_mask);
	if (mask & ASI_TRIP_FLUSH_L1D) {
		if (static_cpu_has(X86_FEATURE_FLUSH_L1D)) {
			native_wrmsrl(MSR_IA32_FLUSH_CMD, L1D_FLUSH);
			s->flush_l1d_msr++;
		} else {
			asi_l1d_flush_sw();
			s->flush_l1d_sw++;
		}
	}
	if (mask & ASI_TRIP_FLUSH_VERW) {
		x86_clear_cpu_buffers();
		s->flush_verw++;
	}
	return true;
}
EXPORT_SYMBOL_NS_GPL(__asi_flush_trip, ASI);
