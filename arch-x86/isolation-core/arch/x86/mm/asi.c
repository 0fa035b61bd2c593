// SPDX-License-Identifier: GPL-2.0
/*
 * Address space isolation (ASI): restricted kernel page tables.
 *
 * An isolation instance is a PGD of its own, the restricted table, which
 * maps only what its user maps (KVM: what it needs to handle a VM's
 * VM-exits).  It is not an mm: switching to it writes CR3 while the task's
 * mm stays loaded (asi_switch.c).
 *
 * The restricted table copies ranges of the kernel page table (init_mm) at a
 * level chosen per range: at that level the kernel's entry is referenced as
 * is, so below it the kernel's own page-table pages are shared, never
 * modified and never freed.  Every directory page an instance allocates is
 * recorded; a walk that would modify the table refuses to descend into a
 * page that is not recorded.
 *
 * The core instance holds what every instance needs (kernel text,
 * cpu_entry_area, per-CPU data of the entry code, the user's modules).
 * Every other instance (one per VM) starts with references to the core's
 * top-level entries and clones a core directory page only where it adds a
 * mapping below it, so the core's page-table pages are shared by every
 * instance and an instance's own mappings are visible to it only.  The
 * core does not change while other instances exist.
 *
 * Every mapped range is tracked as (pointer, start, end, level, owner).
 * Ranges may overlap: an entry is installed once and stays while any range
 * covers it; clearing a range clears, at the level it was mapped at, only
 * the entries no other range needs.
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

static struct asi *iso_core;
static LIST_HEAD(iso_instances);		/* every instance, for reports */
static DEFINE_MUTEX(iso_instances_lock);
static atomic_t iso_nr_shared_users;	/* instances referencing iso_core */
static atomic_long_t iso_total_ptpages;
static atomic64_t iso_next_id;		/* instance ids, for PCID slots */

DEFINE_STATIC_KEY_FALSE(asi_enabled_key);
EXPORT_SYMBOL_NS_GPL(asi_enabled_key, KVM);

/*
 * The switch's per-CPU state; the core maps it in every address space.
 * Not exported: modules see it only through the functions below.
 */
DEFINE_PER_CPU_PAGE_ALIGNED(struct asi_cpu, asi_cpu);

/* Flags ignored when comparing entries: the CPU sets them. */
#define ISO_HW_BITS	(_PAGE_ACCESSED | _PAGE_DIRTY)

static const char *const iso_level_names[] = { "pgd", "p4d", "pud", "pmd", "pte" };

static unsigned int iso_shift(enum asi_level level)
{
	switch (level) {
	case ASI_PGD:
		return PGDIR_SHIFT;
	case ASI_P4D:
		return P4D_SHIFT;
	case ASI_PUD:
		return PUD_SHIFT;
	case ASI_PMD:
		return PMD_SHIFT;
	default:
		return PAGE_SHIFT;
	}
}

static unsigned long iso_size(enum asi_level level)
{
	return 1UL << iso_shift(level);
}

/* With 4-level paging the P4D level is folded into the PGD. */
static enum asi_level iso_next_level(enum asi_level level)
{
	if (level == ASI_PGD && !pgtable_l5_enabled())
		return ASI_PUD;
	return level + 1;
}

static enum asi_level iso_norm_level(enum asi_level level)
{
	if (level == ASI_P4D && !pgtable_l5_enabled())
		return ASI_PGD;
	return level;
}

/* Every level of the x86-64 page table is a page of 512 64-bit entries. */
static unsigned long *iso_offset(void *table, unsigned long addr,
				 enum asi_level level)
{
	return (unsigned long *)table + ((addr >> iso_shift(level)) & (PTRS_PER_PTE - 1));
}

static bool iso_present(unsigned long val)
{
	return val & _PAGE_PRESENT;
}

/* A leaf maps memory; anything else present points to a directory page. */
static bool iso_leaf(enum asi_level level, unsigned long val)
{
	if (level == ASI_PTE)
		return true;
	if (level == ASI_PUD || level == ASI_PMD)
		return val & (_PAGE_PSE | _PAGE_DEVMAP);
	return false;
}

static void *iso_table(unsigned long val)
{
	return __va(val & PTE_PFN_MASK);
}

/*
 * An entry at @level equivalent to the huge leaf @val at the coarser level
 * @from for @addr: the kernel maps the direct map with huge pages, and
 * copying one at a finer level must not map the whole huge page.
 */
