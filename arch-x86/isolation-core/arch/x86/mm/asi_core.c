// SPDX-License-Identifier: GPL-2.0
/*
 * Address space isolation (ASI): the core instance, which every instance
 * maps by reference -- what the entry code, the switch and the user's
 * modules need on any CPU -- and setting isolation up and down: the boot
 * parameter that lays out the kernel for it, and the degraded modes.
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
#include <vdso/datapage.h>

#include <asm/cpu_entry_area.h>
#include <asm/desc.h>
#include <asm/intel_ds.h>
#include <asm/asi.h>
#include <asm/sections.h>
#include <asm/tlbflush.h>
#include <asm/vvar.h>

#include "asi.h"

/*
 * Task structs and SRCU's per-CPU data on pages of their own: a vCPU's
 * task and its VM's SRCU data are mapped into the VM's address space, and
 * the allocators pack them with others (each task with its saved FPU
 * registers).  The task cache is created at boot, long before the user's
 * module loads, so it is asked for at boot (asi=on, or a user's parameter
 * that implies it); without it, isolation is refused.
 * Asked for there, the kernel's mappings are made non-global too, as PTI
 * makes them, so that isolation works without PTI.
 */
bool asi_at_boot __ro_after_init;
/*
 * Why isolation runs degraded, or NULL: lockdep maps all of the kernel's
 * data, task structs do not start pages, or 5-level paging puts every
 * CPU's entry area in each VM's table.  Such a kernel tests
 * isolation's paths; it does not keep host data from guests.  It is
 * tainted, and says why.
 */
static const char *asi_degraded_why __read_mostly;

/**
 * asi_degraded() - why isolation runs degraded on this kernel
 *
 * Return: the reason, or NULL when it does not.
 */
const char *asi_degraded(void)
{
	return asi_degraded_why;
}
EXPORT_SYMBOL_NS_GPL(asi_degraded, ASI);

/*
 * What every VM needs of the per-CPU data: what the entry code and the
 * VM-entry and VM-exit paths touch while isolated.  Each of these fills
 * its pages, so nothing else is mapped with it: the variables defined with
 * DEFINE_PER_CPU_ASI(), on pages of their own; the page-aligned GDT and
 * our own state; and the first per-CPU page, which holds only
 * fixed_percpu_data (the stack canary), followed by page alignment.  Not
 * the TSS: the CPU reads it through the cpu_entry_area, and the entry
 * code through this per-CPU alias only on the way to or from user mode,
 * which no isolated path takes.
 */
static int asi_map_core_percpu(struct asi *asi)
{
	static const struct {
		void __percpu *ptr;
		size_t size;
	} vars[] = {
		/* DEFINE_PER_CPU_ASI(): the entry code, VM-entry and VM-exit */
		{ (void __percpu __force *)__per_cpu_asi_start, 0 },
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
		ret = asi_map_percpu(asi, vars[i].ptr, size, "core");
		if (ret)
			return ret;
	}
	return 0;
}

#ifdef CONFIG_LOCKDEP
/*
 * Does the static per-CPU page at offset @off back a page of an entry
 * area?  Its exception stacks, entry stack, TSS and debug store are
 * per-CPU pages; not its GDT, which the core maps anyway.  The debug
 * store is one page, page aligned.
 */
static bool asi_backs_entry_area(unsigned long off)
{
	int cpu = cpumask_first(cpu_possible_mask);
	unsigned long area = (unsigned long)get_cpu_entry_area(cpu), addr, k;

#ifdef CONFIG_CPU_SUP_INTEL
	/* The debug store, also where no entry area maps it: not Intel's */
	if (off == (__force unsigned long)&cpu_debug_store)
		return true;
#endif
	for (addr = area + PAGE_SIZE; addr < area + CPU_ENTRY_AREA_SIZE; addr += PAGE_SIZE) {
		k = asi_kernel_entry(addr, ASI_PTE);
		if (k && (unsigned long)pfn_to_kaddr((k & PTE_PFN_MASK) >> PAGE_SHIFT) -
			 per_cpu_offset(cpu) == off)
			return true;
	}
	return false;
}

/*
 * All of the static per-CPU data, but what backs the entry areas: no
 * CPU's table maps another's (nor, written by PEBS and BTS, any debug
 * store).
 */
