// SPDX-License-Identifier: GPL-2.0
/*
 * KVM address space isolation, KVM's side: the run-time switch, one
 * isolated address space per VM with the VM's, its vCPUs' and their tasks'
 * data, and where KVM_RUN enters and leaves it.  The restricted page tables
 * and the switching are built into the kernel (arch/x86/mm/asi*.c).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/kvm_host.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/tracepoint.h>
#include <linux/xarray.h>

#include <asm/fpu/api.h>

#include "irq.h"
#include "isolation.h"
#include "kvm_cache_regs.h"
#include "kvm_emulate.h"
#include "lapic.h"

#define CREATE_TRACE_POINTS
#include "isolation_trace.h"

/*
 * The tracepoints that fire on the isolated path: KVM's own and the
 * kernel's below.  Tracing reads probe arrays and writes ring buffers that
 * isolation does not map, so no vCPU enters isolation while one of them is
 * enabled.  Those with no registration callback of their own get ours
 * (kvm_x86_isolation_tp_reg()), which keeps vCPUs out from before the
 * tracepoint's call sites are patched; the others are checked at KVM_RUN.
 */
static struct tracepoint **kvm_x86_isolation_tps;
static unsigned int kvm_x86_isolation_nr_tps;

/* Interrupt flag tracing (guest_state_enter_irqoff()) and MSR accesses. */
static const char * const kvm_x86_isolation_kernel_tps[] = {
	"irq_disable", "irq_enable", "preempt_disable", "preempt_enable",
	"read_msr", "write_msr", "rdpmc",
};

/* Tracepoints of the list enabled, and those being disabled. */
static atomic_t kvm_x86_isolation_tracing, kvm_x86_isolation_untracing;
static DEFINE_MUTEX(kvm_x86_isolation_tp_lock);	/* installs the callbacks */
static void kvm_x86_isolation_untrace(struct work_struct *work);
static DECLARE_DELAYED_WORK(kvm_x86_isolation_untrace_work, kvm_x86_isolation_untrace);

/* Built in, isolation is used only when asked for. */
static bool __read_mostly address_space_isolation;
module_param(address_space_isolation, bool, 0444);

/* The module's per-CPU data (the running vCPU, the TSC rate) is mapped. */
ASI_MODULE_PERCPU_PAGES();

/* Why KVM left isolation, and where VM-exits were handled. */
static DEFINE_PER_CPU(struct kvm_x86_isolation_stats, kvm_x86_isolation_stats);

/* The isolation layer's exports (namespace ASI), and the FPU code's for KVM. */
MODULE_IMPORT_NS(ASI);
MODULE_IMPORT_NS(KVM);

static bool page_fault_stack = true;

static int page_fault_stack_set(const char *val, const struct kernel_param *kp)
{
	int ret = param_set_bool(val, kp);

	if (!ret)
		asi_set_fault_stack(page_fault_stack);
	return ret;
}

static const struct kernel_param_ops page_fault_stack_ops = {
	.set = page_fault_stack_set,
	.get = param_get_bool,
};

/* Dump the stack with each newly seen isolation fault. */
module_param_cb(page_fault_stack, &page_fault_stack_ops, &page_fault_stack, 0644);

static void kvm_x86_isolation_tp_sync(void *unused)
{
}

/*
 * First enabling of a listed tracepoint, before its call sites are
 * patched: vCPUs entering from now on see the count, and those inside
 * take this IPI, which leaves isolation, before the sites change.
 */
static int kvm_x86_isolation_tp_reg(void)
{
	atomic_inc(&kvm_x86_isolation_tracing);
	/* The count is visible before any CPU takes the IPI. */
	smp_mb__after_atomic();
	on_each_cpu(kvm_x86_isolation_tp_sync, NULL, 1);
	return 0;
}

/*
 * Last probe going, called before the call sites are patched back: count
 * it out only once no listed tracepoint is still enabled, or others are.
 */
static void kvm_x86_isolation_tp_unreg(void)
{
	atomic_inc(&kvm_x86_isolation_untracing);
	schedule_delayed_work(&kvm_x86_isolation_untrace_work, 1);
}

static bool kvm_x86_isolation_traced(void);

static void kvm_x86_isolation_untrace(struct work_struct *work)
{
	int going = atomic_read(&kvm_x86_isolation_untracing);

	if (!going)
		return;
	if (atomic_read(&kvm_x86_isolation_tracing) <= going && kvm_x86_isolation_traced()) {
		schedule_delayed_work(&kvm_x86_isolation_untrace_work, HZ / 100);
		return;
	}
	atomic_sub(going, &kvm_x86_isolation_untracing);
	atomic_sub(going, &kvm_x86_isolation_tracing);
}

/* Add @tp to the list, with our callbacks if it has none. */
static void kvm_x86_isolation_add_tp(struct tracepoint *tp)
{
	kvm_x86_isolation_tps[kvm_x86_isolation_nr_tps++] = tp;
	if (tp->regfunc || tp->unregfunc)
		return;
	tp->regfunc = kvm_x86_isolation_tp_reg;
	tp->unregfunc = kvm_x86_isolation_tp_unreg;
	/* Enabled before the callbacks were installed. */
	if (static_key_enabled(&tp->key))
		atomic_inc(&kvm_x86_isolation_tracing);
}

