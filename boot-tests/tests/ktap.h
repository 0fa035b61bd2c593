/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Minimal KTAP output for the in-guest test programs, and the kselftest exit
 * codes the runner understands.
 */
#ifndef ASI_KTAP_H
#define ASI_KTAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#define KSFT_PASS 0
#define KSFT_FAIL 1
#define KSFT_SKIP 4

static int ktap_num, ktap_failed;

static inline void ktap_plan(int n)
{
	printf("KTAP version 1\n1..%d\n", n);
	fflush(stdout);
}

/* Report one case; returns @ok so callers can chain. */
static inline int __attribute__((format(printf, 2, 3)))
ktap_result(int ok, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d ", ok ? "" : "not ", ++ktap_num);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!ok)
		ktap_failed++;
	return ok;
}

static inline void __attribute__((format(printf, 1, 2)))
ktap_skip(const char *fmt, ...)
{
	va_list ap;

	printf("ok %d ", ++ktap_num);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf(" # SKIP\n");
	fflush(stdout);
}

/*
 * A case known to fail until @why is done: reported with its result and a
 * TODO directive, and not counted as a failure.
 */
static inline void __attribute__((format(printf, 3, 4)))
ktap_todo(int ok, const char *why, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d ", ok ? "" : "not ", ++ktap_num);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf(" # TODO %s\n", why);
	fflush(stdout);
}

static inline void __attribute__((format(printf, 1, 2)))
ktap_diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

/* The whole program is skipped: no plan was printed yet. */
static inline void __attribute__((noreturn, format(printf, 1, 2)))
ktap_skip_all(const char *fmt, ...)
{
	va_list ap;

	printf("KTAP version 1\n1..0 # SKIP ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	exit(KSFT_SKIP);
}

static inline int ktap_exit_code(void)
{
	return ktap_failed ? KSFT_FAIL : KSFT_PASS;
}

#endif
