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
 * asi_split_leaf() - a finer leaf cut from a huge one
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
unsigned long asi_split_leaf(unsigned long val, enum asi_level from,
			     unsigned long addr, enum asi_level level)
{
	unsigned long mask = from == ASI_PUD ? PHYSICAL_PUD_PAGE_MASK :
							PHYSICAL_PMD_PAGE_MASK;
	unsigned long phys = (val & mask) + (addr & (asi_size(from) - 1) & ~(asi_size(level) - 1));
	unsigned long flags = val & ~mask;

	if (level == ASI_PTE)
		return phys | pgprot_val(pgprot_large_2_4k(__pgprot(flags)));
	return phys | flags;
}

/**
 * asi_kernel_entry() - the kernel's entry for an address at a level
 * @addr: the address
 * @level: the level
 *
 * Read only: the kernel page table is never written.
 *
 * Return: a directory pointer or a leaf, as is, or a leaf derived from a
 * coarser huge leaf; 0 where the kernel maps nothing.
 */
unsigned long asi_kernel_entry(unsigned long addr, enum asi_level level)
{
	enum asi_level l = ASI_PGD;
	unsigned long val = asi_read(asi_offset(init_mm.pgd, addr, l), l);

	for (;;) {
		if (!asi_present(val))
			return 0;
		if (l == level)
			return val;
		if (asi_leaf(l, val))
			return asi_split_leaf(val, l, addr, level);
		l = asi_next_level(l);
		val = asi_read(asi_offset(asi_table(val), addr, l), l);
	}
}

/**
 * asi_ptpage() - the record of a directory page an instance allocated
 * @asi: the instance
 * @table: the page
 *
 * Return: the record, or NULL when @asi did not allocate @table.
 */
struct asi_ptpage *asi_ptpage(struct asi *asi, void *table)
{
	return xa_load(&asi->ptpages, PHYS_PFN(__pa(table)));
}

/**
 * asi_owns() - may an instance write a page-table page?
 * @asi: the instance
 * @table: the page
 *
 * Return: true for its restricted PGD and the pages it recorded.
 */
bool asi_owns(struct asi *asi, void *table)
{
	return table == (void *)asi->pgd || asi_ptpage(asi, table);
}

static bool asi_should_fail(struct asi *asi)
{
#ifdef CONFIG_ADDRESS_SPACE_ISOLATION_KUNIT_TEST
	if (asi->fail_alloc_after && !--asi->fail_alloc_after)
		return true;
#endif
	return false;
}

/* Allocate and record a directory page for @level entries around @addr. */
static void *asi_alloc_ptpage(struct asi *asi, enum asi_level level,
			      unsigned long addr, unsigned long replaced)
{
	struct asi_ptpage *pt;

	if (asi_should_fail(asi))
		return NULL;
	pt = kzalloc(sizeof(*pt), asi->gfp);
	if (!pt)
		return NULL;
	pt->table = (void *)get_zeroed_page(asi->gfp);
	if (!pt->table)
		goto err_free;
	if (xa_insert(&asi->ptpages, PHYS_PFN(__pa(pt->table)), pt, asi->gfp))
		goto err_page;
	pt->level = level;
	pt->base = addr;
	pt->replaced = replaced;
	pt->pending = true;
	list_add_tail(&pt->list, &asi->ptpage_list);
	asi->nr_ptpages++;
	atomic_long_inc(&asi_total_ptpages);
	return pt->table;

err_page:
	free_page((unsigned long)pt->table);
err_free:
	kfree(pt);
	return NULL;
}

/**
 * asi_free_ptpage() - free a directory page and its record
 * @asi: the instance
 * @pt: the record, unlinked from the table
 */
void asi_free_ptpage(struct asi *asi, struct asi_ptpage *pt)
{
	xa_erase(&asi->ptpages, PHYS_PFN(__pa(pt->table)));
	list_del(&pt->list);
	free_page((unsigned long)pt->table);
	kfree(pt);
	asi->nr_ptpages--;
	atomic_long_dec(&asi_total_ptpages);
}

/*
 * Make the directory page the @slot_level entry @slot points to ours: allocate it when missing,
 * clone it when it belongs to the core.  Returns the table, NULL when @slot
 * is a leaf or points to a page of the kernel's own table (the address is
 * mapped by a coarser range already), or an ERR_PTR.
 */
