// SPDX-License-Identifier: GPL-2.0
/*
 * An interrupt injected once is delivered once: a test of the emulator
 * under the test kernel more than of KVM.  QEMU 7.2's emulated SVM (and
 * 10.0's) delivers an EVENTINJ interrupt at VMRUN and leaves it pending
 * as an exception of its CPU loop, which delivers it a second time at the
 * loop's next exit if no VM-exit came first, whatever the guest's IF
 * (qemu/upstream/0001-*.patch).  A Linux guest under a real VMM hangs on
 * that now and then; this finds it in seconds.
 *
 * The guest's local APIC timer (in-kernel irqchip, x2APIC, periodic)
 * interrupts a loop that runs with interrupts enabled; KVM injects each
 * expiry at VMRUN.  The handler counts its entries, counts apart those
 * whose interrupted RFLAGS had IF=0 (a nested entry: no maskable
 * interrupt can do that), and spins a few milliseconds with IF=0 and no
 * exit before its EOI, so that exits of the emulator's loop land inside
 * the window the bug needs.  Meanwhile a thread on another CPU sleeps
 * 1.3 ms at a time: in QEMU's round-robin TCG, an interrupt for another
 * vCPU stops the loop of the one running, which is exactly such an exit,
 * and these timer interrupts come between the vCPU's CPU's own ticks
 * (which are VM-exits, and end the window) rather than with them, as the
 * other CPU's ticks would.  Passes when no entry had IF=0 and there were
 * no more entries than KVM's injections.
 *
 * Kernel parameter asi.irq_once=N[,twice]: N timer interrupts (300);
 * "twice" makes it the positive control for an emulator known to have
 * the bug: it passes only when it saw a second delivery.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "../ktap.h"
#include "isolation.h"
#include "x86_guest.h"

#define VECTOR		0x40
#define PORT		0xe0
#define DATA_GPA	0x8000UL	/* entries, with IF=0, spin count, target */
#define HANDLER_MS	4.0

/*
 * Two timed spins for the host to calibrate the handler's (between the
 * port writes), then the timer: periodic, 7 ms (no multiple of the host's
 * tick), vector 0x40, until the handler has run the target number of
 * times.
 */
GUEST_CODE(irq_once_guest,
	"out %al, $0xe0\n"
	"mov 0x8010, %rcx\n 1: dec %rcx\n jnz 1b\n"
	"out %al, $0xe0\n"
	"mov 0x8010, %rcx\n 1: dec %rcx\n jnz 1b\n"
	"out %al, $0xe0\n"
	GUEST_X2APIC_TIMER(0x40, 7000000)
	"mov 0x8018, %rax\n"
	"sti\n"
	"2: cmp %rax, 0x8000\n jb 2b\n"
	"cli\n"
	"mov $0x838, %ecx\n xor %eax, %eax\n wrmsr\n"		/* timer off */
	"out %al, $0xe0\n"
	"3: hlt\n jmp 3b\n"
	".globl irq_once_handler\n"
	"irq_once_handler:\n"
	"incq 0x8000\n"
	/* The interrupted RFLAGS, above RIP and CS in the frame. */
	"testl $0x200, 16(%rsp)\n"
	"jnz 4f\n"
	"incq 0x8008\n"
	"4: push %rax\n push %rcx\n push %rdx\n"
	"mov 0x8010, %rcx\n 5: dec %rcx\n jnz 5b\n"
	"mov $0x80b, %ecx\n xor %eax, %eax\n xor %edx, %edx\n wrmsr\n"	/* EOI */
	"pop %rdx\n pop %rcx\n pop %rax\n"
	"iretq\n");
extern const unsigned char irq_once_handler[];

static atomic_bool ticking;

/* A timer interrupt on its CPU every 1.3 ms, until told to stop. */
static void *tick_thread(void *arg)
{
	const struct timespec ts = { .tv_nsec = 1300000 };

	(void)arg;
	while (atomic_load_explicit(&ticking, memory_order_relaxed))
		nanosleep(&ts, NULL);
	return NULL;
}

static bool pin_to(pthread_t thread, int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(thread, sizeof(set), &set) == 0;
}

/*
 * The vCPU on CPU 0, the ticking thread on CPU 1; false (and no thread)
 * on a single CPU, where the test still runs but is weaker.
 */
