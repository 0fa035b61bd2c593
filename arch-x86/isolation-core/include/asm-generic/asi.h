/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Address space isolation: what code outside arch/ may ask of it, on
 * architectures that do not have it (x86 has <asm/asi.h> of its own).
 */
#ifndef __ASM_GENERIC_ASI_H
#define __ASM_GENERIC_ASI_H

#include <linux/types.h>

/* Objects isolation would map: nothing to lay out without it. */
static inline size_t asi_exclusive_size(size_t size)
{
	return size;
}

#endif /* __ASM_GENERIC_ASI_H */
