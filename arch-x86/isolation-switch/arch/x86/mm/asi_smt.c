// SPDX-License-Identifier: GPL-2.0
/*
 * Address space isolation (ASI) on SMT cores.
 *
 * Sibling threads share the core's L1D and fill buffers: a thread that runs
 * guest code can sample what its sibling touches.  So a thread runs guest
 * code only while every sibling is on the same instance's restricted table
 * (ASI_SMT_IN, the same instance), or halted in the idle loop
 * (ASI_SMT_IDLE).  A thread that moves to full mappings -- it leaves
 * isolation, takes an NMI, #MC or #DB on the restricted table, or wakes
 * from idle -- first marks itself ASI_SMT_LEAVING, kicks each sibling that
 * is in guest mode with an IPI (its VM-exit ends guest mode) and waits
 * until none is, and only then runs host code (ASI_SMT_OUT).  A thread
 * about to enter guest mode (asi_guest_enter()) marks itself in guest mode
 * first, then reads its siblings' states: any other state makes it stay
 * out, and its user retries.  Each side writes, then reads the other's
 * word, with a full barrier between: at least one sees the other.
 *
 * A thread that stops running host code (it enters isolation, halts, or
 * returns from a trip) marks a trip on every sibling (asi_flush_trip()):
 * the host data now in the core's caches must be flushed before any of
 * its threads runs guest code again.
 *
 * The sibling handling is on when SMT is active at set-up, unless
 * asi_smt=off; without SMT it costs a patched-out branch.  What runs on an
 * idle sibling: only default_idle() halts as ASI_SMT_IDLE; an interrupt,
 * NMI, #MC or #DB that wakes it runs the handshake before its handler, and
 * every other idle routine, softirq and kernel thread runs as ASI_SMT_OUT,
 * which holds the siblings' guests.
 */

#define pr_fmt(fmt) "asi: " fmt

#include <linux/cpu.h>
#include <linux/cpuhotplug.h>
#include <linux/init.h>
#include <linux/percpu.h>
#include <linux/sched/smt.h>
#include <linux/smp.h>
#include <linux/topology.h>

#include <asm/asi.h>
#include <asm/msr.h>

#include "asi.h"

DEFINE_STATIC_KEY_FALSE(asi_smt_key);

/* asi_smt=off: the states are tracked (and checked), siblings not held. */
static bool asi_smt_stun __ro_after_init = true;

/* Spins a handshake waits for a sibling before it gives up and counts a timeout. */
#define ASI_SMT_SPINS	BIT(26)

static int __init asi_smt_parse(char *arg)
{
	if (!arg)
		return -EINVAL;
	if (!strcmp(arg, "off"))
		asi_smt_stun = false;
	else if (strcmp(arg, "stun"))
		return -EINVAL;
	return 0;
}
early_param("asi_smt", asi_smt_parse);

static enum cpuhp_state asi_smt_hp_state;

/* Note @cpu's sibling threads in its state. */
static void asi_smt_note_siblings(int cpu)
{
	struct asi_cpu *c = &per_cpu(asi_cpu, cpu);
	unsigned int n = 0;
	int s;

	for_each_cpu(s, topology_sibling_cpumask(cpu))
		if (s != cpu && n < ASI_MAX_SIBLINGS)
			WRITE_ONCE(c->siblings[n++], s);
	WRITE_ONCE(c->nr_siblings, n);
}

/* A CPU came or went: it and its siblings note who their siblings are. */
static int asi_smt_cpu_changed(unsigned int cpu)
{
	int s;

	asi_smt_note_siblings(cpu);
	for_each_cpu(s, topology_sibling_cpumask(cpu))
		asi_smt_note_siblings(s);
	return 0;
}

/**
 * asi_smt_setup() - turn the sibling handling on if SMT is active
 *
 * From asi_setup(), before the first instance is entered.  Every CPU
 * knows its siblings from here on, also one that never runs a guest: its
 * leaves and wake-ups hold the others.
 *
 * Return: 0, or a negative error when SMT is active and CPU hotplug could
 * not take the callback that keeps the sibling lists.
 */
