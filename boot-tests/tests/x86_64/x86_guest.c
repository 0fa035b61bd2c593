// SPDX-License-Identifier: GPL-2.0
/*
 * A minimal 64-bit KVM guest built from user space; see x86_guest.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "../ktap.h"
#include "isolation.h"
#include "x86_guest.h"

#define PML4_GPA	0x1000UL
#define PDPT_GPA	0x2000UL
#define PD_GPA		0x3000UL
#define STACK_TOP	GUEST_RAM_SIZE

#define PTE_P		(1UL << 0)
#define PTE_RW		(1UL << 1)
#define PTE_PS		(1UL << 7)

#define CR0_PE		(1UL << 0)
#define CR0_MP		(1UL << 1)
#define CR0_ET		(1UL << 4)
#define CR0_NE		(1UL << 5)
#define CR0_WP		(1UL << 16)
#define CR0_PG		(1UL << 31)
#define CR4_PAE		(1UL << 5)
#define CR4_OSFXSR	(1UL << 9)
#define EFER_LME	(1UL << 8)
#define EFER_LMA	(1UL << 10)

#define MAX_CPUID_ENTRIES 100

static int sys_fail(const char *what)
{
	int err = errno;

	ktap_diag("%s: %s", what, strerror(err));
	return -err;
}

int guest_open_kvm(void)
{
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (ioctl(fd, KVM_GET_API_VERSION, 0) != KVM_API_VERSION) {
		ktap_diag("unexpected KVM API version");
		close(fd);
		return -EINVAL;
	}
	return fd;
}

static void setup_page_tables(uint8_t *ram)
{
	uint64_t *pml4 = (uint64_t *)(ram + PML4_GPA);
	uint64_t *pdpt = (uint64_t *)(ram + PDPT_GPA);
	uint64_t *pd = (uint64_t *)(ram + PD_GPA);
	int i;

	uint64_t *gdt = (uint64_t *)(ram + GUEST_GDT_GPA);

	gdt[1] = 0x00af9b000000ffffULL;		/* 64-bit code */
	gdt[2] = 0x00cf93000000ffffULL;		/* data */
	pml4[0] = PDPT_GPA | PTE_P | PTE_RW;
	pdpt[0] = PD_GPA | PTE_P | PTE_RW;
	for (i = 0; i < 512; i++)
		pd[i] = ((uint64_t)i << 21) | PTE_P | PTE_RW | PTE_PS;
}

