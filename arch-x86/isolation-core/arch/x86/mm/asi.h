/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Address space isolation (ASI): the page-table core's structures, which the
 * switch (asi_switch.c) reads; the switch calls nothing here.
 */
#ifndef __X86_MM_ASI_H
#define __X86_MM_ASI_H

#include <linux/atomic.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/pgtable.h>
#include <linux/xarray.h>

#include <asm/asi.h>

/* A directory page an instance allocated, indexed by its pfn. */
struct iso_ptpage {
	struct list_head list;
	void *table;
	enum asi_level level;	/* of the entries in this page */
	unsigned long base;		/* an address the page translates */
	unsigned long replaced;		/* parent entry before we linked it */
	bool pending;			/* linked by the map in progress */
};

/* What a range holds, for the audit's findings. */
enum iso_kind {
	ISO_KIND_OBJECT,		/* an allocation of its own, or kernel data */
	ISO_KIND_PERCPU,		/* a CPU's copy of a dynamic per-CPU object */
	ISO_KIND_TASK,			/* a task struct */
};

/*
 * A mapped range: the caller's pointer, its page span, its level, and what
 * its entries at that level map: first and last byte, [first, last].  The
 * audit compares what is mapped with [obj_start, obj_end): the bytes the
 * range stands for.
 */
struct iso_range {
	struct list_head list;
	unsigned long ptr;
	unsigned long start, end;
	unsigned long first, last;
	unsigned long obj_start, obj_end;
	size_t bytes;			/* the object's own, as mapped */
	enum asi_level level;
	const char *owner;
	unsigned int refcount;
	bool shadow;			/* the KASAN shadow of the range at ptr */
	enum iso_kind kind;
	unsigned long clear;		/* bits its copy drops: _PAGE_RW, read-only */
};

struct asi {
	struct list_head list;		/* on iso_instances */
	char name[24];			/* "core", or the VM's stats id */
	u64 id;				/* never reused: names it in PCID slots */
	atomic64_t tlb_gen;		/* raised by each flush of its table */
	pgd_t *pgd;			/* the restricted table */
	unsigned long pgd_pa;		/* its physical address, for CR3 */
	struct asi *shared;	/* the core, whose pages we reference */
	gfp_t gfp;
	bool kasan_shadow;		/* map each range's KASAN shadow too */
	struct mutex lock;		/* protects everything below */
	struct xarray ptpages;		/* pfn -> struct iso_ptpage */
	struct list_head ptpage_list;	/* in allocation order */
	unsigned long nr_ptpages;
	struct list_head ranges;
#ifdef CONFIG_ADDRESS_SPACE_ISOLATION_KUNIT_TEST
	int fail_alloc_after;		/* fail the Nth allocation, 0: never */
#endif
};

/* Flags ignored when comparing entries: the CPU sets them. */
#define ISO_HW_BITS	(_PAGE_ACCESSED | _PAGE_DIRTY)

extern struct asi *iso_core;
extern struct list_head iso_instances;	/* every instance, for reports */
extern struct mutex iso_instances_lock;
extern atomic_long_t iso_total_ptpages;
extern atomic_t iso_nr_shared_users;	/* instances referencing iso_core */

/* Page-table helpers: every level of the x86-64 table is a page of 512 entries. */

static inline unsigned int iso_shift(enum asi_level level)
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

static inline unsigned long iso_size(enum asi_level level)
{
	return 1UL << iso_shift(level);
}

/* With 4-level paging the P4D level is folded into the PGD. */
static inline enum asi_level iso_next_level(enum asi_level level)
{
	if (level == ASI_PGD && !pgtable_l5_enabled())
		return ASI_PUD;
	return level + 1;
}

static inline enum asi_level iso_norm_level(enum asi_level level)
{
	if (level == ASI_P4D && !pgtable_l5_enabled())
		return ASI_PGD;
	return level;
}

