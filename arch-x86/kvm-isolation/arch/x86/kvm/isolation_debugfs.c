// SPDX-License-Identifier: GPL-2.0
/*
 * KVM address space isolation: what a user can read in debugfs, under
 * /sys/kernel/debug/kvm/isolation/ (isolation_debug.c adds the debugging
 * aids):
 *
 *   stats   counters, one "name value" per line; writing 0 resets them
 *   faults  the isolation fault log: count, instruction, address, error code
 *   degraded  why isolation runs degraded on this kernel (lockdep, task
 *           structs not on pages of their own, 5-level paging: it tests
 *           isolation's paths, and is tainted), or "no"
 */

#include <linux/cpufeature.h>
#include <linux/debugfs.h>
#include <linux/math64.h>
#include <linux/seq_file.h>
#include <linux/slab.h>

#include <asm/asi_debug.h>
#include <asm/tsc.h>

#include "isolation.h"

#define EM(cause, name)		{ cause, name },
#define EMe(cause, name)	{ cause, name }

static const struct {
	enum kvm_isolation_exit_reason cause;
	const char *name;
} iso_exit_names[] = {
	KVM_ISOLATION_EXIT_REASONS
};

#undef EM
#undef EMe

static_assert(ARRAY_SIZE(iso_exit_names) == KVM_ISOLATION_NR_EXIT_REASONS);

static int iso_stats_show(struct seq_file *m, void *v)
{
	struct kvm_x86_isolation_stats k;
	struct asi_stats s;
	int i;

	asi_get_stats(&s);
	kvm_x86_isolation_get_stats(&k);
	seq_printf(m, "enabled %d\n", asi_enabled());
	seq_printf(m, "degraded %d\n", !!asi_degraded());
	seq_printf(m, "enters %llu\n", s.enters);
	/* KVM's reasons, then the layer's own: every exit once. */
	for (i = 0; i < ARRAY_SIZE(iso_exit_names); i++)
		seq_printf(m, "exits_%s %llu\n", iso_exit_names[i].name,
			   k.exits[iso_exit_names[i].cause]);
	seq_printf(m, "exits_interrupt %llu\n", s.interrupt_exits);
	seq_printf(m, "exits_fault %llu\n", s.fault_exits);
	seq_printf(m, "faults %llu\n", s.faults);
	seq_printf(m, "vmexits_inside %llu\n", k.vmexits_inside);
	seq_printf(m, "vmexits_outside %llu\n", k.vmexits_outside);
	/* What a trip asks for here, the trips, and what was done for them. */
	seq_printf(m, "trip_flushes_l1d %d\n", !!(asi_trip_flushes() & ASI_TRIP_FLUSH_L1D));
	seq_printf(m, "trip_flushes_verw %d\n", !!(asi_trip_flushes() & ASI_TRIP_FLUSH_VERW));
	seq_printf(m, "vmexit_ibpb %d\n", cpu_feature_enabled(X86_FEATURE_IBPB_ON_VMEXIT));
	seq_printf(m, "trip_ibpb %d\n", !!(asi_trip_flushes() & ASI_TRIP_IBPB));
	seq_printf(m, "trips %llu\n", s.trips);
	seq_printf(m, "trips_flushed %llu\n", s.trips_flushed);
	seq_printf(m, "flush_l1d_msr %llu\n", s.flush_l1d_msr);
	seq_printf(m, "flush_l1d_sw %llu\n", s.flush_l1d_sw);
	seq_printf(m, "flush_verw %llu\n", s.flush_verw);
	seq_printf(m, "ibpb_deferred %llu\n", s.ibpb_deferred);
	seq_printf(m, "flush_ibpb %llu\n", s.flush_ibpb);
	seq_printf(m, "paranoid_trips %llu\n", s.paranoid_trips);
	seq_printf(m, "paranoid_flushed %llu\n", s.paranoid_flushed);
	seq_printf(m, "tlb_flushes %llu\n", s.tlb_flushes);
	seq_printf(m, "flush_ipis %llu\n", s.flush_ipis);
#ifdef CONFIG_ADDRESS_SPACE_ISOLATION_DEBUG
	seq_printf(m, "canary_faults %llu\n", s.canary_faults);
	seq_printf(m, "cr3_checks %llu\n", s.cr3_checks);
	seq_printf(m, "cr3_mismatches %llu\n", s.cr3_mismatches);
	seq_printf(m, "ibpb_missed %llu\n", s.ibpb_missed);
#endif
	seq_printf(m, "unexpected %llu\n", s.unexpected);
	seq_printf(m, "ds_holds %llu\n", s.ds_holds);
	seq_printf(m, "smt_holds %llu\n", s.smt_holds);
	/* tsc_khz cycles per millisecond */
	seq_printf(m, "smt_held_us %llu\n", div_u64(s.smt_held_cycles * 1000, tsc_khz ?: 1));
	seq_printf(m, "smt_kicks %llu\n", s.smt_kicks);
	seq_printf(m, "smt_timeouts %llu\n", s.smt_timeouts);
#ifdef CONFIG_ADDRESS_SPACE_ISOLATION_DEBUG
	seq_printf(m, "smt_checks %llu\n", s.smt_checks);
	seq_printf(m, "smt_violations %llu\n", s.smt_violations);
	seq_printf(m, "smt_leave_violations %llu\n", s.smt_leave_violations);
#endif
	seq_printf(m, "pagetable_pages %lu\n", asi_pgtable_pages());
#ifdef CONFIG_ADDRESS_SPACE_ISOLATION_DEBUG
	asi_show_summary(m);
#endif
	return 0;
}