/* Unused without tracepoints in a module, where nothing is looked up. */
static void __maybe_unused kvm_x86_isolation_find_kernel_tp(struct tracepoint *tp, void *unused)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(kvm_x86_isolation_kernel_tps); i++)
		if (!strcmp(tp->name, kvm_x86_isolation_kernel_tps[i]))
			kvm_x86_isolation_add_tp(tp);
}

#if defined(CONFIG_TRACEPOINTS) && defined(MODULE)
/* Isolation's own events, which fire on full mappings, are not listed. */
static int kvm_x86_isolation_find_tracepoints(void)
{
	unsigned int i, n = THIS_MODULE->num_tracepoints + ARRAY_SIZE(kvm_x86_isolation_kernel_tps);
	struct tracepoint *tp;

	kvm_x86_isolation_tps = kcalloc(n, sizeof(*kvm_x86_isolation_tps), GFP_KERNEL);
	if (!kvm_x86_isolation_tps)
		goto nomem;
	mutex_lock(&kvm_x86_isolation_tp_lock);
	kvm_x86_isolation_nr_tps = 0;
	atomic_set(&kvm_x86_isolation_tracing, 0);
	atomic_set(&kvm_x86_isolation_untracing, 0);
	for (i = 0; i < THIS_MODULE->num_tracepoints; i++) {
		tp = tracepoint_ptr_deref(&THIS_MODULE->tracepoints_ptrs[i]);
		if (tp != &__tracepoint_kvm_isolation_enter &&
		    tp != &__tracepoint_kvm_isolation_exit)
			kvm_x86_isolation_add_tp(tp);
	}
	for_each_kernel_tracepoint(kvm_x86_isolation_find_kernel_tp, NULL);
	mutex_unlock(&kvm_x86_isolation_tp_lock);
	return 0;
nomem:
	/* Without the list, tracing would fault: isolation is not set up. */
	pr_err("isolation not enabled: no memory for the tracepoint list\n");
	return -ENOMEM;
}
#else
/* Built in, KVM does not use isolation. */
static int kvm_x86_isolation_find_tracepoints(void)
{
	return 0;
}
#endif

/* Take our callbacks back and forget the list. */
static void kvm_x86_isolation_forget_tracepoints(void)
{
	unsigned int i;

	mutex_lock(&kvm_x86_isolation_tp_lock);
	for (i = 0; i < kvm_x86_isolation_nr_tps; i++) {
		if (kvm_x86_isolation_tps[i]->regfunc != kvm_x86_isolation_tp_reg)
			continue;
		kvm_x86_isolation_tps[i]->regfunc = NULL;
		kvm_x86_isolation_tps[i]->unregfunc = NULL;
	}
	kvm_x86_isolation_nr_tps = 0;
	mutex_unlock(&kvm_x86_isolation_tp_lock);
	cancel_delayed_work_sync(&kvm_x86_isolation_untrace_work);
	kfree(kvm_x86_isolation_tps);
	kvm_x86_isolation_tps = NULL;
}

/* Is one of the listed tracepoints enabled? */
static bool kvm_x86_isolation_traced(void)
{
	unsigned int i;

	for (i = 0; i < kvm_x86_isolation_nr_tps; i++) {
		if (static_key_enabled(&kvm_x86_isolation_tps[i]->key))
			return true;
	}
	return false;
}

/**
 * kvm_x86_isolation_setup() - build the core address space
 * @ops: the vendor module's init ops: its owner's code and data every VM maps
 *
 * Called at the end of kvm_arch_hardware_setup(), once the vendor module is
 * known.  A failure leaves KVM working without isolation, and
 * kvm.address_space_isolation reads back as 0; asi_setup() said
 * why.
 */
void kvm_x86_isolation_setup(struct kvm_x86_init_ops *ops)
{
	/* Both modules are mapped whole: kvm and the vendor module. */
	struct module *mods[2] = { THIS_MODULE, ops->owner };
	int ret;

	if (!address_space_isolation)
		return;
	if (IS_BUILTIN(CONFIG_KVM)) {
		pr_warn("isolation not enabled: KVM is built into the kernel (build it as a module, CONFIG_KVM=m)\n");
		goto off;
	}
	if (!ops->owner) {
		pr_err("isolation not enabled: the vendor module did not name itself in its init ops\n");
		goto off;
	}
	if (kvm_x86_isolation_find_tracepoints())
		goto err_free_tps;
	ret = asi_setup(mods, ARRAY_SIZE(mods));
	/* Task structs and SRCU data are on pages of their own only then. */
	if (ret == -EOPNOTSUPP)
		pr_warn("isolation not enabled: the kernel was not laid out for it at boot: pass kvm.address_space_isolation=1 on the kernel command line\n");
	if (ret)
		goto err_free_tps;
	/* This kvm.ko's parameter and counters, also after a reload. */
	asi_set_fault_stack(page_fault_stack);
	asi_reset_stats();
	return;

err_free_tps:
	kvm_x86_isolation_forget_tracepoints();
off:
	address_space_isolation = false;
}

/**
 * kvm_x86_isolation_teardown() - free the core address space
 *
 * Called from kvm_arch_hardware_unsetup(), before the vendor module goes
 * away.
 */
void kvm_x86_isolation_teardown(void)
{
	if (address_space_isolation)
		asi_teardown();
	kvm_x86_isolation_forget_tracepoints();
	kvm_x86_isolation_debug_teardown();
}

