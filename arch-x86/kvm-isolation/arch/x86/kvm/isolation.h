/* SPDX-License-Identifier: GPL-2.0 */
#ifndef __KVM_X86_ISOLATION_H
#define __KVM_X86_ISOLATION_H

#include <asm/kvm_isolation.h>

struct kvm_x86_init_ops;

#ifdef CONFIG_KVM_ADDRESS_SPACE_ISOLATION
void kvm_x86_isolation_setup(struct kvm_x86_init_ops *ops);
void kvm_x86_isolation_teardown(void);
#else
static inline void kvm_x86_isolation_setup(struct kvm_x86_init_ops *ops) {}
static inline void kvm_x86_isolation_teardown(void) {}
#endif

#endif /* __KVM_X86_ISOLATION_H */
