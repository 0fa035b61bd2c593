// SPDX-License-Identifier: GPL-2.0
/*
 * Address space isolation (ASI): switching to and from the restricted page
 * table, leaving it on interrupts and page faults, and the isolation fault
 * log.
 *
 * The restricted table is a PGD of its own.  Entering writes its CR3 while
 * the task's mm stays loaded (cpu_tlbstate.loaded_mm is never changed), and
 * leaving writes back the CR3 entering found.  With PCIDs each CPU keeps a
 * few restricted PCIDs, each remembering which instance, at which TLB
 * generation, it last held: re-entering the same instance does not flush,
 * an unmap in it (a new generation, asi_flush_tlb()) or a kernel-wide flush
 * does.
 *
 * Anything that arrives while isolated recognises this CPU's restricted CR3
 * (asi_cpu.cr3) and moves to full mappings before touching
 * memory the restricted table does not map: interrupts leave isolation in
 * the IDTENTRY wrappers, page faults first thing in exc_page_fault(), and
 * NMI, #MC and #DB switch to full mappings for the handler and back.  Each
 * leave and trip is a trip whose flushes the client runs before untrusted code
 * runs again (asi_flush_trip(), asi_flush.c).  This does not depend on
 * PTI: the restricted PGD is never a PTI user half (its CR3 never has
 * PTI_USER_PGTABLE_BIT set), so PTI's paranoid entry leaves it alone.
 *
 * All state is per CPU: the user enters with preemption disabled, and
 * leaves before the task can be scheduled out (a hypervisor: when it puts
 * the vCPU).
 */

#define pr_fmt(fmt) "asi: " fmt

#include <linux/kallsyms.h>
#include <linux/kprobes.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/module.h>
#include <linux/sched/debug.h>
#include <linux/spinlock.h>

#include <asm/hardirq.h>
#include <asm/msr.h>
#include <asm/perf_event.h>
#include <asm/asi_debug.h>
#include <asm/tlbflush.h>

#include "asi.h"

/* Dump the stack with each newly seen isolation fault. */
static bool asi_fault_stack = true;

/**
 * asi_set_fault_stack() - whether to dump the stack with each new fault site
 * @on: dump it
 */
void asi_set_fault_stack(bool on)
{
	WRITE_ONCE(asi_fault_stack, on);
}
EXPORT_SYMBOL_NS_GPL(asi_set_fault_stack, ASI);

/* Restricted PCIDs follow the kernel's: kern_pcid() uses 1..TLB_NR_DYN_ASIDS. */
#define ASI_FIRST_PCID		(TLB_NR_DYN_ASIDS + 1)

static __always_inline unsigned long asi_noflush(void)
{
	return cpu_feature_enabled(X86_FEATURE_PCID) ? X86_CR3_PCID_NOFLUSH : 0;
}

/**
 * asi_forget_pcids() - flush every restricted PCID of this CPU on next use
 *
 * Called by the TLB code where it marks the kernel's other PCIDs stale after
 * a kernel mapping changed (clear_asid_other(), from switch_mm() or from
 * our entry), with interrupts disabled.
 */
void asi_forget_pcids(void)
{
	struct asi_cpu *c = this_cpu_ptr(&asi_cpu);

	memset(c->pcid_owner, 0, sizeof(c->pcid_owner));
}

/*
 * The CR3 of @asi's restricted table at @pa, this CPU's own copy (which
 * maps this CPU's entry area alone), and whether writing it
 * may keep what its PCID caches: only when this CPU's PCID for @asi was
 * last loaded at @asi's current TLB generation, and no kernel mapping
 * changed since (a pending invalidate_other is acted on here, as the next
 * switch_mm() would, which forgets every restricted PCID).  Without PCIDs
 * every CR3 write flushes.
 */
