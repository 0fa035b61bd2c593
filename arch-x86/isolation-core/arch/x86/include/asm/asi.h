/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Address space isolation (ASI): restricted kernel page tables that map only
 * what their user maps; KVM handles VM-exits on them.  See
 * Documentation/virt/kvm/x86/address-space-isolation.rst.
 */
#ifndef _ASM_X86_ASI_H
#define _ASM_X86_ASI_H

#include <linux/jump_label.h>
#include <linux/percpu-defs.h>
#include <linux/types.h>
#include <asm/hardirq.h>
#include <asm/page_types.h>

struct seq_file;
struct module;
struct pt_regs;
struct task_struct;
struct asi;

/*
 * The page-table level a range is copied at: the kernel's entry at that
 * level is referenced as is, so a coarser level shares more of the kernel's
 * page-table pages and maps whatever they map.
 */
enum asi_level {
	ASI_PGD,
	ASI_P4D,
	ASI_PUD,
	ASI_PMD,
	ASI_PTE,
};

struct asi_stats {
	u64 enters;
	u64 exits;		/* left with asi_exit() */
	u64 interrupt_exits;	/* left for an interrupt or system vector */
	u64 fault_exits;	/* left on a page fault, the canary's too */
	u64 faults;		/* ... of them, not the canary's */
	u64 l1d_flush_requests;
	u64 paranoid_trips;	/* NMI, #MC, #DB taken while isolated */
	u64 tlb_flushes;	/* entries that flushed the restricted PCID */
	u64 flush_ipis;		/* IPIs for an unmap in the loaded instance */
	u64 canary_faults;	/* reads of the test canary that faulted */
	u64 cr3_checks;		/* test kernels: exits handled inside whose CR3 */
	u64 cr3_mismatches;	/* was checked, and was not the VM's table's */
	u64 unexpected;		/* left by asi_assert_left(): a caller's bug */
};

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
	unsigned long tasks;		/* tasks mapped with asi_map_task() */
	unsigned long other_tasks;	/* other tasks with a page mapped */
	/* What this kernel cannot put on pages of their own: */
};

/* One seen faulting instruction. */
struct asi_fault_site {
	unsigned long ip;
	unsigned long address;
	unsigned long error_code;
	u64 count;
};

#define ASI_FAULT_SITES	64

/* Restricted PCIDs each CPU keeps, for as many recently run instances. */
#define ASI_NR_PCIDS	4

/*
 * Per-CPU state: its page is mapped in every isolated address space, so
 * it fills the page, which holds nothing else.
 */
struct asi_cpu {
	struct asi *iso;	/* loaded instance, NULL when not isolated */
	unsigned long cr3;		/* CR3 while isolated, 0 when not */
	unsigned long full_cr3;		/* CR3 to return to: the task's mm */
	unsigned long table;		/* the instance's restricted table (phys) */
	bool switching;			/* between the two CR3 writes */
	unsigned int pcid_next;		/* the restricted PCID to reuse next */
	u64 pcid_owner[ASI_NR_PCIDS];	/* instance id, 0: none */
	u64 pcid_gen[ASI_NR_PCIDS];	/* its TLB generation then */
	unsigned int canary_left;	/* isolated VM-entries that read the canary */
	unsigned long canary_page;	/* the test canary, a page nothing maps */
	struct asi_stats stats;
} __aligned(PAGE_SIZE);

#ifdef CONFIG_KVM_ADDRESS_SPACE_ISOLATION

/* A page-aligned type of no size, for ASI_MODULE_PERCPU_PAGES(). */
struct asi_percpu_pages { } __aligned(PAGE_SIZE);

/*
 * Every isolated address space maps the per-CPU data of the modules given
 * to asi_setup() (KVM's), so that data is on pages of its own: one variable
 * of this page-aligned type page-aligns the module's per-CPU section, and
 * the module loader then rounds the section up to whole pages.  Once per
 * module; nothing when built in (asi_setup() refuses code built in).
 */
#ifdef MODULE
#define ASI_MODULE_PERCPU_PAGES()					\
	static DEFINE_PER_CPU(struct asi_percpu_pages,			\
			      asi_module_percpu_pages) __used
#else
#define ASI_MODULE_PERCPU_PAGES()
#endif

/*
 * Pages the first per-CPU chunk reserves for modules beyond the usual 8 KiB:
 * the kvm module's and the vendor module's whole pages, at most two each
 * (the linker may put other per-CPU variables of the module both before
 * and after the page-aligned one), and one because the reserve starts
 * wherever the kernel's static per-CPU data ends.
 */
#define ASI_PERCPU_RESERVE	(IS_ENABLED(CONFIG_MODULES) ? 5 * PAGE_SIZE : 0)

DECLARE_STATIC_KEY_FALSE(asi_enabled_key);
extern bool asi_at_boot;
DECLARE_PER_CPU_PAGE_ALIGNED(struct asi_cpu, asi_cpu);

/* True once asi_setup() built the core address space. */
static __always_inline bool asi_enabled(void)
{
	return static_branch_unlikely(&asi_enabled_key);
}

/*
 * Isolation asked for on the kernel command line: the kernel keeps its
 * mappings as PTI does, with PTI or without: not global, so that no TLB
 * entry of theirs outlives a switch to a restricted table, and with the
 * freed gaps of the kernel image unmapped, so that a restricted table
 * that copies the image's page tables maps no freed page.
 */
