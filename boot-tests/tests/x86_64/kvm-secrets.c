// SPDX-License-Identifier: GPL-2.0
/*
 * Secrets stay unmapped: while two VMs run, the kernel's check (debugfs
 * isolation/check) walks each VM's isolated page table for every page of
 * the other VM's objects, of every task but those running its vCPUs, and
 * of a child process's memory, and audits every mapped page: none without
 * a mapped object on it, none that a mapped object shares with anything
 * else.  It then reads every mapped page for a random secret planted in
 * the kernel (a key added with add_key(2), a pipe's buffer, the child's
 * page), which no VM may map, and for a control planted in the vCPUs' run
 * pages, which every VM must map.  The vCPU threads hold the secret in
 * vector registers when they call KVM_RUN the second time, where KVM saves
 * the VMM's registers: no VM may map them, while the threads run and after
 * they exited.  Before the VMs run, KVM frees objects the first VM mapped
 * (I/O buses, a memslot, CPUID tables), and the secret is planted in
 * memory allocated right after each free; the control keeps one freed bus
 * mapped, and the search must find the secret there.  Every "ok"/"not ok" line the check
 * prints is a KTAP case, every "# " line a diagnostic.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/keyctl.h>
#include <linux/kvm.h>

#include "../ktap.h"
#include "isolation.h"
#include "x86_guest.h"

/*
 * Say through a port that KVM_RUN ran (and mapped the vCPU's task), CPUID
 * for a while, then report through another port.
 */
GUEST_CODE(secrets_guest,
	"out %eax, $0xe1\n"
	"mov $100000, %r8d\n"
	"1: xor %eax, %eax\n"
	"cpuid\n"
	"dec %r8d\n"
	"jnz 1b\n"
	"out %eax, $0xe0\n"
	"hlt\n");

#define SECRET_LEN	32

static int started;
static uint8_t secret[SECRET_LEN];

/*
 * KVM_RUN with the secret in xmm0-1 and xmm6-7, loaded in the same asm
 * statement as the system call so that nothing can move it in between.
 */
static long kvm_run_with_secret_in_xmm(int fd)
{
	long ret;

	asm volatile("movdqu (%[s]), %%xmm0\n\t"
		     "movdqu 16(%[s]), %%xmm1\n\t"
		     "movdqa %%xmm0, %%xmm6\n\t"
		     "movdqa %%xmm1, %%xmm7\n\t"
		     "syscall"
		     : "=a"(ret)
		     : "0"((long)SYS_ioctl), "D"((long)fd), "S"((long)KVM_RUN), "d"(0L),
		       [s] "r"(secret)
		     : "rcx", "r11", "memory", "xmm0", "xmm1", "xmm6", "xmm7");
	return ret;
}

static void *run_vm(void *arg)
{
	struct guest *g = arg;

	if (guest_run(g, 0) == 0)
		__atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST);
	if (kvm_run_with_secret_in_xmm(g->vcpu[0].fd) < 0)
		ktap_diag("KVM_RUN with the secret in vector registers failed");
	return NULL;
}

/*
 * Freed memory.  KVM frees a VM's PIO bus each time an ioeventfd is
 * assigned or deassigned (it installs a copy), a memslot when it is
 * deleted, and a vCPU's CPUID table when KVM_SET_CPUID2 replaces it
 * (before the vCPU first runs): each a page-sized kmalloc() object that
 * the VM maps.  Right
 * after each free, on the same CPU, user keys take the secret into objects
 * of the same kmalloc() cache (the test kernels have no kmem accounting,
 * so KVM's accounted allocations and the keys' share caches), and SLUB
 * hands out the object freed last first.
 */
#define FREED_PORT	0x7e
#define FREED_SLOT	7
#define FREED_ROUNDS	4
#define FREED_KEYS	2	/* after each free */
#define FREED_CONTROL_KEYS 16
#define FREED_KEY_LEN	2040	/* a 2064-byte payload: kmalloc-4k */

static int freed_keys;

static void plant_keys(int n)
{
	static char payload[FREED_KEY_LEN];
	char desc[40];
	int i;

	for (i = 0; i < FREED_KEY_LEN; i++)
		((volatile char *)payload)[i] = ((volatile uint8_t *)secret)[i % SECRET_LEN];
	for (i = 0; i < n; i++) {
		snprintf(desc, sizeof(desc), "kvm-secrets-freed-%d", freed_keys);
		if (syscall(SYS_add_key, "user", desc, payload, sizeof(payload),
			    KEY_SPEC_PROCESS_KEYRING) >= 0)
			freed_keys++;
	}
}