static unsigned long asi_restricted_cr3(struct asi_cpu *c, struct asi *asi,
					unsigned long pa, bool *noflush)
{
	u64 gen = atomic64_read(&asi->tlb_gen);
	unsigned int slot;

	*noflush = false;
	if (!cpu_feature_enabled(X86_FEATURE_PCID)) {
		c->stats.tlb_flushes++;
		return pa;
	}
	clear_asid_other_pending();
	for (slot = 0; slot < ASI_NR_PCIDS; slot++)
		if (c->pcid_owner[slot] == asi->id)
			break;
	if (slot == ASI_NR_PCIDS) {
		slot = c->pcid_next;
		c->pcid_next = (slot + 1) % ASI_NR_PCIDS;
		c->pcid_owner[slot] = asi->id;
	} else {
		*noflush = c->pcid_gen[slot] == gen;
	}
	c->pcid_gen[slot] = gen;
	if (!*noflush)
		c->stats.tlb_flushes++;
	return pa | (ASI_FIRST_PCID + slot);
}

/* Who left: the caller, or this layer for an interrupt or a fault. */
enum asi_exit_why {
	ASI_EXIT_CALLER,
	ASI_EXIT_INTERRUPT,
	ASI_EXIT_FAULT,
};

static void asi_leave(struct asi_cpu *c, enum asi_exit_why why);

#ifdef CONFIG_ADDRESS_SPACE_ISOLATION_DEBUG
/* No emulated CPU has PEBS or BTS: tests pretend that every PMU writes. */
static bool asi_ds_pretend;

/**
 * asi_pretend_ds_in_use() - treat every CPU's PMU as writing its debug store
 * @on: pretend, or stop
 */
void asi_pretend_ds_in_use(bool on)
{
	WRITE_ONCE(asi_ds_pretend, on);
}
EXPORT_SYMBOL_NS_GPL(asi_pretend_ds_in_use, ASI);

static bool asi_ds_pretended(void)
{
	return READ_ONCE(asi_ds_pretend);
}
#else
static bool asi_ds_pretended(void)
{
	return false;
}
#endif

/**
 * asi_enter() - switch this CPU to an isolated address space
 * @asi: the instance
 *
 * Called with preemption disabled, by the user before VM-entry.  Nothing happens
 * when @asi is already loaded.  The caller leaves with asi_exit()
 * before the task can be scheduled out or return to user space.
 *
 * A CPU whose PMU may write its debug store (a PEBS or BTS event of the
 * host is on) stays on the full table, and its next VM-entry flushes:
 * the CPU writes the records through whatever table is loaded, and no
 * restricted table maps the debug store.  Perf turns such events on only
 * from an interrupt or the scheduler, which this CPU left isolation for.
 */
void asi_enter(struct asi *asi)
{
	struct asi_cpu *c;
	unsigned long flags, cr3;
	bool noflush;

	local_irq_save(flags);
	c = this_cpu_ptr(&asi_cpu);
	if (c->asi == asi)
		goto out;
	/* Another instance: its user did not leave it.  Never run on its table. */
	if (WARN_ON_ONCE(c->asi))
		asi_leave(c, ASI_EXIT_CALLER);
	if (unlikely(intel_pmu_ds_in_use() || asi_ds_pretended())) {
		c->stats.ds_holds++;
		this_cpu_write(asi_trip, true);
		goto out;
	}

	c->switching = true;
	c->asi = asi;
	/* Pairs with asi_flush_tlb(): it sees @asi here, or we see its generation. */
	smp_mb();
	c->table = asi_cpu_pa(asi, raw_smp_processor_id());
	cr3 = asi_restricted_cr3(c, asi, c->table, &noflush);
	c->full_cr3 = __native_read_cr3();
	if (static_branch_unlikely(&asi_smt_key))
		c->smt_instance = asi->id;
	/* Set before CR3 is: an NMI compares the two. */
	WRITE_ONCE(c->cr3, cr3);
	barrier();
	native_write_cr3(cr3 | (noflush ? X86_CR3_PCID_NOFLUSH : 0));
	c->switching = false;
	/*
	 * The IBPB after VM-exit waits for the next move out (asi_ibpb.S),
	 * unless a fault in the switch forced the full table.
	 */
	if (READ_ONCE(asi_defer_ibpb) && __native_read_cr3() == cr3)
		this_cpu_write(asi_ibpb_deferring, true);
	/*
	 * Host code ran on this thread since it last left: the next VM-entry
	 * flushes, the first one after set-up too; and so does each
	 * sibling's, which may have flushed while this thread was leaving.
	 */
	this_cpu_write(asi_trip, true);
	/* From here only @asi's data is in reach: siblings may run its guest. */
	if (static_branch_unlikely(&asi_smt_key))
		__asi_smt_host_done(c, ASI_SMT_IN);
	c->stats.enters++;
out:
	local_irq_restore(flags);
}
EXPORT_SYMBOL_NS_GPL(asi_enter, ASI);
/* A probe between the CR3 write and the end of the switch runs half-switched. */
NOKPROBE_SYMBOL(asi_enter);