static void *asi_alloc_level(struct asi *asi, void *slot, enum asi_level slot_level,
			     unsigned long addr)
{
	enum asi_level level = asi_next_level(slot_level);
	unsigned long val = asi_read(slot, slot_level);
	void *table;

	if (!asi_present(val)) {
		table = asi_alloc_ptpage(asi, level, addr, 0);
		if (!table)
			return ERR_PTR(-ENOMEM);
		asi_write(slot, slot_level, __pa(table) | _KERNPG_TABLE);
		return table;
	}
	if (asi_leaf(slot_level, val))
		return NULL;
	table = asi_table(val);
	if (asi_owns(asi, table))
		return table;
	if (!asi->shared || !asi_ptpage(asi->shared, table))
		return NULL;
	/* A core page: we add below it, so it becomes our own copy. */
	table = asi_alloc_ptpage(asi, level, addr, val);
	if (!table)
		return ERR_PTR(-ENOMEM);
	copy_page(table, asi_table(val));
	asi_write(slot, slot_level, __pa(table) | (val & ~PTE_PFN_MASK));
	return table;
}

/**
 * asi_walk() - the slot for an address at a level
 * @asi: the instance
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
void *asi_walk(struct asi *asi, unsigned long addr, enum asi_level level, bool alloc)
{
	enum asi_level l = ASI_PGD;
	void *slot = asi_offset(asi->pgd, addr, l);

	while (l != level) {
		enum asi_level next = asi_next_level(l);
		unsigned long val = asi_read(slot, l);
		void *table;

		if (alloc) {
			table = asi_alloc_level(asi, slot, l, addr);
			if (IS_ERR_OR_NULL(table))
				return table;
		} else {
			if (!asi_present(val) || asi_leaf(l, val))
				return NULL;
			table = asi_table(val);
		}
		l = next;
		slot = asi_offset(table, addr, l);
	}
	return slot;
}

/**
 * asi_set_entry() - install an entry unless one is there
 * @slot: the slot
 * @level: its level
 * @val: the entry
 *
 * Return: 0 when installed or identical but for the A and D bits; -EBUSY
 * when a different entry is there.
 */
int asi_set_entry(void *slot, enum asi_level level, unsigned long val)
{
	unsigned long old = asi_read(slot, level);

	if (!old) {
		asi_write(slot, level, val);
		return 0;
	}
	return (old ^ val) & ~ASI_HW_BITS ? -EBUSY : 0;
}

/**
 * asi_slot_end() - where the entry of an address ends
 * @addr: the address
 * @level: the level of the entry
 * @end: the end of the range walked
 *
 * Return: the first address the next entry at @level maps, or @end if sooner.
 */
unsigned long asi_slot_end(unsigned long addr, enum asi_level level,
			   unsigned long end)
{
	unsigned long next = (addr | (asi_size(level) - 1)) + 1;

	return next && next < end ? next : end;
}

/* Walk from the top to the entry that links @pt's page, at *@level. */
static void *asi_parent_slot(struct asi *asi, struct asi_ptpage *pt, enum asi_level *level)
{
	enum asi_level l = ASI_PGD;

	while (asi_next_level(l) != pt->level)
		l = asi_next_level(l);
	*level = l;
	return asi_walk(asi, pt->base, l, false);
}

/*
 * Unlink @table and the pages above it that clearing left empty, bottom up,
 * and queue them on @freed: they may be freed only after a TLB flush.
 */
static void asi_prune(struct asi *asi, void *table, struct list_head *freed)
{
	struct asi_ptpage *pt;
	enum asi_level level;
	void *slot;

	while ((pt = asi_ptpage(asi, table)) && !pt->pending && !memchr_inv(table, 0, PAGE_SIZE)) {
		slot = asi_parent_slot(asi, pt, &level);
		if (WARN_ON_ONCE(!slot || asi_table(asi_read(slot, level)) != table))
			return;
		asi_write(slot, level, pt->replaced);
		list_move(&pt->list, freed);
		table = (void *)((unsigned long)slot & PAGE_MASK);
	}
}

/**
 * asi_clear() - clear what no other range needs
 * @asi: the instance
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
void asi_clear(struct asi *asi, struct asi_range *skip, unsigned long start,
	       unsigned long end, enum asi_level level, struct list_head *freed)
{
	unsigned long addr, next;
	void *table, *slot;

	for (addr = start; addr < end; addr = next) {
		unsigned long first = addr & ~(asi_size(level) - 1);

		next = asi_slot_end(addr, level, end);
		if (asi_needed(asi, skip, first, first + (asi_size(level) - 1), level))
			continue;
		slot = asi_walk(asi, addr, level, false);
		if (!slot)
			continue;
		table = (void *)((unsigned long)slot & PAGE_MASK);
		if (!asi_owns(asi, table))
			continue;
		asi_write(slot, level, 0);
		asi_prune(asi, table, freed);
	}
}

static void asi_flush_ipi(void *unused)
{
	/* The interrupt left isolation: the next entry sees the new generation. */
	this_cpu_inc(asi_cpu.stats.flush_ipis);
}