/*
 * KASAN keeps freed objects in a quarantine before anything can reuse
 * them: no key lands in a freed object there.  Its kernels list
 * kasan_quarantine_put in /proc/kallsyms.
 */
static bool kasan_quarantine(void)
{
	char line[256];
	bool found = false;
	FILE *f = fopen("/proc/kallsyms", "r");

	while (f && !found && fgets(line, sizeof(line), f))
		found = strstr(line, " kasan_quarantine_put\n");
	if (f)
		fclose(f);
	return found;
}

/* Have KVM free the PIO bus @g maps, by (de)assigning ioeventfd @efd. */
static bool free_bus(struct guest *g, int efd, bool deassign)
{
	struct kvm_ioeventfd ioev = {
		.addr = FREED_PORT, .len = 1, .fd = efd,
		.flags = KVM_IOEVENTFD_FLAG_PIO | (deassign ? KVM_IOEVENTFD_FLAG_DEASSIGN : 0),
	};

	return !ioctl(g->vm_fd, KVM_IOEVENTFD, &ioev);
}

/* Have KVM free a memslot @g maps: create one, then delete it. */
static bool free_memslot(struct guest *g)
{
	static char page[4096] __attribute__((aligned(4096)));
	struct kvm_userspace_memory_region slot = {
		.slot = FREED_SLOT, .guest_phys_addr = 1ULL << 32,
		.memory_size = sizeof(page), .userspace_addr = (uintptr_t)page,
	};

	if (ioctl(g->vm_fd, KVM_SET_USER_MEMORY_REGION, &slot))
		return false;
	slot.memory_size = 0;
	return !ioctl(g->vm_fd, KVM_SET_USER_MEMORY_REGION, &slot);
}

/* Have KVM free the CPUID table of @g's first vCPU, which has not run yet. */
static bool free_cpuid(struct guest *g)
{
	return !ioctl(g->vcpu[0].fd, KVM_SET_CPUID2, g->cpuid);
}

/* Free FREED_ROUNDS times four of @g's objects, planting after each. */
static int free_and_plant(struct guest *g, int efd)
{
	int frees = 0, i;

	iso_pin_to_cpu(0);
	for (i = 0; i < FREED_ROUNDS; i++) {
		if (free_bus(g, efd, false))
			plant_keys(FREED_KEYS), frees++;
		if (free_bus(g, efd, true))
			plant_keys(FREED_KEYS), frees++;
		if (free_memslot(g))
			plant_keys(FREED_KEYS), frees++;
		if (free_cpuid(g))
			plant_keys(FREED_KEYS), frees++;
	}
	iso_pin_to_cpu(-1);
	return frees;
}

/* The start of the line of @buf that @p is in. */
static const char *line_start(const char *buf, const char *p)
{
	while (p > buf && p[-1] != '\n')
		p--;
	return p;
}

/* The VM an "ok"/"not ok" line of the check is about: its first word after. */
static const char *line_vm(const char *start)
{
	return start + (strncmp(start, "not ok ", 7) ? 3 : 7);
}

/*
 * In a read of the check, the line of @what (a substring) about the VM
 * that freed objects (the only one whose freed-objects line counts more
 * than none): its start, or NULL.  @vm gets that VM's name.
 */
static const char *freeing_vm_line(const char *buf, const char *what, char *vm, size_t len)
{
	const char *line, *name;
	unsigned int n;

	*vm = 0;
	for (line = buf; (line = strstr(line, "objects KVM freed")); line++) {
		const char *start = line_start(buf, line), *count;

		name = line_vm(start);
		count = strstr(start, "maps none of the last ");
		if (count && count < line &&
		    sscanf(count, "maps none of the last %u", &n) == 1 && n > 0)
			snprintf(vm, len, "%.*s", (int)strcspn(name, " "), name);
	}
	if (!*vm)
		return NULL;
	for (line = buf; (line = strstr(line, what)); line++) {
		name = line_vm(line_start(buf, line));
		if (!strncmp(name, vm, strlen(vm)) && name[strlen(vm)] == ' ')
			return line_start(buf, line);
	}
	return NULL;
}