/* Leave with interrupts off; CR3 may already be the full one (faults). */
static void asi_leave(struct asi_cpu *c, enum asi_exit_why why)
{
	c->switching = true;
	/* An NMI from here on holds the siblings too (__asi_paranoid_enter()). */
	if (static_branch_unlikely(&asi_smt_key))
		WRITE_ONCE(c->smt_state, ASI_SMT_LEAVING);
	asi_ibpb_before_host(&c->stats);
	this_cpu_write(asi_ibpb_deferring, false);
	/* Nothing flushed the kernel's PCID meanwhile: interrupts leave first. */
	native_write_cr3(c->full_cr3 | asi_noflush());
	/* No sibling runs guest code once the caller touches other data. */
	if (static_branch_unlikely(&asi_smt_key))
		__asi_smt_leave(c);
	barrier();
	WRITE_ONCE(c->cr3, 0);
	c->asi = NULL;
	c->table = 0;
	c->switching = false;
	/* A held entry given up: its time ends here. */
	if (unlikely(c->smt_held_since)) {
		c->stats.smt_held_cycles += rdtsc() - c->smt_held_since;
		c->smt_held_since = 0;
	}
	if (why == ASI_EXIT_INTERRUPT)
		c->stats.interrupt_exits++;
	else if (why == ASI_EXIT_FAULT)
		c->stats.fault_exits++;
	else
		c->stats.exits++;
	/* The code that runs now may bring other data into the caches. */
	this_cpu_inc(asi_cpu.stats.trips);	/* NMIs count too */
	this_cpu_write(asi_trip, true);
}

NOKPROBE_SYMBOL(asi_leave);

/**
 * asi_exit() - leave the isolated address space, if loaded
 *
 * The caller flushes the trip (asi_flush_trip()) before it runs untrusted
 * code again, and counts and traces why it left.
 *
 * Return: true if this CPU was isolated.
 */
bool asi_exit(void)
{
	struct asi_cpu *c;
	unsigned long flags;
	bool was = false;

	local_irq_save(flags);
	c = this_cpu_ptr(&asi_cpu);
	if (c->cr3) {
		asi_leave(c, ASI_EXIT_CALLER);
		was = true;
	}
	local_irq_restore(flags);
	return was;
}
EXPORT_SYMBOL_NS_GPL(asi_exit, ASI);
NOKPROBE_SYMBOL(asi_exit);

/**
 * __asi_unexpected() - leave isolation on a path that never runs isolated
 *
 * From asi_assert_left(): a caller did not leave before returning to user
 * mode, switching mm or flushing the local TLB.  Leave, then warn once.
 * An NMI, #MC or #DB handler runs on full mappings with isolation still
 * entered (__asi_paranoid_enter()): nothing to do there.
 */
void __asi_unexpected(void)
{
	struct asi_cpu *c;
	unsigned long flags;
	bool was = false;

	local_irq_save(flags);
	c = this_cpu_ptr(&asi_cpu);
	if (c->cr3 && !c->switching && __native_read_cr3() == c->cr3) {
		asi_leave(c, ASI_EXIT_CALLER);
		c->stats.unexpected++;
		was = true;
	}
	local_irq_restore(flags);
	WARN_ONCE(was, "asi: still isolated in %pS, left\n", __builtin_return_address(0));
}

#ifdef CONFIG_ADDRESS_SPACE_ISOLATION_DEBUG
/**
 * __asi_ibpb_missed() - a deferred IBPB found pending on full mappings
 *
 * From asi_assert_left(), with the debugging aids: a move out of isolation
 * did not run the IBPB that VM-exits deferred (asi_ibpb.S).  Run it,
 * count it, and warn once.
 */