/*
 * Make every CPU drop what it cached of @asi's table, which lost entries.
 * A new TLB generation makes each CPU flush its PCID for @asi the next time
 * it enters @asi; only CPUs on @asi right now get an IPI, whose interrupt
 * leaves isolation, and it is waited for.  Other CPUs, including those
 * running other VMs, are not disturbed.  Sleeps.
 */
static void asi_flush_tlb(struct asi *asi)
{
	cpumask_var_t cpus;
	int cpu;

	atomic64_inc(&asi->tlb_gen);
	/* Pairs with asi_enter(). */
	smp_mb__after_atomic();
	if (!zalloc_cpumask_var(&cpus, GFP_KERNEL)) {
		/* No room for a mask: every CPU then. */
		on_each_cpu(asi_flush_ipi, NULL, true);
		return;
	}
	for_each_online_cpu(cpu)
		if (READ_ONCE(per_cpu(asi_cpu, cpu).asi) == asi)
			__cpumask_set_cpu(cpu, cpus);
	if (!cpumask_empty(cpus)) {
		preempt_disable();
		/* Not this CPU: the caller is not isolated, it maps and unmaps. */
		smp_call_function_many(cpus, asi_flush_ipi, NULL, true);
		preempt_enable();
	}
	free_cpumask_var(cpus);
}

/**
 * asi_sync_cpu_tables() - make each CPU's table follow the instance's own
 * @asi: the instance
 *
 * Every top-level slot of a CPU's table but the entry area's is the
 * instance's.  Called with the instance's lock held after each change to
 * its table: before the new entries are used, and before the flush that
 * lets unlinked pages go.
 */
void asi_sync_cpu_tables(struct asi *asi)
{
	pgd_t *pgd, val;
	int cpu, i;

	if (!asi->cpu_tables)
		return;
	lockdep_assert_held(&asi->lock);
	for_each_possible_cpu(cpu) {
		pgd = asi->cpu_tables[cpu].pgd;
		for (i = KERNEL_PGD_BOUNDARY; i < PTRS_PER_PGD; i++) {
			val = asi_cpu_table_entry(asi, cpu, i);
			if (pgd_val(pgd[i]) != pgd_val(val))
				set_pgd(&pgd[i], val);
		}
	}
}

/**
 * asi_free_unlinked() - free unlinked pages once no TLB can walk them
 * @asi: the instance
 * @freed: the unlinked pages
 * @first: the first address they translated
 * @last: the last
 *
 * Flushes first: a VM's table where it may be cached, on the CPUs that run
 * it; the core, which changes only while no VM exists, and the tests'
 * instances, which are never loaded, the way kernel mappings are.
 */
void asi_free_unlinked(struct asi *asi, struct list_head *freed,
		       unsigned long first, unsigned long last)
{
	struct asi_ptpage *pt, *tmp;

	asi_sync_cpu_tables(asi);
	if (asi->shared)
		asi_flush_tlb(asi);
	else
		flush_tlb_kernel_range(first, last);
	list_for_each_entry_safe(pt, tmp, freed, list)
		asi_free_ptpage(asi, pt);
}

/**
 * asi_copy() - copy the kernel's entries for a range
 * @asi: the instance
 * @start: the start of the range
 * @end: its end
 * @level: the level to copy at
 * @clear: page bits the copy drops (_PAGE_RW: read-only)
 * @done: raised to where copying got, so that a failure can be undone
 *
 * Return: 0, -ENOMEM, or -EBUSY when the restricted table maps part of the
 * range differently.
 */
int asi_copy(struct asi *asi, unsigned long start, unsigned long end,
	     enum asi_level level, unsigned long clear, unsigned long *done)
{
	unsigned long addr, next, val;
	void *slot;
	int ret = 0;

	for (addr = start; addr < end; addr = next) {
		next = asi_slot_end(addr, level, end);
		*done = max(*done, addr);
		val = asi_kernel_entry(addr, level);
		if (!val)
			continue;	/* a hole in the kernel mapping */
		slot = asi_walk(asi, addr, level, true);
		if (IS_ERR(slot))
			return PTR_ERR(slot);
		if (!slot) {
			/* Mapped by a coarser range already: fine if one covers it. */
			if (!asi_covered(asi, addr, next - 1))
				return -EBUSY;
			continue;
		}
		ret = asi_set_entry(slot, level, val & ~clear);
		if (ret)
			return ret;
	}
	*done = end;
	return ret;
}

/**
 * asi_settle_pending() - finish an operation on the table
 * @asi: the instance
 * @keep: it succeeded
 * @freed: where unlinked pages go when it failed
 *
 * On success the pages the operation linked become permanent; on failure
 * they are unlinked -- the parent entry gets back what it held -- newest
 * first, so that children go before their parents.  Each CPU's table then
 * follows.
 */