/*
 * How many of the objects KVM freed the VM that freed them found holding
 * the secret, from a read of the check: -1 if it did not say.
 */
static int secret_in_freed(const char *buf, char *line, size_t len)
{
	char vm[64];
	const char *l = freeing_vm_line(buf, "objects KVM freed", vm, sizeof(vm));
	unsigned int mapped, holding;

	if (!l || sscanf(strstr(l, "(") ?: "", "(%u mapped, %u of them hold", &mapped, &holding) != 2)
		return -1;
	snprintf(line, len, "%.*s", (int)strcspn(l, "\n"), l);
	return holding;
}

/*
 * The control: "freed_control" keeps the next bus KVM frees mapped in its
 * VM's table.  Free one of @g's, plant as the main phase does, and read
 * the check: the search must find the secret in @g's table, the VM that
 * freed, and in no other VM's.
 */
static char freed_control_line[256];

static bool freed_control_found(struct guest *g, int efd)
{
	static char buf[65536];
	const char *line, *l;
	int fd = open(ISO_DIR "/check", O_RDWR), found = 0, clean = 0;
	ssize_t len = -1;
	char vm[64];
	bool freed;

	if (fd < 0)
		return false;
	iso_pin_to_cpu(0);
	freed = write(fd, "freed_control", 13) == 13 && free_bus(g, efd, false);
	/* More keys than after each free of the main phase: this one must land. */
	if (freed)
		plant_keys(FREED_CONTROL_KEYS);
	iso_pin_to_cpu(-1);
	/* Consumed by that free, unless it failed before KVM freed anything. */
	if (write(fd, "freed_control off", 17) != 17)
		freed = false;
	if (freed)
		len = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	buf[len > 0 ? len : 0] = 0;
	for (line = buf; (line = strstr(line, "planted secret")); line++) {
		const char *start = line_start(buf, line);

		if (!strncmp(start, "not ok ", 7))
			found++;
		else if (!strncmp(start, "ok ", 3))
			clean++;
	}
	/* Found by the VM that freed it, whose freed-objects check fails too. */
	l = freeing_vm_line(buf, "planted secret", vm, sizeof(vm));
	if (l)
		snprintf(freed_control_line, sizeof(freed_control_line), "%.*s",
			 (int)strcspn(l, "\n"), l);
	freed = freed && found == 1 && clean == 1 && l && !strncmp(l, "not ok ", 7);
	l = freeing_vm_line(buf, "objects KVM freed", vm, sizeof(vm));
	return freed && l && !strncmp(l, "not ok ", 7);
}

/* A child process fills a page with the secret and tells its pfn. */
static pid_t child_page(unsigned long *pfn, const uint8_t *secret)
{
	int p[2];
	pid_t pid;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid == 0) {
		volatile char *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
					   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		uint64_t entry = 0;
		int fd, i;

		for (i = 0; i < 4096; i += SECRET_LEN)
			memcpy((void *)(page + i), secret, SECRET_LEN);
		fd = open("/proc/self/pagemap", O_RDONLY);
		if (fd >= 0 && pread(fd, &entry, 8, ((uintptr_t)page / 4096) * 8) == 8 &&
		    (entry >> 63))
			entry &= (1ULL << 55) - 1;
		else
			entry = 0;
		if (write(p[1], &entry, 8) != 8)
			_exit(1);
		pause();
		_exit(0);
	}
	close(p[1]);
	if (pid < 0 || read(p[0], pfn, 8) != 8)
		*pfn = 0;
	close(p[0]);
	return pid;
}

/*
 * The per-CPU variable at offset @off ("per-CPU data 0x25a00 of CPU 1" in
 * a finding): /proc/kallsyms lists per-CPU symbols at their offsets.
 */
static void percpu_name(unsigned long off, char *name, size_t len)
{
	unsigned long addr, best = 0;
	char type, sym[128];
	FILE *f = fopen("/proc/kallsyms", "r");

	snprintf(name, len, "?");
	if (!f)
		return;
	while (fscanf(f, "%lx %c %127s%*[^\n]", &addr, &type, sym) == 3) {
		if (addr <= off && addr >= best && addr < 0x1000000) {
			best = addr;
			snprintf(name, len, "%s+%#lx", sym, off - addr);
		}
	}
	fclose(f);
}