static int asi_map_lockdep_percpu(struct asi *asi)
{
	unsigned long start = (unsigned long)__per_cpu_start, end = (unsigned long)__per_cpu_end;
	unsigned long off, run = start;
	int ret;

	for (off = start; off < end; off += PAGE_SIZE) {
		if (!asi_backs_entry_area(off))
			continue;
		if (off > run) {
			ret = asi_map_percpu(asi, (void __percpu __force *)run, off - run,
					     "lockdep");
			if (ret)
				return ret;
		}
		run = off + PAGE_SIZE;
	}
	if (run >= end)
		return 0;
	return asi_map_percpu(asi, (void __percpu __force *)run, end - run, "lockdep");
}
#endif

/*
 * Kernel data read on the VM-entry and VM-exit paths while isolated: what
 * is defined __asi_data, on pages of its own (the CPU masks that
 * RCU's and lockdep's checks read; bp_desc and tp_vec, which a static key
 * flipped on another CPU makes poke_int3_handler() read at any instruction
 * being patched), and the tracepoint strings (TPS()), read as arguments
 * even when tracing is off, which the linker script page-aligns too.
 */
static int asi_map_core_data(struct asi *asi)
{
	size_t size = __end_asi_data - __start_asi_data;
	int ret;

	/* __asi_data: CPU masks, and the text-patching state poke_int3_handler() reads */
	ret = asi_map(asi, __start_asi_data, size, ASI_PTE,
		      "core");
#ifdef CONFIG_TRACING
	/* The string pointers tracepoint_string() loads, in RCU's calls on VM-entry */
	size = PAGE_ALIGN((unsigned long)__stop___tracepoint_str -
			  (unsigned long)__start___tracepoint_str);
	if (!ret && size)
		ret = asi_map(asi, __start___tracepoint_str, size, ASI_PTE,
			      "core");
#endif
#ifdef CONFIG_LOCKDEP
	/*
	 * Lock tracking reads and writes lockdep's own state (classes, chains,
	 * traces: lockdep.c's static arrays) and the lockdep_map of every
	 * static lock, anywhere in .data and .bss, on each lock operation and
	 * interrupt flag change.  So a lockdep kernel maps all of them: it
	 * tests isolation's paths, it does not keep host data from guests.
	 * .data is mapped with the bug table and ORC's tables (a new
	 * dependency's stack trace reads them), which the linker script puts
	 * between .data and the page-aligned vvar page: one range, which
	 * shares no page.
	 */
	if (!ret)
		ret = asi_map(asi, _sdata, &__vvar_page - _sdata, ASI_PTE, "lockdep");
	if (!ret)
		ret = asi_map(asi, __bss_start, __bss_stop - __bss_start,
			      ASI_PTE, "lockdep");
	/* The same for per-CPU data: lockdep's, and its checkers' beside it. */
	if (!ret)
		ret = asi_map_lockdep_percpu(asi);
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
static int asi_map_module(struct asi *asi, struct module *mod)
{
	const struct module_layout *l = &mod->core_layout;
	int ret;

	ret = asi_map_kind(asi, l->base, l->ro_after_init_size, ASI_PTE, "core",
			   ASI_KIND_OBJECT, _PAGE_RW);
	if (ret)
		return ret;
	if (l->size > l->ro_after_init_size) {
		ret = asi_map(asi, l->base + l->ro_after_init_size,
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
	return asi_map_percpu_kind(asi, mod->percpu, mod->percpu_size, "core", ASI_KIND_OBJECT);
}

/*
 * The cpu_entry_area, page by page: the IDT, and the CPU's GDT, entry
 * stack, TSS and exception stacks, which the CPU and the entry code use
 * before an interrupt or exception can leave isolation.  Not the debug
 * store and the PEBS/BTS buffers after them: PEBS and BTS write sampled
 * host registers and branches there, so a CPU whose PMU may write them
 * stays out of isolation instead (asi_enter()).
 */
static int asi_map_entry_area(struct asi *area, struct asi *core, int cpu)
{
	const struct { const void *ptr; size_t size; } parts[] = {
		/* The IDT, through which every interrupt and exception leaves */
		{ (void *)CPU_ENTRY_AREA_RO_IDT, PAGE_SIZE },
		/* The CPU's own: what the CPU and the entry code use before leaving */
		{ get_cpu_entry_area(cpu), offsetof(struct cpu_entry_area, cpu_debug_store) },
	};
	int i, ret = 0;

	for (i = 0; i < ARRAY_SIZE(parts) && !ret; i++) {
		ret = asi_map(area, parts[i].ptr, parts[i].size, ASI_PTE, "core");
		/* The shadow is elsewhere: the core's, which every table takes */
		if (!ret && area != core)
			ret = asi_map_shadow(core, parts[i].ptr, parts[i].size, "core");
	}
	return ret;
}

/**
 * asi_map_cpu_entry_areas() - map each CPU's entry area for the core
 * @core: the core
 * @degraded: set to why every CPU's entry area is in one table, if it is
 *
 * Each CPU's entry area goes in an instance of its own, whose top-level
 * entry each VM's table for that CPU takes (asi_cpu_pgd()): another CPU's
 * exception stacks hold the frames of whatever it handled there, its TSS
 * the I/O bitmap of the task it runs, its entry stack that task's
 * registers.  With 5-level paging the core maps all of them.
 *
 * Return: 0 or a negative error, after undoing what it made.
 */
int asi_map_cpu_entry_areas(struct asi *core, const char **degraded)
{
	struct asi **areas;
	int cpu, ret = 0;

	if (asi_entry_area_slot() < 0) {
		*degraded = "5-level paging: each VM maps every CPU's entry area";
		for_each_possible_cpu(cpu) {
			ret = asi_map_entry_area(core, core, cpu);
			if (ret)
				return ret;
		}
		return 0;
	}
	areas = kcalloc(nr_cpu_ids, sizeof(*areas), GFP_KERNEL);
	if (!areas)
		return -ENOMEM;
	for_each_possible_cpu(cpu) {
		areas[cpu] = asi_alloc_instance(NULL, GFP_KERNEL, "core");
		if (!areas[cpu]) {
			ret = -ENOMEM;
			break;
		}
		snprintf(areas[cpu]->name, sizeof(areas[cpu]->name), "core-cpu%d", cpu);
		areas[cpu]->kasan_shadow = false;
		ret = asi_map_entry_area(areas[cpu], core, cpu);
		if (ret)
			break;
	}
	if (ret) {
		for_each_possible_cpu(cpu)
			asi_destroy(areas[cpu]);
		kfree(areas);
		return ret;
	}
	/* Complete, for the reports that walk the instances */
	mutex_lock(&asi_instances_lock);
	core->entry_areas = areas;
	mutex_unlock(&asi_instances_lock);
	return 0;
}

static int asi_map_core(struct asi *asi, struct module *const *mods,
			unsigned int nr_mods, const char **what)
{
	unsigned int i;
	int ret;

	/* Everything that runs: entry code, VM-entry and VM-exit, handlers */
	*what = "kernel text";
	ret = asi_map(asi, _text, _etext - _text, ASI_PMD, "core");
	if (ret)
		return ret;
	/* Constants, jump tables, __per_cpu_offset, exception tables */
	*what = "kernel rodata";
	ret = asi_map(asi, __start_rodata, __end_rodata - __start_rodata,
		      ASI_PMD, "core");
	if (ret)
		return ret;
	*what = "cpu_entry_area";
	ret = asi_map_cpu_entry_areas(asi, &asi_degraded_why);
	if (ret)
		return ret;
	*what = "per-CPU data";
	ret = asi_map_core_percpu(asi);
	if (ret)
		return ret;
	*what = "kernel data";
	ret = asi_map_core_data(asi);
	if (ret)
		return ret;
	/* The user's modules: its exit handlers and their data */
	*what = "modules";
	for (i = 0; i < nr_mods && !ret; i++)
		ret = asi_map_module(asi, mods[i]);
	return ret;
}

static int __init asi_parse_cmdline(char *arg)
{
	if (!arg)
		return -EINVAL;
	return kstrtobool(arg, &asi_at_boot);
}
early_param("asi", asi_parse_cmdline);

/**
 * asi_request_at_boot() - lay out the kernel for isolation
 *
 * For a user's own boot parameter that implies asi=on, from its
 * early_param() handler: parameters are parsed before the task cache and
 * SRCU's data exist.
 */
void __init asi_request_at_boot(void)
{
	asi_at_boot = true;
}

/**
 * asi_task_struct_size() - the size of task structs
 * @size: the size of a task struct with its FPU state
 *
 * Called once by the FPU code, after early parameters are parsed and
 * before fork_init() creates the task struct cache.  A cache of objects
 * of whole pages lays each object on pages of its own, and
 * arch_dup_task_struct() zeroes what follows the task struct.
 *
 * Return: @size, rounded up to whole pages with asi=on on the kernel
 * command line.
 */
int __init asi_task_struct_size(int size)
{
	return asi_exclusive_size(size);
}

/**
 * asi_exclusive_size() - the size to allocate for an object isolation maps
 * @size: the size of the object
 *
 * For objects that code outside the user allocates and an isolated address
 * space maps (each VM's SRCU per-CPU data): allocated at this size, and aligned
 * to it, the object shares its pages with nothing.
 *
 * Return: @size, rounded up to whole pages with asi=on on the kernel
 * command line.
 */
size_t asi_exclusive_size(size_t size)
{
	return asi_at_boot ? PAGE_ALIGN(size) : size;
}
EXPORT_SYMBOL_NS_GPL(asi_exclusive_size, ASI);

/*
 * Does every task struct start a page?  The task cache lays them out so
 * (ARCH_MIN_TASKALIGN, asi_task_struct_size()), the slab's red zones and
 * KASAN's metadata on pages of their own; the layout is relied on, so it
 * is checked.
 */
static bool asi_tasks_page_aligned(void)
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
 * Isolation must have been asked for at boot (asi=on, or a user's
 * parameter that implies it): only then are task structs and SRCU
 * data on pages of their own, and the kernel's mappings not global (so
 * that its TLB entries do not outlive the switch to a restricted table)
 * where PTI does not make them so.
 *
 * Return: 0 when isolation is enabled, else a negative error, after saying
 * why: -EOPNOTSUPP when it was not asked for at boot.
 */
int asi_setup(struct module *const *mods, unsigned int nr_mods)
{
	const char *what = "the core address space";
	unsigned int i;
	int ret = -ENOMEM;

	/*
	 * Asked for at boot, the kernel lays out for isolation what a VM maps
	 * besides the user's own objects: task structs and SRCU data on pages of
	 * their own and, without PTI, kernel mappings that are not global.
	 * Asked for any later, all of that shares its pages with what a VM may
	 * not see.
	 */
	if (!asi_at_boot) {
		pr_warn("not enabled: task structs, SRCU data and the kernel's mappings are laid out for isolation only when it is asked for at boot: pass asi=on on the kernel command line\n");
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
			return -EINVAL;
		}
	}
	if (WARN_ON(asi_core))
		return -EBUSY;
	/* A reason of an earlier setup, torn down since, is not this one's */
	asi_degraded_why = NULL;

	asi_core = asi_create_instance(NULL, GFP_KERNEL, "core");
	if (!asi_core)
		goto err;
	ret = asi_map_core(asi_core, mods, nr_mods, &what);
	if (ret)
		goto err;

	static_branch_enable(&asi_enabled_key);
	if (IS_ENABLED(CONFIG_LOCKDEP))
		asi_degraded_why = "lockdep maps all of the kernel's data (CONFIG_LOCKDEP)";
	else if (!asi_degraded_why && !asi_tasks_page_aligned())
		asi_degraded_why = "task structs do not start pages";
	if (asi_degraded_why) {
		add_taint(TAINT_AUX, LOCKDEP_STILL_OK);
		pr_warn("degraded, the kernel is tainted: %s\n", asi_degraded_why);
	}
	pr_info("Running with isolated address space: core maps %lu KiB, %lu page-table pages\n",
		asi_mapped_total(asi_core) >> 10, asi_pgtable_pages());
	return 0;
err:
	asi_degraded_why = NULL;
	pr_err("not enabled: mapping %s failed (%d)\n", what, ret);
	asi_destroy(asi_core);
	asi_core = NULL;
	return ret;
}
EXPORT_SYMBOL_NS_GPL(asi_setup, ASI);

/**
 * asi_teardown() - disable isolation and free the core
 *
 * Called when the user goes away; every VM's instance is gone by then.
 */
void asi_teardown(void)
{
	int cpu;

	if (!asi_core)
		return;
	/* With the key off, interrupts would not leave a CPU still isolated. */
	for_each_possible_cpu(cpu) {
		if (READ_ONCE(per_cpu(asi_cpu, cpu).asi)) {
			WARN(1, "CPU %d is still isolated: isolation stays enabled\n", cpu);
			return;
		}
	}
	static_branch_disable(&asi_enabled_key);
	WARN_ON(atomic_read(&asi_nr_shared_users));
	asi_destroy(asi_core);
	asi_core = NULL;
	pr_info("isolated address space disabled\n");
}
EXPORT_SYMBOL_NS_GPL(asi_teardown, ASI);
