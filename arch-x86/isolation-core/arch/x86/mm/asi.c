// SPDX-License-Identifier: GPL-2.0
/*
 * Address space isolation (ASI): instances, and the ranges they map.
 *
 * An isolation instance is a PGD of its own, the restricted table, which
 * maps only what its user maps (a hypervisor: what it needs to handle a
 * VM's VM-exits).  It is not an mm: switching to it writes CR3 while the
 * task's mm stays loaded (asi_switch.c).
 *
 * The restricted table copies ranges of the kernel page table (init_mm) at a
 * level chosen per range (asi_pgtable.c).  The core instance holds what
 * every instance needs (kernel text, per-CPU data of the entry code, the
 * user's modules, and in an instance per CPU that CPU's cpu_entry_area:
 * asi_core.c).  Every other instance starts
 * with references to the core's top-level entries and clones a core
 * directory page only where it adds a mapping below it, so the core's
 * page-table pages are shared by every instance and an instance's own
 * mappings are visible to it only.  The core does not change while other
 * instances exist.
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

struct asi *asi_core;
LIST_HEAD(asi_instances);		/* every instance, for reports */
DEFINE_MUTEX(asi_instances_lock);
atomic_t asi_nr_shared_users;	/* instances referencing asi_core */
atomic_long_t asi_total_ptpages;
static atomic64_t asi_next_id;		/* instance ids, for PCID slots */

DEFINE_STATIC_KEY_FALSE(asi_enabled_key);
EXPORT_SYMBOL_NS_GPL(asi_enabled_key, ASI);

/*
 * The switch's per-CPU state; the core maps it in every address space.
 * Not exported: modules see it only through the functions below.
 */
DEFINE_PER_CPU_PAGE_ALIGNED(struct asi_cpu, asi_cpu);

/*
 * A trip since asi_flush_trip() last ran here; with the entry code's
 * per-CPU data, which every address space maps.
 */
DEFINE_PER_CPU_ASI(bool, asi_trip);

static bool asi_overlaps(struct asi_range *r, unsigned long first, unsigned long last)
{
	return asi_range_first(r) <= last && first <= asi_range_last(r);
}

/**
 * asi_needed() - Does another range need an entry?
 * @asi: the instance
 * @skip: a range not to count, or NULL
 * @first: the first byte of the entry
 * @last: its last byte
 * @level: the level of the entry
 *
 * A range of @asi or of the core, other than @skip, at @level or a coarser
 * one, that maps something in [@first, @last].
 *
 * Return: true if one does.
 */
bool asi_needed(struct asi *asi, struct asi_range *skip, unsigned long first,
		unsigned long last, enum asi_level level)
{
	struct asi *owners[] = { asi, asi->shared };
	struct asi_range *r;
	int i;

	for (i = 0; i < ARRAY_SIZE(owners) && owners[i]; i++)
		list_for_each_entry(r, &owners[i]->ranges, list)
			if (r != skip && r->level <= level && asi_overlaps(r, first, last))
				return true;
	return false;
}

/**
 * asi_covered() - are bytes covered by ranges?
 * @asi: the instance
 * @first: the first byte
 * @last: the last byte
 *
 * Return: true if the union of the ranges of @asi and the core covers
 * [@first, @last].
 */
bool asi_covered(struct asi *asi, unsigned long first, unsigned long last)
{
	struct asi *owners[] = { asi, asi->shared };
	bool progress = true;
	struct asi_range *r;
	int i;

	while (progress) {
		progress = false;
		for (i = 0; i < ARRAY_SIZE(owners) && owners[i]; i++) {
			list_for_each_entry(r, &owners[i]->ranges, list) {
				if (asi_range_first(r) > first || first > asi_range_last(r))
					continue;
				if (asi_range_last(r) >= last)
					return true;
				first = asi_range_last(r) + 1;
				progress = true;
			}
		}
	}
	return false;
}

/* Does the restricted table still hold what the kernel maps for @r? */
static bool asi_range_current(struct asi *asi, struct asi_range *r)
{
	unsigned long addr, next, want;
	void *slot;

	for (addr = r->start; addr < r->end; addr = next) {
		next = asi_slot_end(addr, r->level, r->end);
		slot = asi_walk(asi, addr, r->level, false);
		want = asi_kernel_entry(addr, r->level) & ~r->clear;
		if (slot && ((asi_read(slot, r->level) ^ want) & ~ASI_HW_BITS))
			return false;
	}
	return true;
}

