// SPDX-License-Identifier: GPL-2.0
/*
 * KVM address space isolation: switching to and from the restricted page
 * table, leaving it on interrupts and page faults, and the isolation fault
 * log.
 *
 * Entering switches to the instance's mm with the kernel's TLB code, which
 * loads the kernel half of its PGD pair (full kernel mappings), then flips
 * CR3 to the user half, the restricted table, the way the PTI return to
 * user space does.  Leaving flips back first and switches mm on full
 * mappings.  In between, NMI, #MC and #DB go through the paranoid entry
 * path, which sees the user-half bit in CR3, runs the handler on the kernel
 * half and restores CR3 on return.  Interrupts and page faults from kernel
 * mode do not switch CR3, so they leave isolation themselves: interrupts in
 * the IDTENTRY wrappers, page faults first thing in exc_page_fault().
 *
 * All state is per CPU: KVM enters with preemption disabled, and leaves
 * before the task can be scheduled out (kvm_sched_out() -> vcpu put).
 */

#define pr_fmt(fmt) "KVM isolation: " fmt

#include <linux/kallsyms.h>
#include <linux/mm.h>
#include <linux/mmu_context.h>
#include <linux/mutex.h>
#include <linux/module.h>
#include <linux/sched/debug.h>
#include <linux/spinlock.h>

#include <asm/hardirq.h>
#include <asm/kvm_isolation.h>
#include <asm/tlbflush.h>

#include "kvm_isolation.h"

/* Dump the stack with each newly seen isolation fault. */
bool kvm_isolation_page_fault_stack = true;
EXPORT_SYMBOL_GPL(kvm_isolation_page_fault_stack);

#define ISO_CR3_USER_BITS	(BIT(PTI_PGTABLE_SWITCH_BIT) | BIT(X86_CR3_PTI_PCID_USER_BIT))

/*
 * The user half of the loaded (kernel half) CR3, and whether it must flush
 * its PCID: a flush of the user PCID may be pending, as on return to user
 * space (cpu_tlbstate.user_pcid_flush_mask).
 */
static unsigned long iso_user_cr3(unsigned long kcr3, bool *noflush)
{
	unsigned long cr3 = kcr3 | BIT(PTI_PGTABLE_SWITCH_BIT);
	unsigned long pcid = kcr3 & X86_CR3_PCID_MASK;

	*noflush = false;
	if (!cpu_feature_enabled(X86_FEATURE_PCID))
		return cr3;
	cr3 |= BIT(X86_CR3_PTI_PCID_USER_BIT);
	*noflush = !__test_and_clear_bit(pcid, (unsigned long *)
					 this_cpu_ptr(&cpu_tlbstate.user_pcid_flush_mask));
	return cr3;
}

/* The kernel half of an isolated CR3, never flushing: its PCID is current. */
static __always_inline unsigned long iso_kernel_cr3(unsigned long cr3)
{
	cr3 &= ~ISO_CR3_USER_BITS;
	if (cpu_feature_enabled(X86_FEATURE_PCID))
		cr3 |= X86_CR3_PCID_NOFLUSH;
	return cr3;
}

/**
 * kvm_isolation_enter() - switch this CPU to an isolated address space
 * @iso: the instance
 *
 * Called by KVM with preemption disabled, before VM-entry.  Nothing happens
 * when @iso is already loaded.  The caller leaves with kvm_isolation_exit()
 * before the task can be scheduled out or return to user space.
 */
void kvm_isolation_enter(struct kvm_isolation *iso)
{
	struct kvm_isolation_cpu *c;
	unsigned long flags, cr3;
	bool noflush;

	local_irq_save(flags);
	c = this_cpu_ptr(&kvm_isolation_cpu);
	if (c->iso)
		goto out;
	/* A task entering from KVM_RUN runs on its own mm, never lazily. */
	if (WARN_ON_ONCE(this_cpu_read(cpu_tlbstate_shared.is_lazy)))
		goto out;

	c->switching = true;
	c->prev_mm = this_cpu_read(cpu_tlbstate.loaded_mm);
	switch_mm_irqs_off(NULL, iso->mm, NULL);
	cr3 = iso_user_cr3(__read_cr3(), &noflush);
	c->cr3 = cr3;
	c->table = iso->pgd_pa;
	c->iso = iso;
	native_write_cr3(cr3 | (noflush ? X86_CR3_PCID_NOFLUSH : 0));
	c->switching = false;
	c->stats.enters++;
out:
	local_irq_restore(flags);
}
EXPORT_SYMBOL_GPL(kvm_isolation_enter);

