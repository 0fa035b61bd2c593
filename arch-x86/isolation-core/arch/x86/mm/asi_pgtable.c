// SPDX-License-Identifier: GPL-2.0
/*
 * Address space isolation (ASI): the restricted page tables.
 *
 * A range is copied from the kernel page table (init_mm) at a level: at
 * that level the kernel's entry is referenced as is, so below it the
 * kernel's own page-table pages are shared, never modified and never
 * freed.  Every directory page an instance allocates is recorded; a walk
 * that would modify the table refuses to descend into a page that is not
 * recorded.  Pages that clearing leaves empty are unlinked, and freed once
 * no TLB can walk them.
 */

#define pr_fmt(fmt) "asi: " fmt

#include <linux/kasan.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/percpu.h>
#include <linux/seq_file.h>
#include <linux/pgalloc.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/sched/task_stack.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <linux/xarray.h>

#include <asm/cpu_entry_area.h>
#include <asm/desc.h>
#include <asm/asi.h>
#include <asm/sections.h>
#include <asm/tlbflush.h>

#include "asi.h"

/**
 * iso_split_leaf() - a finer leaf cut from a huge one
 * @val: the huge leaf
 * @from: its level
 * @addr: the address to map
 * @level: the finer level
 *
 * The kernel maps the direct map with huge pages, and copying one at a
 * finer level must not map the whole huge page.
 *
 * Return: the entry at @level equivalent to @val for @addr.
 */
unsigned long iso_split_leaf(unsigned long val, enum asi_level from,
			     unsigned long addr, enum asi_level level)
{
	unsigned long mask = from == ASI_PUD ? PHYSICAL_PUD_PAGE_MASK :
							PHYSICAL_PMD_PAGE_MASK;
	unsigned long phys = (val & mask) + (addr & (iso_size(from) - 1) & ~(iso_size(level) - 1));
	unsigned long flags = val & ~mask;

	if (level == ASI_PTE)
		return phys | pgprot_val(pgprot_large_2_4k(__pgprot(flags)));
	return phys | flags;
}

/**
 * iso_kernel_entry() - the kernel's entry for an address at a level
 * @addr: the address
 * @level: the level
 *
 * Read only: the kernel page table is never written.
 *
 * Return: a directory pointer or a leaf, as is, or a leaf derived from a
 * coarser huge leaf; 0 where the kernel maps nothing.
 */
unsigned long iso_kernel_entry(unsigned long addr, enum asi_level level)
{
	enum asi_level l = ASI_PGD;
	unsigned long val = READ_ONCE(*iso_offset(init_mm.pgd, addr, l));

	for (;;) {
		if (!iso_present(val))
			return 0;
		if (l == level)
			return val;
		if (iso_leaf(l, val))
			return iso_split_leaf(val, l, addr, level);
		l = iso_next_level(l);
		val = READ_ONCE(*iso_offset(iso_table(val), addr, l));
	}
}

/**
 * iso_ptpage() - the record of a directory page an instance allocated
 * @iso: the instance
 * @table: the page
 *
 * Return: the record, or NULL when @iso did not allocate @table.
 */
struct iso_ptpage *iso_ptpage(struct asi *iso, void *table)
{
	return xa_load(&iso->ptpages, PHYS_PFN(__pa(table)));
}

/**
 * iso_owns() - may an instance write a page-table page?
 * @iso: the instance
 * @table: the page
 *
 * Return: true for its restricted PGD and the pages it recorded.
 */
bool iso_owns(struct asi *iso, void *table)
{
	return table == (void *)iso->pgd || iso_ptpage(iso, table);
}

static bool iso_should_fail(struct asi *iso)
{
#ifdef CONFIG_ADDRESS_SPACE_ISOLATION_KUNIT_TEST
	if (iso->fail_alloc_after && !--iso->fail_alloc_after)
		return true;
#endif
	return false;
}

/* Allocate and record a directory page for @level entries around @addr. */
static void *iso_alloc_ptpage(struct asi *iso, enum asi_level level,
			      unsigned long addr, unsigned long replaced)
{
	struct iso_ptpage *pt;

	if (iso_should_fail(iso))
		return NULL;
	pt = kzalloc(sizeof(*pt), iso->gfp);
	if (!pt)
		return NULL;
	pt->table = (void *)get_zeroed_page(iso->gfp);
	if (!pt->table)
		goto err_free;
	if (xa_insert(&iso->ptpages, PHYS_PFN(__pa(pt->table)), pt, iso->gfp))
		goto err_page;
	pt->level = level;
	pt->base = addr;
	pt->replaced = replaced;
	pt->pending = true;
	list_add_tail(&pt->list, &iso->ptpage_list);
	iso->nr_ptpages++;
	atomic_long_inc(&iso_total_ptpages);
	return pt->table;

err_page:
	free_page((unsigned long)pt->table);
err_free:
	kfree(pt);
	return NULL;
}

