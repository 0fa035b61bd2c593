/* SPDX-License-Identifier: GPL-2.0 */
/*
 * KVM address space isolation: restricted kernel page tables in which KVM
 * handles VM-exits.  See Documentation/virt/kvm/x86/address-space-isolation.rst.
 */
#ifndef _ASM_X86_KVM_ISOLATION_H
#define _ASM_X86_KVM_ISOLATION_H

#include <linux/jump_label.h>
#include <linux/percpu-defs.h>
#include <linux/types.h>
#include <asm/hardirq.h>
#include <asm/page_types.h>

struct seq_file;
struct module;
struct pt_regs;
struct task_struct;
struct kvm_isolation;

/*
 * The page-table level a range is copied at: the kernel's entry at that
 * level is referenced as is, so a coarser level shares more of the kernel's
 * page-table pages and maps whatever they map.
 */
enum kvm_isolation_level {
	KVM_ISOLATION_PGD,
	KVM_ISOLATION_P4D,
	KVM_ISOLATION_PUD,
	KVM_ISOLATION_PMD,
	KVM_ISOLATION_PTE,
};

struct kvm_isolation_stats {
	u64 enters;
	u64 exits;		/* left with kvm_isolation_exit() */
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
};

/* What kvm_isolation_audit() counted. */
struct kvm_isolation_audit {
	unsigned long pages;		/* 4 KiB pages the restricted table maps */
	unsigned long stray;		/* pages with no mapped object on them */
	unsigned long shared;		/* pages a mapped object shares */
	unsigned long shared_percpu;	/* ... of them, with per-CPU data on them */
	unsigned long shared_task;	/* ... else with a task struct on them */
	unsigned long foreign_bytes;	/* bytes of no mapped object on both */
	unsigned long tasks;		/* tasks mapped with kvm_isolation_map_task() */
	unsigned long other_tasks;	/* other tasks with a page mapped */
	/* What this kernel cannot put on pages of their own: */
	bool boot_shares;		/* tasks, dynamic per-CPU data: not asked at boot */
	bool debug_shares;		/* anything: lockdep maps all data, slab debugging */
};

/* One seen faulting instruction. */
struct kvm_isolation_fault {
	unsigned long ip;
	unsigned long address;
	unsigned long error_code;
	u64 count;
};

#define KVM_ISOLATION_FAULT_SITES	64

/* Restricted PCIDs each CPU keeps, for as many recently run instances. */
#define KVM_ISOLATION_NR_PCIDS	4

/*
 * Per-CPU state: its page is mapped in every isolated address space, so
 * it fills the page, which holds nothing else.
 */
struct kvm_isolation_cpu {
	struct kvm_isolation *iso;	/* loaded instance, NULL when not isolated */
	unsigned long cr3;		/* CR3 while isolated, 0 when not */
	unsigned long full_cr3;		/* CR3 to return to: the task's mm */
	unsigned long table;		/* the instance's restricted table (phys) */
	bool switching;			/* between the two CR3 writes */
	unsigned int pcid_next;		/* the restricted PCID to reuse next */
	u64 pcid_owner[KVM_ISOLATION_NR_PCIDS];	/* instance id, 0: none */
	u64 pcid_gen[KVM_ISOLATION_NR_PCIDS];	/* its TLB generation then */
	unsigned int canary_left;	/* isolated VM-entries that read the canary */
	unsigned long canary_page;	/* the test canary, a page nothing maps */
	struct kvm_isolation_stats stats;
} __aligned(PAGE_SIZE);

#ifdef CONFIG_KVM_ADDRESS_SPACE_ISOLATION

/* A page-aligned type of no size, for KVM_ISOLATION_MODULE_PERCPU_PAGES(). */
struct kvm_isolation_percpu_pages { } __aligned(PAGE_SIZE);

