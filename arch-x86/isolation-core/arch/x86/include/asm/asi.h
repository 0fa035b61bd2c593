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
	u64 trips;		/* moves to full mappings: leaves, NMI/#MC/#DB trips */
	u64 trips_flushed;	/* asi_flush_trip() calls that found one, */
	u64 flush_l1d_msr;	/* ... and flushed L1D with IA32_FLUSH_CMD, */
	u64 flush_l1d_sw;	/* ... or by reading a buffer, */
	u64 flush_verw;		/* ... and cleared the CPU buffers */
	u64 ibpb_deferred;	/* VM-exits whose IBPB waited for a move out, */
	u64 flush_ibpb;		/* ... and the IBPBs run at such moves */
	u64 paranoid_trips;	/* NMI, #MC, #DB taken while isolated, */
	u64 paranoid_flushed;	/* ... whose return flushed their trip */
	u64 tlb_flushes;	/* entries that flushed the restricted PCID */
	u64 flush_ipis;		/* IPIs for an unmap in the loaded instance */
#ifdef CONFIG_ADDRESS_SPACE_ISOLATION_DEBUG
	u64 canary_faults;	/* reads of the test canary that faulted */
	u64 cr3_checks;		/* exits handled inside whose CR3 was checked, */
	u64 cr3_mismatches;	/* ... and was not the VM's table's */
	u64 ibpb_missed;	/* deferred IBPBs found pending on full mappings */
#endif
	u64 unexpected;		/* left by asi_assert_left(): a caller's bug */
	u64 ds_holds;		/* entries refused: the PMU may write its debug store */
	u64 smt_holds;		/* guest entries refused: a sibling ran host code */
	u64 smt_held_cycles;	/* TSC cycles from a first refusal to the entry */
	u64 smt_kicks;		/* siblings kicked out of guest mode by a leave */
	u64 smt_timeouts;	/* ... that were not out in time */
#ifdef CONFIG_ADDRESS_SPACE_ISOLATION_DEBUG
	u64 smt_checks;		/* guest entries whose siblings were checked, */
	u64 smt_violations;	/* ... and one ran host code or another instance */
	u64 smt_leave_violations; /* leaves with a sibling still in guest mode */
#endif
};

/* One seen faulting instruction. */
struct asi_fault_site {
	unsigned long ip;
	unsigned long address;
	unsigned long error_code;
	u64 count;
};

#define ASI_FAULT_SITES	64

/* What a thread runs, for its SMT siblings (asi_smt.c). */
enum asi_smt_state {
	ASI_SMT_OUT,		/* host code, on full mappings */
	ASI_SMT_LEAVING,	/* moving there: kicking siblings out of guest mode */
	ASI_SMT_IN,		/* on an instance's restricted table */
	ASI_SMT_IDLE,		/* halted in the idle loop */
};

/* Whether a thread runs guest code, for its siblings' handshakes. */
enum asi_guest_mode {
	ASI_GUEST_NO,
	ASI_GUEST_TRYING,	/* asi_guest_enter() is reading the siblings */
	ASI_GUEST_YES,		/* until asi_guest_exit() */
};

/* Sibling threads per core that isolation handles (x86 has two). */
#define ASI_MAX_SIBLINGS	3

/* Restricted PCIDs each CPU keeps, for as many recently run instances. */
#define ASI_NR_PCIDS	4

/*
 * Per-CPU state: its page is mapped in every isolated address space, so
 * it fills the page, which holds nothing else.
 */