/* A "# " line of the check, with per-CPU offsets named. */
static void report_finding(const char *line)
{
	const char *p = strstr(line, "per-CPU data 0x");
	char name[160];

	if (!p) {
		ktap_diag("%s", line + 2);
		return;
	}
	percpu_name(strtoul(p + strlen("per-CPU data "), NULL, 16), name, sizeof(name));
	ktap_diag("%s (%s)", line + 2, name);
}

/*
 * Copy a needle a byte at a time: a vectorized copy would leave it whole
 * in SIMD registers, which new threads inherit into their task structs,
 * and those of vCPU threads are mapped.
 */
static void plant(char *dst, const uint8_t *src)
{
	volatile char *d = dst;
	const volatile uint8_t *s = src;
	int i;

	for (i = 0; i < SECRET_LEN; i++)
		d[i] = s[i];
}

/* The check's lines about the secret and user FPU state, for a second read. */
static const char *const AFTER_EXIT[] = { "planted secret", "user FPU", NULL };

static bool wanted(const char *line, const char *const *only)
{
	for (; only && *only; only++)
		if (strstr(line, *only))
			return true;
	return !only;
}

/* The "ok"/"not ok" lines of a read of the check, those of @only if given. */
static int count_results(const char *buf, const char *const *only)
{
	const char *line, *end;
	char one[512];
	int n = 0;

	for (line = buf; *line; line = end + 1) {
		end = strchrnul(line, '\n');
		snprintf(one, sizeof(one), "%.*s", (int)(end - line), line);
		if (strncmp(one, "# ", 2) && wanted(one, only))
			n++;
		if (!*end)
			break;
	}
	return n;
}

/* Each "ok"/"not ok" line a KTAP case, "# " lines diagnostics. */
static void report_results(char *buf, const char *const *only, const char *prefix)
{
	char *line, *save, *c;
	int ok;

	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, "# ", 2)) {
			if (!only)
				report_finding(line);
			continue;
		}
		if (!wanted(line, only))
			continue;
		ok = !strncmp(line, "ok ", 3);
		line += ok ? 3 : 7;
		/* VM names hold a '#', which KTAP reads as a directive. */
		for (c = line; (c = strchr(c, '#')); )
			*c = '.';
		ktap_result(ok, "%s%s", prefix, line);
	}
}

/* "secret " or "control " and @len bytes in hex, written to the check. */
static int write_needle(int fd, const char *what, const uint8_t *bytes, size_t len)
{
	char buf[160];
	int n = snprintf(buf, sizeof(buf), "%s ", what);
	size_t i;

	for (i = 0; i < len; i++)
		n += snprintf(buf + n, sizeof(buf) - n, "%02x", bytes[i]);
	return write(fd, buf, n) == n ? 0 : -1;
}