/*
 * A KVM module maps its per-CPU data into every isolated address space, so
 * that data is on pages of its own: one variable of this page-aligned type
 * page-aligns the module's per-CPU section, and the module loader then
 * rounds the section up to whole pages.  Once per module; nothing when
 * built in (isolation refuses a built-in KVM).
 */
#ifdef MODULE
#define KVM_ISOLATION_MODULE_PERCPU_PAGES()				\
	static DEFINE_PER_CPU(struct kvm_isolation_percpu_pages,	\
			      kvm_isolation_module_percpu_pages) __used
#else
#define KVM_ISOLATION_MODULE_PERCPU_PAGES()
#endif

/*
 * Pages the first per-CPU chunk reserves for modules beyond the usual 8 KiB:
 * the kvm module's and the vendor module's whole pages, at most two each
 * (the linker may put other per-CPU variables of the module both before
 * and after the page-aligned one), and one because the reserve starts
 * wherever the kernel's static per-CPU data ends.
 */
#define KVM_ISOLATION_PERCPU_RESERVE	(IS_ENABLED(CONFIG_MODULES) ? 5 * PAGE_SIZE : 0)

DECLARE_STATIC_KEY_FALSE(kvm_isolation_enabled);
extern bool kvm_isolation_at_boot;
DECLARE_PER_CPU_PAGE_ALIGNED(struct kvm_isolation_cpu, kvm_isolation_cpu);

/* True when isolation was set up and KVM runs VM-exits isolated. */
static __always_inline bool kvm_isolation(void)
{
	return static_branch_unlikely(&kvm_isolation_enabled);
}

/*
 * Isolation asked for on the kernel command line: the kernel keeps its
 * mappings as PTI does, with PTI or without: not global, so that no TLB
 * entry of theirs outlives a switch to a restricted table, and with the
 * freed gaps of the kernel image unmapped, so that a restricted table
 * that copies the image's page tables maps no freed page.
 */
static __always_inline bool kvm_isolation_pti_mappings(void)
{
	return kvm_isolation_at_boot;
}

int kvm_isolation_setup(struct module *const *mods, unsigned int nr_mods);
void kvm_isolation_teardown(void);
int kvm_isolation_task_struct_size(int size);
size_t kvm_isolation_exclusive_size(size_t size);

struct kvm_isolation *kvm_isolation_create(const char *name);
bool kvm_isolation_destroy(struct kvm_isolation *iso);
int kvm_isolation_map(struct kvm_isolation *iso, const void *ptr, size_t size,
		      enum kvm_isolation_level level, const char *owner);
void kvm_isolation_unmap(struct kvm_isolation *iso, const void *ptr);
int kvm_isolation_map_percpu(struct kvm_isolation *iso, void __percpu *ptr,
			     size_t size, const char *owner);
void kvm_isolation_unmap_percpu(struct kvm_isolation *iso, void __percpu *ptr);
int kvm_isolation_map_task(struct kvm_isolation *iso, struct task_struct *task);
void kvm_isolation_unmap_task(struct kvm_isolation *iso, struct task_struct *task);
unsigned long kvm_isolation_pgtable_pages(void);
const char *kvm_isolation_name(struct kvm_isolation *iso);
bool kvm_isolation_is_mapped(struct kvm_isolation *iso, const void *addr);
bool kvm_isolation_maps_any(struct kvm_isolation *iso, const void *ptr, size_t size);
bool kvm_isolation_maps_allocation(struct kvm_isolation *iso, const void *ptr);
long kvm_isolation_find(struct kvm_isolation *iso, const void *needle, size_t len);
void kvm_isolation_ptdump(struct seq_file *m);
unsigned long kvm_isolation_audit(struct kvm_isolation *iso, struct seq_file *m,
				  unsigned int max_lines, struct kvm_isolation_audit *res);

int kvm_isolation_ranges_show(struct seq_file *m, void *v);
void kvm_isolation_show_summary(struct seq_file *m);

