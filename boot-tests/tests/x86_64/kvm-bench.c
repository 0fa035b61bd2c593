// SPDX-License-Identifier: GPL-2.0
/*
 * What isolation costs, per exit class: a guest loops on one kind of exit
 * for a fixed time, and the program reports VM-exits per second and what
 * isolation did meanwhile (enters, exits, faults, L1D flush requests), as
 * one JSON object per run in a KTAP diagnostic ("# bench {...}").  The
 * host (scripts/bench.py) pairs the runs of a boot with isolation off and
 * of one with it on.
 *
 * usage: kvm-bench [seconds per run [repetitions]]     (1 3)
 * Kernel parameters: asi.bench=SECONDS,REPETITIONS; asi.bench_only=CLASS
 * runs that class alone, without the scaling runs (make bench-hlt).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "../ktap.h"
#include "isolation.h"
#include "x86_guest.h"

#define KVM_EXITS	"/sys/kernel/debug/kvm/exits"
#define KVM_L1D_FLUSHES	"/sys/kernel/debug/kvm/l1d_flush"	/* VMX: flushes at VM-entry */
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define PF_GPA		0x10000000UL
#define PF_SIZE		(64UL << 20)

/* Each loop body runs 1000 times, then reports through port 0xe0. */
GUEST_CODE(b_cpuid,
	"1: mov $1000, %r8d\n"
	"2: xor %eax, %eax\n cpuid\n dec %r8d\n jnz 2b\n"
	"out %al, $0xe0\n jmp 1b\n");
GUEST_CODE(b_msr,
	"1: mov $1000, %r8d\n"
	"2: mov $0x1b, %ecx\n rdmsr\n dec %r8d\n jnz 2b\n"
	"out %al, $0xe0\n jmp 1b\n");
/* The in-kernel PIC's IMR. */
GUEST_CODE(b_pio_kernel,
	"1: mov $1000, %r8d\n"
	"2: in $0x21, %al\n dec %r8d\n jnz 2b\n"
	"out %al, $0xe0\n jmp 1b\n");
GUEST_CODE(b_pio_user,
	"1: out %al, $0xe0\n jmp 1b\n");
GUEST_CODE(b_mmio_user,
	"mov $0x30000000, %ebx\n"
	"1: movl $1, (%rbx)\n jmp 1b\n");
/*
 * HLT, woken by the x2APIC timer (periodic, 1 ms, vector 0x40), whose
 * handler sends the EOI.  The handler follows the label.  Not faster: KVM
 * raises a 100 us period to 200 us, and on QEMU's emulated host one
 * hrtimer interrupt that catches up on missed periods takes milliseconds,
 * so the host's hrtimer hang detection kicks in and, once catching up
 * takes over 100 ms, defers every timer of that CPU by 100 ms at a time
 * (3126 exits in 312.9 s, as issue 16 saw).
 */
GUEST_CODE(b_hlt,
	GUEST_X2APIC_TIMER(0x40, 1000000)
	"1: mov $100, %r8d\n"
	"2: sti\n hlt\n cli\n dec %r8d\n jnz 2b\n"
	"out %al, $0xe0\n jmp 1b\n"
	".globl b_hlt_handler\n b_hlt_handler:\n"
	"push %rax\n push %rcx\n push %rdx\n"
	"mov $0x80b, %ecx\n xor %eax, %eax\n xor %edx, %edx\n wrmsr\n"
	"pop %rdx\n pop %rcx\n pop %rax\n iretq\n");
extern const unsigned char b_hlt_handler[];
/* A write to each fresh 4 KiB page of a 64 MiB memslot, once. */
GUEST_CODE(b_page_fault,
	"mov $0x10000000, %ebx\n"
	"1: mov $256, %r8d\n"
	"2: movb $1, (%rbx)\n add $4096, %rbx\n dec %r8d\n jnz 2b\n"
	"out %al, $0xe0\n jmp 1b\n");

struct bench_class {
	const char *name;
	const unsigned char *start, *end;
	bool irqchip, pf;
	unsigned long limit;	/* stop after this many user exits, 0: none */
};

#define CLASS(n, ...) { #n, b_##n##_start, b_##n##_end, __VA_ARGS__ }