int main(void)
{
	static char buf[65536], after[65536];
	uint8_t control[SECRET_LEN];
	int fd, n, n_after, pipefd[2], planted = 0, i, efd, frees;
	long key = -1;
	struct guest a, b;
	pthread_t ta, tb;
	unsigned long pfn;
	ssize_t len, len_after = -1;
	pid_t child;
	bool freed_control, quarantine;
	char landed_line[256];
	int landed;

	if (!iso_expected())
		ktap_skip_all("isolation not enabled on this boot");
	if (guest_create(&a, secrets_guest_start, secrets_guest_end - secrets_guest_start) ||
	    guest_create(&b, secrets_guest_start, secrets_guest_end - secrets_guest_start) ||
	    guest_add_vcpu(&a) || guest_add_vcpu(&b))
		ktap_skip_all("cannot create two VMs");
	if (getrandom(secret, sizeof(secret), 0) != sizeof(secret) ||
	    getrandom(control, sizeof(control), 0) != sizeof(control))
		ktap_skip_all("no random bytes");
	/* The control in both run pages, where KVM does not write it over. */
	plant(a.vcpu[0].run->s.padding + 1024, control);
	plant(b.vcpu[0].run->s.padding + 1024, control);
	/* The secret in a key, a pipe buffer and the child's page. */
	key = syscall(SYS_add_key, "user", "kvm-secrets", secret, sizeof(secret),
		      KEY_SPEC_PROCESS_KEYRING);
	if (pipe(pipefd) || write(pipefd[1], secret, sizeof(secret)) != sizeof(secret))
		pipefd[0] = -1;
	child = child_page(&pfn, secret);
	/* Freed memory with the secret in it, before the VMs run. */
	efd = eventfd(0, EFD_NONBLOCK);
	frees = efd >= 0 ? free_and_plant(&a, efd) : 0;

	pthread_create(&ta, NULL, run_vm, &a);
	pthread_create(&tb, NULL, run_vm, &b);
	/* Both VMs ran once, so their tasks are mapped, and loop now. */
	for (i = 0; i < 10000 && __atomic_load_n(&started, __ATOMIC_SEQ_CST) < 2; i++)
		usleep(1000);

	fd = open(ISO_DIR "/check", O_RDWR);
	len = -1;
	if (fd >= 0) {
		snprintf(buf, sizeof(buf), "pfn %lx", pfn);
		if (pfn && write(fd, buf, strlen(buf)) < 0)
			pfn = 0;
		planted = !write_needle(fd, "secret", secret, sizeof(secret)) &&
			  !write_needle(fd, "control", control, sizeof(control));
		len = pread(fd, buf, sizeof(buf) - 1, 0);
		close(fd);
	}
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	/* The vCPUs hold their exited tasks, mapped, until the VMs go. */
	fd = open(ISO_DIR "/check", O_RDONLY);
	if (fd >= 0) {
		len_after = pread(fd, after, sizeof(after) - 1, 0);
		close(fd);
	}
	freed_control = efd >= 0 && freed_control_found(&a, efd);
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	if (len <= 0)
		ktap_skip_all("no " ISO_DIR "/check");
	buf[len] = 0;
	after[len_after > 0 ? len_after : 0] = 0;

	/*
	 * Two VMs, each: the other VM, stray pages, shared pages (three
	 * lines), stale pages, writable pages, hard-IRQ stacks, debug stores,
	 * other CPUs' entry areas, other tasks, user FPU state, the other
	 * process's page, the secret, the objects KVM freed, the control.
	 * After the threads exited, the secret and user FPU state again.  Then
	 * the freed objects and the freed control.
	 */
	n = count_results(buf, NULL);
	n_after = count_results(after, AFTER_EXIT);
	landed = secret_in_freed(buf, landed_line, sizeof(landed_line));
	quarantine = kasan_quarantine();
	ktap_plan(n + n_after + 9);
	report_results(buf, NULL, "");
	report_results(after, AFTER_EXIT, "after_the_vcpu_threads_exited: ");
	ktap_diag("child page pfn %#lx", pfn);
	ktap_result(key >= 0, "secret_in_a_key");
	ktap_result(pipefd[0] >= 0, "secret_in_a_pipe");
	ktap_result(planted, "secret_and_control_given_to_the_check");
	ktap_diag("%d objects of VM a freed, %d keys planted", frees, freed_keys);
	ktap_result(frees == 4 * FREED_ROUNDS &&
		    freed_keys == 4 * FREED_ROUNDS * FREED_KEYS + FREED_CONTROL_KEYS,
		    "vm_objects_freed_and_the_secret_planted_after_each");
	/* The plant must have landed: else "no VM maps it" proves nothing. */
	ktap_diag("freed objects: %s", landed_line);
	if (quarantine)
		ktap_skip("secret_found_in_objects_kvm_freed (KASAN's quarantine holds freed objects back)");
	else
		ktap_result(landed > 0, "secret_found_in_objects_kvm_freed");
	ktap_diag("freed control: %s", freed_control_line);
	if (quarantine)
		ktap_skip("freed_control_secret_found_in_a_freed_bus_left_mapped (KASAN's quarantine holds freed objects back)");
	else
		ktap_result(freed_control, "freed_control_secret_found_in_a_freed_bus_left_mapped");
	ktap_result(started == 2, "both_vms_ran_before_the_check");
	ktap_result(a.vcpu[0].run->exit_reason == KVM_EXIT_IO && a.vcpu[0].run->io.port == 0xe0 &&
		    b.vcpu[0].run->exit_reason == KVM_EXIT_IO && b.vcpu[0].run->io.port == 0xe0,
		    "vms_ran_to_the_end");
	ktap_result(n == (pfn ? 32 : 30) && n_after == 4, "all_checks_reported");
	guest_destroy(&a);
	guest_destroy(&b);
	return ktap_exit_code();
}