/**
 * kvm_x86_isolation_vcpu_align() - alignment of vCPU objects
 * @align: the alignment of a vCPU structure or its emulator context
 *
 * With isolation, vCPU objects get pages of their own, so that mapping a
 * vCPU in its VM's address space never maps part of another VM's vCPU.
 *
 * Return: @align, or at least PAGE_SIZE with isolation on.
 */
unsigned int kvm_x86_isolation_vcpu_align(unsigned int align)
{
	return address_space_isolation ? max_t(unsigned int, align, PAGE_SIZE) : align;
}
EXPORT_SYMBOL_NS_GPL(kvm_x86_isolation_vcpu_align, KVM);

/**
 * kvm_arch_vm_object_size() - how much to allocate for an object of one VM
 * @size: the object's size
 *
 * With isolation, the objects a VM maps (its buses, memslots, PIC, local
 * APICs, CPUID tables) are rounded up to whole pages, so that they share
 * no page with anything else: kmalloc() aligns allocations of a page or
 * more to their size, and larger ones come from the page allocator or
 * vmalloc.  So are the objects of the vCPU and emulator caches, which are
 * page aligned: metadata the slab keeps after each (KASAN's) is then on a
 * page of its own.  Those caches are created as kvm.ko's parameter asks,
 * before setup knows whether isolation can run; if it cannot, their
 * objects stay whole pages.
 *
 * Return: @size, or @size rounded up to pages with isolation on.
 */
size_t kvm_arch_vm_object_size(size_t size)
{
	return address_space_isolation && size <= KMALLOC_MAX_SIZE ? PAGE_ALIGN(size) : size;
}

/**
 * kvm_x86_isolation_vcpu_objs() - the objects of a vCPU that its VM maps
 * @vcpu: the vCPU
 * @o: KVM_X86_ISOLATION_VCPU_OBJS entries to fill
 *
 * The vendor maps its part in its vcpu_create.
 */
void kvm_x86_isolation_vcpu_objs(struct kvm_vcpu *vcpu, struct kvm_isolation_obj *o)
{
	struct fpstate *fps = vcpu->arch.guest_fpu.fpstate;
	struct kvm_lapic *apic = vcpu->arch.apic;

	o[0] = (struct kvm_isolation_obj) { vcpu->run, PAGE_SIZE };
	o[1] = (struct kvm_isolation_obj) { vcpu->arch.pio_data, PAGE_SIZE };
	o[2] = (struct kvm_isolation_obj) { apic, sizeof(*apic) };
	o[3] = (struct kvm_isolation_obj) { apic ? apic->regs : NULL, PAGE_SIZE };
	o[4] = (struct kvm_isolation_obj) { vcpu->arch.emulate_ctxt,
					    sizeof(*vcpu->arch.emulate_ctxt) };
	/* Last: it is reallocated on its own (kvm_x86_isolation_enable_xfd()). */
	o[5] = (struct kvm_isolation_obj) { fps, offsetof(struct fpstate, regs) + fps->size };
}

/* The statistics and fault log, and the debugging aids, under KVM's debugfs. */
void kvm_arch_init_debugfs(struct dentry *kvm_dir)
{
	kvm_x86_isolation_debug_init(kvm_x86_isolation_debugfs_init(kvm_dir));
}

/**
 * kvm_x86_isolation_map_objs() - map objects of a VM, all or none
 * @kvm: the VM
 * @objs: the objects; those with a NULL pointer are skipped
 * @n: how many
 * @owner: "VM" or "vCPU", for reports
 *
 * Return: 0 or a negative error, with nothing mapped.
 */
int kvm_x86_isolation_map_objs(struct kvm *kvm, const struct kvm_isolation_obj *objs,
			       int n, const char *owner)
{
	struct kvm_x86_isolation *xi = kvm->arch.isolation;
	int i, ret;

	if (!xi)
		return 0;
	for (i = 0; i < n; i++) {
		if (!objs[i].ptr)
			continue;
		ret = asi_map(xi->iso, objs[i].ptr, objs[i].size,
			      ASI_PTE, owner);
		if (ret)
			goto err;
	}
	return 0;
err:
	kvm_x86_isolation_unmap_objs(kvm, objs, i);
	return ret;
}
EXPORT_SYMBOL_NS_GPL(kvm_x86_isolation_map_objs, KVM);

/**
 * kvm_x86_isolation_unmap_objs() - unmap what kvm_x86_isolation_map_objs() mapped
 * @kvm: the VM
 * @objs: the same objects
 * @n: how many
 *
 * Nothing to do once the VM is dying: its address space is never loaded
 * again and is freed whole.
 */
void kvm_x86_isolation_unmap_objs(struct kvm *kvm, const struct kvm_isolation_obj *objs,
				  int n)
{
	struct kvm_x86_isolation *xi = kvm->arch.isolation;
	int i;

	/* A dying VM's address space goes whole (the vendors' vCPU frees). */
	if (!xi || xi->dying)
		return;
	for (i = 0; i < n; i++)
		if (objs[i].ptr)
			asi_unmap(xi->iso, objs[i].ptr);
}
EXPORT_SYMBOL_NS_GPL(kvm_x86_isolation_unmap_objs, KVM);

/* Map @bus, about to be published as bus @idx; the old one is retired. */
static int kvm_x86_isolation_map_bus(struct kvm_x86_isolation *xi, enum kvm_bus idx,
				     struct kvm_io_bus *bus)
{
	int ret = 0;