static const struct bench_class classes[] = {
	CLASS(cpuid, false, false, 0),
	CLASS(msr, false, false, 0),
	CLASS(pio_kernel, true, false, 0),
	CLASS(pio_user, false, false, 0),
	CLASS(mmio_user, false, false, 0),
	CLASS(hlt, true, false, 0),
	CLASS(page_fault, false, true, PF_SIZE / 4096 / 256),
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A KVM statistic summed over the VMs alive, -1 when there is none. */
static long long kvm_stat(const char *path)
{
	char buf[64] = "";
	int fd = open(path, O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

	if (fd >= 0)
		close(fd);
	return n > 0 ? atoll(buf) : -1;
}

static long long kvm_exits(void)
{
	return kvm_stat(KVM_EXITS);
}

struct runner {
	struct guest *g;
	int vcpu;
	double deadline;
	unsigned long limit, user_exits;
	int errors;
};

/* Run one vCPU until the deadline (or its exit limit); any odd exit is an error. */
static void *run_vcpu(void *arg)
{
	struct runner *r = arg;
	struct kvm_run *run = r->g->vcpu[r->vcpu].run;

	while (now() < r->deadline && (!r->limit || r->user_exits < r->limit)) {
		if (guest_run(r->g, r->vcpu) ||
		    (run->exit_reason != KVM_EXIT_IO && run->exit_reason != KVM_EXIT_MMIO)) {
			if (r->errors++ < 3)
				ktap_diag("vCPU %d: exit %s", r->vcpu, exit_reason_str(run->exit_reason));
			break;
		}
		r->user_exits++;
	}
	return NULL;
}

static int create(struct guest *g, const struct bench_class *c, int vcpus)
{
	int i;

	if (guest_create(g, c->start, c->end - c->start))
		return -1;
	if (c->irqchip && ioctl(g->vm_fd, KVM_CREATE_IRQCHIP, 0))
		return -1;
	if (c->pf && !guest_add_memslot(g, 1, PF_GPA, PF_SIZE))
		return -1;
	if (c->start == b_hlt_start)
		guest_set_idt_entry(g, 0x40, GUEST_CODE_GPA + (b_hlt_handler - b_hlt_start));
	for (i = 0; i < vcpus; i++)
		if (guest_add_vcpu(g) != i)
			return -1;
	return 0;
}

/*
 * One run: @vms VMs of @vcpus vCPUs each, for @secs seconds.  Prints its
 * JSON line; returns 0 if every vCPU behaved.
 */
static int bench(const struct bench_class *c, int vms, int vcpus, double secs, int rep,
		 const char *kind)
{
	struct runner r[16];
	pthread_t t[16];
	struct guest g[4];
	struct iso_stats s0, s1;
	bool stats = iso_read_stats(&s0);
	long long exits0, exits1, vmx_l1d0, vmx_l1d1;
	double t0, t1;
	int v, m, n = 0, errors = 0;
	unsigned long user = 0;

	for (m = 0; m < vms; m++)
		if (create(&g[m], c, vcpus)) {
			ktap_diag("%s: cannot create VM %d", c->name, m);
			return -1;
		}
	stats = stats && iso_read_stats(&s0);
	exits0 = kvm_exits();
	vmx_l1d0 = kvm_stat(KVM_L1D_FLUSHES);
	t0 = now();
	for (m = 0; m < vms; m++)
		for (v = 0; v < vcpus; v++, n++) {
			r[n] = (struct runner) { .g = &g[m], .vcpu = v, .deadline = t0 + secs,
						 .limit = c->limit };
			pthread_create(&t[n], NULL, run_vcpu, &r[n]);
		}
	for (v = 0; v < n; v++) {
		pthread_join(t[v], NULL);
		errors += r[v].errors;
		user += r[v].user_exits;
	}
	t1 = now();
	exits1 = kvm_exits();
	vmx_l1d1 = kvm_stat(KVM_L1D_FLUSHES);
	stats = stats && iso_read_stats(&s1);
	for (m = 0; m < vms; m++)
		guest_destroy(&g[m]);

#define D(name) (stats ? (long long)(iso_stat(&s1, name) - iso_stat(&s0, name)) : 0)
	printf("# bench {\"kind\": \"%s\", \"class\": \"%s\", \"vms\": %d, \"vcpus\": %d, \"rep\": %d, "
	       "\"secs\": %.4f, \"vmexits\": %lld, \"user_exits\": %lu, \"enters\": %lld, "
	       "\"iso_exits\": %lld, \"faults\": %lld, \"trips\": %lld, \"trips_flushed\": %lld, "
	       "\"flush_l1d\": %lld, \"flush_verw\": %lld, \"vmx_l1d_flushes\": %lld, "
	       "\"smt_holds\": %lld, \"smt_held_us\": %lld, \"smt_kicks\": %lld, "
	       "\"ibpb_on_vmexit\": %d, \"ibpb_deferred\": %lld, \"flush_ibpb\": %lld, "
	       "\"vmexits_inside\": %lld, \"vmexits_outside\": %lld, \"errors\": %d}\n",
	       kind, c->name, vms, vcpus, rep, t1 - t0, exits1 - exits0, user, D("enters"),
	       stats ? (long long)(iso_stat_sum(&s1, "exits_") - iso_stat_sum(&s0, "exits_")) : 0,
	       D("faults"), D("trips"), D("trips_flushed"),
	       D("flush_l1d_msr") + D("flush_l1d_sw"), D("flush_verw"),
	       vmx_l1d0 >= 0 && vmx_l1d1 >= 0 ? vmx_l1d1 - vmx_l1d0 : 0,
	       D("smt_holds"), D("smt_held_us"), D("smt_kicks"),
	       stats && iso_stat(&s1, "vmexit_ibpb") > 0,
	       D("ibpb_deferred"), D("flush_ibpb"), D("vmexits_inside"), D("vmexits_outside"),
	       errors);
	fflush(stdout);
	/* Steady state touches only mapped data; fresh guest memory aside. */
	if (D("faults") > 0 && !c->pf) {
		ktap_diag("%s: %lld isolation faults", c->name, D("faults"));
		errors++;
	}
#undef D
	return errors ? -1 : 0;
}

int main(int argc, char **argv)
{
	double secs = 1.0;
	int reps = 3;
	int i, rep, ok;
	struct guest probe;
	char arg[64], only[32] = "", list[64];

	/* asi.bench=<seconds>,<repetitions> (make check runs a short one) */
	if (cmdline_value("asi.bench", arg, sizeof(arg)))
		sscanf(arg, "%lf,%d", &secs, &reps);
	if (argc > 1)
		secs = atof(argv[1]);
	if (argc > 2)
		reps = atoi(argv[2]);
	cmdline_value("asi.bench_only", only, sizeof(only));

	if (guest_create(&probe, b_cpuid_start, b_cpuid_end - b_cpuid_start) == -ENOENT)
		kvm_missing();
	guest_destroy(&probe);
	if (kvm_exits() < 0)
		ktap_skip_all("no " KVM_EXITS);
	if (*only) {
		for (i = 0; i < (int)ARRAY_SIZE(classes) && strcmp(classes[i].name, only); i++)
			;
		ktap_plan(1);
		if (i == (int)ARRAY_SIZE(classes)) {
			ktap_result(0, "asi.bench_only=%s: no such class", only);
			return ktap_exit_code();
		}
		for (rep = 0, ok = 1; rep < reps; rep++)
			ok &= !bench(&classes[i], 1, 1, secs, rep, "class");
		ktap_result(ok, "%s", classes[i].name);
		return ktap_exit_code();
	}
	ktap_plan(ARRAY_SIZE(classes) + 2);
	ktap_diag("isolation %s", iso_expected() ? "on" : "off");
	/* Without it, skipping CPUID, RDMSR or HLT decodes them from guest memory. */
	/* Whether skipping an intercepted instruction needs the emulator. */
	ktap_diag("next_rip %s", cpu_has_flag("vmx") ? "yes (vmx)" :
		  cpu_has_flag("nrip_save") ? "yes (nrip_save)" : "no (svm without nrip_save)");

	for (i = 0; i < (int)ARRAY_SIZE(classes); i++) {
		for (rep = 0, ok = 1; rep < reps; rep++)
			ok &= !bench(&classes[i], 1, 1, secs, rep, "class");
		ktap_result(ok, "%s", classes[i].name);
	}
	/* Scaling: 1, 2 and 4 vCPUs of one VM; 1 and 4 VMs of one vCPU. */
	for (rep = 0, ok = 1; rep < reps; rep++) {
		ok &= !bench(&classes[0], 1, 1, secs, rep, "vcpus");
		ok &= !bench(&classes[0], 1, 2, secs, rep, "vcpus");
		ok &= !bench(&classes[0], 1, 4, secs, rep, "vcpus");
	}
	ktap_result(ok, "scaling_vcpus");
	/*
	 * Four VMs on the two threads of one core, with the sibling handling
	 * on (asi_smt=stun): a guest waits while the other thread runs
	 * another VM, and with four runnable vCPU threads neither thread is
	 * ever idle, so hardly any guest runs.  That takes core scheduling,
	 * each VM with its own cookie; skipped with isolation off too, for
	 * the pairs.
	 */
	if (cpus_0_1_stunned(list, sizeof(list))) {
		ktap_skip("scaling_vms (CPUs %s are one core's threads: needs core scheduling)",
			  list);
		return ktap_exit_code();
	}
	for (rep = 0, ok = 1; rep < reps; rep++) {
		ok &= !bench(&classes[0], 1, 1, secs, rep, "vms");
		ok &= !bench(&classes[0], 4, 1, secs, rep, "vms");
	}
	ktap_result(ok, "scaling_vms");
	return ktap_exit_code();
}