/**
 * iso_free_ptpage() - free a directory page and its record
 * @iso: the instance
 * @pt: the record, unlinked from the table
 */
void iso_free_ptpage(struct asi *iso, struct iso_ptpage *pt)
{
	xa_erase(&iso->ptpages, PHYS_PFN(__pa(pt->table)));
	list_del(&pt->list);
	free_page((unsigned long)pt->table);
	kfree(pt);
	iso->nr_ptpages--;
	atomic_long_dec(&iso_total_ptpages);
}

/*
 * Make the directory page the @slot_level entry @slot points to ours: allocate it when missing,
 * clone it when it belongs to the core.  Returns the table, NULL when @slot
 * is a leaf or points to a page of the kernel's own table (the address is
 * mapped by a coarser range already), or an ERR_PTR.
 */
static void *iso_alloc_level(struct asi *iso, unsigned long *slot,
			     enum asi_level slot_level, unsigned long addr)
{
	enum asi_level level = iso_next_level(slot_level);
	unsigned long val = READ_ONCE(*slot);
	void *table;

	if (!iso_present(val)) {
		table = iso_alloc_ptpage(iso, level, addr, 0);
		if (!table)
			return ERR_PTR(-ENOMEM);
		WRITE_ONCE(*slot, __pa(table) | _KERNPG_TABLE);
		return table;
	}
	if (iso_leaf(slot_level, val))
		return NULL;
	table = iso_table(val);
	if (iso_owns(iso, table))
		return table;
	if (!iso->shared || !iso_ptpage(iso->shared, table))
		return NULL;
	/* A core page: we add below it, so it becomes our own copy. */
	table = iso_alloc_ptpage(iso, level, addr, val);
	if (!table)
		return ERR_PTR(-ENOMEM);
	copy_page(table, iso_table(val));
	WRITE_ONCE(*slot, __pa(table) | (val & ~PTE_PFN_MASK));
	return table;
}

/**
 * iso_walk() - the slot for an address at a level
 * @iso: the instance
 * @addr: the address
 * @level: the level of the slot
 * @alloc: allocate missing directory pages, and clone the core's
 *
 * Without @alloc, the walk stops where nothing is mapped.
 *
 * Return: the slot in the restricted table; NULL when the address is not
 * reachable at @level (a leaf, or the kernel's own page, maps it above);
 * an ERR_PTR without memory.
 */
unsigned long *iso_walk(struct asi *iso, unsigned long addr,
			enum asi_level level, bool alloc)
{
	enum asi_level l = ASI_PGD;
	unsigned long *slot = iso_offset(iso->pgd, addr, l);

	while (l != level) {
		enum asi_level next = iso_next_level(l);
		unsigned long val = READ_ONCE(*slot);
		void *table;

		if (alloc) {
			table = iso_alloc_level(iso, slot, l, addr);
			if (IS_ERR_OR_NULL(table))
				return table;
		} else {
			if (!iso_present(val) || iso_leaf(l, val))
				return NULL;
			table = iso_table(val);
		}
		l = next;
		slot = iso_offset(table, addr, l);
	}
	return slot;
}

/**
 * iso_set_entry() - install an entry unless one is there
 * @slot: the slot
 * @val: the entry
 *
 * Return: 0 when installed or identical but for the A and D bits; -EBUSY
 * when a different entry is there.
 */
int iso_set_entry(unsigned long *slot, unsigned long val)
{
	unsigned long old = READ_ONCE(*slot);

	if (!old) {
		WRITE_ONCE(*slot, val);
		return 0;
	}
	return (old ^ val) & ~ISO_HW_BITS ? -EBUSY : 0;
}

/**
 * iso_slot_end() - where the entry of an address ends
 * @addr: the address
 * @level: the level of the entry
 * @end: the end of the range walked
 *
 * Return: the first address the next entry at @level maps, or @end if sooner.
 */
unsigned long iso_slot_end(unsigned long addr, enum asi_level level,
			   unsigned long end)
{
	unsigned long next = (addr | (iso_size(level) - 1)) + 1;

	return next && next < end ? next : end;
}

/* Walk from the top to the entry that links @pt's page. */
static unsigned long *iso_parent_slot(struct asi *iso, struct iso_ptpage *pt)
{
	enum asi_level l = ASI_PGD, parent = ASI_PGD;

	while (iso_next_level(l) != pt->level) {
		l = iso_next_level(l);
		parent = l;
	}
	return iso_walk(iso, pt->base, parent, false);
}

/*
 * Unlink @table and the pages above it that clearing left empty, bottom up,
 * and queue them on @freed: they may be freed only after a TLB flush.
 */