	lockdep_assert_held(&xi->lock);
	WARN_ON_ONCE(xi->retired[idx]);
	xi->retired[idx] = xi->buses[idx];
	if (bus)
		ret = asi_map(xi->iso, bus, struct_size(bus, range, bus->dev_count),
			      ASI_PTE, "VM");
	WRITE_ONCE(xi->buses[idx], ret ? NULL : bus);
	return ret;
}

/*
 * Map a new I/O bus before it is published: a vCPU that reads it at once,
 * inside isolation, finds it mapped.  If that fails, I/O on the bus leaves
 * isolation first (kvm_x86_isolation_io()).
 */
void kvm_arch_bus_publish(struct kvm *kvm, enum kvm_bus idx, struct kvm_io_bus *bus)
{
	struct kvm_x86_isolation *xi = kvm->arch.isolation;
	int ret;

	if (!xi)
		return;
	mutex_lock(&xi->lock);
	ret = kvm_x86_isolation_map_bus(xi, idx, bus);
	mutex_unlock(&xi->lock);
	if (ret)
		pr_warn_ratelimited("VM %d: mapping I/O bus %d failed (%d), its I/O leaves isolation\n",
				    kvm->userspace_pid, idx, ret);
}

/* No SRCU reader sees @old any more, and it is about to be freed: unmap it. */
void kvm_arch_buses_updated(struct kvm *kvm, struct kvm_io_bus *old)
{
	struct kvm_x86_isolation *xi = kvm->arch.isolation;
	int i;

	if (!xi || !old)
		return;
	mutex_lock(&xi->lock);
	for (i = 0; i < KVM_NR_BUSES; i++) {
		if (xi->retired[i] != old)
			continue;
		if (!kvm_x86_isolation_keep_freed(xi, old))
			asi_unmap(xi->iso, old);
		kvm_x86_isolation_note_freed(xi, old,
					     kvm_arch_vm_object_size(struct_size(old, range,
										 old->dev_count)));
		xi->retired[i] = NULL;
	}
	mutex_unlock(&xi->lock);
}

/*
 * Create the VM's isolated address space before user space can reach the
 * VM, with what the VM itself needs: the VM structure, the per-CPU data of
 * its SRCU, its I/O buses and the vendor's data.
 */
int kvm_arch_vm_postcreate(struct kvm *kvm)
{
	static atomic_t vm_seq;
	struct kvm_x86_isolation *xi;
	char name[24];
	int i, ret;

	if (!asi_enabled())
		return 0;
	xi = kzalloc(kvm_arch_vm_object_size(sizeof(*xi)), GFP_KERNEL_ACCOUNT);
	if (!xi)
		return -ENOMEM;
	/* Reports name it after the VM's stats id, plus a sequence number. */
	snprintf(name, sizeof(name), "%s#%u", kvm->stats_id, atomic_inc_return(&vm_seq));
	xi->iso = asi_create(name);
	if (IS_ERR(xi->iso)) {
		ret = PTR_ERR(xi->iso);
		goto err_free;
	}
	mutex_init(&xi->lock);
	INIT_LIST_HEAD(&xi->tasks);
	xa_init(&xi->optional);
	/*
	 * The VM is on vm_list already: publish and withdraw under kvm_lock,
	 * which the debugfs check holds while it reads arch.isolation.
	 */
	mutex_lock(&kvm_lock);
	kvm->arch.isolation = xi;
	mutex_unlock(&kvm_lock);

	ret = asi_map(xi->iso, kvm, kvm_x86_ops.vm_size, ASI_PTE, "VM");
	if (!ret)
		ret = asi_map(xi->iso, xi, sizeof(*xi), ASI_PTE, "VM");
	/* SRCU allocated this size: whole pages with isolation asked for at boot. */
	if (!ret)
		ret = asi_map_percpu(xi->iso, kvm->srcu.sda,
				     asi_exclusive_size(sizeof(*kvm->srcu.sda)),
				     "VM");
	for (i = 0; i < KVM_NR_BUSES && !ret; i++) {
		mutex_lock(&xi->lock);
		ret = kvm_x86_isolation_map_bus(xi, i,
						rcu_dereference_protected(kvm->buses[i], 1));
		mutex_unlock(&xi->lock);
	}
	if (!ret)
		ret = static_call(kvm_x86_isolation_map_vm)(kvm);
	if (ret)
		goto err_destroy;
	kvm_x86_isolation_plant_audit_control(xi);

	/* The fault log starts afresh with each VM. */
	asi_reset_fault_log();
	return 0;

err_destroy:
	mutex_lock(&kvm_lock);
	kvm->arch.isolation = NULL;
	mutex_unlock(&kvm_lock);
	asi_destroy(xi->iso);
err_free:
	kfree(xi);
	pr_warn_ratelimited("creating the isolated address space of a VM failed (%d)\n", ret);
	return ret;
}

/**
 * kvm_x86_isolation_irqchip() - map the in-kernel PIC
 * @kvm: the VM, whose PIC was just created
 *
 * Reads of the PIC's ports are then handled inside isolation: its state is
 * all in struct kvm_pic.  If mapping fails, its port I/O leaves isolation.
 */