int asi_smt_setup(void)
{
	int cpu, ret;

	/* States a previous set-up left: nothing runs isolated now. */
	for_each_possible_cpu(cpu) {
		WRITE_ONCE(per_cpu(asi_cpu, cpu).smt_state, ASI_SMT_OUT);
		WRITE_ONCE(per_cpu(asi_cpu, cpu).in_guest, ASI_GUEST_NO);
		per_cpu(asi_cpu, cpu).smt_held_since = 0;
	}
	if (!sched_smt_active()) {
		pr_info("SMT: not active, no sibling handling\n");
		return 0;
	}
	cpus_read_lock();
	for_each_online_cpu(cpu)
		asi_smt_note_siblings(cpu);
	ret = cpuhp_setup_state_nocalls_cpuslocked(CPUHP_AP_ONLINE_DYN, "x86/asi:smt",
						   asi_smt_cpu_changed, asi_smt_cpu_changed);
	if (ret >= 0) {
		asi_smt_hp_state = ret;
		static_branch_enable_cpuslocked(&asi_smt_key);
	}
	cpus_read_unlock();
	if (ret < 0)
		return ret;
	if (asi_smt_stun)
		pr_info("SMT: a thread leaves isolation only once its siblings are out of guest mode\n");
	else
		pr_warn("SMT: siblings are not held (asi_smt=off): a guest may run beside host code\n");
	return 0;
}

/**
 * asi_smt_teardown() - turn the sibling handling off
 */
void asi_smt_teardown(void)
{
	static_branch_disable(&asi_smt_key);
	if (asi_smt_hp_state > 0)
		cpuhp_remove_state_nocalls(asi_smt_hp_state);
	asi_smt_hp_state = 0;
}

/* May a guest run beside sibling @s of the thread whose state is @c? */
static __always_inline bool asi_smt_safe(struct asi_cpu *c, unsigned int s)
{
	struct asi_cpu *o = &per_cpu(asi_cpu, s);
	u8 state = READ_ONCE(o->smt_state);

	return state == ASI_SMT_IDLE ||
	       (state == ASI_SMT_IN && READ_ONCE(o->smt_instance) == c->smt_instance);
}

/*
 * Wait until sibling @s is out of guest mode: one still trying backs off
 * when it sees us leaving, or enters, and one in guest mode is kicked.
 */
static noinstr void asi_smt_wait(struct asi_cpu *c, unsigned int s)
{
	unsigned long spins = 0;
	bool kicked = false;
	u8 mode;

	while ((mode = READ_ONCE(per_cpu(asi_cpu, s).in_guest)) != ASI_GUEST_NO) {
		if (mode == ASI_GUEST_YES && !kicked) {
			instrumentation_begin();
			/* Its VM-exit ends guest mode; the interrupt is the scheduler's no-op. */
			smp_send_reschedule(s);
			instrumentation_end();
			c->stats.smt_kicks++;
			kicked = true;
		}
		cpu_relax();
		if (++spins == ASI_SMT_SPINS) {
			c->stats.smt_timeouts++;
			break;
		}
	}
}

/**
 * __asi_smt_leave() - this thread moves to full mappings
 * @c: this CPU's state
 *
 * With interrupts off, before any host code runs: with sibling handling
 * on, no sibling is left in guest mode.  The siblings' flushes are marked
 * when the host code is done (__asi_smt_host_done()).
 */
noinstr void __asi_smt_leave(struct asi_cpu *c)
{
	unsigned int i, s;

	WRITE_ONCE(c->smt_state, ASI_SMT_LEAVING);
	/* Pairs with asi_guest_enter(): it sees us leaving, or we see it in guest mode. */
	smp_mb();
	for (i = 0; i < c->nr_siblings; i++) {
		s = c->siblings[i];
		if (asi_smt_stun)
			asi_smt_wait(c, s);
#ifdef CONFIG_ADDRESS_SPACE_ISOLATION_DEBUG
		/*
		 * The checker: no sibling runs guest code from here on.  One
		 * still trying sees us leaving, and backs off.
		 */
		if (READ_ONCE(per_cpu(asi_cpu, s).in_guest) == ASI_GUEST_YES)
			c->stats.smt_leave_violations++;
#endif
	}
	WRITE_ONCE(c->smt_state, ASI_SMT_OUT);
}

/**
 * __asi_smt_host_done() - this thread stops running host code
 * @c: this CPU's state
 * @state: what it runs now: ASI_SMT_IN, ASI_SMT_IDLE, or what a trip
 *	interrupted
 *
 * Marks a trip on every sibling, which flushes before its next guest
 * entry.  Not at the start of host code: a sibling could take that mark
 * with a flush in the window before it saw this thread leaving, then
 * enter guest mode again once the host code is done, with nothing
 * flushed.
 */