void __asi_ibpb_missed(void)
{
	struct asi_cpu *c;
	unsigned long flags;
	bool was;

	local_irq_save(flags);
	c = this_cpu_ptr(&asi_cpu);
	was = asi_ibpb_before_host(&c->stats);
	if (was)
		c->stats.ibpb_missed++;
	local_irq_restore(flags);
	WARN_ONCE(was, "asi: a deferred IBPB still pending in %pS\n", __builtin_return_address(0));
}
#endif

/**
 * __asi_paranoid_enter() - move an NMI, #MC or #DB to full mappings
 *
 * First thing in the handlers of NMI, #MC and #DB, which can arrive at any
 * instruction.  When CR3 is this CPU's restricted one, switch to the full
 * one, count and mark the trip: the handler may bring anything into the
 * caches.  Isolation stays entered; the handler returns to the restricted
 * table with __asi_paranoid_exit().
 *
 * On an SMT core, a thread that was not running host code (isolated,
 * leaving, or halted in the idle loop) first holds its siblings out of
 * guest mode, and gets its state back on the way out.
 *
 * Return: what to give __asi_paranoid_exit(): the restricted CR3 to go
 * back to and the SMT state to restore, or 0 when there is nothing to
 * restore.
 */
noinstr unsigned long __asi_paranoid_enter(void)
{
	struct asi_cpu *c = this_cpu_ptr(&asi_cpu);
	unsigned long cr3 = c->cr3, ret = 0;
	u8 state = READ_ONCE(c->smt_state);

	if (cr3 && __native_read_cr3() == cr3) {
		asi_ibpb_before_host(&c->stats);
		native_write_cr3(c->full_cr3 | asi_noflush());
		c->stats.paranoid_trips++;
		c->stats.trips++;
		this_cpu_write(asi_trip, true);
		ret = cr3;
	}
	if (static_branch_unlikely(&asi_smt_key) && state != ASI_SMT_OUT) {
		__asi_smt_leave(c);
		ret |= (unsigned long)state << ASI_PARANOID_SMT_SHIFT;
	}
	return ret;
}

/**
 * __asi_paranoid_exit() - return to the restricted table after a trip
 * @token: what __asi_paranoid_enter() returned, not 0
 *
 * The restricted PCID keeps what it cached: a handler that changed a
 * kernel mapping (GHES's fixmap, which no restricted table maps) left
 * invalidate_other set, which the next entry acts on.  The trip's flushes
 * run here, on the restricted table: the trip may have come after the
 * user's last asi_flush_trip(), in the last instructions before it runs
 * untrusted code.
 */
noinstr void __asi_paranoid_exit(unsigned long token)
{
	unsigned long cr3 = token & ~ASI_PARANOID_SMT_MASK;

	if (cr3) {
		native_write_cr3(cr3 | asi_noflush());
		if (__asi_flush_trip())
			this_cpu_inc(asi_cpu.stats.paranoid_flushed);
	}
	if (token & ASI_PARANOID_SMT_MASK)
		__asi_smt_host_done(this_cpu_ptr(&asi_cpu), token >> ASI_PARANOID_SMT_SHIFT);
}

/**
 * __asi_interrupt() - leave isolation for an interrupt
 *
 * Called from the IDTENTRY wrappers of interrupts and system vectors,
 * which arrive from kernel mode without switching CR3: the handler may
 * touch any data.  Does nothing in the middle of a switch.
 */
void __asi_interrupt(void)
{
	struct asi_cpu *c = this_cpu_ptr(&asi_cpu);

	if (c->cr3 && !c->switching)
		asi_leave(c, ASI_EXIT_INTERRUPT);
	else if (static_branch_unlikely(&asi_smt_key) &&
		 READ_ONCE(c->smt_state) == ASI_SMT_IDLE)
		__asi_smt_leave(c);
}

NOKPROBE_SYMBOL(__asi_interrupt);

/**
 * asi_loaded() - is an instance loaded on this CPU?
 * @asi: the instance
 *
 * Return: true if this CPU is on @asi's restricted table.
 */
bool asi_loaded(struct asi *asi)
{
	return this_cpu_read(asi_cpu.asi) == asi;
}
EXPORT_SYMBOL_NS_GPL(asi_loaded, ASI);

