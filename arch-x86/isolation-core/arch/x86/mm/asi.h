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
#ifdef CONFIG_KVM_ADDRESS_SPACE_ISOLATION_KUNIT_TEST
	int fail_alloc_after;		/* fail the Nth allocation, 0: never */
#endif
};

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