/* Every level of the x86-64 page table is a page of 512 64-bit entries. */
static inline unsigned long *iso_offset(void *table, unsigned long addr,
					enum asi_level level)
{
	return (unsigned long *)table + ((addr >> iso_shift(level)) & (PTRS_PER_PTE - 1));
}

static inline bool iso_present(unsigned long val)
{
	return val & _PAGE_PRESENT;
}

/* A leaf maps memory; anything else present points to a directory page. */
static inline bool iso_leaf(enum asi_level level, unsigned long val)
{
	if (level == ASI_PTE)
		return true;
	if (level == ASI_PUD || level == ASI_PMD)
		return val & (_PAGE_PSE | _PAGE_DEVMAP);
	return false;
}

static inline void *iso_table(unsigned long val)
{
	return __va(val & PTE_PFN_MASK);
}

/* asi_pgtable.c */
unsigned long iso_split_leaf(unsigned long val, enum asi_level from,
			     unsigned long addr, enum asi_level level);
unsigned long iso_kernel_entry(unsigned long addr, enum asi_level level);
struct iso_ptpage *iso_ptpage(struct asi *iso, void *table);
bool iso_owns(struct asi *iso, void *table);
void iso_free_ptpage(struct asi *iso, struct iso_ptpage *pt);
unsigned long *iso_walk(struct asi *iso, unsigned long addr,
			enum asi_level level, bool alloc);
int iso_set_entry(unsigned long *slot, unsigned long val);
unsigned long iso_slot_end(unsigned long addr, enum asi_level level,
			   unsigned long end);
void iso_clear(struct asi *iso, struct iso_range *skip, unsigned long start,
	       unsigned long end, enum asi_level level, struct list_head *freed);
void iso_free_unlinked(struct asi *iso, struct list_head *freed,
		       unsigned long first, unsigned long last);
int iso_copy(struct asi *iso, unsigned long start, unsigned long end,
	     enum asi_level level, unsigned long clear, unsigned long *done);
void iso_settle_pending(struct asi *iso, bool keep, struct list_head *freed);
void iso_undo_copy(struct asi *iso, struct iso_range *skip, unsigned long start,
		   unsigned long end, unsigned long done, enum asi_level level);
unsigned long iso_entry_addr(unsigned long base, unsigned int i, enum asi_level level);
unsigned long iso_mapped_bytes(void *table, enum asi_level level,
			       unsigned int first, unsigned int last);
unsigned long iso_mapped_total(struct asi *iso);

/* asi.c */
bool iso_needed(struct asi *iso, struct iso_range *skip, unsigned long first,
		unsigned long last, enum asi_level level);
bool iso_covered(struct asi *iso, unsigned long first, unsigned long last);
void iso_to_shadow(unsigned long *start, unsigned long *end);
int iso_map_kind(struct asi *iso, const void *ptr, size_t size,
		 enum asi_level level, const char *owner, enum iso_kind kind,
		 unsigned long clear);
int iso_map_percpu(struct asi *iso, void __percpu *ptr, size_t size,
		   const char *owner, enum iso_kind kind);
struct asi *iso_create(struct asi *shared, gfp_t gfp,
		       const char *name);

/* asi_debug.c */
void *iso_irq_stack(int cpu);

#if defined(CONFIG_LOCKDEP) && !defined(CONFIG_PROVE_LOCKING)
/* Read by every lockdep kernel; <linux/lockdep.h> declares it only for PROVE_LOCKING. */
DECLARE_PER_CPU(unsigned int, lockdep_recursion);
#endif

/* ORC's tables (vmlinux.lds.h), for the unwinder lockdep runs isolated. */
extern char __start_orc_unwind_ip[], orc_lookup_end[];

/* What every VM maps, on pages of its own (vmlinux.lds.h). */
extern char __per_cpu_asi_start[], __per_cpu_asi_end[];
extern char __start_asi_data[], __end_asi_data[];
extern const char *__start___tracepoint_str[], *__stop___tracepoint_str[];

#endif /* __X86_MM_ASI_H */