static void iso_prune(struct asi *iso, void *table, struct list_head *freed)
{
	struct iso_ptpage *pt;
	unsigned long *slot;

	while ((pt = iso_ptpage(iso, table)) && !pt->pending && !memchr_inv(table, 0, PAGE_SIZE)) {
		slot = iso_parent_slot(iso, pt);
		if (WARN_ON_ONCE(!slot || iso_table(READ_ONCE(*slot)) != table))
			return;
		WRITE_ONCE(*slot, pt->replaced);
		list_move(&pt->list, freed);
		table = (void *)((unsigned long)slot & PAGE_MASK);
	}
}

/**
 * iso_clear() - clear what no other range needs
 * @iso: the instance
 * @skip: the range being removed, or NULL
 * @start: the start of the range
 * @end: its end
 * @level: the level it was mapped at
 * @freed: where pages left empty go
 *
 * Clears, at @level, the entries of [@start, @end) that no range other than
 * @skip needs at that level.  Only entries in pages this instance owns are
 * written.  Finer ranges inside are the caller's business.
 */
void iso_clear(struct asi *iso, struct iso_range *skip, unsigned long start,
	       unsigned long end, enum asi_level level, struct list_head *freed)
{
	unsigned long addr, next, *slot;
	void *table;

	for (addr = start; addr < end; addr = next) {
		unsigned long first = addr & ~(iso_size(level) - 1);

		next = iso_slot_end(addr, level, end);
		if (iso_needed(iso, skip, first, first + (iso_size(level) - 1), level))
			continue;
		slot = iso_walk(iso, addr, level, false);
		if (!slot)
			continue;
		table = (void *)((unsigned long)slot & PAGE_MASK);
		if (!iso_owns(iso, table))
			continue;
		WRITE_ONCE(*slot, 0);
		iso_prune(iso, table, freed);
	}
}

static void iso_flush_ipi(void *unused)
{
	/* The interrupt left isolation: the next entry sees the new generation. */
	this_cpu_inc(asi_cpu.stats.flush_ipis);
}

/*
 * Make every CPU drop what it cached of @iso's table, which lost entries.
 * A new TLB generation makes each CPU flush its PCID for @iso the next time
 * it enters @iso; only CPUs on @iso right now get an IPI, whose interrupt
 * leaves isolation, and it is waited for.  Other CPUs, including those
 * running other VMs, are not disturbed.  Sleeps.
 */
static void iso_flush_tlb(struct asi *iso)
{
	cpumask_var_t cpus;
	int cpu;

	atomic64_inc(&iso->tlb_gen);
	/* Pairs with asi_enter(). */
	smp_mb__after_atomic();
	if (!zalloc_cpumask_var(&cpus, GFP_KERNEL)) {
		/* No room for a mask: every CPU then. */
		on_each_cpu(iso_flush_ipi, NULL, true);
		return;
	}
	for_each_online_cpu(cpu)
		if (READ_ONCE(per_cpu(asi_cpu, cpu).iso) == iso)
			__cpumask_set_cpu(cpu, cpus);
	if (!cpumask_empty(cpus)) {
		preempt_disable();
		/* Not this CPU: the caller is not isolated, it maps and unmaps. */
		smp_call_function_many(cpus, iso_flush_ipi, NULL, true);
		preempt_enable();
	}
	free_cpumask_var(cpus);
}

/**
 * iso_free_unlinked() - free unlinked pages once no TLB can walk them
 * @iso: the instance
 * @freed: the unlinked pages
 * @first: the first address they translated
 * @last: the last
 *
 * Flushes first: a VM's table where it may be cached, on the CPUs that run
 * it; the core, which changes only while no VM exists, and the tests'
 * instances, which are never loaded, the way kernel mappings are.
 */
void iso_free_unlinked(struct asi *iso, struct list_head *freed,
		       unsigned long first, unsigned long last)
{
	struct iso_ptpage *pt, *tmp;

	if (iso->shared)
		iso_flush_tlb(iso);
	else
		flush_tlb_kernel_range(first, last);
	list_for_each_entry_safe(pt, tmp, freed, list)
		iso_free_ptpage(iso, pt);
}

/**
 * iso_copy() - copy the kernel's entries for a range
 * @iso: the instance
 * @start: the start of the range
 * @end: its end
 * @level: the level to copy at
 * @clear: page bits the copy drops (_PAGE_RW: read-only)
 * @done: raised to where copying got, so that a failure can be undone
 *
 * Return: 0, -ENOMEM, or -EBUSY when the restricted table maps part of the
 * range differently.
 */
int iso_copy(struct asi *iso, unsigned long start, unsigned long end,
	     enum asi_level level, unsigned long clear, unsigned long *done)
{
	unsigned long addr, next, val, *slot;
	int ret = 0;

