/* SPDX-License-Identifier: GPL-2.0 */
#ifndef __KVM_X86_ISOLATION_H
#define __KVM_X86_ISOLATION_H

#include <linux/kvm_host.h>
#include <asm/asi.h>

struct kvm_x86_init_ops;

/* A kernel object to map in a VM's isolated address space. */
struct kvm_isolation_obj {
	const void *ptr;
	size_t size;
};

/* Why KVM left a VM's isolated address space. */
enum kvm_isolation_exit_reason {
	KVM_ISOLATION_EXIT_USER,	/* KVM_RUN returns to user space */
	KVM_ISOLATION_EXIT_PUT,		/* vCPU put */
	KVM_ISOLATION_EXIT_SCHEDULE,	/* halt or reschedule, signals */
	KVM_ISOLATION_EXIT_MMU,		/* guest page fault for the MMU */
	KVM_ISOLATION_EXIT_WRITE_GUEST,	/* kvm_write_guest_virt_system() */
	KVM_ISOLATION_EXIT_EMULATE,	/* the instruction emulator */
	KVM_ISOLATION_EXIT_NESTED,	/* entering a nested guest */
	KVM_ISOLATION_EXIT_REQUEST,	/* processing vCPU requests */
	KVM_ISOLATION_EXIT_RESET,	/* vCPU INIT, RESET or SHUTDOWN */
	KVM_ISOLATION_EXIT_APIC,	/* APIC timer, IPI, mode changes */
	KVM_ISOLATION_EXIT_IO,		/* I/O to an in-kernel device */
	KVM_ISOLATION_EXIT_MSR,		/* MSR access beyond the vCPU's state */
	KVM_ISOLATION_EXIT_EVENT,	/* guest event delivery beyond the vCPU's state */
	KVM_ISOLATION_EXIT_MCE,		/* machine check at VM-exit */
	KVM_ISOLATION_NR_EXIT_REASONS
};

/*
 * Their names, for debugfs and the trace event: EM(cause, name) for each
 * but the last, EMe() for the last, as trace headers want them.
 */
#define KVM_ISOLATION_EXIT_REASONS				\
	EM(KVM_ISOLATION_EXIT_USER, "user")			\
	EM(KVM_ISOLATION_EXIT_PUT, "put")			\
	EM(KVM_ISOLATION_EXIT_SCHEDULE, "schedule")		\
	EM(KVM_ISOLATION_EXIT_MMU, "mmu")			\
	EM(KVM_ISOLATION_EXIT_WRITE_GUEST, "write_guest")	\
	EM(KVM_ISOLATION_EXIT_EMULATE, "emulate")		\
	EM(KVM_ISOLATION_EXIT_NESTED, "nested")			\
	EM(KVM_ISOLATION_EXIT_REQUEST, "request")		\
	EM(KVM_ISOLATION_EXIT_RESET, "reset")			\
	EM(KVM_ISOLATION_EXIT_APIC, "apic")			\
	EM(KVM_ISOLATION_EXIT_IO, "io")				\
	EM(KVM_ISOLATION_EXIT_MSR, "msr")			\
	EM(KVM_ISOLATION_EXIT_EVENT, "event")			\
	EMe(KVM_ISOLATION_EXIT_MCE, "machine_check")

/* KVM's own counters; the isolation layer counts its switches. */
struct kvm_x86_isolation_stats {
	u64 exits[KVM_ISOLATION_NR_EXIT_REASONS];
	u64 vmexits_inside;	/* VM-exits handled without leaving */
	u64 vmexits_outside;	/* VM-exits after which isolation was left */
};

#ifdef CONFIG_KVM_ADDRESS_SPACE_ISOLATION

/* A task that runs, or last ran, vCPUs of a VM, with its mapping. */
struct kvm_x86_isolation_task {
	struct list_head list;
	struct task_struct *task;
	unsigned int users;		/* vCPUs whose last runner it is */
};

/* How many of the objects a VM mapped and KVM freed the check looks at. */
#define KVM_X86_ISOLATION_FREED 16