void kvm_x86_isolation_irqchip(struct kvm *kvm)
{
	struct kvm_x86_isolation *xi = kvm->arch.isolation;

	if (!xi || !kvm->arch.vpic)
		return;
	mutex_lock(&xi->lock);
	xi->pic = !asi_map(xi->iso, kvm->arch.vpic, sizeof(*kvm->arch.vpic),
			   ASI_PTE, "VM");
	mutex_unlock(&xi->lock);
	if (!xi->pic)
		pr_warn_ratelimited("VM %d: mapping the PIC failed, its I/O leaves isolation\n",
				    kvm->userspace_pid);
}

/**
 * kvm_x86_isolation_vm_predestroy() - unmap what goes before the VM
 * @kvm: the VM being destroyed
 *
 * The VM's buses and devices are freed before it, without telling us.
 * From here the address space is never loaded again.
 */
void kvm_x86_isolation_vm_predestroy(struct kvm *kvm)
{
	struct kvm_x86_isolation *xi = kvm->arch.isolation;
	int i;

	if (!xi)
		return;
	kvm_x86_isolation_audit(xi);
	mutex_lock(&xi->lock);
	if (xi->pic)
		asi_unmap(xi->iso, kvm->arch.vpic);
	xi->pic = false;
	for (i = 0; i < KVM_NR_BUSES; i++) {
		if (xi->buses[i])
			asi_unmap(xi->iso, xi->buses[i]);
		xi->buses[i] = NULL;
		WARN_ON_ONCE(xi->retired[i]);
	}
	if (xi->freed_control)
		asi_unmap(xi->iso, xi->freed_control);
	xi->freed_control = NULL;
	/*
	 * From here the address space is never loaded again and goes as a
	 * whole with the VM: unmapping each vCPU's objects one by one would
	 * only cost a TLB flush each (minutes for a thousand vCPUs).
	 */
	xi->dying = true;
	mutex_unlock(&xi->lock);
}

/**
 * kvm_x86_isolation_vm_destroy() - free the VM's isolated address space
 * @kvm: the VM being destroyed, after its vCPUs
 *
 * Everything still mapped goes with the address space.
 */
void kvm_x86_isolation_vm_destroy(struct kvm *kvm)
{
	struct kvm_x86_isolation *xi = kvm->arch.isolation;

	if (!xi)
		return;
	WARN_ON(!list_empty(&xi->tasks));
	kvm->arch.isolation = NULL;
	asi_destroy(xi->iso);
	xa_destroy(&xi->optional);
	kfree(xi->audit_control);
	kfree(xi);
}

/* Map an object whose mapping is not essential; say so when it fails. */
static void kvm_x86_isolation_map_optional(struct kvm *kvm, const void *ptr, size_t size,
					   const char *owner, const char *what)
{
	struct kvm_x86_isolation *xi = kvm->arch.isolation;
	int ret;

	ret = asi_map(xi->iso, ptr, size, ASI_PTE, owner);
	if (!ret) {
		ret = xa_err(xa_store(&xi->optional, (unsigned long)ptr, xa_mk_value(1),
				      GFP_KERNEL_ACCOUNT));
		if (ret)
			asi_unmap(xi->iso, ptr);
	}
	if (ret)
		pr_warn_ratelimited("VM %d: mapping %s failed (%d), exits that use it will fault\n",
				    kvm->userspace_pid, what, ret);
}

static void kvm_x86_isolation_unmap_optional(struct kvm *kvm, const void *ptr)
{
	struct kvm_x86_isolation *xi = kvm->arch.isolation;

	if (xa_erase(&xi->optional, (unsigned long)ptr))
		asi_unmap(xi->iso, ptr);
}

/*
 * An object the VM mapped, unmapped and about to be freed: the debugging
 * aids remember it for the check (the I/O buses' path holds the lock and
 * calls kvm_x86_isolation_note_freed() itself).
 */
static void kvm_x86_isolation_freeing(struct kvm *kvm, const void *ptr, size_t size)
{
	struct kvm_x86_isolation *xi = kvm->arch.isolation;

	if (!IS_ENABLED(CONFIG_ADDRESS_SPACE_ISOLATION_DEBUG))
		return;
	mutex_lock(&xi->lock);
	kvm_x86_isolation_note_freed(xi, ptr, size);
	mutex_unlock(&xi->lock);
}

/**
 * kvm_x86_isolation_memslot() - follow a committed memslot change
 * @kvm: the VM
 * @old: the memslot replaced or deleted, freed next; unused for a creation
 * @new: the memslot now in use; unused for a deletion
 * @change: what changed
 *
 * A memslot that cannot be mapped is reported; exits that use it fault and
 * leave isolation.
 */
void kvm_x86_isolation_memslot(struct kvm *kvm, const struct kvm_memory_slot *old,
			       const struct kvm_memory_slot *new,
			       enum kvm_mr_change change)
{
	if (!kvm->arch.isolation)
		return;
	if (change != KVM_MR_DELETE)
		kvm_x86_isolation_map_optional(kvm, new, sizeof(*new), "VM", "a memslot");
	if (change == KVM_MR_CREATE)
		return;
	kvm_x86_isolation_unmap_optional(kvm, old);
	kvm_x86_isolation_freeing(kvm, old, kvm_arch_vm_object_size(sizeof(*old)));
}

/* Drop a vCPU's use of a task; the last user unmaps it. */
static void kvm_x86_isolation_put_task(struct kvm_x86_isolation *xi, struct task_struct *task)
{
	struct kvm_x86_isolation_task *t;

	list_for_each_entry(t, &xi->tasks, list) {
		if (t->task != task)
			continue;
		if (!--t->users) {
			asi_unmap_task(xi->iso, task);
			list_del(&t->list);
			kfree(t);
		}
		return;
	}
	WARN_ON_ONCE(1);
}