	for (addr = start; addr < end; addr = next) {
		next = iso_slot_end(addr, level, end);
		*done = max(*done, addr);
		val = iso_kernel_entry(addr, level);
		if (!val)
			continue;	/* a hole in the kernel mapping */
		slot = iso_walk(iso, addr, level, true);
		if (IS_ERR(slot))
			return PTR_ERR(slot);
		if (!slot) {
			/* Mapped by a coarser range already: fine if one covers it. */
			if (!iso_covered(iso, addr, next - 1))
				return -EBUSY;
			continue;
		}
		ret = iso_set_entry(slot, val & ~clear);
		if (ret)
			return ret;
	}
	*done = end;
	return ret;
}

/**
 * iso_settle_pending() - finish an operation on the table
 * @iso: the instance
 * @keep: it succeeded
 * @freed: where unlinked pages go when it failed
 *
 * On success the pages the operation linked become permanent; on failure
 * they are unlinked -- the parent entry gets back what it held -- newest
 * first, so that children go before their parents.
 */
void iso_settle_pending(struct asi *iso, bool keep, struct list_head *freed)
{
	struct iso_ptpage *pt, *tmp;
	unsigned long *slot;

	list_for_each_entry_safe_reverse(pt, tmp, &iso->ptpage_list, list) {
		if (!pt->pending)
			break;
		pt->pending = false;
		if (keep)
			continue;
		slot = iso_parent_slot(iso, pt);
		if (!WARN_ON_ONCE(!slot || iso_table(READ_ONCE(*slot)) != pt->table))
			WRITE_ONCE(*slot, pt->replaced);
		list_move(&pt->list, freed);
	}
}

/**
 * iso_undo_copy() - undo a failed copy
 * @iso: the instance
 * @skip: the range whose copy failed, or NULL for a new one
 * @start: the start of the range
 * @end: its end
 * @done: where copying got
 * @level: the level it copied at
 *
 * Clears what the copy installed and frees what it allocated.
 */
void iso_undo_copy(struct asi *iso, struct iso_range *skip, unsigned long start,
		   unsigned long end, unsigned long done, enum asi_level level)
{
	LIST_HEAD(freed);

	iso_clear(iso, skip, start, done, level, &freed);
	iso_settle_pending(iso, false, &freed);
	iso_free_unlinked(iso, &freed, start & ~(iso_size(level) - 1),
			  (end - 1) | (iso_size(level) - 1));
}

/**
 * iso_entry_addr() - the address an entry maps
 * @base: the first address its table maps
 * @i: the entry's index
 * @level: the table's level
 *
 * Return: the address, sign-extended at the top level.
 */
unsigned long iso_entry_addr(unsigned long base, unsigned int i, enum asi_level level)
{
	unsigned long addr = base + ((unsigned long)i << iso_shift(level));

	if (level == ASI_PGD)
		addr = (long)(addr << (64 - __VIRTUAL_MASK_SHIFT - 1)) >>
		       (64 - __VIRTUAL_MASK_SHIFT - 1);
	return addr;
}

/**
 * iso_mapped_bytes() - bytes a table maps
 * @table: the table
 * @level: its level
 * @first: the first entry to count
 * @last: the last
 *
 * Return: the bytes mapped below entries @first to @last, through shared
 * pages too.
 */
unsigned long iso_mapped_bytes(void *table, enum asi_level level,
			       unsigned int first, unsigned int last)
{
	unsigned long *e = table, total = 0;
	unsigned int i;

	for (i = first; i <= last; i++) {
		if (!iso_present(e[i]))
			continue;
		if (iso_leaf(level, e[i]))
			total += iso_size(level);
		else
			total += iso_mapped_bytes(iso_table(e[i]), iso_next_level(level),
						  0, PTRS_PER_PTE - 1);
	}
	return total;
}

/**
 * iso_mapped_total() - bytes an instance maps
 * @iso: the instance
 *
 * Return: the bytes its restricted table maps, the core's included.
 */
unsigned long iso_mapped_total(struct asi *iso)
{
	return iso_mapped_bytes(iso->pgd, ASI_PGD, KERNEL_PGD_BOUNDARY,
				PTRS_PER_PGD - 1);
}

/**
 * asi_is_mapped() - does an isolated address space map an address?
 * @iso: the instance
 * @addr: the address
 *
 * Return: true if the restricted page table translates @addr.
 */
bool asi_is_mapped(struct asi *iso, const void *addr)
{
	enum asi_level l = ASI_PGD;
	unsigned long a = (unsigned long)addr;
	unsigned long val = READ_ONCE(*iso_offset(iso->pgd, a, l));

	for (;;) {
		if (!iso_present(val))
			return false;
		if (iso_leaf(l, val))
			return true;
		l = iso_next_level(l);
		val = READ_ONCE(*iso_offset(iso_table(val), a, l));
	}
}
