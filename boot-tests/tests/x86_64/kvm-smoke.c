// SPDX-License-Identifier: GPL-2.0
/*
 * KVM smoke test: a 64-bit guest that exits on CPUID (handled in the kernel,
 * its result reported through port I/O), port I/O in both directions, MMIO
 * write and read, and HLT to user space.  Every value is checked.
 */
#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>

#include "../ktap.h"
#include "isolation.h"
#include "x86_guest.h"

#define PORT_OUT	0xe0
#define PORT_IN		0xe1
#define TEST_LEAF	0x400000f0
#define IN_VALUE	0x5a
#define MMIO_WRITE	0xdeadbeefU
#define MMIO_READ	0x12345678U
#define HLT_MARK	0x1122334455667788ULL

/* Halts with interrupts off: with the in-kernel APIC, nothing wakes it. */
GUEST_CODE(stuck_guest, "cli\n hlt\n jmp .\n");

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * The positive control of the KVM_RUN watchdog every test runs under: a
 * vCPU that never comes back must be reported, not waited for.
 */
static int watchdog_catches_stuck_vcpu(void)
{
	struct guest g;
	double t0, secs;
	int ret;

	if (guest_create(&g, stuck_guest_start, stuck_guest_end - stuck_guest_start) ||
	    ioctl(g.vm_fd, KVM_CREATE_IRQCHIP, 0) || guest_add_vcpu(&g)) {
		guest_destroy(&g);
		return 0;
	}
	guest_set_run_limit(2);
	t0 = now();
	ret = guest_run(&g, 0);
	secs = now() - t0;
	guest_set_run_limit(60);
	guest_destroy(&g);
	ktap_diag("stuck vCPU: KVM_RUN returned %d after %.1f s", ret, secs);
	return ret == -ETIMEDOUT && secs < 30;
}

GUEST_CODE(smoke_guest,
	/* CPUID of our own leaf, then of leaf 0; report each register. */
	"mov $0x400000f0, %eax\n"
	"xor %ecx, %ecx\n"
	"cpuid\n"
	"out %eax, $0xe0\n mov %ebx, %eax\n out %eax, $0xe0\n"
	"mov %ecx, %eax\n out %eax, $0xe0\n mov %edx, %eax\n out %eax, $0xe0\n"
	"xor %eax, %eax\n"
	"xor %ecx, %ecx\n"
	"cpuid\n"
	"out %eax, $0xe0\n mov %ebx, %eax\n out %eax, $0xe0\n"
	"mov %ecx, %eax\n out %eax, $0xe0\n mov %edx, %eax\n out %eax, $0xe0\n"
	/* Port input from user space, echoed back plus one. */
	"in $0xe1, %al\n"
	"inc %al\n"
	"out %al, $0xe0\n"
	/* MMIO write, then MMIO read echoed through a port. */
	"mov $0x30000000, %ebx\n"
	"movl $0xdeadbeef, (%rbx)\n"
	"mov 4(%rbx), %eax\n"
	"out %eax, $0xe0\n"
	/* HLT with a marker in a register user space can check. */
	"movabs $0x1122334455667788, %r15\n"
	"hlt\n"
	"1: jmp 1b\n");

/* Run until the next exit; anything but @reason is reported and fails. */
static int run_expect(struct guest *g, uint32_t reason, const char *what)
{
	struct kvm_run *run = g->vcpu[0].run;
	int ret = guest_run(g, 0);

	if (ret) {
		ktap_diag("%s: KVM_RUN failed: %s", what, strerror(-ret));
		return 0;
	}
	if (run->exit_reason != reason) {
		ktap_diag("%s: exit reason %s, expected %s", what,
			  exit_reason_str(run->exit_reason), exit_reason_str(reason));
		if (run->exit_reason == KVM_EXIT_INTERNAL_ERROR)
			ktap_diag("internal error suberror %u", run->internal.suberror);
		return 0;
	}
	return 1;
}

