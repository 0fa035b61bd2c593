// SPDX-License-Identifier: GPL-2.0
/*
 * KVM smoke test for arm64: a guest running with its MMU off that exits to
 * user space on an MMIO write, an MMIO read and a final MMIO write of the
 * value it read plus one.  Every value is checked.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <linux/kvm.h>

#include "../ktap.h"

#define RAM_GPA		0x40000000UL
#define RAM_SIZE	0x10000UL
#define MMIO_GPA	0x10000000UL
#define MMIO_WRITE	0xdeadbeefU
#define MMIO_READ	0x12345678U

extern const unsigned char guest_start[], guest_end[];
asm(".pushsection .rodata\n"
    ".globl guest_start\n"
    "guest_start:\n"
    "	movz	x1, #0x1000, lsl #16\n"		/* MMIO_GPA */
    "	movz	w0, #0xbeef\n"
    "	movk	w0, #0xdead, lsl #16\n"
    "	str	w0, [x1]\n"			/* MMIO write */
    "	ldr	w2, [x1, #4]\n"			/* MMIO read */
    "	add	w2, w2, #1\n"
    "	str	w2, [x1, #8]\n"			/* echo + 1 */
    "1:	b	1b\n"
    ".globl guest_end\n"
    "guest_end:\n"
    ".popsection\n");

#define CORE_REG(x) (KVM_REG_ARM64 | KVM_REG_SIZE_U64 | KVM_REG_ARM_CORE | \
		     (offsetof(struct kvm_regs, x) / sizeof(uint32_t)))

static int diag_errno(const char *what)
{
	ktap_diag("%s: %s", what, strerror(errno));
	return 0;
}

static int run_mmio(int vcpu, struct kvm_run *run, int is_write, uint64_t addr, const char *what)
{
	if (ioctl(vcpu, KVM_RUN, 0) < 0)
		return diag_errno(what);
	if (run->exit_reason != KVM_EXIT_MMIO || run->mmio.is_write != is_write ||
	    run->mmio.phys_addr != addr || run->mmio.len != 4) {
		ktap_diag("%s: exit %u write %u addr %#llx len %u", what, run->exit_reason,
			  run->mmio.is_write, (unsigned long long)run->mmio.phys_addr,
			  run->mmio.len);
		return 0;
	}
	return 1;
}

int main(void)
{
	struct kvm_userspace_memory_region region;
	struct kvm_vcpu_init init;
	struct kvm_one_reg reg;
	struct kvm_run *run;
	uint64_t pc = RAM_GPA;
	uint32_t val;
	int kvm, vm, vcpu, size, ok;
	void *ram;

	kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0)
		ktap_skip_all("no /dev/kvm");
	ktap_plan(4);

	vm = ioctl(kvm, KVM_CREATE_VM, 0);
	ram = mmap(NULL, RAM_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ok = vm >= 0 && ram != MAP_FAILED;
	if (ok) {
		memcpy(ram, guest_start, guest_end - guest_start);
		region = (struct kvm_userspace_memory_region) {
			.slot = 0, .guest_phys_addr = RAM_GPA, .memory_size = RAM_SIZE,
			.userspace_addr = (uintptr_t)ram,
		};
		ok = ioctl(vm, KVM_SET_USER_MEMORY_REGION, &region) == 0 || diag_errno("memslot");
	}
	vcpu = ok ? ioctl(vm, KVM_CREATE_VCPU, 0) : -1;
	size = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	run = vcpu >= 0 && size > 0 ?
		mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu, 0) : MAP_FAILED;
	ok = ok && run != MAP_FAILED &&
	     (ioctl(vm, KVM_ARM_PREFERRED_TARGET, &init) == 0 || diag_errno("preferred target")) &&
	     (ioctl(vcpu, KVM_ARM_VCPU_INIT, &init) == 0 || diag_errno("vcpu init"));
	if (ok) {
		reg.id = CORE_REG(regs.pc);
		reg.addr = (uintptr_t)&pc;
		ok = ioctl(vcpu, KVM_SET_ONE_REG, &reg) == 0 || diag_errno("set pc");
	}
	if (!ktap_result(ok, "create_vm_and_vcpu"))
		return KSFT_FAIL;

	ok = run_mmio(vcpu, run, 1, MMIO_GPA, "mmio_write") &&
	     !memcmp(run->mmio.data, &(uint32_t){ MMIO_WRITE }, 4);
	ktap_result(ok, "mmio_write");

	ok = run_mmio(vcpu, run, 0, MMIO_GPA + 4, "mmio_read");
	if (ok) {
		memcpy(run->mmio.data, &(uint32_t){ MMIO_READ }, 4);
		ok = run_mmio(vcpu, run, 1, MMIO_GPA + 8, "mmio_read");
	}
	ktap_result(ok, "mmio_read");
	memcpy(&val, run->mmio.data, 4);
	ktap_result(ok && val == MMIO_READ + 1, "mmio_read_value_used_by_guest");

	munmap(run, size);
	close(vcpu);
	close(vm);
	close(kvm);
	return ktap_exit_code();
}