int guest_create(struct guest *g, const void *code, size_t code_len)
{
	struct kvm_userspace_memory_region region;
	int ret;

	memset(g, 0, sizeof(*g));
	g->vm_fd = -1;
	g->kvm_fd = guest_open_kvm();
	if (g->kvm_fd < 0)
		return g->kvm_fd;

	ret = ioctl(g->kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (ret < 0) {
		ret = sys_fail("KVM_GET_VCPU_MMAP_SIZE");
		goto err;
	}
	g->run_size = ret;

	g->cpuid = calloc(1, sizeof(*g->cpuid) +
			  MAX_CPUID_ENTRIES * sizeof(g->cpuid->entries[0]));
	if (!g->cpuid) {
		ret = -ENOMEM;
		goto err;
	}
	g->cpuid->nent = MAX_CPUID_ENTRIES - 1;	/* room for one of ours */
	if (ioctl(g->kvm_fd, KVM_GET_SUPPORTED_CPUID, g->cpuid) < 0) {
		ret = sys_fail("KVM_GET_SUPPORTED_CPUID");
		goto err;
	}

	g->vm_fd = ioctl(g->kvm_fd, KVM_CREATE_VM, 0);
	if (g->vm_fd < 0) {
		ret = sys_fail("KVM_CREATE_VM");
		goto err;
	}

	g->ram = mmap(NULL, GUEST_RAM_SIZE, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (g->ram == MAP_FAILED) {
		g->ram = NULL;
		ret = sys_fail("mmap guest RAM");
		goto err;
	}
	setup_page_tables(g->ram);
	if (code_len > GUEST_RAM_SIZE / 2 - GUEST_CODE_GPA) {
		ret = -E2BIG;
		goto err;
	}
	memcpy(g->ram + GUEST_CODE_GPA, code, code_len);

	region = (struct kvm_userspace_memory_region) {
		.slot = 0,
		.guest_phys_addr = 0,
		.memory_size = GUEST_RAM_SIZE,
		.userspace_addr = (uintptr_t)g->ram,
	};
	if (ioctl(g->vm_fd, KVM_SET_USER_MEMORY_REGION, &region) < 0) {
		ret = sys_fail("KVM_SET_USER_MEMORY_REGION");
		goto err;
	}
	return 0;
err:
	guest_destroy(g);
	return ret;
}

const struct kvm_cpuid_entry2 *guest_cpuid_entry(struct guest *g, uint32_t function)
{
	uint32_t i;

	for (i = 0; i < g->cpuid->nent; i++)
		if (g->cpuid->entries[i].function == function &&
		    g->cpuid->entries[i].index == 0)
			return &g->cpuid->entries[i];
	return NULL;
}

int guest_set_cpuid_entry(struct guest *g, uint32_t function, uint32_t eax,
			  uint32_t ebx, uint32_t ecx, uint32_t edx)
{
	struct kvm_cpuid_entry2 *e = (struct kvm_cpuid_entry2 *)guest_cpuid_entry(g, function);

	if (!e) {
		if (g->cpuid->nent >= MAX_CPUID_ENTRIES)
			return -ENOSPC;
		e = &g->cpuid->entries[g->cpuid->nent++];
		memset(e, 0, sizeof(*e));
		e->function = function;
	}
	e->eax = eax;
	e->ebx = ebx;
	e->ecx = ecx;
	e->edx = edx;
	return 0;
}

static void set_seg(struct kvm_segment *s, uint16_t sel, uint8_t type, int code)
{
	*s = (struct kvm_segment) {
		.base = 0, .limit = 0xffffffff, .selector = sel, .type = type,
		.present = 1, .dpl = 0, .db = !code, .s = 1, .l = code, .g = 1,
	};
}

int guest_add_vcpu(struct guest *g)
{
	struct guest_vcpu *v;
	struct kvm_sregs sregs;
	struct kvm_regs regs;
	int id = g->nr_vcpus;

	if (id >= GUEST_MAX_VCPUS)
		return -ENOSPC;
	v = &g->vcpu[id];
	v->fd = ioctl(g->vm_fd, KVM_CREATE_VCPU, id);
	if (v->fd < 0)
		return sys_fail("KVM_CREATE_VCPU");
	v->run = mmap(NULL, g->run_size, PROT_READ | PROT_WRITE, MAP_SHARED, v->fd, 0);
	if (v->run == MAP_FAILED) {
		int ret = sys_fail("mmap kvm_run");

		close(v->fd);
		return ret;
	}
	g->nr_vcpus++;

	/* CPUID first: KVM refuses EFER.LME unless the guest has long mode. */
	if (ioctl(v->fd, KVM_SET_CPUID2, g->cpuid) < 0)
		return sys_fail("KVM_SET_CPUID2");

	if (ioctl(v->fd, KVM_GET_SREGS, &sregs) < 0)
		return sys_fail("KVM_GET_SREGS");
	sregs.cr0 = CR0_PE | CR0_MP | CR0_ET | CR0_NE | CR0_WP | CR0_PG;
	sregs.cr4 = CR4_PAE | CR4_OSFXSR;
	sregs.efer = EFER_LME | EFER_LMA;
	sregs.cr3 = PML4_GPA;
	sregs.gdt.base = GUEST_GDT_GPA;
	sregs.gdt.limit = 3 * 8 - 1;
	sregs.idt.base = GUEST_IDT_GPA;
	sregs.idt.limit = 256 * 16 - 1;
	set_seg(&sregs.cs, 0x08, 11, 1);
	set_seg(&sregs.ds, 0x10, 3, 0);
	sregs.es = sregs.fs = sregs.gs = sregs.ss = sregs.ds;
	sregs.tr = (struct kvm_segment) {
		.base = 0, .limit = 0x67, .selector = 0x18, .type = 11, .present = 1,
	};
	if (ioctl(v->fd, KVM_SET_SREGS, &sregs) < 0)
		return sys_fail("KVM_SET_SREGS");

	memset(&regs, 0, sizeof(regs));
	regs.rflags = 0x2;
	regs.rip = GUEST_CODE_GPA;
	regs.rsp = STACK_TOP - id * 0x1000;
	regs.rdi = id;
	if (ioctl(v->fd, KVM_SET_REGS, &regs) < 0)
		return sys_fail("KVM_SET_REGS");
	return id;
}

void guest_set_idt_entry(struct guest *g, int vector, uint64_t handler_gpa)
{
	uint64_t *gate = (uint64_t *)(g->ram + GUEST_IDT_GPA + 16 * vector);

	gate[0] = (handler_gpa & 0xffff) | (0x08ULL << 16) | (0x8eULL << 40) |
		  ((handler_gpa >> 16 & 0xffff) << 48);
	gate[1] = handler_gpa >> 32;
}

void *guest_add_memslot(struct guest *g, int slot, uint64_t gpa, size_t size)
{
	struct kvm_userspace_memory_region region;
	void *mem = mmap(NULL, size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (mem == MAP_FAILED)
		return NULL;
	/* 4 KiB host pages: each first touch is a fault of its own. */
	madvise(mem, size, MADV_NOHUGEPAGE);
	region = (struct kvm_userspace_memory_region) {
		.slot = slot, .guest_phys_addr = gpa, .memory_size = size,
		.userspace_addr = (uintptr_t)mem,
	};
	if (ioctl(g->vm_fd, KVM_SET_USER_MEMORY_REGION, &region) < 0) {
		munmap(mem, size);
		return NULL;
	}
	return mem;
}

/*
 * Every KVM_RUN is bounded: a watchdog thread interrupts one that has not
 * returned within the limit (asi.run_limit=SECONDS, 60 by default) with a
 * signal, and guest_run() reports it -- the vCPU and what isolation
 * counted -- instead of leaving a lost wake-up or a hung guest to the
 * boot's timeout.
 */
#define RUN_SLOTS	64
#define RUN_SIGNAL	(SIGRTMIN + 1)

static struct run_slot {
	pthread_t thread;
	double since;		/* 0: free */
	bool fired;
} run_slots[RUN_SLOTS];
static pthread_mutex_t run_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t run_once = PTHREAD_ONCE_INIT;
static double run_limit = 60;

static double mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void run_signal(int sig)
{
	(void)sig;	/* only makes KVM_RUN return -EINTR */
}

static void *run_watchdog(void *arg)
{
	int i;

	(void)arg;
	for (;;) {
		sleep(1);
		pthread_mutex_lock(&run_lock);
		for (i = 0; i < RUN_SLOTS; i++) {
			struct run_slot *s = &run_slots[i];

			if (s->since && !s->fired && mono_now() - s->since > run_limit) {
				s->fired = true;
				pthread_kill(s->thread, RUN_SIGNAL);
			}
		}
		pthread_mutex_unlock(&run_lock);
	}
	return NULL;
}

static void run_watchdog_start(void)
{
	struct sigaction sa = { .sa_handler = run_signal };	/* no SA_RESTART */
	char arg[32];
	pthread_t t;

	if (cmdline_value("asi.run_limit", arg, sizeof(arg)) && atof(arg) > 0)
		run_limit = atof(arg);
	sigemptyset(&sa.sa_mask);
	sigaction(RUN_SIGNAL, &sa, NULL);
	if (pthread_create(&t, NULL, run_watchdog, NULL) == 0)
		pthread_detach(t);
}

static int run_slot_get(void)
{
	int i;

	pthread_mutex_lock(&run_lock);
	for (i = 0; i < RUN_SLOTS; i++)
		if (!run_slots[i].since) {
			run_slots[i] = (struct run_slot) { pthread_self(), mono_now(), false };
			break;
		}
	pthread_mutex_unlock(&run_lock);
	return i < RUN_SLOTS ? i : -1;
}

/* Free the slot; true if the watchdog had to interrupt this KVM_RUN. */
static bool run_slot_put(int i)
{
	bool fired;

	if (i < 0)
		return false;
	pthread_mutex_lock(&run_lock);
	fired = run_slots[i].fired;
	run_slots[i].since = 0;
	pthread_mutex_unlock(&run_lock);
	return fired;
}

void guest_set_run_limit(double secs)
{
	pthread_once(&run_once, run_watchdog_start);
	pthread_mutex_lock(&run_lock);
	run_limit = secs;
	pthread_mutex_unlock(&run_lock);
}

int guest_run(struct guest *g, int vcpu)
{
	struct iso_stats s;
	int slot, ret = 0;

	pthread_once(&run_once, run_watchdog_start);
	slot = run_slot_get();
	if (ioctl(g->vcpu[vcpu].fd, KVM_RUN, 0) < 0)
		ret = -errno;
	if (run_slot_put(slot)) {
		if (iso_read_stats(&s))
			ktap_diag("vCPU %d: KVM_RUN did not return within %.0f s (lost wake-up or hung guest); "
				  "isolation: enters %lld, VM-exits inside %lld, outside %lld, faults %lld",
				  vcpu, run_limit, (long long)iso_stat(&s, "enters"),
				  (long long)iso_stat(&s, "vmexits_inside"),
				  (long long)iso_stat(&s, "vmexits_outside"),
				  (long long)iso_stat(&s, "faults"));
		else
			ktap_diag("vCPU %d: KVM_RUN did not return within %.0f s (lost wake-up or hung guest)",
				  vcpu, run_limit);
		ret = -ETIMEDOUT;
	}
	return ret;
}

void guest_destroy(struct guest *g)
{
	int i;

	for (i = 0; i < g->nr_vcpus; i++) {
		munmap(g->vcpu[i].run, g->run_size);
		close(g->vcpu[i].fd);
	}
	g->nr_vcpus = 0;
	if (g->vm_fd >= 0)
		close(g->vm_fd);
	if (g->ram)
		munmap(g->ram, GUEST_RAM_SIZE);
	if (g->kvm_fd >= 0)
		close(g->kvm_fd);
	free(g->cpuid);
	memset(g, 0, sizeof(*g));
	g->vm_fd = g->kvm_fd = -1;
}

uint64_t guest_io_value(struct guest_vcpu *v)
{
	uint64_t val = 0;

	memcpy(&val, (uint8_t *)v->run + v->run->io.data_offset, v->run->io.size);
	return val;
}

void guest_io_supply(struct guest_vcpu *v, uint64_t value)
{
	memcpy((uint8_t *)v->run + v->run->io.data_offset, &value, v->run->io.size);
}

const char *exit_reason_str(uint32_t reason)
{
	static __thread char buf[32];

	switch (reason) {
	case KVM_EXIT_IO:		return "IO";
	case KVM_EXIT_MMIO:		return "MMIO";
	case KVM_EXIT_HLT:		return "HLT";
	case KVM_EXIT_SHUTDOWN:		return "SHUTDOWN";
	case KVM_EXIT_FAIL_ENTRY:	return "FAIL_ENTRY";
	case KVM_EXIT_INTERNAL_ERROR:	return "INTERNAL_ERROR";
	case KVM_EXIT_INTR:		return "INTR";
	case KVM_EXIT_X86_RDMSR:	return "X86_RDMSR";
	case KVM_EXIT_X86_WRMSR:	return "X86_WRMSR";
	default:
		snprintf(buf, sizeof(buf), "%u", reason);
		return buf;
	}
}