/*
 * Finer ranges inside a coarser one were recorded without entries of their
 * own; once the coarser one is gone they get them.
 */
static void asi_restore_finer(struct asi *asi, struct asi_range *gone)
{
	struct asi_range *r;
	unsigned long done;
	int ret;

	list_for_each_entry(r, &asi->ranges, list) {
		if (r->level <= gone->level ||
		    !asi_overlaps(r, asi_range_first(gone), asi_range_last(gone)))
			continue;
		done = r->start;
		ret = asi_copy(asi, r->start, r->end, r->level, r->clear, &done);
		if (!ret) {
			asi_settle_pending(asi, true, NULL);
			continue;
		}
		asi_undo_copy(asi, r, r->start, r->end, done, r->level);
		pr_warn("%s range %#lx-%#lx lost its mapping (%d)\n",
			r->owner, r->start, r->end, ret);
	}
}

static void asi_remove_range(struct asi *asi, struct asi_range *r)
{
	LIST_HEAD(freed);

	list_del(&r->list);
	asi_clear(asi, NULL, r->start, r->end, r->level, &freed);
	asi_free_unlinked(asi, &freed, asi_range_first(r), asi_range_last(r));
	asi_restore_finer(asi, r);
	kfree(r);
}

/*
 * Ranges over [start, end) whose memory the kernel mapped differently since
 * (freed and reallocated without being unmapped) are dropped.
 */
static bool asi_drop_stale(struct asi *asi, unsigned long start, unsigned long end)
{
	struct asi_range *r, *tmp;
	bool dropped = false;

	list_for_each_entry_safe(r, tmp, &asi->ranges, list) {
		if (asi_overlaps(r, start, end - 1) && !asi_range_current(asi, r)) {
			pr_warn("%s range %#lx-%#lx was remapped by the kernel; replacing it\n",
				r->owner, r->start, r->end);
			asi_remove_range(asi, r);
			dropped = true;
		}
	}
	return dropped;
}

static struct asi_range *asi_find_range(struct asi *asi, unsigned long ptr, bool shadow)
{
	struct asi_range *r;

	list_for_each_entry_reverse(r, &asi->ranges, list)
		if (r->ptr == ptr && r->shadow == shadow)
			return r;
	return NULL;
}

static bool asi_in_direct_map(unsigned long start, unsigned long end)
{
	return start < PAGE_OFFSET + (max_pfn << PAGE_SHIFT) && end > PAGE_OFFSET;
}

/**
 * asi_to_shadow() - the KASAN shadow of a range
 * @start: the start, made the shadow's
 * @end: the end, made the shadow's
 *
 * [*@start, *@end) becomes the part of KASAN's shadow that describes it;
 * unchanged without generic KASAN.
 */
void asi_to_shadow(unsigned long *start, unsigned long *end)
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
static bool asi_page_granular(unsigned long start, unsigned long end)
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
static void asi_clear_slack(unsigned long start, unsigned long end)
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
static int asi_map_range(struct asi *asi, const void *ptr, size_t size,
			 enum asi_level level, const char *owner, bool shadow,
			 enum asi_kind kind, unsigned long clear)
{
	unsigned long start = (unsigned long)ptr, end = (unsigned long)ptr + size;
	unsigned long done, obj_start, obj_end;
	struct asi_range *r;
	int ret;

	level = asi_norm_level(level);
	if (!size || level > ASI_PTE || end <= start || start < TASK_SIZE_MAX)
		return -EINVAL;
	if (shadow) {
		asi_to_shadow(&start, &end);
		level = ASI_PTE;
		owner = "KASAN shadow";
	}
	obj_start = start;
	obj_end = end;
	start = round_down(start, PAGE_SIZE);
	end = round_up(end, PAGE_SIZE);
	done = start;
	if (shadow || level != ASI_PTE || asi_page_granular(obj_start, obj_end)) {
		if (!shadow && level == ASI_PTE)
			asi_clear_slack(obj_start, obj_end);
		obj_start = start;
		obj_end = end;
	}
	/* A coarser copy of the direct map would map unrelated memory. */
	if (level != ASI_PTE && asi_in_direct_map(start, end))
		return -EINVAL;
	/* Each CPU's table takes the entry area's top-level entry from the core. */
	if (asi->cpu_tables && pgd_index(start) <= asi_entry_area_slot() &&
	    pgd_index(end - 1) >= asi_entry_area_slot())
		return -EINVAL;