void kvm_isolation_enter(struct kvm_isolation *iso);
bool kvm_isolation_exit(void);
bool kvm_isolation_loaded(struct kvm_isolation *iso);
void kvm_isolation_get_stats(struct kvm_isolation_stats *sum);
void kvm_isolation_reset_stats(void);
void kvm_isolation_reset_fault_log(void);
void kvm_isolation_set_fault_stack(bool on);
unsigned int kvm_isolation_fault_log(struct kvm_isolation_fault *log);

#ifdef CONFIG_KVM_ADDRESS_SPACE_ISOLATION_KUNIT_TEST
/* Test kernels only: prove that the restricted table is what is loaded. */
int kvm_isolation_arm_canary(unsigned int n);
void kvm_isolation_touch_canary(void);
void kvm_isolation_check_cr3(void);
#else
static inline void kvm_isolation_touch_canary(void) {}
static inline void kvm_isolation_check_cr3(void) {}
#endif

/* Entry, fault and TLB paths. */
void __kvm_isolation_interrupt(void);
void kvm_isolation_forget_pcids(void);
bool kvm_isolation_fault_switch(void);
bool kvm_isolation_handle_fault(struct pt_regs *regs, unsigned long error_code,
				unsigned long address);

/* An interrupt or system vector leaves isolation. */
static __always_inline void kvm_isolation_interrupt(void)
{
	if (kvm_isolation() && this_cpu_read(kvm_isolation_cpu.cr3))
		__kvm_isolation_interrupt();
}

/*
 * NMI, #MC and #DB, which arrive at any instruction: first thing, move to
 * full mappings if this CPU is on its restricted table; last thing, go
 * back.  From the handlers' noinstr parts, so inline only.  Not exported:
 * KVM leaves with kvm_isolation_exit() before it dispatches a machine check.
 */
unsigned long __kvm_isolation_paranoid_enter(void);
void __kvm_isolation_paranoid_exit(unsigned long cr3);

static __always_inline unsigned long kvm_isolation_paranoid_enter(void)
{
	return kvm_isolation() ? __kvm_isolation_paranoid_enter() : 0;
}

static __always_inline void kvm_isolation_paranoid_exit(unsigned long cr3)
{
	if (cr3)
		__kvm_isolation_paranoid_exit(cr3);
}

/* CR3 while this CPU is isolated, 0 when not. */
static __always_inline unsigned long kvm_isolation_cr3(void)
{
	return kvm_isolation() ? this_cpu_read(kvm_isolation_cpu.cr3) : 0;
}

#else /* !CONFIG_KVM_ADDRESS_SPACE_ISOLATION */

static __always_inline bool kvm_isolation(void)
{
	return false;
}

static __always_inline bool kvm_isolation_pti_mappings(void)
{
	return false;
}

static inline int kvm_isolation_task_struct_size(int size)
{
	return size;
}

static inline size_t kvm_isolation_exclusive_size(size_t size)
{
	return size;
}

#define KVM_ISOLATION_MODULE_PERCPU_PAGES()
#define KVM_ISOLATION_PERCPU_RESERVE	0

static __always_inline void kvm_isolation_interrupt(void) {}

static __always_inline unsigned long kvm_isolation_cr3(void) { return 0; }

static __always_inline unsigned long kvm_isolation_paranoid_enter(void) { return 0; }

static __always_inline void kvm_isolation_paranoid_exit(unsigned long cr3) {}

static inline void kvm_isolation_forget_pcids(void) {}

static __always_inline bool kvm_isolation_fault_switch(void)
{
	return false;
}

static inline void kvm_isolation_touch_canary(void) {}

static inline bool kvm_isolation_exit(void)
{
	return false;
}

static inline bool kvm_isolation_handle_fault(struct pt_regs *regs, unsigned long error_code,
					      unsigned long address)
{
	return false;
}

#endif /* CONFIG_KVM_ADDRESS_SPACE_ISOLATION */

#endif /* _ASM_X86_KVM_ISOLATION_H */
