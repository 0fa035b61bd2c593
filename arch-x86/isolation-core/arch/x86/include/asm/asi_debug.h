/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Address space isolation (ASI): debugging aids for its users' debugfs
 * files, with CONFIG_ADDRESS_SPACE_ISOLATION_DEBUG only.  They read any
 * memory a restricted table maps; see arch/x86/mm/asi_debug.c.
 */
#ifndef _ASM_X86_ASI_DEBUG_H
#define _ASM_X86_ASI_DEBUG_H

#include <asm/asi.h>

#ifdef CONFIG_ADDRESS_SPACE_ISOLATION_DEBUG

/* What asi_audit() counted. */
struct asi_audit {
	unsigned long pages;		/* 4 KiB pages the restricted table maps */
	unsigned long stray;		/* pages with no mapped object on them */
	unsigned long shared;		/* pages a mapped object shares */
	unsigned long shared_percpu;	/* ... of them, with per-CPU data on them */
	unsigned long shared_task;	/* ... else with a task struct on them */
	unsigned long foreign_bytes;	/* bytes of no mapped object on both */
	unsigned long stale;		/* pages the kernel unmapped, moved or freed since */
	unsigned long writable;		/* pages writable where the kernel's are not, or W+X */
	unsigned long irq_stacks;	/* CPUs whose hard-IRQ stack is mapped */
	unsigned long debug_stores;	/* CPUs whose debug store or PEBS/BTS buffers are */
	unsigned long bad_cpu_tables;	/* CPUs whose table maps another's entry area, */
					/* or does not follow the instance's */
	unsigned long tasks;		/* tasks mapped with asi_map_task() */
	unsigned long other_tasks;	/* other tasks with a page mapped */
	/* What this kernel cannot put on pages of their own: */
};

unsigned long asi_audit(struct asi *asi, struct seq_file *m,
			unsigned int max_lines, struct asi_audit *res);
long asi_find(struct asi *asi, const void *needle, size_t len);
bool asi_holds(const void *buf, size_t len, const void *needle, size_t needle_len);
bool asi_maps_any(struct asi *asi, const void *ptr, size_t size);
bool asi_maps_allocation(struct asi *asi, const void *ptr);
int asi_ranges_show(struct seq_file *m, void *v);
void asi_show_summary(struct seq_file *m);
void asi_ptdump(struct seq_file *m);

/* Prove that the restricted table is what is loaded at VM-entry. */
int asi_arm_canary(unsigned int n);
/* Prove that a CPU whose PMU writes its debug store stays out. */
void asi_pretend_ds_in_use(bool on);

#endif /* CONFIG_ADDRESS_SPACE_ISOLATION_DEBUG */

#endif /* _ASM_X86_ASI_DEBUG_H */