/* What a VM maps, beyond what its isolation instance tracks itself. */
struct kvm_x86_isolation {
	struct asi *iso;
	struct mutex lock;		/* protects tasks and buses */
	struct list_head tasks;
	/*
	 * The bus each kvm->buses[] entry points to, when it is mapped (NULL
	 * when its mapping failed: I/O on it leaves isolation), and the bus
	 * it replaced, mapped until no SRCU reader can see it.
	 */
	struct kvm_io_bus *buses[KVM_NR_BUSES];
	struct kvm_io_bus *retired[KVM_NR_BUSES];
	bool pic;			/* the in-kernel PIC is mapped */
	bool dying;			/* no vCPU runs again: skip unmapping */
	/*
	 * Objects whose mapping may fail without failing anything else
	 * (exits that need them fault instead): what is mapped.
	 */
	struct xarray optional;
	/* The audit's positive control: a small object, on a shared page. */
	void *audit_control;		/* with the debugging aids only */
	/* The freed-memory control: a retired bus left mapped when freed. */
	void *freed_control;		/* with the debugging aids only */
	/* The last objects KVM freed of those the VM mapped, for the check. */
	struct kvm_isolation_obj freed[KVM_X86_ISOLATION_FREED];
	unsigned int nr_freed;		/* ever; the last are in freed[] */
};

/* The objects of a vCPU that its VM maps. */
#define KVM_X86_ISOLATION_VCPU_OBJS 6
void kvm_x86_isolation_vcpu_objs(struct kvm_vcpu *vcpu, struct kvm_isolation_obj *o);

#ifdef CONFIG_ADDRESS_SPACE_ISOLATION_DEBUG
void kvm_x86_isolation_debug_init(struct dentry *dir);
void kvm_x86_isolation_debug_teardown(void);
void kvm_x86_isolation_audit(struct kvm_x86_isolation *xi);
void kvm_x86_isolation_plant_audit_control(struct kvm_x86_isolation *xi);
bool kvm_x86_isolation_keep_freed(struct kvm_x86_isolation *xi, void *old);
void kvm_x86_isolation_note_freed(struct kvm_x86_isolation *xi, const void *ptr, size_t size);
#else
static inline void kvm_x86_isolation_debug_init(struct dentry *dir) {}
static inline void kvm_x86_isolation_debug_teardown(void) {}
static inline void kvm_x86_isolation_audit(struct kvm_x86_isolation *xi) {}
static inline void kvm_x86_isolation_plant_audit_control(struct kvm_x86_isolation *xi) {}
static inline bool kvm_x86_isolation_keep_freed(struct kvm_x86_isolation *xi, void *old)
{
	return false;
}

static inline void kvm_x86_isolation_note_freed(struct kvm_x86_isolation *xi, const void *ptr,
						size_t size) {}
#endif

void kvm_x86_isolation_setup(struct kvm_x86_init_ops *ops);
void kvm_x86_isolation_teardown(void);
int kvm_x86_isolation_map_objs(struct kvm *kvm, const struct kvm_isolation_obj *objs,
			       int n, const char *owner);
void kvm_x86_isolation_unmap_objs(struct kvm *kvm, const struct kvm_isolation_obj *objs,
				  int n);
void kvm_x86_isolation_vm_predestroy(struct kvm *kvm);
void kvm_x86_isolation_vm_destroy(struct kvm *kvm);
void kvm_x86_isolation_memslot(struct kvm *kvm, const struct kvm_memory_slot *old,
			       const struct kvm_memory_slot *new,
			       enum kvm_mr_change change);
int kvm_x86_isolation_vcpu_create(struct kvm_vcpu *vcpu);
void kvm_x86_isolation_vcpu_destroy(struct kvm_vcpu *vcpu);
void kvm_x86_isolation_vcpu_run(struct kvm_vcpu *vcpu);
void kvm_x86_isolation_enter(struct kvm_vcpu *vcpu);
void kvm_x86_isolation_vmexit_done(struct kvm_vcpu *vcpu);
void kvm_x86_isolation_io(struct kvm_vcpu *vcpu, enum kvm_bus bus_idx, gpa_t addr, bool in);
void kvm_x86_isolation_cpuid(struct kvm_vcpu *vcpu, struct kvm_cpuid_entry2 *old,
			     struct kvm_cpuid_entry2 *new, int nent);
int kvm_x86_isolation_enable_xfd(struct kvm_vcpu *vcpu, u64 xfeatures);
void kvm_x86_isolation_irqchip(struct kvm *kvm);
void kvm_x86_isolation_left(enum kvm_isolation_exit_reason reason);
void kvm_x86_isolation_smt_held(struct kvm_vcpu *vcpu, bool held);
void kvm_x86_isolation_get_stats(struct kvm_x86_isolation_stats *sum);
void kvm_x86_isolation_reset_stats(void);
struct dentry *kvm_x86_isolation_debugfs_init(struct dentry *parent);
unsigned int kvm_x86_isolation_vcpu_align(unsigned int align);