static bool start_ticker(pthread_t *thread)
{
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2 || !pin_to(pthread_self(), 0))
		return false;
	atomic_store(&ticking, true);
	if (pthread_create(thread, NULL, tick_thread, NULL))
		return false;
	if (!pin_to(*thread, 1)) {
		atomic_store(&ticking, false);
		pthread_join(*thread, NULL);
		return false;
	}
	return true;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* KVM's count of interrupts injected into this process's VMs; -1 if unknown. */
static long kvm_irq_injections(void)
{
	char path[512], prefix[32];
	struct dirent *e;
	long n = -1;
	DIR *d = opendir("/sys/kernel/debug/kvm");
	FILE *f;

	if (!d)
		return -1;
	snprintf(prefix, sizeof(prefix), "%d-", getpid());
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, prefix, strlen(prefix)))
			continue;
		snprintf(path, sizeof(path), "/sys/kernel/debug/kvm/%s/irq_injections", e->d_name);
		f = fopen(path, "r");
		if (f && fscanf(f, "%ld", &n) != 1)
			n = -1;
		if (f)
			fclose(f);
	}
	closedir(d);
	return n;
}

/* One KVM_RUN up to the next port exit; 0 on anything else. */
static int run_to_port(struct guest *g)
{
	struct kvm_run *run = g->vcpu[0].run;
	int ret = guest_run(g, 0);

	if (ret || run->exit_reason != KVM_EXIT_IO || run->io.port != PORT) {
		ktap_diag("KVM_RUN returned %d, exit %s (port %#x), expected a write to port %#x",
			  ret, exit_reason_str(run->exit_reason), run->io.port, PORT);
		return 0;
	}
	return 1;
}

struct irq_counts {
	long target, entries, if_clear, injections;
	double secs;
	uint64_t spin;
};

/* Calibrate the handler's spin, then let the timer fire c->target times. */
static int run_timer(struct guest *g, struct irq_counts *c)
{
	volatile uint64_t *data = (volatile uint64_t *)(g->ram + DATA_GPA);
	double t;
	int i;

	data[2] = 1 << 20;
	data[3] = c->target;
	if (!run_to_port(g))
		return 0;
	for (i = 0; i < 2; i++) {
		t = now();
		if (!run_to_port(g))
			return 0;
		t = (now() - t) * 1e3;
		if (t > 0.05)
			data[2] = data[2] * HANDLER_MS / t + 1;
	}
	c->spin = data[2];
	t = now();
	if (!run_to_port(g))
		return 0;
	c->secs = now() - t;
	c->entries = data[0];
	c->if_clear = data[1];
	c->injections = kvm_irq_injections();
	return 1;
}

int main(void)
{
	struct irq_counts c = { .target = 300 };
	struct guest g;
	char arg[64] = "";
	bool control, ticker;
	pthread_t tick;
	int ret, ok;

	if (cmdline_value("asi.irq_once", arg, sizeof(arg)) && strtol(arg, NULL, 0) > 0)
		c.target = strtol(arg, NULL, 0);
	control = strstr(arg, ",twice") != NULL;

	ret = guest_create(&g, irq_once_guest_start, irq_once_guest_end - irq_once_guest_start);
	if (ret == -ENOENT)
		kvm_missing();
	ktap_plan(2);
	ok = ret == 0 && ioctl(g.vm_fd, KVM_CREATE_IRQCHIP, 0) == 0 && guest_add_vcpu(&g) == 0;
	if (!ktap_result(ok, "create_vm_with_irqchip")) {
		guest_destroy(&g);
		return KSFT_FAIL;
	}
	guest_set_idt_entry(&g, VECTOR, GUEST_CODE_GPA + (irq_once_handler - irq_once_guest_start));

	ticker = start_ticker(&tick);
	ok = run_timer(&g, &c);
	if (ticker) {
		atomic_store(&ticking, false);
		pthread_join(tick, NULL);
	}
	if (ok)
		ktap_diag("%ld timer interrupts in %.1f s, handler spin %llu for %.0f ms, %s: KVM injected %ld, %ld handler entries, %ld of them with IF=0",
			  c.target, c.secs, (unsigned long long)c.spin, HANDLER_MS,
			  ticker ? "CPU 1 ticking" : "one CPU", c.injections, c.entries, c.if_clear);
	if (control) {
		ktap_diag("control: the emulator under test is one known to deliver twice");
		ktap_result(ok && (c.if_clear || (c.injections >= 0 && c.entries > c.injections)),
			    "control_emulator_delivers_twice");
	} else {
		ktap_result(ok && c.injections >= c.entries && c.entries >= c.target && !c.if_clear,
			    "injected_interrupt_delivered_once");
	}
	guest_destroy(&g);
	return ktap_exit_code();
}