static int expect_out(struct guest *g, unsigned int size, uint64_t value, const char *what)
{
	struct guest_vcpu *v = &g->vcpu[0];
	uint64_t got;

	if (!run_expect(g, KVM_EXIT_IO, what))
		return 0;
	got = guest_io_value(v);
	if (v->run->io.direction != KVM_EXIT_IO_OUT || v->run->io.port != PORT_OUT ||
	    v->run->io.size != size || v->run->io.count != 1 || got != value) {
		ktap_diag("%s: got %s port %#x size %u count %u value %#llx, expected out %#x size %u value %#llx",
			  what, v->run->io.direction == KVM_EXIT_IO_OUT ? "out" : "in",
			  v->run->io.port, v->run->io.size, v->run->io.count,
			  (unsigned long long)got, PORT_OUT, size, (unsigned long long)value);
		return 0;
	}
	return 1;
}

static int check_cpuid(struct guest *g, uint32_t leaf, const char *what)
{
	const struct kvm_cpuid_entry2 *e = guest_cpuid_entry(g, leaf);

	return e && expect_out(g, 4, e->eax, what) && expect_out(g, 4, e->ebx, what) &&
	       expect_out(g, 4, e->ecx, what) && expect_out(g, 4, e->edx, what);
}

int main(void)
{
	struct guest g;
	struct guest_vcpu *v;
	struct kvm_regs regs;
	int ret, ok;

	ret = guest_create(&g, smoke_guest_start, smoke_guest_end - smoke_guest_start);
	if (ret == -ENOENT)
		kvm_missing();
	ktap_plan(9);
	if (!ktap_result(ret == 0, "create_vm"))
		return KSFT_FAIL;
	/* A leaf no CPU has, with values only this test knows. */
	guest_set_cpuid_entry(&g, TEST_LEAF, 0x41534931, 0x74657374, 0xc0ffee00, 0x0badf00d);
	ret = guest_add_vcpu(&g);
	if (!ktap_result(ret == 0, "create_vcpu_long_mode"))
		return KSFT_FAIL;
	v = &g.vcpu[0];

	ktap_result(check_cpuid(&g, TEST_LEAF, "cpuid_test_leaf"), "cpuid_test_leaf");
	ktap_result(check_cpuid(&g, 0, "cpuid_leaf0"), "cpuid_leaf0");

	ok = run_expect(&g, KVM_EXIT_IO, "pio_in") &&
	     v->run->io.direction == KVM_EXIT_IO_IN && v->run->io.port == PORT_IN &&
	     v->run->io.size == 1;
	if (ok) {
		guest_io_supply(v, IN_VALUE);
		ok = expect_out(&g, 1, IN_VALUE + 1, "pio_in");
	}
	ktap_result(ok, "pio_in_out");

	ok = run_expect(&g, KVM_EXIT_MMIO, "mmio_write") && v->run->mmio.is_write &&
	     v->run->mmio.phys_addr == GUEST_MMIO_GPA && v->run->mmio.len == 4 &&
	     !memcmp(v->run->mmio.data, &(uint32_t){ MMIO_WRITE }, 4);
	ktap_result(ok, "mmio_write");

	ok = run_expect(&g, KVM_EXIT_MMIO, "mmio_read") && !v->run->mmio.is_write &&
	     v->run->mmio.phys_addr == GUEST_MMIO_GPA + 4 && v->run->mmio.len == 4;
	if (ok) {
		memcpy(v->run->mmio.data, &(uint32_t){ MMIO_READ }, 4);
		ok = expect_out(&g, 4, MMIO_READ, "mmio_read");
	}
	ktap_result(ok, "mmio_read");

	ok = run_expect(&g, KVM_EXIT_HLT, "hlt") &&
	     ioctl(v->fd, KVM_GET_REGS, &regs) == 0 && regs.r15 == HLT_MARK;
	ktap_result(ok, "hlt");

	guest_destroy(&g);
	ktap_result(watchdog_catches_stuck_vcpu(), "watchdog_catches_stuck_vcpu");
	return ktap_exit_code();
}