noinstr void __asi_smt_host_done(struct asi_cpu *c, u8 state)
{
	unsigned int i;

	for (i = 0; i < c->nr_siblings; i++)
		WRITE_ONCE(per_cpu(asi_trip, c->siblings[i]), true);
	/* The marks before the state: a sibling that sees it sees them. */
	smp_wmb();
	WRITE_ONCE(c->smt_state, state);
}

/**
 * asi_guest_enter() - may this thread run guest code now?
 *
 * Called by the user with interrupts off, on its restricted table, last
 * thing before it commits to entering guest mode, and paired with
 * asi_guest_exit() after it left guest mode.  Marks this thread in guest
 * mode, then reads the siblings' states.
 *
 * Return: true to enter; false when a sibling runs host code or another
 * instance: the thread is not in guest mode, and its user tries again
 * later (KVM: as for a pending request).
 */
bool asi_guest_enter(void)
{
	struct asi_cpu *c = this_cpu_ptr(&asi_cpu);
	unsigned int i;

	if (!static_branch_unlikely(&asi_smt_key) || !c->cr3)
		return true;
	WRITE_ONCE(c->in_guest, ASI_GUEST_TRYING);
	/* Pairs with __asi_smt_leave(): it sees us trying, or we see it leaving. */
	smp_mb();
	for (i = 0; asi_smt_stun && i < c->nr_siblings; i++) {
		if (!asi_smt_safe(c, c->siblings[i])) {
			WRITE_ONCE(c->in_guest, ASI_GUEST_NO);
			c->stats.smt_holds++;
			if (!c->smt_held_since)
				c->smt_held_since = rdtsc();
			return false;
		}
	}
	WRITE_ONCE(c->in_guest, ASI_GUEST_YES);
	if (c->smt_held_since) {
		c->stats.smt_held_cycles += rdtsc() - c->smt_held_since;
		c->smt_held_since = 0;
	}
	return true;
}
EXPORT_SYMBOL_NS_GPL(asi_guest_enter, ASI);

/**
 * asi_guest_exit() - this thread left guest mode
 */
void asi_guest_exit(void)
{
	if (static_branch_unlikely(&asi_smt_key))
		WRITE_ONCE(this_cpu_ptr(&asi_cpu)->in_guest, ASI_GUEST_NO);
}
EXPORT_SYMBOL_NS_GPL(asi_guest_exit, ASI);

#ifdef CONFIG_ADDRESS_SPACE_ISOLATION_DEBUG
/**
 * asi_smt_check_entry() - the checker, at the last point before guest mode
 * @c: this CPU's state
 *
 * A sibling that runs host code (ASI_SMT_OUT: past its handshake) or
 * another instance's exits while this thread is about to run guest code
 * is a violation of the rule above, and is counted.  A sibling that is
 * leaving waits for this thread's VM-exit.
 */
void asi_smt_check_entry(struct asi_cpu *c)
{
	struct asi_cpu *o;
	unsigned int i;
	u8 state;

	if (!static_branch_unlikely(&asi_smt_key) || !c->cr3 ||
	    READ_ONCE(c->in_guest) != ASI_GUEST_YES)
		return;
	c->stats.smt_checks++;
	for (i = 0; i < c->nr_siblings; i++) {
		o = &per_cpu(asi_cpu, c->siblings[i]);
		state = READ_ONCE(o->smt_state);
		if (state == ASI_SMT_OUT ||
		    (state == ASI_SMT_IN && READ_ONCE(o->smt_instance) != c->smt_instance))
			c->stats.smt_violations++;
	}
}
#endif

/**
 * asi_idle_enter() - this thread halts in the idle loop
 *
 * From default_idle(), interrupts off, right before the halt: until an
 * interrupt wakes it, it touches nothing.
 */
noinstr void asi_idle_enter(void)
{
	if (static_branch_unlikely(&asi_smt_key))
		__asi_smt_host_done(this_cpu_ptr(&asi_cpu), ASI_SMT_IDLE);
}

/**
 * asi_idle_exit() - this thread is back from the halt
 *
 * An interrupt that woke it ran the handshake already (asi_interrupt());
 * a wake-up without one runs it here.
 */
noinstr void asi_idle_exit(void)
{
	unsigned long flags;

	if (!static_branch_unlikely(&asi_smt_key))
		return;
	flags = arch_local_irq_save();
	if (this_cpu_read(asi_cpu.smt_state) == ASI_SMT_IDLE)
		__asi_smt_leave(this_cpu_ptr(&asi_cpu));
	arch_local_irq_restore(flags);
}