static int iso_stats_open(struct inode *inode, struct file *file)
{
	return single_open(file, iso_stats_show, NULL);
}

static ssize_t iso_stats_write(struct file *file, const char __user *buf, size_t len,
			       loff_t *ppos)
{
	unsigned long val;
	int ret = kstrtoul_from_user(buf, len, 0, &val);

	if (ret)
		return ret;
	if (val)
		return -EINVAL;
	kvm_x86_isolation_reset_stats();
	return len;
}

static const struct file_operations iso_stats_fops = {
	.owner = THIS_MODULE,
	.open = iso_stats_open,
	.read = seq_read,
	.write = iso_stats_write,
	.llseek = seq_lseek,
	.release = single_release,
};

static int iso_faults_show(struct seq_file *m, void *v)
{
	struct asi_fault_site *log;
	unsigned int i, n;

	log = kmalloc_array(ASI_FAULT_SITES, sizeof(*log), GFP_KERNEL);
	if (!log)
		return -ENOMEM;
	n = asi_fault_log(log);
	seq_puts(m, "# count instruction address error_code\n");
	for (i = 0; i < n; i++)
		seq_printf(m, "%llu %pS %#lx %#lx\n", log[i].count, (void *)log[i].ip,
			   log[i].address, log[i].error_code);
	kfree(log);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(iso_faults);

static int iso_degraded_show(struct seq_file *m, void *v)
{
	seq_printf(m, "%s\n", asi_degraded() ?: "no");
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(iso_degraded);

/**
 * kvm_x86_isolation_debugfs_init() - create the isolation files in debugfs
 * @parent: KVM's debugfs directory; the files go away with it
 *
 * Return: the isolation directory, for KVM's other files.
 */
struct dentry *kvm_x86_isolation_debugfs_init(struct dentry *parent)
{
	struct dentry *dir = debugfs_create_dir("isolation", parent);

	debugfs_create_file("stats", 0644, dir, NULL, &iso_stats_fops);
	debugfs_create_file("faults", 0444, dir, NULL, &iso_faults_fops);
	debugfs_create_file("degraded", 0444, dir, NULL, &iso_degraded_fops);
	return dir;
}