#ifdef CONFIG_ADDRESS_SPACE_ISOLATION_DEBUG
/**
 * asi_check_cr3() - check that the loaded instance's table is in CR3
 *
 * Debug kernels count, in cr3_checks and cr3_mismatches, whether CR3 really
 * is the table of the instance loaded on this CPU (its address taken from
 * the instance at entry, not from the CR3 the switch computed): a switch
 * that loaded anything else would pass every other counter.  Nothing when
 * this CPU is not isolated.
 */
void asi_check_cr3(void)
{
	unsigned long flags;

	/* An interrupt would leave isolation between the reads. */
	local_irq_save(flags);
	if (this_cpu_read(asi_cpu.asi)) {
		this_cpu_inc(asi_cpu.stats.cr3_checks);
		if ((__native_read_cr3() & CR3_ADDR_MASK) != this_cpu_read(asi_cpu.table))
			this_cpu_inc(asi_cpu.stats.cr3_mismatches);
	}
	local_irq_restore(flags);
}
EXPORT_SYMBOL_NS_GPL(asi_check_cr3, ASI);
#endif

/**
 * asi_get_stats() - sum the per-CPU statistics
 * @sum: where to put them
 */
void asi_get_stats(struct asi_stats *sum)
{
	int cpu;

	memset(sum, 0, sizeof(*sum));
	for_each_possible_cpu(cpu) {
		struct asi_stats *s = &per_cpu(asi_cpu, cpu).stats;

		sum->enters += READ_ONCE(s->enters);
		sum->exits += READ_ONCE(s->exits);
		sum->interrupt_exits += READ_ONCE(s->interrupt_exits);
		sum->fault_exits += READ_ONCE(s->fault_exits);
		sum->faults += READ_ONCE(s->faults);
		sum->trips += READ_ONCE(s->trips);
		sum->trips_flushed += READ_ONCE(s->trips_flushed);
		sum->flush_l1d_msr += READ_ONCE(s->flush_l1d_msr);
		sum->flush_l1d_sw += READ_ONCE(s->flush_l1d_sw);
		sum->flush_verw += READ_ONCE(s->flush_verw);
		sum->ibpb_deferred += READ_ONCE(per_cpu(asi_ibpb_deferred, cpu));
		sum->flush_ibpb += READ_ONCE(s->flush_ibpb);
		sum->paranoid_trips += READ_ONCE(s->paranoid_trips);
		sum->paranoid_flushed += READ_ONCE(s->paranoid_flushed);
		sum->tlb_flushes += READ_ONCE(s->tlb_flushes);
		sum->flush_ipis += READ_ONCE(s->flush_ipis);
		sum->smt_holds += READ_ONCE(s->smt_holds);
		sum->smt_held_cycles += READ_ONCE(s->smt_held_cycles);
		sum->smt_kicks += READ_ONCE(s->smt_kicks);
		sum->smt_timeouts += READ_ONCE(s->smt_timeouts);
#ifdef CONFIG_ADDRESS_SPACE_ISOLATION_DEBUG
		sum->smt_checks += READ_ONCE(s->smt_checks);
		sum->smt_violations += READ_ONCE(s->smt_violations);
		sum->smt_leave_violations += READ_ONCE(s->smt_leave_violations);
		sum->canary_faults += READ_ONCE(s->canary_faults);
		sum->cr3_checks += READ_ONCE(s->cr3_checks);
		sum->cr3_mismatches += READ_ONCE(s->cr3_mismatches);
		sum->ibpb_missed += READ_ONCE(s->ibpb_missed);
#endif
		sum->unexpected += READ_ONCE(s->unexpected);
		sum->ds_holds += READ_ONCE(s->ds_holds);
	}
}
EXPORT_SYMBOL_NS_GPL(asi_get_stats, ASI);

/**
 * asi_reset_stats() - count afresh
 *
 * Zeroes every CPU's counters.
 */
void asi_reset_stats(void)
{
	int cpu;

	for_each_possible_cpu(cpu) {
		memset(&per_cpu(asi_cpu, cpu).stats, 0,
		       sizeof(struct asi_stats));
		per_cpu(asi_ibpb_deferred, cpu) = 0;
	}
}
EXPORT_SYMBOL_NS_GPL(asi_reset_stats, ASI);

/*
 * The fault log: each faulting instruction once, in a bounded table that is
 * reset when a VM is created.
 */