/* Leave with interrupts off; CR3 may already be the kernel half (faults). */
static void iso_leave(struct kvm_isolation_cpu *c, enum kvm_isolation_exit_reason reason)
{
	c->switching = true;
	native_write_cr3(iso_kernel_cr3(c->cr3));
	c->iso = NULL;
	c->cr3 = 0;
	c->table = 0;
	switch_mm_irqs_off(NULL, c->prev_mm, NULL);
	c->prev_mm = NULL;
	c->switching = false;
	c->stats.exits[reason]++;
	/* The code that runs now may bring other data into the caches. */
	c->stats.l1d_flush_requests++;
	kvm_set_cpu_l1tf_flush_l1d();
}

/**
 * kvm_isolation_exit() - leave the isolated address space, if loaded
 * @reason: why, for the statistics
 *
 * Requests an L1D flush before the next VM-entry.
 *
 * Return: true if this CPU was isolated.
 */
bool kvm_isolation_exit(enum kvm_isolation_exit_reason reason)
{
	struct kvm_isolation_cpu *c;
	unsigned long flags;
	bool was = false;

	local_irq_save(flags);
	c = this_cpu_ptr(&kvm_isolation_cpu);
	if (c->iso) {
		iso_leave(c, reason);
		was = true;
	}
	local_irq_restore(flags);
	return was;
}
EXPORT_SYMBOL_GPL(kvm_isolation_exit);

/**
 * __kvm_isolation_nmi_enter() - run an NMI or #MC that KVM dispatches on full mappings
 *
 * VMX hands NMIs and machine checks that caused a VM-exit to their
 * handlers itself, without the paranoid entry path: do what it would do,
 * switch to the kernel half and back.  Interrupts are disabled.
 *
 * Return: the CR3 to give kvm_isolation_nmi_exit().
 */
unsigned long __kvm_isolation_nmi_enter(void)
{
	unsigned long cr3 = this_cpu_read(kvm_isolation_cpu.cr3);

	if (!cr3 || __read_cr3() != cr3)
		return 0;
	native_write_cr3(iso_kernel_cr3(cr3));
	return cr3;
}
EXPORT_SYMBOL_GPL(__kvm_isolation_nmi_enter);

/**
 * __kvm_isolation_nmi_exit() - return to what was loaded before the NMI
 * @cr3: what __kvm_isolation_nmi_enter() returned, not 0
 */
void __kvm_isolation_nmi_exit(unsigned long cr3)
{
	bool noflush;

	iso_user_cr3(__read_cr3(), &noflush);
	native_write_cr3(cr3 | (noflush ? X86_CR3_PCID_NOFLUSH : 0));
}
EXPORT_SYMBOL_GPL(__kvm_isolation_nmi_exit);

/**
 * __kvm_isolation_interrupt() - leave isolation for an interrupt
 *
 * Called from the IDTENTRY wrappers of interrupts and system vectors,
 * which arrive from kernel mode without switching CR3: the handler may
 * touch any data.  Does nothing in the middle of a switch.
 */
void __kvm_isolation_interrupt(void)
{
	struct kvm_isolation_cpu *c = this_cpu_ptr(&kvm_isolation_cpu);

	if (c->iso && !c->switching)
		iso_leave(c, KVM_ISOLATION_EXIT_INTERRUPT);
}

/**
 * kvm_isolation_count_vmexit() - account a VM-exit KVM is done handling
 * @inside: whether the CPU is still isolated
 */
void kvm_isolation_count_vmexit(bool inside)
{
#ifdef CONFIG_KVM_ADDRESS_SPACE_ISOLATION_KUNIT_TEST
	unsigned long flags;
#endif

	if (!inside) {
		this_cpu_inc(kvm_isolation_cpu.stats.vmexits_outside);
		return;
	}
	this_cpu_inc(kvm_isolation_cpu.stats.vmexits_inside);
#ifdef CONFIG_KVM_ADDRESS_SPACE_ISOLATION_KUNIT_TEST
	/*
	 * Test kernels check that the exit really ran on the VM's restricted
	 * table (its address taken from the instance at entry, not from the
	 * CR3 the switch computed): a switch that loaded anything else would
	 * pass every other counter.  An interrupt would leave isolation
	 * between the reads.
	 */
	local_irq_save(flags);
	if (this_cpu_read(kvm_isolation_cpu.iso)) {
		this_cpu_inc(kvm_isolation_cpu.stats.cr3_checks);
		if ((__native_read_cr3() & CR3_ADDR_MASK) != this_cpu_read(kvm_isolation_cpu.table))
			this_cpu_inc(kvm_isolation_cpu.stats.cr3_mismatches);
	}
	local_irq_restore(flags);
#endif
}
EXPORT_SYMBOL_GPL(kvm_isolation_count_vmexit);

