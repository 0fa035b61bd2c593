/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A minimal 64-bit KVM guest built from user space: identity-mapped page
 * tables with 2 MiB pages over the first GiB, flat long-mode segments, no
 * firmware.  Guest code is position independent machine code copied to
 * GUEST_CODE_GPA; everything between the end of RAM and 1 GiB is MMIO.
 */
#ifndef ASI_X86_GUEST_H
#define ASI_X86_GUEST_H

#include <stddef.h>
#include <stdint.h>
#include <linux/kvm.h>

#define GUEST_RAM_SIZE		(4UL << 20)
#define GUEST_CODE_GPA		0x10000UL
#define GUEST_MMIO_GPA		0x30000000UL
#define GUEST_MAX_VCPUS		16
#define GUEST_IDT_GPA		0x5000UL	/* 256 gates, none present */
#define GUEST_GDT_GPA		0x6000UL	/* null, code 0x08, data 0x10 */

/* Emit guest code into .rodata between the symbols start and end. */
#define GUEST_CODE(name, body)						\
	extern const unsigned char name##_start[], name##_end[];	\
	asm(".pushsection .rodata\n"					\
	    ".globl " #name "_start\n" #name "_start:\n"		\
	    ".code64\n" body "\n"					\
	    ".globl " #name "_end\n" #name "_end:\n"			\
	    ".popsection\n")

/*
 * Guest code: the x2APIC on, and its timer periodic, vector @vec every @ns
 * nanoseconds (divide by 1: KVM's local APIC timer counts at 1 GHz).
 * Clobbers eax, ecx and edx.
 */
#define GUEST_X2APIC_TIMER(vec, ns)					\
	"mov $0x1b, %ecx\n rdmsr\n or $0xc00, %eax\n wrmsr\n"		\
	"mov $0x80f, %ecx\n mov $0x1ff, %eax\n xor %edx, %edx\n wrmsr\n"	\
	"mov $0x83e, %ecx\n mov $0xb, %eax\n wrmsr\n"			\
	"mov $0x832, %ecx\n mov $(0x20000 | " #vec "), %eax\n wrmsr\n"	\
	"mov $0x838, %ecx\n mov $" #ns ", %eax\n wrmsr\n"

struct guest_vcpu {
	int fd;
	struct kvm_run *run;
};

struct guest {
	int kvm_fd;
	int vm_fd;
	uint8_t *ram;
	size_t run_size;
	struct kvm_cpuid2 *cpuid;
	int nr_vcpus;
	struct guest_vcpu vcpu[GUEST_MAX_VCPUS];
};

/* All return 0 or -errno, printing a KTAP diagnostic on failure. */
int guest_open_kvm(void);
int guest_create(struct guest *g, const void *code, size_t code_len);
int guest_add_vcpu(struct guest *g);
/* -ETIMEDOUT when KVM_RUN had to be interrupted after the run limit. */
int guest_run(struct guest *g, int vcpu);
/* The run limit in seconds: asi.run_limit= on the command line, or 60. */
void guest_set_run_limit(double secs);
void guest_destroy(struct guest *g);

/* Add or replace one CPUID entry for vCPUs created afterwards. */
int guest_set_cpuid_entry(struct guest *g, uint32_t function, uint32_t eax,
			  uint32_t ebx, uint32_t ecx, uint32_t edx);
const struct kvm_cpuid_entry2 *guest_cpuid_entry(struct guest *g, uint32_t function);

/* An interrupt gate for @vector to the guest code at @handler_gpa. */
void guest_set_idt_entry(struct guest *g, int vector, uint64_t handler_gpa);
/* A second memslot; returns its host memory or NULL. */
void *guest_add_memslot(struct guest *g, int slot, uint64_t gpa, size_t size);

const char *exit_reason_str(uint32_t reason);

/* Port I/O exit helpers: the value the guest wrote, or supply one to read. */
uint64_t guest_io_value(struct guest_vcpu *v);
void guest_io_supply(struct guest_vcpu *v, uint64_t value);

#endif