static int kvm_x86_isolation_get_task(struct kvm_x86_isolation *xi, struct task_struct *task)
{
	struct kvm_x86_isolation_task *t;
	int ret;

	list_for_each_entry(t, &xi->tasks, list) {
		if (t->task == task) {
			t->users++;
			return 0;
		}
	}
	t = kzalloc(sizeof(*t), GFP_KERNEL_ACCOUNT);
	if (!t)
		return -ENOMEM;
	ret = asi_map_task(xi->iso, task);
	if (ret) {
		kfree(t);
		return ret;
	}
	t->task = task;
	t->users = 1;
	list_add(&t->list, &xi->tasks);
	return 0;
}

/**
 * kvm_x86_isolation_vcpu_run() - map the task that runs a vCPU
 * @vcpu: the vCPU about to run
 *
 * Called by KVM_RUN before it enters isolation.  A vCPU may be run by
 * different tasks over its life; the task that ran it last stays mapped
 * (and held) until another one takes over or the vCPU goes away.  If the
 * task cannot be mapped, the vCPU runs without isolation.
 */
void kvm_x86_isolation_vcpu_run(struct kvm_vcpu *vcpu)
{
	struct kvm_x86_isolation *xi = vcpu->kvm->arch.isolation;
	struct task_struct *old = vcpu->arch.isolation_task;

	if (!xi)
		return;
	/*
	 * While a listed tracepoint is enabled, this KVM_RUN does not enter
	 * isolation at all.  Tracing switched on in the middle of a KVM_RUN
	 * keeps vCPUs out from then on (kvm_x86_isolation_tp_reg()); one
	 * switched off lets them in again at once, or at the next KVM_RUN if
	 * it was on when this one began.
	 */
	vcpu->arch.isolation_traced = atomic_read(&kvm_x86_isolation_tracing) ||
				      kvm_x86_isolation_traced();
	if (vcpu->arch.isolation_traced)
		pr_info_once("tracepoints on the isolated path enabled: vCPUs run without isolation\n");
	/*
	 * KVM_RUN just saved the VMM's own FPU registers, in the task struct
	 * that the VM's table is to map: move them out first (once per task,
	 * and again after an exec).
	 */
	if (fpstate_move_out_of_task()) {
		pr_warn_ratelimited("VM %d: no memory to move task %d's FPU state, vCPU %d runs without isolation\n",
				    vcpu->kvm->userspace_pid, current->pid, vcpu->vcpu_id);
		if (old == current) {
			mutex_lock(&xi->lock);
			kvm_x86_isolation_put_task(xi, old);
			mutex_unlock(&xi->lock);
			vcpu->arch.isolation_task = NULL;
		}
		return;
	}
	if (old == current)
		return;
	mutex_lock(&xi->lock);
	if (!kvm_x86_isolation_get_task(xi, current)) {
		vcpu->arch.isolation_task = current;
		if (old)
			kvm_x86_isolation_put_task(xi, old);
	} else {
		pr_warn_ratelimited("VM %d: mapping task %d failed, vCPU %d runs without isolation\n",
				    vcpu->kvm->userspace_pid, current->pid, vcpu->vcpu_id);
	}
	mutex_unlock(&xi->lock);
}

/*
 * Does the guest use VMX or SVM itself?  Nested state (vmcs12, VMCS02,
 * VMCB02, the enlightened VMCS, L1's pages read through user addresses)
 * is not mapped: the exits of L1's VMX and SVM instructions and every
 * exit of L2 would fault, and on VMX a fault after HOST_CR3 is written
 * cannot leave safely.  Such a vCPU runs without isolation.
 */
static bool kvm_x86_isolation_nested(struct kvm_vcpu *vcpu)
{
	return is_guest_mode(vcpu) || (vcpu->arch.efer & EFER_SVME) ||
	       kvm_read_cr4_bits(vcpu, X86_CR4_VMXE);
}

/**
 * kvm_x86_isolation_enter() - enter the VM's isolated address space
 * @vcpu: the vCPU about to enter the guest
 *
 * Called before VM-entry with interrupts off; does nothing if the running
 * task or the guest's FPU state is not mapped, a tracepoint of the isolated
 * path is enabled, or the guest uses nested virtualization.
 */
void kvm_x86_isolation_enter(struct kvm_vcpu *vcpu)
{
	struct kvm_x86_isolation *xi = vcpu->kvm->arch.isolation;

	if (!xi || vcpu->arch.isolation_task != current || vcpu->arch.isolation_traced ||
	    !vcpu->arch.isolation_fpstate || atomic_read(&kvm_x86_isolation_tracing) ||
	    kvm_x86_isolation_nested(vcpu))
		return;
	/*
	 * Traced on full mappings, before the switch; asked only while the
	 * event is on, as most entries find the VM's table loaded already.
	 */
	if (trace_kvm_isolation_enter_enabled() && !asi_loaded(xi->iso))
		trace_kvm_isolation_enter(asi_name(xi->iso));
	asi_enter(xi->iso);
}

/**
 * kvm_x86_isolation_vmexit_done() - count a handled VM-exit
 * @vcpu: the vCPU whose VM-exit was handled
 *
 * Counts whether the exit was handled inside isolation or not.
 */
