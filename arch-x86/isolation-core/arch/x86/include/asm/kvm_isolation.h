/* SPDX-License-Identifier: GPL-2.0 */
/*
 * KVM address space isolation: restricted kernel page tables in which KVM
 * handles VM-exits.  See Documentation/virt/kvm/x86/address-space-isolation.rst.
 */
#ifndef _ASM_X86_KVM_ISOLATION_H
#define _ASM_X86_KVM_ISOLATION_H

#include <linux/jump_label.h>
#include <linux/types.h>

struct module;
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

#ifdef CONFIG_KVM_ADDRESS_SPACE_ISOLATION

DECLARE_STATIC_KEY_FALSE(kvm_isolation_enabled);

/* True when isolation was set up and KVM runs VM-exits isolated. */
static __always_inline bool kvm_isolation(void)
{
	return static_branch_unlikely(&kvm_isolation_enabled);
}

int kvm_isolation_setup(struct module *kvm, const void *vendor_ops);
void kvm_isolation_teardown(void);

struct kvm_isolation *kvm_isolation_create(void);
void kvm_isolation_destroy(struct kvm_isolation *iso);
int kvm_isolation_map(struct kvm_isolation *iso, const void *ptr, size_t size,
		      enum kvm_isolation_level level, const char *owner);
void kvm_isolation_unmap(struct kvm_isolation *iso, const void *ptr);
int kvm_isolation_map_percpu(struct kvm_isolation *iso, void __percpu *ptr,
			     size_t size, const char *owner);
void kvm_isolation_unmap_percpu(struct kvm_isolation *iso, void __percpu *ptr);
unsigned long kvm_isolation_pgtable_pages(void);

#else /* !CONFIG_KVM_ADDRESS_SPACE_ISOLATION */

static __always_inline bool kvm_isolation(void)
{
	return false;
}

#endif /* CONFIG_KVM_ADDRESS_SPACE_ISOLATION */

#endif /* _ASM_X86_KVM_ISOLATION_H */
