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
#include <asm/cpu_entry_area.h>
#include <asm/nospec-branch.h>

/* A directory page an instance allocated, indexed by its pfn. */
struct asi_ptpage {
	struct list_head list;
	void *table;
	enum asi_level level;	/* of the entries in this page */
	unsigned long base;		/* an address the page translates */
	unsigned long replaced;		/* parent entry before we linked it */
	bool pending;			/* linked by the map in progress */
};

/* What a range holds, for the audit's findings. */
enum asi_kind {
	ASI_KIND_OBJECT,		/* an allocation of its own, or kernel data */
	ASI_KIND_PERCPU,		/* a CPU's copy of a dynamic per-CPU object */
	ASI_KIND_TASK,			/* a task struct */
};

/*
 * A mapped range: the caller's pointer, its page span [start, end) and
 * its level (what its entries map at that level: asi_range_first() and
 * asi_range_last()).  The audit compares what is mapped with [obj_start,
 * obj_end): the bytes the range stands for.
 */
struct asi_range {
	struct list_head list;
	unsigned long ptr;
	unsigned long start, end;
	unsigned long obj_start, obj_end;
	size_t bytes;			/* the object's own, as mapped */
	enum asi_level level;
	const char *owner;
	unsigned int refcount;
	bool shadow;			/* the KASAN shadow of the range at ptr */
	enum asi_kind kind;
	unsigned long clear;		/* bits its copy drops: _PAGE_RW, read-only */
};

/* The table one CPU loads for an instance. */
struct asi_cpu_table {
	pgd_t *pgd;
	unsigned long pa;		/* for CR3 */
};

struct asi {
	struct list_head list;		/* on asi_instances, or empty */
	char name[24];			/* "core", or the VM's stats id */
	u64 id;				/* never reused: names it in PCID slots */
	atomic64_t tlb_gen;		/* raised by each flush of its table */
	pgd_t *pgd;			/* the restricted table */
	unsigned long pgd_pa;		/* its physical address, for CR3 */
	struct asi *shared;	/* the core, whose pages we reference */
	gfp_t gfp;
	bool kasan_shadow;		/* map each range's KASAN shadow too */
	/*
	 * Set when created.  Per possible CPU, the table that CPU loads: a
	 * copy of @pgd whose entry-area slot maps that CPU's entry area
	 * alone, so that no CPU maps another's exception stacks, TSS and
	 * entry stack; its other entries follow @pgd's under @lock.  NULL
	 * when the core has no per-CPU entry areas: @pgd is loaded then.
	 */
	struct asi_cpu_table *cpu_tables;
	/*
	 * The core's, set once complete: per possible CPU, an unlisted
	 * instance that maps its entry area, and never changes.
	 */
	struct asi **entry_areas;
	struct mutex lock;		/* protects everything below */
	struct xarray ptpages;		/* pfn -> struct asi_ptpage */
	struct list_head ptpage_list;	/* in allocation order */
	unsigned long nr_ptpages;
	struct list_head ranges;
#ifdef CONFIG_ADDRESS_SPACE_ISOLATION_KUNIT_TEST
	int fail_alloc_after;		/* fail the Nth allocation, 0: never */
#endif
};

/* Flags ignored when comparing entries: the CPU sets them. */
#define ASI_HW_BITS	(_PAGE_ACCESSED | _PAGE_DIRTY)

extern struct asi *asi_core;
extern struct list_head asi_instances;	/* every instance, for reports */
extern struct mutex asi_instances_lock;
extern atomic_long_t asi_total_ptpages;
extern atomic_t asi_nr_shared_users;	/* instances referencing asi_core */

/*
 * The top-level slot of the cpu_entry_area: with 4-level paging, it holds
 * nothing else, so each CPU's table can point it to that CPU's own entry
 * area.  With 5-level paging, it holds the kernel image and the modules as
 * well, and every CPU's entry area is mapped in one table (degraded).
 */