void asi_settle_pending(struct asi *asi, bool keep, struct list_head *freed)
{
	struct asi_ptpage *pt, *tmp;
	enum asi_level level;
	void *slot;

	list_for_each_entry_safe_reverse(pt, tmp, &asi->ptpage_list, list) {
		if (!pt->pending)
			break;
		pt->pending = false;
		if (keep)
			continue;
		slot = asi_parent_slot(asi, pt, &level);
		if (!WARN_ON_ONCE(!slot || asi_table(asi_read(slot, level)) != pt->table))
			asi_write(slot, level, pt->replaced);
		list_move(&pt->list, freed);
	}
	asi_sync_cpu_tables(asi);
}

/**
 * asi_undo_copy() - undo a failed copy
 * @asi: the instance
 * @skip: the range whose copy failed, or NULL for a new one
 * @start: the start of the range
 * @end: its end
 * @done: where copying got
 * @level: the level it copied at
 *
 * Clears what the copy installed and frees what it allocated.
 */
void asi_undo_copy(struct asi *asi, struct asi_range *skip, unsigned long start,
		   unsigned long end, unsigned long done, enum asi_level level)
{
	LIST_HEAD(freed);

	asi_clear(asi, skip, start, done, level, &freed);
	asi_settle_pending(asi, false, &freed);
	asi_free_unlinked(asi, &freed, start & ~(asi_size(level) - 1),
			  (end - 1) | (asi_size(level) - 1));
}

/**
 * asi_entry_addr() - the address an entry maps
 * @base: the first address its table maps
 * @i: the entry's index
 * @level: the table's level
 *
 * Return: the address, sign-extended at the top level.
 */
unsigned long asi_entry_addr(unsigned long base, unsigned int i, enum asi_level level)
{
	unsigned long addr = base + ((unsigned long)i << asi_shift(level));

	if (level == ASI_PGD)
		addr = (long)(addr << (64 - __VIRTUAL_MASK_SHIFT - 1)) >>
		       (64 - __VIRTUAL_MASK_SHIFT - 1);
	return addr;
}

/**
 * asi_mapped_bytes() - bytes a table maps
 * @table: the table
 * @level: its level
 * @first: the first entry to count
 * @last: the last
 *
 * Return: the bytes mapped below entries @first to @last, through shared
 * pages too.
 */
unsigned long asi_mapped_bytes(void *table, enum asi_level level,
			       unsigned int first, unsigned int last)
{
	unsigned long val, total = 0;
	unsigned int i;

	for (i = first; i <= last; i++) {
		val = asi_read(asi_slot(table, i), level);
		if (!asi_present(val))
			continue;
		if (asi_leaf(level, val))
			total += asi_size(level);
		else
			total += asi_mapped_bytes(asi_table(val), asi_next_level(level),
						  0, PTRS_PER_PTE - 1);
	}
	return total;
}

/**
 * asi_mapped_total() - bytes an instance maps
 * @asi: the instance
 *
 * Return: the bytes the table a CPU loads for @asi maps, the core's
 * included; for the core, with every CPU's entry area.
 */
unsigned long asi_mapped_total(struct asi *asi)
{
	pgd_t *pgd = asi_cpu_pgd(asi, cpumask_first(cpu_possible_mask));
	unsigned long total = asi_mapped_bytes(pgd, ASI_PGD, KERNEL_PGD_BOUNDARY,
					       PTRS_PER_PGD - 1);
	int cpu;

	if (asi->entry_areas)
		for_each_possible_cpu(cpu)
			total += asi_mapped_total(asi->entry_areas[cpu]);
	return total;
}

/**
 * asi_table_maps() - does a restricted table map an address?
 * @pgd: the table
 * @addr: the address
 *
 * Return: true if @pgd translates @addr.
 */
bool asi_table_maps(pgd_t *pgd, unsigned long addr)
{
	enum asi_level l = ASI_PGD;
	unsigned long val = asi_read(asi_offset(pgd, addr, l), l);

	for (;;) {
		if (!asi_present(val))
			return false;
		if (asi_leaf(l, val))
			return true;
		l = asi_next_level(l);
		val = asi_read(asi_offset(asi_table(val), addr, l), l);
	}
}

/**
 * asi_is_mapped() - does an isolated address space map an address?
 * @asi: the instance
 * @addr: the address
 *
 * Return: true if the restricted page table translates @addr, on some
 * CPU for an address of the cpu_entry_area.
 */
bool asi_is_mapped(struct asi *asi, const void *addr)
{
	unsigned long a = (unsigned long)addr;
	int cpu;

	if (!asi->cpu_tables || pgd_index(a) != asi_entry_area_slot())
		return asi_table_maps(asi->pgd, a);
	for_each_possible_cpu(cpu)
		if (asi_table_maps(asi->cpu_tables[cpu].pgd, a))
			return true;
	return false;
}