static __always_inline bool asi_pti_mappings(void)
{
	return asi_at_boot;
}

int asi_setup(struct module *const *mods, unsigned int nr_mods);
void asi_teardown(void);
int asi_task_struct_size(int size);
size_t asi_exclusive_size(size_t size);

struct asi *asi_create(const char *name);
bool asi_destroy(struct asi *iso);
int asi_map(struct asi *iso, const void *ptr, size_t size,
	    enum asi_level level, const char *owner);
void asi_unmap(struct asi *iso, const void *ptr);
int asi_map_percpu(struct asi *iso, void __percpu *ptr,
		   size_t size, const char *owner);
void asi_unmap_percpu(struct asi *iso, void __percpu *ptr);
int asi_map_task(struct asi *iso, struct task_struct *task);
void asi_unmap_task(struct asi *iso, struct task_struct *task);
unsigned long asi_pgtable_pages(void);
const char *asi_name(struct asi *iso);
bool asi_is_mapped(struct asi *iso, const void *addr);
bool asi_maps_any(struct asi *iso, const void *ptr, size_t size);
bool asi_maps_allocation(struct asi *iso, const void *ptr);
long asi_find(struct asi *iso, const void *needle, size_t len);
void asi_ptdump(struct seq_file *m);
unsigned long asi_audit(struct asi *iso, struct seq_file *m,
			unsigned int max_lines, struct asi_audit *res);

int asi_ranges_show(struct seq_file *m, void *v);
void asi_show_summary(struct seq_file *m);
const char *asi_degraded(void);

void asi_enter(struct asi *iso);
bool asi_exit(void);
bool asi_loaded(struct asi *iso);
void asi_get_stats(struct asi_stats *sum);
void asi_reset_stats(void);
void asi_reset_fault_log(void);
void asi_set_fault_stack(bool on);
unsigned int asi_fault_log(struct asi_fault_site *log);

#ifdef CONFIG_KVM_ADDRESS_SPACE_ISOLATION_KUNIT_TEST
/* Test kernels only: prove that the restricted table is what is loaded. */
int asi_arm_canary(unsigned int n);
void asi_touch_canary(void);
void asi_check_cr3(void);
#else
static inline void asi_touch_canary(void) {}
static inline void asi_check_cr3(void) {}
#endif

/* Entry, fault and TLB paths. */
void __asi_interrupt(void);
void asi_forget_pcids(void);
bool asi_fault_switch(void);
bool asi_handle_fault(struct pt_regs *regs, unsigned long error_code,
		      unsigned long address);

/* An interrupt or system vector leaves isolation. */
static __always_inline void asi_interrupt(void)
{
	if (asi_enabled() && this_cpu_read(asi_cpu.cr3))
		__asi_interrupt();
}

/*
 * NMI, #MC and #DB, which arrive at any instruction: first thing, move to
 * full mappings if this CPU is on its restricted table; last thing, go
 * back.  From the handlers' noinstr parts, so inline only.  Not exported:
 * KVM leaves with asi_exit() before it dispatches a machine check.
 */
unsigned long __asi_paranoid_enter(void);
void __asi_paranoid_exit(unsigned long cr3);

static __always_inline unsigned long asi_paranoid_enter(void)
{
	return asi_enabled() ? __asi_paranoid_enter() : 0;
}

static __always_inline void asi_paranoid_exit(unsigned long cr3)
{
	if (cr3)
		__asi_paranoid_exit(cr3);
}

/* CR3 while this CPU is isolated, 0 when not. */
static __always_inline unsigned long asi_cr3(void)
{
	return asi_enabled() ? this_cpu_read(asi_cpu.cr3) : 0;
}

void __asi_unexpected(void);

/*
 * Paths that never run isolated: the return to user mode (PTI would make
 * the user CR3 from the restricted one), mm switches and local TLB flushes
 * (they would act on the restricted PCID and leave the kernel's stale).
 * Warn once and leave.
 */
static __always_inline void asi_assert_left(void)
{
	if (asi_enabled() && this_cpu_read(asi_cpu.cr3))
		__asi_unexpected();
}

#else /* !CONFIG_KVM_ADDRESS_SPACE_ISOLATION */

static __always_inline bool asi_enabled(void)
{
	return false;
}

static __always_inline bool asi_pti_mappings(void)
{
	return false;
}

static inline int asi_task_struct_size(int size)
{
	return size;
}

static inline size_t asi_exclusive_size(size_t size)
{
	return size;
}

#define ASI_MODULE_PERCPU_PAGES()
#define ASI_PERCPU_RESERVE	0

static __always_inline void asi_interrupt(void) {}

static __always_inline unsigned long asi_cr3(void) { return 0; }

static __always_inline void asi_assert_left(void) {}

static __always_inline unsigned long asi_paranoid_enter(void) { return 0; }

static __always_inline void asi_paranoid_exit(unsigned long cr3) {}

static inline void asi_forget_pcids(void) {}

static __always_inline bool asi_fault_switch(void)
{
	return false;
}

static inline void asi_touch_canary(void) {}

static inline bool asi_exit(void)
{
	return false;
}

static inline bool asi_handle_fault(struct pt_regs *regs, unsigned long error_code,
				    unsigned long address)
{
	return false;
}

#endif /* CONFIG_KVM_ADDRESS_SPACE_ISOLATION */

#endif /* _ASM_X86_ASI_H */