static unsigned long iso_split_leaf(unsigned long val, enum asi_level from,
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

/*
 * The kernel's entry for @addr at @level: a directory pointer or a leaf,
 * as is, or a leaf derived from a coarser huge leaf; 0 where the kernel
 * maps nothing.  Read only: the kernel page table is never written.
 */
static unsigned long iso_kernel_entry(unsigned long addr, enum asi_level level)
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

static struct iso_ptpage *iso_ptpage(struct asi *iso, void *table)
{
	return xa_load(&iso->ptpages, PHYS_PFN(__pa(table)));
}

/* Pages this instance may write: its restricted PGD and recorded pages. */
static bool iso_owns(struct asi *iso, void *table)
{
	return table == (void *)iso->pgd || iso_ptpage(iso, table);
}

static bool iso_should_fail(struct asi *iso)
{
#ifdef CONFIG_KVM_ADDRESS_SPACE_ISOLATION_KUNIT_TEST
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

static void iso_free_ptpage(struct asi *iso, struct iso_ptpage *pt)
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

/*
 * The slot for @addr at @level in the restricted table.  With @alloc,
 * missing directory pages are allocated (and core pages cloned); without,
 * the walk stops where nothing is mapped.  NULL when the address is not
 * reachable at @level (see iso_alloc_level()).
 */
static unsigned long *iso_walk(struct asi *iso, unsigned long addr,
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

/* Install @val unless an entry is there: identical is fine, different is refused. */
static int iso_set_entry(unsigned long *slot, unsigned long val)
{
	unsigned long old = READ_ONCE(*slot);

	if (!old) {
		WRITE_ONCE(*slot, val);
		return 0;
	}
	return (old ^ val) & ~ISO_HW_BITS ? -EBUSY : 0;
}

static bool iso_overlaps(struct iso_range *r, unsigned long first, unsigned long last)
{
	return r->first <= last && first <= r->last;
}

/*
 * Does a range of @iso or of the core, other than @skip, at @level or a
 * coarser one, map something in [first, last]?
 */
static bool iso_needed(struct asi *iso, struct iso_range *skip, unsigned long first,
		       unsigned long last, enum asi_level level)
{
	struct asi *owners[] = { iso, iso->shared };
	struct iso_range *r;
	int i;

	for (i = 0; i < ARRAY_SIZE(owners) && owners[i]; i++)
		list_for_each_entry(r, &owners[i]->ranges, list)
			if (r != skip && r->level <= level && iso_overlaps(r, first, last))
				return true;
	return false;
}

/* Is [first, last] covered by the union of the ranges of @iso and the core? */
static bool iso_covered(struct asi *iso, unsigned long first, unsigned long last)
{
	struct asi *owners[] = { iso, iso->shared };
	bool progress = true;
	struct iso_range *r;
	int i;

	while (progress) {
		progress = false;
		for (i = 0; i < ARRAY_SIZE(owners) && owners[i]; i++) {
			list_for_each_entry(r, &owners[i]->ranges, list) {
				if (r->first > first || first > r->last)
					continue;
				if (r->last >= last)
					return true;
				first = r->last + 1;
				progress = true;
			}
		}
	}
	return false;
}

static unsigned long iso_slot_end(unsigned long addr, enum asi_level level,
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

/*
 * Clear, at @level, the entries of [start, end) that no range other than
 * @skip needs at that level.  Only entries in pages this instance owns are
 * written; pages left empty go to @freed.  Finer ranges inside are the
 * caller's business.
 */
static void iso_clear(struct asi *iso, struct iso_range *skip, unsigned long start,
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

/*
 * Free unlinked pages once no TLB can walk them: flush [first, last] first.
 * A VM's table is flushed where it may be cached, the CPUs that run it; the
 * core, which changes only while no VM exists, and the tests' instances,
 * which are never loaded, the way kernel mappings are.
 */
static void iso_free_unlinked(struct asi *iso, struct list_head *freed,
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

/*
 * Copy the kernel's entries for [start, end) at @level, without the bits in
 * @clear (_PAGE_RW for a read-only copy).  *@done is raised to where
 * copying got, so that a failure can be undone up to there.
 */
static int iso_copy(struct asi *iso, unsigned long start, unsigned long end,
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

/* Does the restricted table still hold what the kernel maps for @r? */
static bool iso_range_current(struct asi *iso, struct iso_range *r)
{
	unsigned long addr, next, *slot;

	for (addr = r->start; addr < r->end; addr = next) {
		next = iso_slot_end(addr, r->level, r->end);
		slot = iso_walk(iso, addr, r->level, false);
		if (slot && ((READ_ONCE(*slot) ^ (iso_kernel_entry(addr, r->level) & ~r->clear)) &
			     ~ISO_HW_BITS))
			return false;
	}
	return true;
}

/*
 * Finish an operation: on success the pages it linked become permanent; on
 * failure they are unlinked -- the parent entry gets back what it held --
 * newest first, so that children go before their parents, onto @freed.
 */
static void iso_settle_pending(struct asi *iso, bool keep, struct list_head *freed)
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

/*
 * Undo a failed copy of [start, end) at @level, which got to @done: clear
 * what it installed, unlink what it allocated.
 */
static void iso_undo_copy(struct asi *iso, struct iso_range *skip, unsigned long start,
			  unsigned long end, unsigned long done, enum asi_level level)
{
	LIST_HEAD(freed);

	iso_clear(iso, skip, start, done, level, &freed);
	iso_settle_pending(iso, false, &freed);
	iso_free_unlinked(iso, &freed, start & ~(iso_size(level) - 1),
			  (end - 1) | (iso_size(level) - 1));
}

/*
 * Finer ranges inside a coarser one were recorded without entries of their
 * own; once the coarser one is gone they get them.
 */
static void iso_restore_finer(struct asi *iso, struct iso_range *gone)
{
	struct iso_range *r;
	unsigned long done;
	int ret;

	list_for_each_entry(r, &iso->ranges, list) {
		if (r->level <= gone->level || !iso_overlaps(r, gone->first, gone->last))
			continue;
		done = r->start;
		ret = iso_copy(iso, r->start, r->end, r->level, r->clear, &done);
		if (!ret) {
			iso_settle_pending(iso, true, NULL);
			continue;
		}
		iso_undo_copy(iso, r, r->start, r->end, done, r->level);
		pr_warn("%s range %#lx-%#lx lost its mapping (%d)\n",
			r->owner, r->start, r->end, ret);
	}
}

static void iso_remove_range(struct asi *iso, struct iso_range *r)
{
	LIST_HEAD(freed);

	list_del(&r->list);
	iso_clear(iso, NULL, r->start, r->end, r->level, &freed);
	iso_free_unlinked(iso, &freed, r->first, r->last);
	iso_restore_finer(iso, r);
	kfree(r);
}

/*
 * Ranges over [start, end) whose memory the kernel mapped differently since
 * (freed and reallocated without being unmapped) are dropped.
 */
static bool iso_drop_stale(struct asi *iso, unsigned long start, unsigned long end)
{
	struct iso_range *r, *tmp;
	bool dropped = false;

	list_for_each_entry_safe(r, tmp, &iso->ranges, list) {
		if (iso_overlaps(r, start, end - 1) && !iso_range_current(iso, r)) {
			pr_warn("%s range %#lx-%#lx was remapped by the kernel; replacing it\n",
				r->owner, r->start, r->end);
			iso_remove_range(iso, r);
			dropped = true;
		}
	}
	return dropped;
}

static struct iso_range *iso_find(struct asi *iso, unsigned long ptr, bool shadow)
{
	struct iso_range *r;

	list_for_each_entry_reverse(r, &iso->ranges, list)
		if (r->ptr == ptr && r->shadow == shadow)
			return r;
	return NULL;
}

static bool iso_in_direct_map(unsigned long start, unsigned long end)
{
	return start < PAGE_OFFSET + (max_pfn << PAGE_SHIFT) && end > PAGE_OFFSET;
}

/* [*start, *end) to the part of KASAN's shadow that describes it. */
static void iso_to_shadow(unsigned long *start, unsigned long *end)
{
#ifdef CONFIG_KASAN_GENERIC
	*start = (unsigned long)kasan_mem_to_shadow((void *)*start);
	*end = (unsigned long)kasan_mem_to_shadow((void *)(*end - 1)) + 1;
#endif
}

/*
 * Does [start, end) begin a page-granular allocation that it fills but for
 * the tail of its last page: a vmalloc area, or pages of the page allocator
 * (not reserved at boot), or a slab object of whole pages?  Then nothing
 * else can be put on its pages, and the audit counts them as the object's.
 * A slab object must be mapped from its start: __ksize() cannot tell.
 * Ranges copied at a coarser level, and KASAN's shadow, which only says
 * which bytes may be accessed, count as whole pages too.
 */
static bool iso_page_granular(unsigned long start, unsigned long end)
{
	struct vm_struct *area;
	struct page *page;
	size_t usable;

	if (!PAGE_ALIGNED(start))
		return false;
	if (is_vmalloc_addr((void *)start)) {
		area = find_vm_area((void *)start);
		return area && (unsigned long)area->addr == start &&
		       get_vm_area_size(area) == PAGE_ALIGN(end - start);
	}
	if (!virt_addr_valid(start))
		return false;
	page = virt_to_head_page((void *)start);
	/*
	 * A slab object whose usable size is whole pages: page-aligned caches
	 * and kmalloc() of a page or more, which is aligned to its size.
	 */
	if (PageSlab(page)) {
		usable = __ksize((void *)start);
		return IS_ALIGNED(usable, PAGE_SIZE) && usable >= end - start;
	}
	return !PageReserved(page) &&
	       end <= (unsigned long)page_address(page) + page_size(page);
}

/*
 * A slab object that owns its pages is mapped whole: clear the slack
 * beyond it, which may still hold what the pages held before they were
 * the slab's.  ksize() lets the slack be used.  Page-granular allocations
 * of other kinds are zeroed by those who map them.
 */
static void iso_clear_slack(unsigned long start, unsigned long end)
{
	if (is_vmalloc_addr((void *)start) || !virt_addr_valid(start) ||
	    !PageSlab(virt_to_head_page((void *)start)))
		return;
	if (ksize((void *)start) >= PAGE_ALIGN(end - start))
		memset((void *)end, 0, PAGE_ALIGN(end) - end);
}

/*
 * Map [ptr, ptr + size) at @level, or with @shadow the pages of its KASAN
 * shadow, as a range of its own found by the same @ptr; the entries
 * without the bits in @clear.
 */
static int iso_map(struct asi *iso, const void *ptr, size_t size,
		   enum asi_level level, const char *owner, bool shadow,
		   enum iso_kind kind, unsigned long clear)
{
	unsigned long start = (unsigned long)ptr, end = (unsigned long)ptr + size;
	unsigned long done, obj_start, obj_end;
	struct iso_range *r;
	int ret;

	level = iso_norm_level(level);
	if (!size || level > ASI_PTE || end <= start || start < TASK_SIZE_MAX)
		return -EINVAL;
	if (shadow) {
		iso_to_shadow(&start, &end);
		level = ASI_PTE;
		owner = "KASAN shadow";
	}
	obj_start = start;
	obj_end = end;
	start = round_down(start, PAGE_SIZE);
	end = round_up(end, PAGE_SIZE);
	done = start;
	if (shadow || level != ASI_PTE || iso_page_granular(obj_start, obj_end)) {
		if (!shadow && level == ASI_PTE)
			iso_clear_slack(obj_start, obj_end);
		obj_start = start;
		obj_end = end;
	}
	/* A coarser copy of the direct map would map unrelated memory. */
	if (level != ASI_PTE && iso_in_direct_map(start, end))
		return -EINVAL;

	mutex_lock(&iso->lock);
	r = iso_find(iso, (unsigned long)ptr, shadow);
	if (r && r->end == end && r->level == level && r->clear == clear) {
		if (iso_range_current(iso, r)) {
			r->refcount++;
			ret = 0;
			goto out;
		}
		/* Freed and reallocated at the same address: map it anew. */
		iso_remove_range(iso, r);
	}

	r = kzalloc(sizeof(*r), iso->gfp);
	ret = -ENOMEM;
	if (!r)
		goto out;
	*r = (struct iso_range) {
		.ptr = (unsigned long)ptr, .start = start, .end = end,
		.first = start & ~(iso_size(level) - 1),
		.last = (end - 1) | (iso_size(level) - 1),
		.obj_start = obj_start, .obj_end = obj_end, .bytes = size,
		.level = level, .owner = owner, .refcount = 1, .shadow = shadow,
		.kind = shadow ? ISO_KIND_OBJECT : kind, .clear = clear,
	};

	ret = iso_copy(iso, start, end, level, clear, &done);
	if (ret == -EBUSY && iso_drop_stale(iso, start, end))
		ret = iso_copy(iso, start, end, level, clear, &done);
	if (ret) {
		iso_undo_copy(iso, NULL, start, end, done, level);
		kfree(r);
		goto out;
	}
	iso_settle_pending(iso, true, NULL);
	list_add_tail(&r->list, &iso->ranges);
out:
	mutex_unlock(&iso->lock);
	return ret;
}

static void iso_unmap(struct asi *iso, const void *ptr, bool shadow)
{
	struct iso_range *r;

	mutex_lock(&iso->lock);
	r = iso_find(iso, (unsigned long)ptr, shadow);
	if (WARN(!r, "unmapping %p, which is not mapped\n", ptr))
		goto out;
	if (!--r->refcount)
		iso_remove_range(iso, r);
out:
	mutex_unlock(&iso->lock);
}

static int iso_map_kind(struct asi *iso, const void *ptr, size_t size,
			enum asi_level level, const char *owner, enum iso_kind kind,
			unsigned long clear)
{
	int ret = iso_map(iso, ptr, size, level, owner, false, kind, clear);

	if (ret || !iso->kasan_shadow)
		return ret;
	ret = iso_map(iso, ptr, size, level, owner, true, kind, 0);
	if (ret)
		iso_unmap(iso, ptr, false);
	return ret;
}

/**
 * asi_map() - map a kernel buffer into an isolated address space
 * @iso: the isolation instance
 * @ptr: start of the buffer; it need not be page aligned
 * @size: size of the buffer in bytes
 * @level: page-table level to copy the kernel's entries at
 * @owner: what the range belongs to, for reports ("VM", "vCPU", ...)
 *
 * Maps the pages of the buffer, from the start of its first page to the end
 * of its last one, by copying the kernel's page-table entries at @level.
 * Direct-map buffers can only be copied at PTE level.  Mapping the same
 * buffer again takes a reference; a buffer the kernel remapped since it was
 * mapped (freed and reallocated) is mapped anew.
 *
 * With generic KASAN, the pages of the buffer's shadow are mapped too:
 * instrumented code reads the shadow of every byte it touches.  Shadow
 * bytes only say which granules may be accessed, never what they hold.
 *
 * Return: 0, or -EINVAL, -ENOMEM, or -EBUSY when the restricted table maps
 * the address differently.
 */
int asi_map(struct asi *iso, const void *ptr, size_t size,
	    enum asi_level level, const char *owner)
{
	return iso_map_kind(iso, ptr, size, level, owner, ISO_KIND_OBJECT, 0);
}
EXPORT_SYMBOL_NS_GPL(asi_map, KVM);

/**
 * asi_unmap() - remove a buffer mapped by asi_map()
 * @iso: the isolation instance
 * @ptr: the pointer the buffer was mapped with
 *
 * Drops a reference; the last one clears the range, at the level it was
 * mapped at, except for pages another range still maps.
 */
void asi_unmap(struct asi *iso, const void *ptr)
{
	iso_unmap(iso, ptr, false);
	if (iso->kasan_shadow)
		iso_unmap(iso, ptr, true);
}
EXPORT_SYMBOL_NS_GPL(asi_unmap, KVM);

/* Map every possible CPU's copy of a per-CPU object, or nothing. */
static int iso_map_percpu(struct asi *iso, void __percpu *ptr, size_t size,
			  const char *owner, enum iso_kind kind)
{
	int cpu, failed, ret;

	for_each_possible_cpu(cpu) {
		ret = iso_map_kind(iso, per_cpu_ptr(ptr, cpu), size, ASI_PTE, owner,
				   kind, 0);
		if (ret)
			goto err;
	}
	return 0;
err:
	failed = cpu;
	for_each_possible_cpu(cpu) {
		if (cpu == failed)
			break;
		asi_unmap(iso, per_cpu_ptr(ptr, cpu));
	}
	return ret;
}

/**
 * asi_map_percpu() - map every possible CPU's copy of a per-CPU object
 * @iso: the isolation instance
 * @ptr: the per-CPU object
 * @size: its size
 * @owner: what the object belongs to
 *
 * Return: 0 or a negative error; on error nothing stays mapped.
 */
int asi_map_percpu(struct asi *iso, void __percpu *ptr, size_t size,
		   const char *owner)
{
	/*
	 * Dynamic per-CPU data owns its pages only when allocated as whole
	 * pages (SRCU's, with isolation asked for at boot): a shared page of
	 * it is counted apart.
	 */
	bool dynamic = (void __force *)ptr < (void *)__per_cpu_start ||
		       (void __force *)ptr >= (void *)__per_cpu_end;

	return iso_map_percpu(iso, ptr, size, owner,
			      dynamic ? ISO_KIND_PERCPU : ISO_KIND_OBJECT);
}
EXPORT_SYMBOL_NS_GPL(asi_map_percpu, KVM);

/**
 * asi_unmap_percpu() - unmap what asi_map_percpu() mapped
 * @iso: the isolation instance
 * @ptr: the per-CPU object
 */
void asi_unmap_percpu(struct asi *iso, void __percpu *ptr)
{
	int cpu;

	for_each_possible_cpu(cpu)
		asi_unmap(iso, per_cpu_ptr(ptr, cpu));
}

static struct asi *iso_create(struct asi *shared, gfp_t gfp,
			      const char *name)
{
	struct asi *iso;

	iso = kzalloc(sizeof(*iso), gfp);
	if (!iso)
		return NULL;
	/*
	 * PGD_ALLOCATION_ORDER pages: with PTI the table is then the first
	 * of a pair, whose CR3 never has PTI_USER_PGTABLE_BIT set, so PTI's
	 * entry code never mistakes it for a user CR3 to adjust.
	 */
	iso->pgd = (pgd_t *)__get_free_pages(gfp | __GFP_ZERO, PGD_ALLOCATION_ORDER);
	if (!iso->pgd) {
		kfree(iso);
		return NULL;
	}
	iso->pgd_pa = __pa(iso->pgd);
	iso->id = atomic64_inc_return(&iso_next_id);
	atomic64_set(&iso->tlb_gen, 1);
	iso->gfp = gfp;
	iso->kasan_shadow = IS_ENABLED(CONFIG_KASAN_GENERIC);
	mutex_init(&iso->lock);
	xa_init(&iso->ptpages);
	INIT_LIST_HEAD(&iso->ptpage_list);
	INIT_LIST_HEAD(&iso->ranges);
	atomic_long_add(1 << PGD_ALLOCATION_ORDER, &iso_total_ptpages);
	if (shared) {
		iso->shared = shared;
		atomic_inc(&iso_nr_shared_users);
		memcpy(iso->pgd + KERNEL_PGD_BOUNDARY, shared->pgd + KERNEL_PGD_BOUNDARY,
		       KERNEL_PGD_PTRS * sizeof(pgd_t));
	}
	strscpy(iso->name, name, sizeof(iso->name));
	mutex_lock(&iso_instances_lock);
	list_add_tail(&iso->list, &iso_instances);
	mutex_unlock(&iso_instances_lock);
	return iso;
}

/**
 * asi_create() - create an isolated address space for a VM
 * @name: how reports call it
 *
 * The new address space maps what the core maps, by reference.
 *
 * Return: the instance, or an ERR_PTR: -ENODEV when isolation is not set up.
 */
struct asi *asi_create(const char *name)
{
	struct asi *iso;

	if (!iso_core)
		return ERR_PTR(-ENODEV);
	iso = iso_create(iso_core, GFP_KERNEL_ACCOUNT, name);
	return iso ?: ERR_PTR(-ENOMEM);
}
EXPORT_SYMBOL_NS_GPL(asi_create, KVM);

/* A CPU that has @iso loaded, or -1. */
static int iso_loaded_on(struct asi *iso)
{
	int cpu;

	for_each_possible_cpu(cpu)
		if (READ_ONCE(per_cpu(asi_cpu, cpu).iso) == iso)
			return cpu;
	return -1;
}

/**
 * asi_destroy() - free an isolated address space
 * @iso: the instance, not loaded on any CPU; NULL is ignored
 *
 * Frees every page-table page the instance owns and every range it tracks.
 * No TLB flush is needed: a CPU that ran @iso keeps its translations and
 * paging-structure caches only under the restricted PCID it gave @iso, and
 * that PCID is flushed before it serves another instance (instance ids are
 * never reused).  Without PCIDs every CR3 write flushes them.
 *
 * Return: true when freed; false when a CPU still has @iso loaded, a bug:
 * the instance is then left allocated rather than freed under that CPU.
 */
bool asi_destroy(struct asi *iso)
{
	struct iso_ptpage *pt, *tmp;
	struct iso_range *r, *rtmp;
	int cpu;

	if (!iso)
		return true;
	cpu = iso_loaded_on(iso);
	if (cpu >= 0) {
		pr_err("%s is still loaded on CPU %d: left allocated, not freed\n",
		       iso->name, cpu);
		return false;
	}
	mutex_lock(&iso_instances_lock);
	list_del(&iso->list);
	mutex_unlock(&iso_instances_lock);
	list_for_each_entry_safe(r, rtmp, &iso->ranges, list) {
		list_del(&r->list);
		kfree(r);
	}
	/* Only our own pages; the core's and the kernel's are only referenced. */
	memset(iso->pgd + KERNEL_PGD_BOUNDARY, 0, KERNEL_PGD_PTRS * sizeof(pgd_t));
	list_for_each_entry_safe(pt, tmp, &iso->ptpage_list, list)
		iso_free_ptpage(iso, pt);
	xa_destroy(&iso->ptpages);
	if (iso->shared)
		atomic_dec(&iso_nr_shared_users);
	free_pages((unsigned long)iso->pgd, PGD_ALLOCATION_ORDER);
	atomic_long_sub(1 << PGD_ALLOCATION_ORDER, &iso_total_ptpages);
	kfree(iso);
	return true;
}
EXPORT_SYMBOL_NS_GPL(asi_destroy, KVM);

/**
 * asi_pgtable_pages() - page-table pages owned by isolation
 *
 * Return: the number of pages of every instance's PGD and directory pages,
 * core included.
 */
unsigned long asi_pgtable_pages(void)
{
	return atomic_long_read(&iso_total_ptpages);
}
EXPORT_SYMBOL_NS_GPL(asi_pgtable_pages, KVM);

/**
 * asi_map_task() - map what a task needs to run isolated
 * @iso: the isolation instance
 * @task: the task, with a stack
 *
 * Maps the task struct and the stack, and holds both until
 * asi_unmap_task(): memory that is mapped must not be freed and
 * reused by another task while it is.
 *
 * Return: 0 or a negative error; on error nothing is mapped or held.
 */
int asi_map_task(struct asi *iso, struct task_struct *task)
{
	void *stack = try_get_task_stack(task);
	int ret;

	if (!stack)
		return -ESRCH;
	get_task_struct(task);
	ret = iso_map_kind(iso, task, arch_task_struct_size, ASI_PTE, "task",
			   ISO_KIND_TASK, 0);
	if (ret)
		goto err;
	ret = asi_map(iso, stack, THREAD_SIZE, ASI_PTE, "task");
	if (ret) {
		asi_unmap(iso, task);
		goto err;
	}
	return 0;
err:
	put_task_struct(task);
	put_task_stack(task);
	return ret;
}
EXPORT_SYMBOL_NS_GPL(asi_map_task, KVM);

/**
 * asi_unmap_task() - undo asi_map_task()
 * @iso: the isolation instance
 * @task: the task
 */
void asi_unmap_task(struct asi *iso, struct task_struct *task)
{
	asi_unmap(iso, task_stack_page(task));
	asi_unmap(iso, task);
	put_task_stack(task);
	put_task_struct(task);
}
EXPORT_SYMBOL_NS_GPL(asi_unmap_task, KVM);

/* The address entry @i of a @level table for addresses from @base maps. */
static unsigned long iso_entry_addr(unsigned long base, unsigned int i, enum asi_level level)
{
	unsigned long addr = base + ((unsigned long)i << iso_shift(level));

	if (level == ASI_PGD)
		addr = (long)(addr << (64 - __VIRTUAL_MASK_SHIFT - 1)) >>
		       (64 - __VIRTUAL_MASK_SHIFT - 1);
	return addr;
}

/* Bytes the restricted table maps below @table at @level (shared pages too). */
static unsigned long iso_mapped_bytes(void *table, enum asi_level level,
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

static unsigned long iso_mapped_total(struct asi *iso)
{
	return iso_mapped_bytes(iso->pgd, ASI_PGD, KERNEL_PGD_BOUNDARY,
				PTRS_PER_PGD - 1);
}

/**
 * asi_name() - the name an instance was created with
 * @iso: the instance
 *
 * Return: its name.
 */
const char *asi_name(struct asi *iso)
{
	return iso->name;
}
EXPORT_SYMBOL_NS_GPL(asi_name, KVM);

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

/*
 * Bytes of [start, end) that no object of @iso or of the core stands for;
 * the first of them in *first.  The core's ranges do not change while
 * other instances exist.
 */
static unsigned long iso_uncovered(struct asi *iso, unsigned long start,
				   unsigned long end, unsigned long *first)
{
	struct asi *owners[] = { iso, iso->shared };
	unsigned long pos = start, gap = 0, reach, next;
	struct iso_range *r;
	int i;

	*first = 0;
	while (pos < end) {
		reach = pos;
		next = end;
		for (i = 0; i < ARRAY_SIZE(owners) && owners[i]; i++) {
			list_for_each_entry(r, &owners[i]->ranges, list) {
				if (r->obj_start <= pos && r->obj_end > reach)
					reach = r->obj_end;
				else if (r->obj_start > pos && r->obj_start < next)
					next = r->obj_start;
			}
		}
		if (reach > pos) {
			pos = reach;
			continue;
		}
		if (!gap)
			*first = pos;
		gap += next - pos;
		pos = next;
	}
	return gap;
}

/* Name what holds @addr, a byte mapped for no object. */
static void iso_audit_describe(struct seq_file *m, unsigned long addr)
{
	struct page *page;
	unsigned long off;
	int cpu;

	if (addr >= (unsigned long)_text && addr < (unsigned long)_end) {
		seq_printf(m, "kernel image %pS", (void *)addr);
		return;
	}
	for_each_possible_cpu(cpu) {
		off = addr - per_cpu_offset(cpu);
		if (off >= (unsigned long)__per_cpu_start && off < (unsigned long)__per_cpu_end) {
			seq_printf(m, "per-CPU data %#lx of CPU %d", off, cpu);
			return;
		}
	}
	if (is_vmalloc_or_module_addr((void *)addr) || !virt_addr_valid(addr)) {
		seq_printf(m, "%pS", (void *)addr);
		return;
	}
	page = virt_to_head_page((void *)addr);
	if (PageSlab(page))
		seq_puts(m, "slab memory");
	else if (PageBuddy(page) || !page_count(page))
		seq_puts(m, "free memory");
	else
		seq_printf(m, "a page (%pGp)", &page->flags);
}

/*
 * What the objects mapped on the page at @addr are: a known kind only if
 * all of them are of it, so that an ordinary object beside still counts.
 */
static enum iso_kind iso_page_kind(struct asi *iso, unsigned long addr)
{
	struct asi *owners[] = { iso, iso->shared };
	enum iso_kind kind = ISO_KIND_TASK;
	struct iso_range *r;
	int i;

	for (i = 0; i < ARRAY_SIZE(owners) && owners[i]; i++)
		list_for_each_entry(r, &owners[i]->ranges, list)
			if (r->obj_end > addr && r->obj_start < addr + PAGE_SIZE)
				kind = min(kind, r->kind);
	return kind;
}

/* Name the objects mapped on the page at @addr, with the bytes each covers. */
static void iso_audit_owners(struct seq_file *m, struct asi *iso, unsigned long addr)
{
	struct asi *owners[] = { iso, iso->shared };
	unsigned long from, to;
	struct iso_range *r;
	int i, n = 0;

	for (i = 0; i < ARRAY_SIZE(owners) && owners[i]; i++) {
		list_for_each_entry(r, &owners[i]->ranges, list) {
			if (r->obj_end <= addr || r->obj_start >= addr + PAGE_SIZE)
				continue;
			if (n++ == 4) {
				seq_puts(m, ", ...");
				return;
			}
			from = max(r->obj_start, addr) - addr;
			to = min(r->obj_end, addr + PAGE_SIZE) - addr;
			seq_printf(m, "%s%s +%#lx-%#lx", n > 1 ? ", " : "", r->owner, from, to);
		}
	}
}

/*
 * Task structs and SRCU's per-CPU data on pages of their own: a vCPU's
 * task and its VM's SRCU data are mapped into the VM's address space, and
 * the allocators pack them with others (each task with its saved FPU
 * registers).  The task cache is created at boot, long before the kvm
 * module reads its parameter, so the core reads it from the command line
 * too; without it there, isolation warns that both share their pages.
 * Asked for there, the kernel's mappings are made non-global too, as PTI
 * makes them, so that isolation works without PTI.
 */
bool asi_at_boot __ro_after_init;
/*
 * Why isolation runs degraded, or NULL: lockdep maps all of the kernel's
 * data, and slab debugging or KASAN puts metadata beside every slab
 * object, task structs among them.  Such a kernel tests isolation's paths;
 * it does not keep host data from guests.  It is tainted, and says why.
 */
static const char *iso_degraded __read_mostly;

/**
 * asi_degraded() - why isolation runs degraded on this kernel
 *
 * Return: the reason, or NULL when it does not.
 */
const char *asi_degraded(void)
{
	return iso_degraded;
}
EXPORT_SYMBOL_NS_GPL(asi_degraded, KVM);

struct iso_audit {
	struct asi *iso;
	struct seq_file *m;
	unsigned int lines;		/* findings still to describe */
	struct asi_audit *res;
	const u8 *needle;		/* asi_find() looks for it instead */
	size_t needle_len;
	u8 *buf;			/* a page, for it */
	unsigned long found;
};

/* Does the page of RAM at @pfn hold the needle?  Read it without faulting. */
static bool iso_page_holds(struct iso_audit *a, unsigned long pfn)
{
	const u8 *p, *last = a->buf + PAGE_SIZE - a->needle_len;

	if (!pfn_valid(pfn) || !page_is_ram(pfn) ||
	    copy_from_kernel_nofault(a->buf, pfn_to_kaddr(pfn), PAGE_SIZE))
		return false;
	for (p = a->buf; p <= last; p++) {
		p = memchr(p, a->needle[0], last - p + 1);
		if (!p)
			return false;
		if (!memcmp(p, a->needle, a->needle_len))
			return true;
	}
	return false;
}

/* One 4 KiB page the restricted table maps at @addr. */
static void iso_audit_page(struct iso_audit *a, unsigned long addr, unsigned long pfn)
{
	unsigned long first, n;

	if (a->needle) {
		a->found += iso_page_holds(a, pfn);
		return;
	}
	n = iso_uncovered(a->iso, addr, addr + PAGE_SIZE, &first);
	a->res->pages++;
	if (!n)
		return;
	if (n == PAGE_SIZE) {
		a->res->stray++;
	} else {
		a->res->shared++;
		switch (iso_page_kind(a->iso, addr)) {
		case ISO_KIND_PERCPU:
			a->res->shared_percpu++;
			break;
		case ISO_KIND_TASK:
			a->res->shared_task++;
			break;
		default:
			break;
		}
	}
	a->res->foreign_bytes += n;
	if (!a->m || !a->lines)
		return;
	a->lines--;
	seq_printf(a->m, "# %s: %s page %#lx (pfn %#lx", a->iso->name,
		   n == PAGE_SIZE ? "stray" : "shared", addr, pfn);
	if (n != PAGE_SIZE) {
		seq_puts(a->m, ", mapped for ");
		iso_audit_owners(a->m, a->iso, addr);
	}
	seq_printf(a->m, "), %lu bytes of no mapped object, the first at +%#lx: ", n, first - addr);
	iso_audit_describe(a->m, first);
	seq_putc(a->m, '\n');
}

/*
 * Is the leaf @val, which maps @addr at @level from @pfn on, still the
 * kernel's memory there, with no more rights than the kernel gives it?
 * Each 4 KiB page of it that the kernel unmapped or maps elsewhere now (its
 * object was freed, or moved) or that is free in the page allocator is
 * stale; one the kernel maps read-only, or that is writable and
 * executable, is writable.
 */
static void iso_audit_rights(struct iso_audit *a, unsigned long addr, enum asi_level level,
			     unsigned long val, unsigned long pfn)
{
	bool exec = !(val & _PAGE_NX) || !(__supported_pte_mask & _PAGE_NX);
	unsigned long p, k;
	const char *what;

	for (p = 0; p < iso_size(level); p += PAGE_SIZE, pfn++) {
		k = iso_kernel_entry(addr + p, ASI_PTE);
		if (!k || (k & PTE_PFN_MASK) >> PAGE_SHIFT != pfn ||
		    (pfn_valid(pfn) && PageBuddy(pfn_to_page(pfn)))) {
			a->res->stale++;
			what = "stale";
		} else if ((val & _PAGE_RW) && !(k & _PAGE_RW)) {
			a->res->writable++;
			what = "writable where the kernel's is read-only";
		} else if ((val & _PAGE_RW) && exec) {
			a->res->writable++;
			what = "writable and executable";
		} else {
			continue;
		}
		if (!a->m || !a->lines)
			continue;
		a->lines--;
		seq_printf(a->m, "# %s: %s page %#lx (pfn %#lx, the kernel's entry %#lx)\n",
			   a->iso->name, what, addr + p, pfn, k);
	}
}

static void iso_audit_table(struct iso_audit *a, void *table, enum asi_level level,
			    unsigned long base)
{
	unsigned long *e = table, addr, first, size = iso_size(level), pfn, p;
	unsigned int i;

	for (i = 0; i < PTRS_PER_PTE; i++) {
		addr = iso_entry_addr(base, i, level);
		if (!iso_present(e[i]))
			continue;
		if (!iso_leaf(level, e[i])) {
			iso_audit_table(a, iso_table(e[i]), iso_next_level(level), addr);
			continue;
		}
		pfn = (e[i] & PTE_PFN_MASK & ~(size - 1)) >> PAGE_SHIFT;
		if (!a->needle)
			iso_audit_rights(a, addr, level, e[i], pfn);
		/* A large leaf that objects cover whole: no need to look closer. */
		if (size > PAGE_SIZE && !a->needle &&
		    !iso_uncovered(a->iso, addr, addr + size, &first)) {
			a->res->pages += size >> PAGE_SHIFT;
			continue;
		}
		for (p = 0; p < size; p += PAGE_SIZE) {
			iso_audit_page(a, addr + p, pfn + (p >> PAGE_SHIFT));
			cond_resched();
		}
	}
}

static bool iso_maps_any(struct asi *iso, const void *ptr, size_t size)
{
	unsigned long a, end = (unsigned long)ptr + size;

	lockdep_assert_held(&iso->lock);
	for (a = (unsigned long)ptr & PAGE_MASK; ptr && a < end; a += PAGE_SIZE)
		if (asi_is_mapped(iso, (void *)a))
			return true;
	return false;
}

/**
 * asi_maps_any() - does an isolated address space map part of a buffer?
 * @iso: the instance
 * @ptr: the buffer, or NULL
 * @size: its size
 *
 * Return: true if the restricted page table translates a page of the buffer.
 */
bool asi_maps_any(struct asi *iso, const void *ptr, size_t size)
{
	bool ret;

	/* The instance's own tasks may unmap, and free table pages, meanwhile. */
	mutex_lock(&iso->lock);
	ret = iso_maps_any(iso, ptr, size);
	mutex_unlock(&iso->lock);
	return ret;
}
EXPORT_SYMBOL_NS_GPL(asi_maps_any, KVM);

/**
 * asi_maps_allocation() - does an isolated address space map part of an allocation?
 * @iso: the instance
 * @ptr: the start of a slab object, a vmalloc area or pages of the page allocator
 *
 * Return: true if the restricted page table translates a page of the
 * whole allocation, its slack included.
 */
bool asi_maps_allocation(struct asi *iso, const void *ptr)
{
	struct vm_struct *area;
	size_t size = PAGE_SIZE;
	struct page *page;

	if (is_vmalloc_addr(ptr)) {
		area = find_vm_area(ptr);
		if (area)
			size = get_vm_area_size(area);
	} else if (virt_addr_valid(ptr)) {
		page = virt_to_head_page(ptr);
		size = PageSlab(page) ? __ksize(ptr) : page_size(page);
	}
	return asi_maps_any(iso, ptr, size);
}
EXPORT_SYMBOL_NS_GPL(asi_maps_allocation, KVM);

/* The bottom of @cpu's hard-IRQ stack, or NULL. */
static void *iso_irq_stack(int cpu)
{
	void *top = per_cpu(hardirq_stack_ptr, cpu);

	return top ? top + 8 - IRQ_STACK_SIZE : NULL;
}

/*
 * No CPU's hard-IRQ stack may be mapped: it holds the stale frames of
 * whatever that CPU handled, and interrupts leave isolation before they
 * switch to it.
 */
static void iso_audit_irq_stacks(struct asi *iso, struct asi_audit *res)
{
	int cpu;

	for_each_online_cpu(cpu)
		res->irq_stacks += iso_maps_any(iso, iso_irq_stack(cpu), IRQ_STACK_SIZE);
}

/*
 * The tasks mapped with asi_map_task(), which may have exited,
 * and every other task on the system, none of whose task struct or stack
 * pages may be mapped.
 */
static void iso_audit_tasks(struct asi *iso, struct asi_audit *res)
{
	struct task_struct *g, *t;
	struct iso_range *r;
	bool own;

	list_for_each_entry(r, &iso->ranges, list)
		res->tasks += r->kind == ISO_KIND_TASK;
	rcu_read_lock();
	for_each_process_thread(g, t) {
		own = false;
		list_for_each_entry(r, &iso->ranges, list)
			own |= r->kind == ISO_KIND_TASK && r->ptr == (unsigned long)t;
		if (!own && (iso_maps_any(iso, t, arch_task_struct_size) ||
			     iso_maps_any(iso, READ_ONCE(t->stack), THREAD_SIZE)))
			res->other_tasks++;
	}
	rcu_read_unlock();
}

/*
 * What page-exclusive allocation costs the instance: the bytes of its
 * objects' pages that the objects do not use, by owner.
 */
static void iso_audit_padding(struct seq_file *m, struct asi *iso)
{
	struct { const char *owner; unsigned long bytes; } pad[4] = {};
	struct iso_range *r;
	int i;

	list_for_each_entry(r, &iso->ranges, list) {
		if (r->shadow || r->obj_end - r->obj_start <= r->bytes)
			continue;
		/* The last slot takes any owner beyond the first ones. */
		for (i = 0; i < ARRAY_SIZE(pad) - 1; i++)
			if (!pad[i].owner || !strcmp(pad[i].owner, r->owner))
				break;
		if (pad[i].owner && strcmp(pad[i].owner, r->owner))
			pad[i].owner = "other";
		pad[i].owner = pad[i].owner ?: r->owner;
		pad[i].bytes += r->obj_end - r->obj_start - r->bytes;
	}
	seq_printf(m, "# %s: bytes of its objects' pages the objects do not use:", iso->name);
	for (i = 0; i < ARRAY_SIZE(pad) && pad[i].owner; i++)
		seq_printf(m, " %s %lu", pad[i].owner, pad[i].bytes);
	seq_putc(m, '\n');
}

/**
 * asi_audit() - is every mapped byte one that the instance may map?
 * @iso: the instance
 * @m: where to describe findings as "# " lines, or NULL
 * @max_lines: how many findings to describe at most
 * @res: what the audit counted
 *
 * Walks every present leaf of the restricted table, the core's included,
 * and classifies each mapped byte: it belongs to an object mapped for @iso
 * or the core, or it does not.  A page of bytes of no mapped object is a
 * finding: "stray" when no object is on it at all, "shared" when a mapped
 * object shares it with something else (another allocation, another CPU's
 * or the kernel's variables, free memory).  Objects are their exact bytes,
 * except page-granular allocations, which own their pages whole.  Then
 * looks at every task: none but those mapped with asi_map_task()
 * may have a page of its task struct or stack mapped.  Every leaf must
 * still map what the kernel maps at its address (not stale) with no more
 * rights (not writable where the kernel's mapping is read-only, never
 * writable and executable), and no CPU's hard-IRQ stack may be mapped.
 *
 * Return: the number of findings: stray, shared, stale and writable pages,
 * and mapped hard-IRQ stacks.
 */
unsigned long asi_audit(struct asi *iso, struct seq_file *m,
			unsigned int max_lines, struct asi_audit *res)
{
	struct iso_audit a = { .iso = iso, .m = m, .lines = max_lines, .res = res };

	memset(res, 0, sizeof(*res));
	mutex_lock(&iso->lock);
	iso_audit_table(&a, iso->pgd, ASI_PGD, 0);
	iso_audit_tasks(iso, res);
	iso_audit_irq_stacks(iso, res);
	if (m)
		iso_audit_padding(m, iso);
	mutex_unlock(&iso->lock);
	return res->stray + res->shared + res->stale + res->writable + res->irq_stacks;
}
EXPORT_SYMBOL_NS_GPL(asi_audit, KVM);

/**
 * asi_find() - count the mapped pages that hold some bytes
 * @iso: the instance
 * @needle: the bytes, a secret that a test planted somewhere
 * @len: their number, 1 to PAGE_SIZE
 *
 * Reads every mapped page of RAM through the direct map, the core's
 * included.  Bytes that straddle two pages are not found.
 *
 * Return: the number of mapped 4 KiB pages that hold @needle, or a
 * negative error.
 */
long asi_find(struct asi *iso, const void *needle, size_t len)
{
	struct asi_audit res;
	struct iso_audit a = { .iso = iso, .res = &res, .needle = needle, .needle_len = len };

	if (!len || len > PAGE_SIZE)
		return -EINVAL;
	a.buf = kmalloc(PAGE_SIZE, GFP_KERNEL);
	if (!a.buf)
		return -ENOMEM;
	mutex_lock(&iso->lock);
	iso_audit_table(&a, iso->pgd, ASI_PGD, 0);
	mutex_unlock(&iso->lock);
	kfree(a.buf);
	return a.found;
}
EXPORT_SYMBOL_NS_GPL(asi_find, KVM);

#if IS_ENABLED(CONFIG_PTDUMP_DEBUGFS)
/**
 * asi_ptdump() - dump every isolated address space with ptdump
 * @m: the seq_file of /sys/kernel/debug/page_tables/asi
 *
 * The restricted table of each instance, core first, walked as ptdump
 * walks the kernel's.
 */
void asi_ptdump(struct seq_file *m)
{
	struct asi *iso;

	mutex_lock(&iso_instances_lock);
	list_for_each_entry(iso, &iso_instances, list) {
		seq_printf(m, "---[ asi: %s ]---\n", iso->name);
		mutex_lock(&iso->lock);
		ptdump_walk_pgd_table_debugfs(m, iso->pgd);
		mutex_unlock(&iso->lock);
	}
	mutex_unlock(&iso_instances_lock);
}
#endif

/**
 * asi_ranges_show() - show every mapped range
 * @m: the debugfs "ranges" file
 * @v: unused
 *
 * One line per range of every address space: its owner, start and end,
 * size and the page-table level it is copied at.
 *
 * Return: 0.
 */
int asi_ranges_show(struct seq_file *m, void *v)
{
	struct asi *iso;
	struct iso_range *r;

	seq_puts(m, "# instance owner start end bytes level\n");
	mutex_lock(&iso_instances_lock);
	list_for_each_entry(iso, &iso_instances, list) {
		mutex_lock(&iso->lock);
		list_for_each_entry(r, &iso->ranges, list)
			seq_printf(m, "%s %s %#lx %#lx %lu %s\n", iso->name, r->owner, r->first,
				   r->last + 1, r->last - r->first + 1, iso_level_names[r->level]);
		mutex_unlock(&iso->lock);
	}
	mutex_unlock(&iso_instances_lock);
	return 0;
}
EXPORT_SYMBOL_NS_GPL(asi_ranges_show, KVM);

/*
 * What the kernel maps, for comparison, less KASAN's shadow: most of that
 * maps one zero page through the same tables billions of times over.
 */
static unsigned long iso_kernel_mapped_bytes(void)
{
	unsigned long total = 0;
	unsigned int i;

	for (i = KERNEL_PGD_BOUNDARY; i < PTRS_PER_PGD; i++) {
#ifdef CONFIG_KASAN
		if (i >= pgd_index(KASAN_SHADOW_START) && i <= pgd_index(KASAN_SHADOW_END - 1))
			continue;
#endif
		total += iso_mapped_bytes(init_mm.pgd, ASI_PGD, i, i);
	}
	return total;
}

/* What the core maps, by the kind of memory, for the summary. */
enum iso_area {
	ISO_AREA_TEXT, ISO_AREA_RODATA, ISO_AREA_DATA, ISO_AREA_PERCPU,
	ISO_AREA_ENTRY, ISO_AREA_MODULES, ISO_AREA_SHADOW, ISO_AREA_OTHER,
	ISO_NR_AREAS
};

static const char *const iso_area_names[ISO_NR_AREAS] = {
	"text", "rodata", "data", "percpu", "entry_area", "modules", "kasan_shadow", "other",
};

static bool iso_in(unsigned long addr, const void *start, const void *end)
{
	return addr >= (unsigned long)start && addr < (unsigned long)end;
}

static enum iso_area iso_area(unsigned long addr)
{
	if (iso_in(addr, _text, _etext))
		return ISO_AREA_TEXT;
	if (iso_in(addr, __start_rodata, __end_rodata))
		return ISO_AREA_RODATA;
	if (iso_in(addr, _sdata, _edata) || iso_in(addr, __bss_start, __bss_stop))
		return ISO_AREA_DATA;
	if (is_kernel_percpu_address(addr) || is_module_percpu_address(addr))
		return ISO_AREA_PERCPU;
	if (addr >= CPU_ENTRY_AREA_BASE && addr - CPU_ENTRY_AREA_BASE < CPU_ENTRY_AREA_MAP_SIZE)
		return ISO_AREA_ENTRY;
	if (addr >= MODULES_VADDR && addr < MODULES_END)
		return ISO_AREA_MODULES;
#ifdef CONFIG_KASAN
	if (addr >= KASAN_SHADOW_START && addr < KASAN_SHADOW_END)
		return ISO_AREA_SHADOW;
#endif
	return ISO_AREA_OTHER;
}

/* Add the bytes mapped below @table at @level to @bytes, by kind. */
static void iso_count_areas(void *table, enum asi_level level, unsigned long base,
			    unsigned long *bytes)
{
	unsigned long *e = table, addr, p;
	unsigned int i;

	for (i = level == ASI_PGD ? KERNEL_PGD_BOUNDARY : 0; i < PTRS_PER_PTE; i++) {
		addr = iso_entry_addr(base, i, level);
		if (!iso_present(e[i]))
			continue;
		if (!iso_leaf(level, e[i])) {
			iso_count_areas(iso_table(e[i]), iso_next_level(level), addr, bytes);
			continue;
		}
		for (p = 0; p < iso_size(level); p += PAGE_SIZE)
			bytes[iso_area(addr + p)] += PAGE_SIZE;
	}
}

/**
 * asi_show_summary() - show the sizes of the address spaces
 * @m: the debugfs "stats" file
 *
 * What the core and each VM map, and their page-table pages, against what
 * the kernel itself maps; what the core maps by kind of memory.
 */
void asi_show_summary(struct seq_file *m)
{
	unsigned long kernel, bytes[ISO_NR_AREAS] = {};
	struct asi *iso;
	int i, n = 0;

	mutex_lock(&iso_instances_lock);
	list_for_each_entry(iso, &iso_instances, list) {
		mutex_lock(&iso->lock);
		seq_printf(m, "mapped_kib_%s %lu\n", iso->name, iso_mapped_total(iso) >> 10);
		seq_printf(m, "pagetable_pages_%s %lu\n", iso->name,
			   iso->nr_ptpages + (1 << PGD_ALLOCATION_ORDER));
		mutex_unlock(&iso->lock);
		n++;
	}
	if (iso_core) {
		mutex_lock(&iso_core->lock);
		iso_count_areas(iso_core->pgd, ASI_PGD, 0, bytes);
		mutex_unlock(&iso_core->lock);
		for (i = 0; i < ISO_NR_AREAS; i++)
			seq_printf(m, "core_kib_%s %lu\n", iso_area_names[i], bytes[i] >> 10);
	}
	mutex_unlock(&iso_instances_lock);
	kernel = iso_kernel_mapped_bytes();
	seq_printf(m, "mapped_kib_kernel %lu\n", kernel >> 10);
	seq_printf(m, "instances %d\n", n);
}
EXPORT_SYMBOL_NS_GPL(asi_show_summary, KVM);

/*
 * What every VM needs of the per-CPU data: what the entry code and the
 * VM-entry and VM-exit paths touch while isolated.  Each of these fills
 * its pages, so nothing else is mapped with it: the variables defined with
 * DEFINE_PER_CPU_ASI(), on pages of their own; the page-aligned
 * TSS, GDT and our own state; and the first per-CPU page, which holds only
 * fixed_percpu_data (the stack canary), followed by page alignment.
 */
static int iso_map_core_percpu(struct asi *iso)
{
	static const struct {
		void __percpu *ptr;
		size_t size;
	} vars[] = {
		/* DEFINE_PER_CPU_ASI(): the entry code, VM-entry and VM-exit */
		{ (void __percpu __force *)__per_cpu_asi_start, 0 },
		/* The entry code's stack pointers; cpu_entry_area maps it for PTI */
		{ &cpu_tss_rw, sizeof(cpu_tss_rw) },
		/* SVM reloads TR after VM-exit, which reads the GDT */
		{ &gdt_page, sizeof(gdt_page) },
		/* This layer's own state, read by every entry and leave */
		{ &asi_cpu, sizeof(asi_cpu) },
		/* The stack canary, read by every function with a protector */
		{ &fixed_percpu_data, PAGE_SIZE },
#ifdef CONFIG_LOCKDEP
		/* Lock tracking, on every lock operation */
		{ &lockdep_recursion, sizeof(lockdep_recursion) },
#endif
#ifdef CONFIG_TRACE_IRQFLAGS
		/* Interrupt flag tracing, on every local_irq_*() */
		{ &hardirqs_enabled, sizeof(hardirqs_enabled) },
		{ &hardirq_context, sizeof(hardirq_context) },
#endif
	};
	size_t size;
	int i, ret;

	for (i = 0; i < ARRAY_SIZE(vars); i++) {
		size = vars[i].size ?: __per_cpu_asi_end - __per_cpu_asi_start;
		ret = asi_map_percpu(iso, vars[i].ptr, size, "core");
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * Kernel data read on the VM-entry and VM-exit paths while isolated: what
 * is defined __asi_data, on pages of its own (the CPU masks that
 * RCU's and lockdep's checks read; bp_desc and tp_vec, which a static key
 * flipped on another CPU makes poke_int3_handler() read at any instruction
 * being patched), and the tracepoint strings (TPS()), read as arguments
 * even when tracing is off, which the linker script page-aligns too.
 */
static int iso_map_core_data(struct asi *iso)
{
	size_t size = __end_asi_data - __start_asi_data;
	int ret;

	/* __asi_data: CPU masks, and the text-patching state poke_int3_handler() reads */
	ret = asi_map(iso, __start_asi_data, size, ASI_PTE,
		      "core");
	/* The string pointers tracepoint_string() loads, in RCU's calls on VM-entry */
	size = PAGE_ALIGN((unsigned long)__stop___tracepoint_str -
			  (unsigned long)__start___tracepoint_str);
	if (!ret && size)
		ret = asi_map(iso, __start___tracepoint_str, size, ASI_PTE,
			      "core");
#ifdef CONFIG_LOCKDEP
	/*
	 * Lock tracking reads and writes lockdep's own state (classes, chains,
	 * traces: lockdep.c's static arrays) and the lockdep_map of every
	 * static lock, anywhere in .data and .bss, on each lock operation and
	 * interrupt flag change.  So a lockdep kernel maps all of them: it
	 * tests isolation's paths, it does not keep host data from guests.
	 */
	if (!ret)
		ret = asi_map(iso, _sdata, _edata - _sdata, ASI_PTE, "lockdep");
	if (!ret)
		ret = asi_map(iso, __bss_start, __bss_stop - __bss_start,
			      ASI_PTE, "lockdep");
#ifdef CONFIG_UNWINDER_ORC
	/* Recording a new dependency records a stack trace: ORC's tables. */
	if (!ret)
		ret = asi_map(iso, __start_orc_unwind_ip,
			      orc_lookup_end - __start_orc_unwind_ip, ASI_PTE,
			      "lockdep");
#endif
	/* The same for per-CPU data: lockdep's, and its checkers' beside it. */
	if (!ret)
		ret = asi_map_percpu(iso, (void __percpu __force *)__per_cpu_start,
				     __per_cpu_end - __per_cpu_start, "lockdep");
#endif
	return ret;
}

/*
 * A module's code and data whole, with the kernel's permissions: text,
 * read-only data and data read-only after init are copied without the
 * write bit, since the module asking may still be in its init function,
 * whose end makes its .data..ro_after_init read-only in the kernel's table
 * and would leave a copy taken now writable.
 */
static int iso_map_module(struct asi *iso, struct module *mod)
{
	const struct module_layout *l = &mod->core_layout;
	int ret;

	ret = iso_map_kind(iso, l->base, l->ro_after_init_size, ASI_PTE, "core",
			   ISO_KIND_OBJECT, _PAGE_RW);
	if (ret)
		return ret;
	if (l->size > l->ro_after_init_size) {
		ret = asi_map(iso, l->base + l->ro_after_init_size,
			      l->size - l->ro_after_init_size, ASI_PTE, "core");
		if (ret)
			return ret;
	}
	if (!mod->percpu_size)
		return 0;
	/*
	 * Whole pages, from ASI_MODULE_PERCPU_PAGES(): otherwise the
	 * pages hold other modules' or the kernel's per-CPU data too.
	 */
	if (!PAGE_ALIGNED(per_cpu_ptr(mod->percpu, 0)) || !PAGE_ALIGNED(mod->percpu_size)) {
		pr_warn("not enabled: the %s module's per-CPU data is not on pages of its own\n",
			mod->name);
		return -EINVAL;
	}
	return iso_map_percpu(iso, mod->percpu, mod->percpu_size, "core", ISO_KIND_OBJECT);
}

static int iso_map_core(struct asi *iso, struct module *const *mods,
			unsigned int nr_mods, const char **what)
{
	unsigned int i;
	int ret;

	/* Everything that runs: entry code, VM-entry and VM-exit, handlers */
	*what = "kernel text";
	ret = asi_map(iso, _text, _etext - _text, ASI_PMD, "core");
	if (ret)
		return ret;
	/* Constants, jump tables, __per_cpu_offset, exception tables */
	*what = "kernel rodata";
	ret = asi_map(iso, __start_rodata, __end_rodata - __start_rodata,
		      ASI_PMD, "core");
	if (ret)
		return ret;
	/*
	 * The entry code's IDT, GDT, entry stack, TSS and exception stacks;
	 * and the debug stores and PEBS/BTS buffers, which the CPU writes
	 * through whatever table is loaded when a counter samples host code.
	 */
	*what = "cpu_entry_area";
	ret = asi_map(iso, (void *)CPU_ENTRY_AREA_BASE, CPU_ENTRY_AREA_MAP_SIZE,
		      ASI_P4D, "core");
	if (ret)
		return ret;
	*what = "per-CPU data";
	ret = iso_map_core_percpu(iso);
	if (ret)
		return ret;
	*what = "kernel data";
	ret = iso_map_core_data(iso);
	if (ret)
		return ret;
	/* kvm and the vendor module: the exit handlers and their data */
	*what = "modules";
	for (i = 0; i < nr_mods && !ret; i++)
		ret = iso_map_module(iso, mods[i]);
	return ret;
}

static int __init iso_parse_cmdline(char *arg)
{
	/* A bool module parameter without a value is true. */
	if (!arg) {
		asi_at_boot = true;
		return 0;
	}
	return kstrtobool(arg, &asi_at_boot);
}
early_param("kvm.address_space_isolation", iso_parse_cmdline);

/**
 * asi_task_struct_size() - the size of task structs
 * @size: the size of a task struct with its FPU state
 *
 * Called once by the FPU code, after early parameters are parsed and
 * before fork_init() creates the task struct cache.  A cache of objects
 * of whole pages lays each object on pages of its own, and
 * arch_dup_task_struct() zeroes what follows the task struct.
 *
 * Return: @size, rounded up to whole pages with
 * kvm.address_space_isolation=1 on the kernel command line.
 */
int __init asi_task_struct_size(int size)
{
	return asi_exclusive_size(size);
}

/**
 * asi_exclusive_size() - the size to allocate for an object isolation maps
 * @size: the size of the object
 *
 * For objects that code outside KVM allocates and a VM's address space
 * maps (each VM's SRCU per-CPU data): allocated at this size, and aligned
 * to it, the object shares its pages with nothing.
 *
 * Return: @size, rounded up to whole pages with
 * kvm.address_space_isolation=1 on the kernel command line.
 */
size_t asi_exclusive_size(size_t size)
{
	return asi_at_boot ? PAGE_ALIGN(size) : size;
}
EXPORT_SYMBOL_NS_GPL(asi_exclusive_size, KVM);

/*
 * Does every task struct start a page?  The task cache lays them out so
 * unless the slab puts debugging metadata after each (slab debugging,
 * KASAN), which moves all but the first of a slab off their pages.
 */
static bool iso_tasks_page_aligned(void)
{
	struct task_struct *g, *t;
	bool aligned = true;

	rcu_read_lock();
	for_each_process_thread(g, t)
		aligned &= PAGE_ALIGNED(t);
	rcu_read_unlock();
	return aligned;
}

/**
 * asi_setup() - build the core isolated address space and enable isolation
 * @mods: the modules whose code, data and per-CPU data every instance maps
 *	whole: the caller's own and those it calls while isolated
 * @nr_mods: how many
 *
 * Isolation must have been asked for on the kernel command line
 * (kvm.address_space_isolation=1): only then are task structs and SRCU
 * data on pages of their own, and the kernel's mappings not global (so
 * that its TLB entries do not outlive the switch to a restricted table)
 * where PTI does not make them so.
 *
 * Return: 0 when isolation is enabled, else a negative error, after saying why.
 */
int asi_setup(struct module *const *mods, unsigned int nr_mods)
{
	const char *what = "the core address space";
	unsigned int i;
	int ret = -ENOMEM;

	/*
	 * Asked for at boot, the kernel lays out for isolation what a VM maps
	 * besides KVM's own objects: task structs and SRCU data on pages of
	 * their own and, without PTI, kernel mappings that are not global.
	 * Asked for any later, all of that shares its pages with what a VM may
	 * not see.
	 */
	if (!asi_at_boot) {
		pr_warn("not enabled: task structs, SRCU data and the kernel's mappings are laid out for isolation only when it is asked for at boot: pass kvm.address_space_isolation=1 on the kernel command line\n");
		return -EOPNOTSUPP;
	}
	/*
	 * Code built in sets up before mark_rodata_ro(): text and read-only
	 * data would be copied writable, with the init pages, and its data is
	 * not in a module's sections to map.
	 */
	for (i = 0; i < nr_mods; i++) {
		if (!mods[i]) {
			pr_warn("not enabled: the code that asked is built into the kernel (build it as a module)\n");
			return -EOPNOTSUPP;
		}
	}
	if (WARN_ON(iso_core))
		return -EBUSY;

	iso_core = iso_create(NULL, GFP_KERNEL, "core");
	if (!iso_core)
		goto err;
	ret = iso_map_core(iso_core, mods, nr_mods, &what);
	if (ret)
		goto err;

	static_branch_enable(&asi_enabled_key);
	if (IS_ENABLED(CONFIG_LOCKDEP))
		iso_degraded = "lockdep maps all of the kernel's data (CONFIG_LOCKDEP)";
	else if (!iso_tasks_page_aligned())
		iso_degraded = "slab debugging or KASAN makes task structs share pages";
	if (iso_degraded) {
		add_taint(TAINT_AUX, LOCKDEP_STILL_OK);
		pr_warn("degraded, the kernel is tainted: %s\n", iso_degraded);
	}
	pr_info("Running with isolated address space: core maps %lu KiB, %lu page-table pages\n",
		iso_mapped_total(iso_core) >> 10, asi_pgtable_pages());
	return 0;
err:
	pr_err("not enabled: mapping %s failed (%d)\n", what, ret);
	asi_destroy(iso_core);
	iso_core = NULL;
	return ret;
}
EXPORT_SYMBOL_NS_GPL(asi_setup, KVM);

/**
 * asi_teardown() - disable isolation and free the core
 *
 * Called when KVM goes away; every VM's instance is gone by then.
 */
void asi_teardown(void)
{
	int cpu;

	if (!iso_core)
		return;
	/* With the key off, interrupts would not leave a CPU still isolated. */
	for_each_possible_cpu(cpu) {
		if (READ_ONCE(per_cpu(asi_cpu, cpu).iso)) {
			WARN(1, "CPU %d is still isolated: isolation stays enabled\n", cpu);
			return;
		}
	}
	static_branch_disable(&asi_enabled_key);
	WARN_ON(atomic_read(&iso_nr_shared_users));
	asi_destroy(iso_core);
	iso_core = NULL;
	pr_info("isolated address space disabled\n");
}
EXPORT_SYMBOL_NS_GPL(asi_teardown, KVM);

#ifdef CONFIG_KVM_ADDRESS_SPACE_ISOLATION_KUNIT_TEST
#include "asi_test.c"
#endif
