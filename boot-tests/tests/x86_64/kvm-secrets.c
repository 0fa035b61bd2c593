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
 * pages, which every VM must map.  Every "ok"/"not ok" line it prints is
 * a KTAP case, every "# " line a diagnostic.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/keyctl.h>

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

static int started;

static void *run_vm(void *arg)
{
	struct guest *g = arg;

	if (guest_run(g, 0) == 0)
		__atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST);
	guest_run(g, 0);
	return NULL;
}

#define SECRET_LEN	32

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
	uint8_t secret[SECRET_LEN], control[SECRET_LEN];
	char buf[65536], *line, *save, *c;
	int fd, n = 0, ok, pipefd[2], planted = 0, i;
	long key = -1;
	struct guest a, b;
	pthread_t ta, tb;
	unsigned long pfn;
	ssize_t len;
	pid_t child;

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
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	if (len <= 0)
		ktap_skip_all("no " ISO_DIR "/check");
	buf[len] = 0;

	/*
	 * Two VMs, each: the other VM, stray pages, shared pages (three
	 * lines), stale pages, writable pages, hard-IRQ stacks, other tasks,
	 * the other process's page, the secret, the control.
	 */
	for (line = buf; *line; line = strchr(line, '\n') + 1) {
		if (strncmp(line, "# ", 2))
			n++;
		if (!strchr(line, '\n'))
			break;
	}
	ktap_plan(n + 6);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, "# ", 2)) {
			report_finding(line);
			continue;
		}
		ok = !strncmp(line, "ok ", 3);
		line += ok ? 3 : 7;
		/* VM names hold a '#', which KTAP reads as a directive. */
		for (c = line; (c = strchr(c, '#')); )
			*c = '.';
		ktap_result(ok, "%s", line);
	}
	ktap_diag("child page pfn %#lx", pfn);
	ktap_result(key >= 0, "secret_in_a_key");
	ktap_result(pipefd[0] >= 0, "secret_in_a_pipe");
	ktap_result(planted, "secret_and_control_given_to_the_check");
	ktap_result(started == 2, "both_vms_ran_before_the_check");
	ktap_result(a.vcpu[0].run->exit_reason == KVM_EXIT_IO && a.vcpu[0].run->io.port == 0xe0 &&
		    b.vcpu[0].run->exit_reason == KVM_EXIT_IO && b.vcpu[0].run->io.port == 0xe0,
		    "vms_ran_to_the_end");
	ktap_result(n == (pfn ? 24 : 22), "all_checks_reported");
	guest_destroy(&a);
	guest_destroy(&b);
	return ktap_exit_code();
}