static DEFINE_RAW_SPINLOCK(asi_fault_lock);
static struct asi_fault_site asi_faults[ASI_FAULT_SITES];
static unsigned int asi_nr_faults;
static atomic64_t asi_fault_seq;

/**
 * asi_reset_fault_log() - forget the faulting sites seen so far
 */
void asi_reset_fault_log(void)
{
	unsigned long flags;

	raw_spin_lock_irqsave(&asi_fault_lock, flags);
	asi_nr_faults = 0;
	raw_spin_unlock_irqrestore(&asi_fault_lock, flags);
}
EXPORT_SYMBOL_NS_GPL(asi_reset_fault_log, ASI);

/**
 * asi_fault_log() - copy the fault log
 * @log: room for ASI_FAULT_SITES entries
 *
 * Return: the number of entries copied.
 */
unsigned int asi_fault_log(struct asi_fault_site *log)
{
	unsigned long flags;
	unsigned int n;

	raw_spin_lock_irqsave(&asi_fault_lock, flags);
	n = asi_nr_faults;
	memcpy(log, asi_faults, n * sizeof(*log));
	raw_spin_unlock_irqrestore(&asi_fault_lock, flags);
	return n;
}
EXPORT_SYMBOL_NS_GPL(asi_fault_log, ASI);

/* Record the fault; true if its instruction was not seen before. */
static bool asi_log_fault(unsigned long ip, unsigned long address, unsigned long error_code,
			  u64 *seq)
{
	struct asi_fault_site *f;
	bool new = false;
	unsigned int i;

	raw_spin_lock(&asi_fault_lock);
	for (i = 0; i < asi_nr_faults; i++)
		if (asi_faults[i].ip == ip)
			break;
	f = &asi_faults[min(i, ASI_FAULT_SITES - 1)];
	if (i == asi_nr_faults && i < ASI_FAULT_SITES) {
		*f = (struct asi_fault_site) { .ip = ip, .address = address,
						    .error_code = error_code };
		asi_nr_faults++;
		new = true;
	}
	if (i < ASI_FAULT_SITES)
		f->count++;
	raw_spin_unlock(&asi_fault_lock);
	*seq = atomic64_inc_return(&asi_fault_seq);
	return new;
}

#ifdef CONFIG_ADDRESS_SPACE_ISOLATION_DEBUG
/*
 * The canary, for tests: a page of its own that no isolated address space
 * maps.  Armed, each CPU's next isolated VM-entries read it at the last
 * point before entering the guest; every read must fault, and is counted
 * in canary_faults (not in faults).  Seeing them proves that the restricted
 * page table, not the full one, was loaded.
 */
static unsigned long asi_canary;
static DEFINE_MUTEX(asi_canary_lock);

/**
 * asi_arm_canary() - make the next isolated VM-entries read the canary
 * @n: how many on each CPU; 0 disarms
 *
 * Return: 0, or -ENOMEM if the canary page could not be allocated.
 */
int asi_arm_canary(unsigned int n)
{
	int cpu;

	mutex_lock(&asi_canary_lock);
	if (!asi_canary)
		asi_canary = get_zeroed_page(GFP_KERNEL);
	mutex_unlock(&asi_canary_lock);
	if (!asi_canary)
		return -ENOMEM;
	for_each_possible_cpu(cpu) {
		per_cpu(asi_cpu, cpu).canary_page = asi_canary;
		WRITE_ONCE(per_cpu(asi_cpu, cpu).canary_left, n);
	}
	return 0;
}
EXPORT_SYMBOL_NS_GPL(asi_arm_canary, ASI);

/**
 * asi_touch_canary() - read the canary if armed and isolated
 *
 * Called by the vendor modules just before VM-entry, after everything that
 * might leave isolation: the read must fault and leave.  Not instrumented:
 * the read itself must fault, not KASAN's check of the canary's shadow,
 * which nothing maps either.
 */
__no_sanitize_address void asi_touch_canary(void)
{
	struct asi_cpu *c = this_cpu_ptr(&asi_cpu);

	asi_smt_check_entry(c);
	if (likely(!READ_ONCE(c->canary_left)) || !c->asi)
		return;
	c->canary_left--;
	READ_ONCE(*(unsigned long *)c->canary_page);
}
EXPORT_SYMBOL_NS_GPL(asi_touch_canary, ASI);

