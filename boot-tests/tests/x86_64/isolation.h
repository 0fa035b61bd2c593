/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Reading KVM isolation's debugfs files and the kernel command line from
 * the in-guest tests.
 */
#ifndef ASI_ISOLATION_H
#define ASI_ISOLATION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ISO_DIR "/sys/kernel/debug/kvm/isolation"

/* The "name value" lines of the stats file; -1 when missing. */
struct iso_stats {
	char text[4096];
};

bool iso_read_stats(struct iso_stats *s);
int64_t iso_stat(const struct iso_stats *s, const char *name);
/* How much @name moved from @from to @to. */
int64_t iso_stat_delta(const struct iso_stats *from, const struct iso_stats *to,
		       const char *name);
/* The sum of the values whose names start with @prefix. */
int64_t iso_stat_sum(const struct iso_stats *s, const char *prefix);
bool iso_reset_stats(void);
/*
 * Make each CPU's next @n isolated VM-entries read a page no VM maps (the
 * kernel's test canary; needs its KUnit tests built); 0 disarms.
 */
bool iso_arm_canary(unsigned int n);
/*
 * Make every CPU act as if its PMU wrote its debug store (PEBS, BTS), which
 * keeps it out of isolation (test kernels); false stops.
 */
bool iso_ds_control(bool on);
/* Entries in the fault log; -1 if it cannot be read.  Prints them as diagnostics. */
int iso_fault_sites(void);
/* Was @param=@value given on the kernel command line? */
bool cmdline_has(const char *param);
/* The value of @name=... on the kernel command line, into @out. */
bool cmdline_value(const char *name, char *out, size_t len);
/* Does /proc/cpuinfo list @flag? */
bool cpu_has_flag(const char *flag);
/* Are CPUs 0 and 1 the two threads of one core?  @list: CPU 0's siblings. */
bool cpus_0_1_siblings(char *list, size_t len);
/*
 * Are CPUs 0 and 1 siblings that isolation keeps out of guest mode while
 * the other runs host code (asi_smt not off)?  @list: CPU 0's siblings.
 */
bool cpus_0_1_stunned(char *list, size_t len);
/*
 * No /dev/kvm: the whole test is a skip on a CPU without VMX or SVM, and a
 * failure on one with them (KVM failed to initialise).  Does not return.
 */
void __attribute__((noreturn)) kvm_missing(void);
/* Run the calling thread on @cpu only, or on every CPU when @cpu is -1. */
void iso_pin_to_cpu(int cpu);
/* Is isolation expected to be on: asked for, and PTI not turned off. */
bool iso_expected(void);

#endif