	mutex_lock(&asi->lock);
	r = asi_find_range(asi, (unsigned long)ptr, shadow);
	if (r && r->end == end && r->level == level && r->clear == clear) {
		if (asi_range_current(asi, r)) {
			r->refcount++;
			ret = 0;
			goto out;
		}
		/* Freed and reallocated at the same address: map it anew. */
		asi_remove_range(asi, r);
	}

	r = kzalloc(sizeof(*r), asi->gfp);
	ret = -ENOMEM;
	if (!r)
		goto out;
	*r = (struct asi_range) {
		.ptr = (unsigned long)ptr, .start = start, .end = end,
		.obj_start = obj_start, .obj_end = obj_end, .bytes = size,
		.level = level, .owner = owner, .refcount = 1, .shadow = shadow,
		.kind = shadow ? ASI_KIND_OBJECT : kind, .clear = clear,
	};

	ret = asi_copy(asi, start, end, level, clear, &done);
	if (ret == -EBUSY && asi_drop_stale(asi, start, end))
		ret = asi_copy(asi, start, end, level, clear, &done);
	if (ret) {
		asi_undo_copy(asi, NULL, start, end, done, level);
		kfree(r);
		goto out;
	}
	asi_settle_pending(asi, true, NULL);
	list_add_tail(&r->list, &asi->ranges);
out:
	mutex_unlock(&asi->lock);
	return ret;
}

static void asi_unmap_range(struct asi *asi, const void *ptr, bool shadow)
{
	struct asi_range *r;

	mutex_lock(&asi->lock);
	r = asi_find_range(asi, (unsigned long)ptr, shadow);
	if (WARN(!r, "unmapping %p, which is not mapped\n", ptr))
		goto out;
	if (!--r->refcount)
		asi_remove_range(asi, r);
out:
	mutex_unlock(&asi->lock);
}

/**
 * asi_map_kind() - map an object, and its KASAN shadow where there is one
 * @asi: the instance
 * @ptr: the object
 * @size: its size
 * @level: the level to copy at
 * @owner: what it belongs to, for reports
 * @kind: what it is, for the audit
 * @clear: page bits the copy drops (_PAGE_RW: read-only)
 *
 * Return: 0 or a negative error; on error nothing stays mapped.
 */
int asi_map_kind(struct asi *asi, const void *ptr, size_t size,
		 enum asi_level level, const char *owner, enum asi_kind kind,
		 unsigned long clear)
{
	int ret = asi_map_range(asi, ptr, size, level, owner, false, kind, clear);

	if (ret || !asi->kasan_shadow)
		return ret;
	ret = asi_map_range(asi, ptr, size, level, owner, true, kind, 0);
	if (ret)
		asi_unmap_range(asi, ptr, false);
	return ret;
}

/**
 * asi_map_shadow() - map only the KASAN shadow of an object
 * @asi: the instance
 * @ptr: the object, which another instance maps
 * @size: its size
 * @owner: what it belongs to, for reports
 *
 * Return: 0 or a negative error; 0 without generic KASAN.
 */
int asi_map_shadow(struct asi *asi, const void *ptr, size_t size, const char *owner)
{
	if (!asi->kasan_shadow)
		return 0;
	return asi_map_range(asi, ptr, size, ASI_PTE, owner, true, ASI_KIND_OBJECT, 0);
}