struct asi_cpu {
	struct asi *asi;	/* loaded instance, NULL when not isolated */
	unsigned long cr3;		/* CR3 while isolated, 0 when not */
	unsigned long full_cr3;		/* CR3 to return to: the task's mm */
	unsigned long table;		/* the instance's restricted table (phys) */
	bool switching;			/* between the two CR3 writes */
	u8 smt_state;			/* enum asi_smt_state */
	u8 in_guest;			/* enum asi_guest_mode */
	u64 smt_instance;		/* the instance id, while ASI_SMT_IN */
	u64 smt_held_since;		/* TSC of the first refused entry, 0: none */
	unsigned int nr_siblings;
	unsigned int siblings[ASI_MAX_SIBLINGS];
	unsigned int pcid_next;		/* the restricted PCID to reuse next */
	u64 pcid_owner[ASI_NR_PCIDS];	/* instance id, 0: none */
	u64 pcid_gen[ASI_NR_PCIDS];	/* its TLB generation then */
#ifdef CONFIG_ADDRESS_SPACE_ISOLATION_DEBUG
	unsigned int canary_left;	/* isolated VM-entries that read the canary */
	unsigned long canary_page;	/* the test canary, a page nothing maps */
#endif
	struct asi_stats stats;
} __aligned(PAGE_SIZE);

#ifdef CONFIG_ADDRESS_SPACE_ISOLATION

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
 * and after the page-aligned one).  The reserve starts a page: the
 * kernel's static per-CPU data ends one (PERCPU_ASI_END).
 */
#define ASI_PERCPU_RESERVE	(IS_ENABLED(CONFIG_MODULES) ? 4 * PAGE_SIZE : 0)

DECLARE_STATIC_KEY_FALSE(asi_enabled_key);
DECLARE_STATIC_KEY_FALSE(asi_smt_key);
extern bool asi_at_boot;
DECLARE_PER_CPU_PAGE_ALIGNED(struct asi_cpu, asi_cpu);
/* This CPU left its restricted table since the client last asked. */
DECLARE_PER_CPU_ASI(bool, asi_trip);
/* Isolated, with the IBPB after each VM-exit deferred (asi_vmexit_ibpb()). */
DECLARE_PER_CPU_ASI(bool, asi_ibpb_deferring);
/* A VM-exit deferred its IBPB: the next move to full mappings runs it. */
DECLARE_PER_CPU_ASI(bool, asi_ibpb_pending);
DECLARE_PER_CPU_ASI(u64, asi_ibpb_deferred);

/* True once asi_setup() built the core address space. */
static __always_inline bool asi_enabled(void)
{
	return static_branch_unlikely(&asi_enabled_key);
}

/*
 * Isolation asked for at boot (asi=on): the kernel keeps its
 * mappings as PTI does, with PTI or without: not global, so that no TLB
 * entry of theirs outlives a switch to a restricted table, and with the
 * freed gaps of the kernel image unmapped, so that a restricted table
 * that copies the image's page tables maps no freed page.
 */
static __always_inline bool asi_boot_layout(void)
{
	return asi_at_boot;
}

int asi_setup(struct module *const *mods, unsigned int nr_mods);
void asi_teardown(void);
void asi_request_at_boot(void);
int asi_task_struct_size(int size);
size_t asi_exclusive_size(size_t size);

struct asi *asi_create(const char *name);
bool asi_destroy(struct asi *asi);
int asi_map(struct asi *asi, const void *ptr, size_t size,
	    enum asi_level level, const char *owner);
void asi_unmap(struct asi *asi, const void *ptr);
int asi_map_percpu(struct asi *asi, void __percpu *ptr,
		   size_t size, const char *owner);
void asi_unmap_percpu(struct asi *asi, void __percpu *ptr);
int asi_map_task(struct asi *asi, struct task_struct *task);
void asi_unmap_task(struct asi *asi, struct task_struct *task);
unsigned long asi_pgtable_pages(void);
const char *asi_name(struct asi *asi);
bool asi_is_mapped(struct asi *asi, const void *addr);
const char *asi_degraded(void);

void asi_enter(struct asi *asi);
bool asi_exit(void);
/* After VM-exit in place of entry_ibpb(), with X86_FEATURE_IBPB_ON_VMEXIT. */
void asi_vmexit_ibpb(void);
bool asi_guest_enter(void);
void asi_guest_exit(void);
void asi_idle_enter(void);
void asi_idle_exit(void);
bool asi_loaded(struct asi *asi);
void asi_get_stats(struct asi_stats *sum);
void asi_reset_stats(void);
void asi_reset_fault_log(void);
void asi_set_fault_stack(bool on);
unsigned int asi_fault_log(struct asi_fault_site *log);