/*
 * Leave the isolated address space, if this CPU is in one, before touching
 * data it does not map.  Return: true if it was.
 */
static inline bool kvm_x86_isolation_leave(enum kvm_isolation_exit_reason reason)
{
	if (!asi_exit())
		return false;
	kvm_x86_isolation_left(reason);
	return true;
}

/* The same for a vCPU: its next VM-entry then flushes the L1D (where that applies). */
static inline void kvm_x86_isolation_exit(struct kvm_vcpu *vcpu,
					  enum kvm_isolation_exit_reason reason)
{
	if (vcpu->kvm->arch.isolation && kvm_x86_isolation_leave(reason))
		vcpu->arch.l1tf_flush_l1d = true;
}

/* The same, from code that has the VM but not the vCPU running here. */
static inline void kvm_x86_isolation_exit_running(struct kvm *kvm,
						  enum kvm_isolation_exit_reason reason)
{
	struct kvm_vcpu *vcpu = kvm_get_running_vcpu();

	if (kvm->arch.isolation && vcpu && vcpu->kvm == kvm)
		kvm_x86_isolation_exit(vcpu, reason);
}

#else /* !CONFIG_KVM_ADDRESS_SPACE_ISOLATION */

static inline void kvm_x86_isolation_setup(struct kvm_x86_init_ops *ops) {}

static inline void kvm_x86_isolation_teardown(void) {}

static inline int kvm_x86_isolation_map_objs(struct kvm *kvm,
					     const struct kvm_isolation_obj *objs,
					     int n, const char *owner)
{
	return 0;
}

static inline void kvm_x86_isolation_unmap_objs(struct kvm *kvm,
						const struct kvm_isolation_obj *objs, int n) {}

static inline void kvm_x86_isolation_vm_predestroy(struct kvm *kvm) {}

static inline void kvm_x86_isolation_vm_destroy(struct kvm *kvm) {}

static inline void kvm_x86_isolation_memslot(struct kvm *kvm,
					     const struct kvm_memory_slot *old,
					     const struct kvm_memory_slot *new,
					     enum kvm_mr_change change) {}

static inline int kvm_x86_isolation_vcpu_create(struct kvm_vcpu *vcpu)
{
	return 0;
}

static inline void kvm_x86_isolation_vcpu_destroy(struct kvm_vcpu *vcpu) {}

static inline void kvm_x86_isolation_vcpu_run(struct kvm_vcpu *vcpu) {}

static inline void kvm_x86_isolation_enter(struct kvm_vcpu *vcpu) {}

static inline void kvm_x86_isolation_vmexit_done(struct kvm_vcpu *vcpu) {}

static inline void kvm_x86_isolation_io(struct kvm_vcpu *vcpu, enum kvm_bus bus_idx,
					gpa_t addr, bool in) {}

static inline void kvm_x86_isolation_cpuid(struct kvm_vcpu *vcpu,
					   struct kvm_cpuid_entry2 *old,
					   struct kvm_cpuid_entry2 *new, int nent) {}

static inline int kvm_x86_isolation_enable_xfd(struct kvm_vcpu *vcpu, u64 xfeatures)
{
	return fpu_enable_guest_xfd_features(&vcpu->arch.guest_fpu, xfeatures);
}

static inline bool kvm_x86_isolation_leave(enum kvm_isolation_exit_reason reason)
{
	return false;
}

static inline void kvm_x86_isolation_exit(struct kvm_vcpu *vcpu,
					  enum kvm_isolation_exit_reason reason) {}

static inline void kvm_x86_isolation_exit_running(struct kvm *kvm,
						  enum kvm_isolation_exit_reason reason) {}

static inline void kvm_x86_isolation_irqchip(struct kvm *kvm) {}

static inline void kvm_x86_isolation_smt_held(struct kvm_vcpu *vcpu, bool held) {}

static inline unsigned int kvm_x86_isolation_vcpu_align(unsigned int align)
{
	return align;
}

#endif /* CONFIG_KVM_ADDRESS_SPACE_ISOLATION */

#endif /* __KVM_X86_ISOLATION_H */