/**
 * asi_map() - map a kernel buffer into an isolated address space
 * @asi: the isolation instance
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
int asi_map(struct asi *asi, const void *ptr, size_t size,
	    enum asi_level level, const char *owner)
{
	return asi_map_kind(asi, ptr, size, level, owner, ASI_KIND_OBJECT, 0);
}
EXPORT_SYMBOL_NS_GPL(asi_map, ASI);

/**
 * asi_unmap() - remove a buffer mapped by asi_map()
 * @asi: the isolation instance
 * @ptr: the pointer the buffer was mapped with
 *
 * Drops a reference; the last one clears the range, at the level it was
 * mapped at, except for pages another range still maps.
 */
void asi_unmap(struct asi *asi, const void *ptr)
{
	asi_unmap_range(asi, ptr, false);
	if (asi->kasan_shadow)
		asi_unmap_range(asi, ptr, true);
}
EXPORT_SYMBOL_NS_GPL(asi_unmap, ASI);

/**
 * asi_map_percpu_kind() - map every possible CPU's copy of a per-CPU object
 * @asi: the instance
 * @ptr: the per-CPU object
 * @size: its size
 * @owner: what it belongs to, for reports
 * @kind: what it is, for the audit
 *
 * Return: 0 or a negative error; on error nothing stays mapped.
 */