#ifdef CONFIG_ADDRESS_SPACE_ISOLATION_DEBUG
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

/* An interrupt or system vector leaves isolation, or wakes an idle sibling. */
static __always_inline void asi_interrupt(void)
{
	if (asi_enabled() && (this_cpu_read(asi_cpu.cr3) ||
			      this_cpu_read(asi_cpu.smt_state) == ASI_SMT_IDLE))
		__asi_interrupt();
}

/*
 * NMI, #MC and #DB, which arrive at any instruction: first thing, move to
 * full mappings if this CPU is on its restricted table; last thing, go
 * back.  From the handlers' noinstr parts, so inline only.  Not exported:
 * KVM leaves with asi_exit() before it dispatches a machine check.
 */
unsigned long __asi_paranoid_enter(void);
void __asi_paranoid_exit(unsigned long token);

/* The SMT state a trip restores, above the CR3 bits (a physical address). */
#define ASI_PARANOID_SMT_SHIFT	56
#define ASI_PARANOID_SMT_MASK	(3UL << ASI_PARANOID_SMT_SHIFT)

static __always_inline unsigned long asi_paranoid_enter(void)
{
	return asi_enabled() ? __asi_paranoid_enter() : 0;
}

static __always_inline void asi_paranoid_exit(unsigned long cr3)
{
	if (cr3)
		__asi_paranoid_exit(cr3);
}

/* What asi_flush_trip() clears on this machine (asi_trip_flushes()). */
#define ASI_TRIP_FLUSH_L1D	BIT(0)
#define ASI_TRIP_FLUSH_VERW	BIT(1)
/*
 * Not a flush of asi_flush_trip(): each move out of isolation runs the IBPB
 * that VM-exits deferred (asi_ibpb=defer, asi_ibpb.S).
 */
#define ASI_TRIP_IBPB		BIT(2)

unsigned int asi_trip_flushes(void);
bool __asi_flush_trip(void);

/**
 * asi_flush_trip() - clear what host code left in the core since last asked
 *
 * Every leave, every NMI, #MC or #DB trip to full mappings, and every
 * sibling thread's move to host code marks a trip: the code that ran may
 * have brought other data into the core's caches and buffers.  The user
 * calls this with interrupts off, last thing before it runs untrusted
 * code, and the CPU's L1D flush and buffer clearing run once for all
 * trips since the last call.  A pull rather than a call into the user:
 * trips happen in NMIs, where no user code may run.
 */
static __always_inline void asi_flush_trip(void)
{
	if (asi_enabled())
		__asi_flush_trip();
}

bool __asi_covers_l1d(void);

/* Will asi_flush_trip() flush L1D before this VM-entry if it must? */
static __always_inline bool asi_covers_l1d(void)
{
	return asi_enabled() && __asi_covers_l1d();
}

/* CR3 while this CPU is isolated, 0 when not. */
static __always_inline unsigned long asi_cr3(void)
{
	return asi_enabled() ? this_cpu_read(asi_cpu.cr3) : 0;
}

void __asi_unexpected(void);
void __asi_ibpb_missed(void);

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
	/* The debugging aids: every move out ran what VM-exits deferred. */
	if (IS_ENABLED(CONFIG_ADDRESS_SPACE_ISOLATION_DEBUG) && asi_enabled() &&
	    this_cpu_read(asi_ibpb_pending))
		__asi_ibpb_missed();
}

#else /* !CONFIG_ADDRESS_SPACE_ISOLATION */

static __always_inline bool asi_enabled(void)
{
	return false;
}

static __always_inline bool asi_boot_layout(void)
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

static __always_inline void asi_flush_trip(void) {}

static inline unsigned int asi_trip_flushes(void) { return 0; }

static __always_inline bool asi_covers_l1d(void) { return false; }

static inline bool asi_guest_enter(void) { return true; }

static inline void asi_guest_exit(void) {}

static __always_inline void asi_idle_enter(void) {}

static __always_inline void asi_idle_exit(void) {}

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

#endif /* CONFIG_ADDRESS_SPACE_ISOLATION */

#endif /* _ASM_X86_ASI_H */