void kvm_x86_isolation_vmexit_done(struct kvm_vcpu *vcpu)
{
	struct kvm_x86_isolation *xi = vcpu->kvm->arch.isolation;

	if (!xi || vcpu->arch.isolation_task != current)
		return;
	if (asi_loaded(xi->iso)) {
		this_cpu_inc(kvm_x86_isolation_stats.vmexits_inside);
		asi_check_cr3();
	} else {
		this_cpu_inc(kvm_x86_isolation_stats.vmexits_outside);
	}
}

/* Guest entries a sibling held in a row on this CPU; read isolated. */
static DEFINE_PER_CPU(unsigned int, kvm_x86_isolation_held);

/* Held this many times in a row, a vCPU sleeps and lets its CPU idle. */
#define KVM_X86_ISOLATION_HOLDS_BEFORE_SLEEP	256

/**
 * kvm_x86_isolation_smt_held() - a sibling thread held this vCPU's entry
 * @vcpu: the vCPU, whose entry was cancelled
 * @held: asi_guest_enter() refused it
 *
 * Called after every cancelled entry, with preemption and interrupts on.
 * A sibling that runs host code lets go when it is back; one that runs
 * another VM waits for this thread as this one waits for it.  Held many
 * times in a row, the vCPU leaves isolation and sleeps briefly: its CPU
 * idles, which lets the sibling's guest run, and the two alternate.  (A
 * core-scheduling cookie per VM keeps two VMs off one core's threads.)
 * Runs isolated: it reads only this CPU's count until it leaves.
 */
void kvm_x86_isolation_smt_held(struct kvm_vcpu *vcpu, bool held)
{
	unsigned int *n = this_cpu_ptr(&kvm_x86_isolation_held);

	if (!held) {
		*n = 0;
		return;
	}
	if (++*n < KVM_X86_ISOLATION_HOLDS_BEFORE_SLEEP)
		return;
	*n = 0;
	kvm_x86_isolation_exit(vcpu, KVM_ISOLATION_EXIT_SCHEDULE);
	kvm_vcpu_srcu_read_unlock(vcpu);
	usleep_range(100, 200);
	kvm_vcpu_srcu_read_lock(vcpu);
}

/**
 * kvm_x86_isolation_left() - count and trace a leave of KVM's
 * @reason: why KVM left
 *
 * Called on full mappings, after asi_exit() left isolation.
 */
void kvm_x86_isolation_left(enum kvm_isolation_exit_reason reason)
{
	this_cpu_inc(kvm_x86_isolation_stats.exits[reason]);
	trace_kvm_isolation_exit(reason);
}
EXPORT_SYMBOL_NS_GPL(kvm_x86_isolation_left, KVM);

/**
 * kvm_x86_isolation_get_stats() - sum KVM's per-CPU isolation statistics
 * @sum: where to put them
 */
void kvm_x86_isolation_get_stats(struct kvm_x86_isolation_stats *sum)
{
	const struct kvm_x86_isolation_stats *s;
	int cpu, i;

	memset(sum, 0, sizeof(*sum));
	for_each_possible_cpu(cpu) {
		s = per_cpu_ptr(&kvm_x86_isolation_stats, cpu);
		for (i = 0; i < KVM_ISOLATION_NR_EXIT_REASONS; i++)
			sum->exits[i] += READ_ONCE(s->exits[i]);
		sum->vmexits_inside += READ_ONCE(s->vmexits_inside);
		sum->vmexits_outside += READ_ONCE(s->vmexits_outside);
	}
}

/**
 * kvm_x86_isolation_reset_stats() - count afresh, KVM's and the layer's counters
 */
void kvm_x86_isolation_reset_stats(void)
{
	int cpu;

	for_each_possible_cpu(cpu)
		memset(per_cpu_ptr(&kvm_x86_isolation_stats, cpu), 0,
		       sizeof(struct kvm_x86_isolation_stats));
	asi_reset_stats();
}

/**
 * kvm_x86_isolation_io() - leave before an in-kernel device handles I/O
 * @vcpu: the vCPU doing the I/O
 * @bus_idx: the I/O bus
 * @addr: the port or guest physical address
 * @in: true for a read
 *
 * I/O that an in-kernel device handles may touch any data (an ioeventfd
 * wakes up another task, for one), so leave first.  Reads of the PIC stay
 * inside, its state is mapped; writes may go on to IRQ routing and
 * notifiers, and leave.
 */
void kvm_x86_isolation_io(struct kvm_vcpu *vcpu, enum kvm_bus bus_idx, gpa_t addr, bool in)
{
	struct kvm_x86_isolation *xi = vcpu->kvm->arch.isolation;
	struct kvm_pic *pic = vcpu->kvm->arch.vpic;
	struct kvm_io_device *dev;

	if (!xi)
		return;
	/* A bus whose mapping failed: reading it would fault. */
	if (srcu_dereference(vcpu->kvm->buses[bus_idx], &vcpu->kvm->srcu) !=
	    READ_ONCE(xi->buses[bus_idx])) {
		kvm_x86_isolation_exit(vcpu, KVM_ISOLATION_EXIT_IO);
		return;
	}
	dev = kvm_io_bus_get_dev(vcpu->kvm, bus_idx, addr);
	if (!dev)
		return;
	if (in && xi->pic && (dev == &pic->dev_master || dev == &pic->dev_slave ||
			      dev == &pic->dev_elcr))
		return;
	kvm_x86_isolation_exit(vcpu, KVM_ISOLATION_EXIT_IO);
}