int asi_map_percpu_kind(struct asi *asi, void __percpu *ptr, size_t size,
			const char *owner, enum asi_kind kind)
{
	int cpu, failed, ret;

	for_each_possible_cpu(cpu) {
		ret = asi_map_kind(asi, per_cpu_ptr(ptr, cpu), size, ASI_PTE, owner,
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
		asi_unmap(asi, per_cpu_ptr(ptr, cpu));
	}
	return ret;
}

/**
 * asi_map_percpu() - map every possible CPU's copy of a per-CPU object
 * @asi: the isolation instance
 * @ptr: the per-CPU object
 * @size: its size
 * @owner: what the object belongs to
 *
 * Return: 0 or a negative error; on error nothing stays mapped.
 */
int asi_map_percpu(struct asi *asi, void __percpu *ptr, size_t size,
		   const char *owner)
{
	/*
	 * Dynamic per-CPU data owns its pages only when allocated as whole
	 * pages (SRCU's, with isolation asked for at boot): a shared page of
	 * it is counted apart.
	 */
	bool dynamic = (void __force *)ptr < (void *)__per_cpu_start ||
		       (void __force *)ptr >= (void *)__per_cpu_end;

	return asi_map_percpu_kind(asi, ptr, size, owner,
				   dynamic ? ASI_KIND_PERCPU : ASI_KIND_OBJECT);
}
EXPORT_SYMBOL_NS_GPL(asi_map_percpu, ASI);

/**
 * asi_unmap_percpu() - unmap what asi_map_percpu() mapped
 * @asi: the isolation instance
 * @ptr: the per-CPU object
 */
void asi_unmap_percpu(struct asi *asi, void __percpu *ptr)
{
	int cpu;

	for_each_possible_cpu(cpu)
		asi_unmap(asi, per_cpu_ptr(ptr, cpu));
}

/*
 * A restricted PGD: PGD_ALLOCATION_ORDER pages, so that with PTI the table
 * is the first of a pair, whose CR3 never has PTI_USER_PGTABLE_BIT set,
 * and PTI's entry code never mistakes it for a user CR3 to adjust.
 */
static pgd_t *asi_alloc_pgd(gfp_t gfp)
{
	pgd_t *pgd = (pgd_t *)__get_free_pages(gfp | __GFP_ZERO, PGD_ALLOCATION_ORDER);

	if (pgd)
		atomic_long_add(1 << PGD_ALLOCATION_ORDER, &asi_total_ptpages);
	return pgd;
}

static void asi_free_pgd(pgd_t *pgd)
{
	free_pages((unsigned long)pgd, PGD_ALLOCATION_ORDER);
	atomic_long_sub(1 << PGD_ALLOCATION_ORDER, &asi_total_ptpages);
}

/* Each CPU's copy of @asi's table (asi_cpu_table_entry()). */
static int asi_alloc_cpu_tables(struct asi *asi)
{
	struct asi_cpu_table *t;
	int cpu, i;

	asi->cpu_tables = kcalloc(nr_cpu_ids, sizeof(*asi->cpu_tables), asi->gfp);
	if (!asi->cpu_tables)
		return -ENOMEM;
	for_each_possible_cpu(cpu) {
		t = &asi->cpu_tables[cpu];
		t->pgd = asi_alloc_pgd(asi->gfp);
		if (!t->pgd)
			return -ENOMEM;
		t->pa = __pa(t->pgd);
		for (i = KERNEL_PGD_BOUNDARY; i < PTRS_PER_PGD; i++)
			t->pgd[i] = asi_cpu_table_entry(asi, cpu, i);
	}
	return 0;
}

/* Only the copies: what they point to is @asi's, or the core's. */
static void asi_free_cpu_tables(struct asi *asi)
{
	int cpu;

	if (!asi->cpu_tables)
		return;
	for_each_possible_cpu(cpu)
		if (asi->cpu_tables[cpu].pgd)
			asi_free_pgd(asi->cpu_tables[cpu].pgd);
	kfree(asi->cpu_tables);
	asi->cpu_tables = NULL;
}

/**
 * asi_alloc_instance() - create an instance that reports do not list
 * @shared: the core, whose top-level entries it references, or NULL for the core itself
 * @gfp: how to allocate its pages
 * @name: how audit findings call it
 *
 * With a core that has per-CPU entry areas, the instance gets a table per
 * CPU (struct asi::cpu_tables).
 *
 * Return: the instance, or NULL without memory.
 */
struct asi *asi_alloc_instance(struct asi *shared, gfp_t gfp, const char *name)
{
	struct asi *asi;

	asi = kzalloc(sizeof(*asi), gfp);
	if (!asi)
		return NULL;
	asi->pgd = asi_alloc_pgd(gfp);
	if (!asi->pgd) {
		kfree(asi);
		return NULL;
	}
	asi->pgd_pa = __pa(asi->pgd);
	asi->id = atomic64_inc_return(&asi_next_id);
	atomic64_set(&asi->tlb_gen, 1);
	asi->gfp = gfp;
	asi->kasan_shadow = IS_ENABLED(CONFIG_KASAN_GENERIC);
	mutex_init(&asi->lock);
	INIT_LIST_HEAD(&asi->list);
	xa_init(&asi->ptpages);
	INIT_LIST_HEAD(&asi->ptpage_list);
	INIT_LIST_HEAD(&asi->ranges);
	if (shared) {
		asi->shared = shared;
		atomic_inc(&asi_nr_shared_users);
		memcpy(asi->pgd + KERNEL_PGD_BOUNDARY, shared->pgd + KERNEL_PGD_BOUNDARY,
		       KERNEL_PGD_PTRS * sizeof(pgd_t));
	}
	strscpy(asi->name, name, sizeof(asi->name));
	if (shared && shared->entry_areas && asi_alloc_cpu_tables(asi)) {
		asi_destroy(asi);
		return NULL;
	}
	return asi;
}

/**
 * asi_create_instance() - create an instance that reports list
 * @shared: the core, whose top-level entries it references, or NULL for the core itself
 * @gfp: how to allocate its pages
 * @name: how reports call it
 *
 * Return: the instance, or NULL without memory.
 */
struct asi *asi_create_instance(struct asi *shared, gfp_t gfp,
				const char *name)
{
	struct asi *asi = asi_alloc_instance(shared, gfp, name);

	if (!asi)
		return NULL;
	mutex_lock(&asi_instances_lock);
	list_add_tail(&asi->list, &asi_instances);
	mutex_unlock(&asi_instances_lock);
	return asi;
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
	struct asi *asi;

	if (!asi_core)
		return ERR_PTR(-ENODEV);
	asi = asi_create_instance(asi_core, GFP_KERNEL_ACCOUNT, name);
	return asi ?: ERR_PTR(-ENOMEM);
}
EXPORT_SYMBOL_NS_GPL(asi_create, ASI);

/* A CPU that has @asi loaded, or -1. */
static int asi_loaded_on(struct asi *asi)
{
	int cpu;

	for_each_possible_cpu(cpu)
		if (READ_ONCE(per_cpu(asi_cpu, cpu).asi) == asi)
			return cpu;
	return -1;
}

/**
 * asi_destroy() - free an isolated address space
 * @asi: the instance, not loaded on any CPU; NULL is ignored
 *
 * Frees every page-table page the instance owns and every range it tracks.
 * No TLB flush is needed: a CPU that ran @asi keeps its translations and
 * paging-structure caches only under the restricted PCID it gave @asi, and
 * that PCID is flushed before it serves another instance (instance ids are
 * never reused).  Without PCIDs every CR3 write flushes them.
 *
 * Return: true when freed; false when a CPU still has @asi loaded, a bug:
 * the instance is then left allocated rather than freed under that CPU.
 */
bool asi_destroy(struct asi *asi)
{
	struct asi_ptpage *pt, *tmp;
	struct asi_range *r, *rtmp;
	int cpu;

	if (!asi)
		return true;
	cpu = asi_loaded_on(asi);
	if (cpu >= 0) {
		pr_err("%s is still loaded on CPU %d: left allocated, not freed\n",
		       asi->name, cpu);
		return false;
	}
	mutex_lock(&asi_instances_lock);
	list_del_init(&asi->list);
	mutex_unlock(&asi_instances_lock);
	list_for_each_entry_safe(r, rtmp, &asi->ranges, list) {
		list_del(&r->list);
		kfree(r);
	}
	/* Only our own pages; the core's and the kernel's are only referenced. */
	memset(asi->pgd + KERNEL_PGD_BOUNDARY, 0, KERNEL_PGD_PTRS * sizeof(pgd_t));
	list_for_each_entry_safe(pt, tmp, &asi->ptpage_list, list)
		asi_free_ptpage(asi, pt);
	xa_destroy(&asi->ptpages);
	asi_free_cpu_tables(asi);
	if (asi->entry_areas) {
		for_each_possible_cpu(cpu)
			asi_destroy(asi->entry_areas[cpu]);
		kfree(asi->entry_areas);
	}
	if (asi->shared)
		atomic_dec(&asi_nr_shared_users);
	asi_free_pgd(asi->pgd);
	kfree(asi);
	return true;
}
EXPORT_SYMBOL_NS_GPL(asi_destroy, ASI);

/**
 * asi_pgtable_pages() - page-table pages owned by isolation
 *
 * Return: the number of pages of every instance's PGDs (its own and each
 * CPU's) and directory pages, the core and its entry areas included.
 */
unsigned long asi_pgtable_pages(void)
{
	return atomic_long_read(&asi_total_ptpages);
}
EXPORT_SYMBOL_NS_GPL(asi_pgtable_pages, ASI);

/**
 * asi_map_task() - map what a task needs to run isolated
 * @asi: the isolation instance
 * @task: the task, with a stack
 *
 * Maps the task struct and the stack, and holds both until
 * asi_unmap_task(): memory that is mapped must not be freed and
 * reused by another task while it is.
 *
 * Return: 0 or a negative error; on error nothing is mapped or held.
 */
int asi_map_task(struct asi *asi, struct task_struct *task)
{
	void *stack = try_get_task_stack(task);
	int ret;

	if (!stack)
		return -ESRCH;
	get_task_struct(task);
	ret = asi_map_kind(asi, task, arch_task_struct_size, ASI_PTE, "task",
			   ASI_KIND_TASK, 0);
	if (ret)
		goto err;
	ret = asi_map(asi, stack, THREAD_SIZE, ASI_PTE, "task");
	if (ret) {
		asi_unmap(asi, task);
		goto err;
	}
	return 0;
err:
	put_task_struct(task);
	put_task_stack(task);
	return ret;
}
EXPORT_SYMBOL_NS_GPL(asi_map_task, ASI);

/**
 * asi_unmap_task() - undo asi_map_task()
 * @asi: the isolation instance
 * @task: the task
 */
void asi_unmap_task(struct asi *asi, struct task_struct *task)
{
	asi_unmap(asi, task_stack_page(task));
	asi_unmap(asi, task);
	put_task_stack(task);
	put_task_struct(task);
}
EXPORT_SYMBOL_NS_GPL(asi_unmap_task, ASI);

/**
 * asi_name() - the name an instance was created with
 * @asi: the instance
 *
 * Return: its name.
 */
const char *asi_name(struct asi *asi)
{
	return asi->name;
}
EXPORT_SYMBOL_NS_GPL(asi_name, ASI);