/* A read of the canary: counted apart, not logged. */
static bool asi_canary_fault(struct asi_cpu *c, unsigned long address)
{
	if (!asi_canary || (address & PAGE_MASK) != asi_canary)
		return false;
	c->stats.canary_faults++;
	return true;
}
#else
static bool asi_canary_fault(struct asi_cpu *c, unsigned long address)
{
	return false;
}
#endif

/* Print the entries that translate @address in the page table at @pgd. */
static void asi_dump_walk(const char *name, pgd_t *pgd, unsigned long address)
{
	p4d_t *p4d;
	pud_t *pud;
	pmd_t *pmd;

	pgd += pgd_index(address);
	pr_err("  %s pgd %#lx\n", name, pgd_val(*pgd));
	if (!pgd_present(*pgd))
		return;
	p4d = p4d_offset(pgd, address);
	if (pgtable_l5_enabled())
		pr_err("  %s p4d %#lx\n", name, p4d_val(*p4d));
	if (!p4d_present(*p4d) || p4d_large(*p4d))
		return;
	pud = pud_offset(p4d, address);
	pr_err("  %s pud %#lx\n", name, pud_val(*pud));
	if (!pud_present(*pud) || pud_large(*pud))
		return;
	pmd = pmd_offset(pud, address);
	pr_err("  %s pmd %#lx\n", name, pmd_val(*pmd));
	if (!pmd_present(*pmd) || pmd_large(*pmd))
		return;
	pr_err("  %s pte %#lx\n", name, pte_val(*pte_offset_kernel(pmd, address)));
}

/**
 * asi_fault_switch() - first thing on a page fault: leave the restricted table
 *
 * Called at the top of exc_page_fault(), before anything that might touch
 * memory the restricted table does not map and fault again.  When CR3 is
 * this CPU's restricted one, switch to the full one.
 *
 * Return: true if it switched: the fault is then for
 * asi_handle_fault(), which does the rest.  The caller keeps the
 * answer for its own fault, so an early return (an async page fault) or a
 * nested fault leaves nothing behind.
 */
noinstr bool asi_fault_switch(void)
{
	unsigned long cr3 = this_cpu_read(asi_cpu.cr3);

	if (!cr3 || __native_read_cr3() != cr3)
		return false;
	asi_ibpb_before_host(this_cpu_ptr(&asi_cpu.stats));
	native_write_cr3(this_cpu_read(asi_cpu.full_cr3) | asi_noflush());
	return true;
}

/**
 * asi_handle_fault() - the isolation fault handler
 * @regs: the faulting context
 * @error_code: the page fault error code
 * @address: the faulting address
 *
 * Called from exc_page_fault(), interrupts still disabled, for a fault
 * that asi_fault_switch() moved off the restricted table.  A
 * fault taken with an isolated address space loaded and active leaves
 * isolation, is logged, and is retried on the full page table.  A fault
 * taken while the switch was half done is reported with the page-table
 * walks of both tables, on the full page table asi_fault_switch()
 * forced, and goes the normal way.
 *
 * Return: true if the fault was handled.
 */
bool asi_handle_fault(struct pt_regs *regs, unsigned long error_code,
		      unsigned long address)
{
	struct asi_cpu *c = this_cpu_ptr(&asi_cpu);
	struct asi *asi = c->asi;
	u64 seq;

	if (asi && !c->switching) {
		asi_leave(c, ASI_EXIT_FAULT);
		if (asi_canary_fault(c, address))
			return true;
		c->stats.faults++;
		if (asi_log_fault(regs->ip, address, error_code, &seq)) {
			pr_info("page fault #%llu (%#lx) at %pS on %#lx (%ps)\n", seq, error_code,
				(void *)regs->ip, address, (void *)address);
			if (READ_ONCE(asi_fault_stack))
				show_regs(regs);
		}
		return true;
	}

	pr_err("page fault (%#lx) at %pS on %#lx while switching address space\n",
	       error_code, (void *)regs->ip, address);
	if (asi) {
		asi_dump_walk("kernel", init_mm.pgd, address);
		asi_dump_walk("isolated", asi_cpu_pgd(asi, raw_smp_processor_id()), address);
	}
	WARN(1, "asi: half-switched address space, forced the full page table\n");
	return false;
}