/**
 * kvm_isolation_get_stats() - sum the per-CPU statistics
 * @sum: where to put them
 */
void kvm_isolation_get_stats(struct kvm_isolation_stats *sum)
{
	int cpu, i;

	memset(sum, 0, sizeof(*sum));
	for_each_possible_cpu(cpu) {
		struct kvm_isolation_stats *s = &per_cpu(kvm_isolation_cpu, cpu).stats;

		sum->enters += READ_ONCE(s->enters);
		for (i = 0; i < KVM_ISOLATION_NR_EXIT_REASONS; i++)
			sum->exits[i] += READ_ONCE(s->exits[i]);
		sum->faults += READ_ONCE(s->faults);
		sum->vmexits_inside += READ_ONCE(s->vmexits_inside);
		sum->vmexits_outside += READ_ONCE(s->vmexits_outside);
		sum->l1d_flush_requests += READ_ONCE(s->l1d_flush_requests);
		sum->paranoid_trips += READ_ONCE(s->paranoid_trips);
		sum->canary_faults += READ_ONCE(s->canary_faults);
		sum->cr3_checks += READ_ONCE(s->cr3_checks);
		sum->cr3_mismatches += READ_ONCE(s->cr3_mismatches);
	}
}
EXPORT_SYMBOL_GPL(kvm_isolation_get_stats);

/**
 * kvm_isolation_reset_stats() - count afresh
 *
 * Zeroes every CPU's counters; writing 0 to debugfs "stats" does it.
 */
void kvm_isolation_reset_stats(void)
{
	int cpu;

	for_each_possible_cpu(cpu)
		memset(&per_cpu(kvm_isolation_cpu, cpu).stats, 0,
		       sizeof(struct kvm_isolation_stats));
}

/*
 * The fault log: each faulting instruction once, in a bounded table that is
 * reset when a VM is created.
 */
static DEFINE_RAW_SPINLOCK(iso_fault_lock);
static struct kvm_isolation_fault iso_faults[KVM_ISOLATION_FAULT_SITES];
static unsigned int iso_nr_faults;
static atomic64_t iso_fault_seq;

/**
 * kvm_isolation_reset_fault_log() - forget the faulting sites seen so far
 */
void kvm_isolation_reset_fault_log(void)
{
	unsigned long flags;

	raw_spin_lock_irqsave(&iso_fault_lock, flags);
	iso_nr_faults = 0;
	raw_spin_unlock_irqrestore(&iso_fault_lock, flags);
}
EXPORT_SYMBOL_GPL(kvm_isolation_reset_fault_log);

/**
 * kvm_isolation_fault_log() - copy the fault log
 * @log: room for KVM_ISOLATION_FAULT_SITES entries
 *
 * Return: the number of entries copied.
 */
unsigned int kvm_isolation_fault_log(struct kvm_isolation_fault *log)
{
	unsigned long flags;
	unsigned int n;

	raw_spin_lock_irqsave(&iso_fault_lock, flags);
	n = iso_nr_faults;
	memcpy(log, iso_faults, n * sizeof(*log));
	raw_spin_unlock_irqrestore(&iso_fault_lock, flags);
	return n;
}
EXPORT_SYMBOL_GPL(kvm_isolation_fault_log);

/* Record the fault; true if its instruction was not seen before. */
static bool iso_log_fault(unsigned long ip, unsigned long address, unsigned long error_code,
			  u64 *seq)
{
	struct kvm_isolation_fault *f;
	bool new = false;
	unsigned int i;

	raw_spin_lock(&iso_fault_lock);
	for (i = 0; i < iso_nr_faults; i++)
		if (iso_faults[i].ip == ip)
			break;
	f = &iso_faults[min(i, KVM_ISOLATION_FAULT_SITES - 1)];
	if (i == iso_nr_faults && i < KVM_ISOLATION_FAULT_SITES) {
		*f = (struct kvm_isolation_fault) { .ip = ip, .address = address,
						    .error_code = error_code };
		iso_nr_faults++;
		new = true;
	}
	if (i < KVM_ISOLATION_FAULT_SITES)
		f->count++;
	raw_spin_unlock(&iso_fault_lock);
	*seq = atomic64_inc_return(&iso_fault_seq);
	return new;
}

#ifdef CONFIG_KVM_ADDRESS_SPACE_ISOLATION_KUNIT_TEST
/*
 * The canary, for tests: a page of its own that no isolated address space
 * maps.  Armed, each CPU's next isolated VM-entries read it at the last
 * point before entering the guest; every read must fault, and is counted
 * in canary_faults (not in faults).  Seeing them proves that the restricted
 * page table, not the full one, was loaded.
 */