static inline int asi_entry_area_slot(void)
{
	return pgtable_l5_enabled() ? -1 : pgd_index(CPU_ENTRY_AREA_BASE);
}

/* The table @cpu loads for @asi, and its physical address. */
static inline pgd_t *asi_cpu_pgd(struct asi *asi, int cpu)
{
	return asi->cpu_tables ? asi->cpu_tables[cpu].pgd : asi->pgd;
}

static __always_inline unsigned long asi_cpu_pa(struct asi *asi, int cpu)
{
	return asi->cpu_tables ? asi->cpu_tables[cpu].pa : asi->pgd_pa;
}

/*
 * What slot @i of @cpu's table holds: the entry area's is the core's
 * instance for that CPU's entry area, every other one the instance's own.
 */
static inline pgd_t asi_cpu_table_entry(struct asi *asi, int cpu, int i)
{
	return i == asi_entry_area_slot() ? asi->shared->entry_areas[cpu]->pgd[i] : asi->pgd[i];
}

/* Page-table helpers: every level of the x86-64 table is a page of 512 entries. */

static inline unsigned int asi_shift(enum asi_level level)
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

static inline unsigned long asi_size(enum asi_level level)
{
	return 1UL << asi_shift(level);
}

/* With 4-level paging the P4D level is folded into the PGD. */
static inline enum asi_level asi_next_level(enum asi_level level)
{
	if (level == ASI_PGD && !pgtable_l5_enabled())
		return ASI_PUD;
	return level + 1;
}

static inline enum asi_level asi_norm_level(enum asi_level level)
{
	if (level == ASI_P4D && !pgtable_l5_enabled())
		return ASI_PGD;
	return level;
}

/* Every level of the x86-64 page table is a page of 512 64-bit entries. */
static inline void *asi_slot(void *table, unsigned int i)
{
	return (pte_t *)table + i;
}

static inline void *asi_offset(void *table, unsigned long addr, enum asi_level level)
{
	return asi_slot(table, (addr >> asi_shift(level)) & (PTRS_PER_PTE - 1));
}

/*
 * Entries are read and written with the kernel's accessors for their level;
 * the walks carry their value (pgd_val() ... pte_val()).
 */
static inline unsigned long asi_read(void *slot, enum asi_level level)
{
	switch (level) {
	case ASI_PGD:
		return pgd_val(READ_ONCE(*(pgd_t *)slot));
	case ASI_P4D:
		return p4d_val(READ_ONCE(*(p4d_t *)slot));
	case ASI_PUD:
		return pud_val(READ_ONCE(*(pud_t *)slot));
	case ASI_PMD:
		return pmd_val(READ_ONCE(*(pmd_t *)slot));
	default:
		return pte_val(READ_ONCE(*(pte_t *)slot));
	}
}

static inline void asi_write(void *slot, enum asi_level level, unsigned long val)
{
	switch (level) {
	case ASI_PGD:
		set_pgd(slot, __pgd(val));
		break;
	case ASI_P4D:
		set_p4d(slot, __p4d(val));
		break;
	case ASI_PUD:
		set_pud(slot, __pud(val));
		break;
	case ASI_PMD:
		set_pmd(slot, __pmd(val));
		break;
	default:
		set_pte(slot, __pte(val));
	}
}

static inline bool asi_present(unsigned long val)
{
	return val & _PAGE_PRESENT;
}

/* A leaf maps memory; anything else present points to a directory page. */
static inline bool asi_leaf(enum asi_level level, unsigned long val)
{
	if (level == ASI_PTE)
		return true;
	if (level == ASI_PUD || level == ASI_PMD)
		return val & (_PAGE_PSE | _PAGE_DEVMAP);
	return false;
}

static inline void *asi_table(unsigned long val)
{
	return __va(val & PTE_PFN_MASK);
}

/* The first and last byte the entries of @r map, at its level. */
static inline unsigned long asi_range_first(const struct asi_range *r)
{
	return r->start & ~(asi_size(r->level) - 1);
}