/**
 * kvm_x86_isolation_vcpu_create() - map a new vCPU's data
 * @vcpu: the vCPU, fully created
 *
 * Maps the run page, the PIO page, the local APIC and its registers, the
 * emulator context and the guest FPU state; the vendor maps its part in
 * its own vcpu_create.
 *
 * Return: 0 or a negative error, with nothing mapped.
 */
int kvm_x86_isolation_vcpu_create(struct kvm_vcpu *vcpu)
{
	struct kvm_isolation_obj o[KVM_X86_ISOLATION_VCPU_OBJS];
	int ret;

	kvm_x86_isolation_vcpu_objs(vcpu, o);
	ret = kvm_x86_isolation_map_objs(vcpu->kvm, o, ARRAY_SIZE(o), "vCPU");
	if (!ret && vcpu->kvm->arch.isolation)
		vcpu->arch.isolation_fpstate = vcpu->arch.guest_fpu.fpstate;
	return ret;
}

/**
 * kvm_x86_isolation_enable_xfd() - enable dynamic FPU features, following the fpstate
 * @vcpu: the vCPU, not running (KVM_SET_CPUID)
 * @xfeatures: the dynamic features its new CPUID exposes
 *
 * fpu_enable_guest_xfd_features() may replace the guest's fpstate with a
 * larger one and vfree() the old one, which the VM maps: unmap it first,
 * and map whatever is in place afterwards.  If that fails, the vCPU runs
 * without isolation: VM-exits read the fpstate (its XFD state).
 *
 * Return: what fpu_enable_guest_xfd_features() returned.
 */
int kvm_x86_isolation_enable_xfd(struct kvm_vcpu *vcpu, u64 xfeatures)
{
	struct kvm_x86_isolation *xi = vcpu->kvm->arch.isolation;
	struct fpu_guest *gfpu = &vcpu->arch.guest_fpu;
	struct fpstate *fps;
	int r, ret;

	if (!xi || !(xfeatures & ~gfpu->xfeatures))
		return fpu_enable_guest_xfd_features(gfpu, xfeatures);
	if (vcpu->arch.isolation_fpstate)
		asi_unmap(xi->iso, vcpu->arch.isolation_fpstate);
	vcpu->arch.isolation_fpstate = NULL;
	r = fpu_enable_guest_xfd_features(gfpu, xfeatures);
	fps = gfpu->fpstate;
	ret = asi_map(xi->iso, fps, offsetof(struct fpstate, regs) + fps->size, ASI_PTE, "vCPU");
	if (!ret)
		vcpu->arch.isolation_fpstate = fps;
	else
		pr_warn_ratelimited("VM %d: mapping vCPU %d's new FPU state failed (%d), it runs without isolation\n",
				    vcpu->kvm->userspace_pid, vcpu->vcpu_id, ret);
	return r;
}

/**
 * kvm_x86_isolation_vcpu_destroy() - unmap a vCPU's data
 * @vcpu: the vCPU being destroyed
 *
 * Unmaps the vCPU's data, unless the whole address space is about to go,
 * and drops its use of the task that ran it last.
 */
void kvm_x86_isolation_vcpu_destroy(struct kvm_vcpu *vcpu)
{
	struct kvm_x86_isolation *xi = vcpu->kvm->arch.isolation;
	struct kvm_isolation_obj o[KVM_X86_ISOLATION_VCPU_OBJS];

	if (!xi)
		return;
	if (!xi->dying) {
		kvm_x86_isolation_vcpu_objs(vcpu, o);
		kvm_x86_isolation_unmap_objs(vcpu->kvm, o, ARRAY_SIZE(o) - 1);
		if (vcpu->arch.isolation_fpstate)
			asi_unmap(xi->iso, vcpu->arch.isolation_fpstate);
		kvm_x86_isolation_cpuid(vcpu, vcpu->arch.cpuid_entries, NULL, 0);
	}
	vcpu->arch.isolation_fpstate = NULL;
	mutex_lock(&xi->lock);
	if (vcpu->arch.isolation_task)
		kvm_x86_isolation_put_task(xi, vcpu->arch.isolation_task);
	vcpu->arch.isolation_task = NULL;
	mutex_unlock(&xi->lock);
}

/**
 * kvm_x86_isolation_cpuid() - follow a replaced CPUID table
 * @vcpu: the vCPU
 * @old: the table being replaced, freed next, or NULL
 * @new: the new table, or NULL
 * @nent: the number of entries of @new
 *
 * CPUID exits read the table, so KVM_SET_CPUID maps the new one and
 * unmaps the old one, which it frees next.
 */
void kvm_x86_isolation_cpuid(struct kvm_vcpu *vcpu, struct kvm_cpuid_entry2 *old,
			     struct kvm_cpuid_entry2 *new, int nent)
{
	if (!vcpu->kvm->arch.isolation)
		return;
	if (new)
		kvm_x86_isolation_map_optional(vcpu->kvm, new, nent * sizeof(*new), "vCPU",
					       "the CPUID table");
	if (!old)
		return;
	kvm_x86_isolation_unmap_optional(vcpu->kvm, old);
	/* As kvm_cpuid_alloc() allocated it */
	kvm_x86_isolation_freeing(vcpu->kvm, old,
				  kvm_arch_vm_object_size(vcpu->arch.cpuid_nent * sizeof(*old)));
}