static unsigned long iso_canary;
static DEFINE_MUTEX(iso_canary_lock);

/**
 * kvm_isolation_arm_canary() - make the next isolated VM-entries read the canary
 * @n: how many on each CPU; 0 disarms
 *
 * Return: 0, or -ENOMEM if the canary page could not be allocated.
 */
int kvm_isolation_arm_canary(unsigned int n)
{
	int cpu;

	mutex_lock(&iso_canary_lock);
	if (!iso_canary)
		iso_canary = get_zeroed_page(GFP_KERNEL);
	mutex_unlock(&iso_canary_lock);
	if (!iso_canary)
		return -ENOMEM;
	for_each_possible_cpu(cpu) {
		per_cpu(kvm_isolation_cpu, cpu).canary_page = iso_canary;
		WRITE_ONCE(per_cpu(kvm_isolation_cpu, cpu).canary_left, n);
	}
	return 0;
}

/**
 * kvm_isolation_touch_canary() - read the canary if armed and isolated
 *
 * Called by the vendor modules just before VM-entry, after everything that
 * might leave isolation: the read must fault and leave.  Not instrumented:
 * the read itself must fault, not KASAN's check of the canary's shadow,
 * which nothing maps either.
 */
__no_sanitize_address void kvm_isolation_touch_canary(void)
{
	struct kvm_isolation_cpu *c = this_cpu_ptr(&kvm_isolation_cpu);

	if (likely(!READ_ONCE(c->canary_left)) || !c->iso)
		return;
	c->canary_left--;
	READ_ONCE(*(unsigned long *)c->canary_page);
}
EXPORT_SYMBOL_GPL(kvm_isolation_touch_canary);

static bool iso_is_canary(unsigned long address)
{
	return iso_canary && (address & PAGE_MASK) == iso_canary;
}
#else
static bool iso_is_canary(unsigned long address)
{
	return false;
}
#endif

/**
 * kvm_isolation_fault_switch() - first thing on a page fault: leave the restricted table
 *
 * Called at the top of exc_page_fault(), before anything that might touch
 * memory the restricted table does not map and fault again.  When CR3 is
 * this CPU's isolated one, switch to the kernel half.
 *
 * Return: true if it switched: the fault is then for
 * kvm_isolation_handle_fault(), which does the rest.  The caller keeps the
 * answer for its own fault, so an early return (an async page fault) or a
 * nested fault leaves nothing behind.
 */
noinstr bool kvm_isolation_fault_switch(void)
{
	unsigned long cr3 = this_cpu_read(kvm_isolation_cpu.cr3);

	if (!cr3 || __native_read_cr3() != cr3)
		return false;
	native_write_cr3(iso_kernel_cr3(cr3));
	return true;
}

/**
 * kvm_isolation_handle_fault() - the isolation fault handler
 * @regs: the faulting context
 * @error_code: the page fault error code
 * @address: the faulting address
 *
 * Called from exc_page_fault(), interrupts still disabled, for a fault
 * that kvm_isolation_fault_switch() moved off the restricted table.  A
 * fault taken with an isolated address space loaded and active leaves
 * isolation, is logged, and is retried on the full page table.  A fault
 * taken while the switch was half done is reported with the page-table
 * walks of both tables, on the full page table kvm_isolation_fault_switch()
 * forced, and goes the normal way.
 *
 * Return: true if the fault was handled.
 */
bool kvm_isolation_handle_fault(struct pt_regs *regs, unsigned long error_code,
				unsigned long address)
{
	struct kvm_isolation_cpu *c = this_cpu_ptr(&kvm_isolation_cpu);
	struct kvm_isolation *iso = c->iso;
	u64 seq;

	if (iso && !c->switching && this_cpu_read(cpu_tlbstate.loaded_mm) == iso->mm) {
		iso_leave(c, KVM_ISOLATION_EXIT_FAULT);
		if (iso_is_canary(address)) {
			c->stats.canary_faults++;
			return true;
		}
		c->stats.faults++;
		if (iso_log_fault(regs->ip, address, error_code, &seq)) {
			pr_info("page fault #%llu (%#lx) at %pS on %#lx (%ps)\n", seq, error_code,
				(void *)regs->ip, address, (void *)address);
			if (READ_ONCE(kvm_isolation_page_fault_stack))
				show_regs(regs);
		}
		return true;
	}

	pr_err("page fault (%#lx) at %pS on %#lx while switching address space\n",
	       error_code, (void *)regs->ip, address);
	if (iso)
		kvm_isolation_dump_walk(iso, address);
	WARN(1, "KVM isolation: half-switched address space, forced the full page table\n");
	return false;
}