static inline unsigned long asi_range_last(const struct asi_range *r)
{
	return (r->end - 1) | (asi_size(r->level) - 1);
}

/* asi_pgtable.c */
unsigned long asi_split_leaf(unsigned long val, enum asi_level from,
			     unsigned long addr, enum asi_level level);
unsigned long asi_kernel_entry(unsigned long addr, enum asi_level level);
struct asi_ptpage *asi_ptpage(struct asi *asi, void *table);
bool asi_owns(struct asi *asi, void *table);
void asi_free_ptpage(struct asi *asi, struct asi_ptpage *pt);
void *asi_walk(struct asi *asi, unsigned long addr, enum asi_level level, bool alloc);
int asi_set_entry(void *slot, enum asi_level level, unsigned long val);
unsigned long asi_slot_end(unsigned long addr, enum asi_level level,
			   unsigned long end);
void asi_clear(struct asi *asi, struct asi_range *skip, unsigned long start,
	       unsigned long end, enum asi_level level, struct list_head *freed);
void asi_free_unlinked(struct asi *asi, struct list_head *freed,
		       unsigned long first, unsigned long last);
int asi_copy(struct asi *asi, unsigned long start, unsigned long end,
	     enum asi_level level, unsigned long clear, unsigned long *done);
void asi_settle_pending(struct asi *asi, bool keep, struct list_head *freed);
void asi_undo_copy(struct asi *asi, struct asi_range *skip, unsigned long start,
		   unsigned long end, unsigned long done, enum asi_level level);
unsigned long asi_entry_addr(unsigned long base, unsigned int i, enum asi_level level);
unsigned long asi_mapped_bytes(void *table, enum asi_level level,
			       unsigned int first, unsigned int last);
unsigned long asi_mapped_total(struct asi *asi);
bool asi_table_maps(pgd_t *pgd, unsigned long addr);
void asi_sync_cpu_tables(struct asi *asi);

/* asi.c */
bool asi_needed(struct asi *asi, struct asi_range *skip, unsigned long first,
		unsigned long last, enum asi_level level);
bool asi_covered(struct asi *asi, unsigned long first, unsigned long last);
void asi_to_shadow(unsigned long *start, unsigned long *end);
int asi_map_kind(struct asi *asi, const void *ptr, size_t size,
		 enum asi_level level, const char *owner, enum asi_kind kind,
		 unsigned long clear);
int asi_map_shadow(struct asi *asi, const void *ptr, size_t size, const char *owner);
int asi_map_percpu_kind(struct asi *asi, void __percpu *ptr, size_t size,
			const char *owner, enum asi_kind kind);
struct asi *asi_alloc_instance(struct asi *shared, gfp_t gfp, const char *name);
struct asi *asi_create_instance(struct asi *shared, gfp_t gfp,
				const char *name);

/* asi_core.c */
int asi_map_cpu_entry_areas(struct asi *core, const char **degraded);

/* asi_debug.c */
void *asi_irq_stack(int cpu);

/* asi_smt.c */
int asi_smt_setup(void);
void asi_smt_teardown(void);
void __asi_smt_leave(struct asi_cpu *c);
void __asi_smt_host_done(struct asi_cpu *c, u8 state);
void asi_smt_check_entry(struct asi_cpu *c);

/* asi_flush.c */
int asi_flush_setup(struct asi *core);
void asi_flush_teardown(void);
void asi_ibpb_setup(const char *degraded);
extern bool asi_defer_ibpb;

/*
 * Before a move from the restricted table to full mappings, still on it:
 * the IBPB that the VM-exits since the last move deferred (asi_ibpb.S).
 * Returns whether there was one.
 */
static __always_inline bool asi_ibpb_before_host(struct asi_stats *s)
{
	if (!this_cpu_read(asi_ibpb_pending))
		return false;
	entry_ibpb();
	this_cpu_write(asi_ibpb_pending, false);
	s->flush_ibpb++;
	return true;
}

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
