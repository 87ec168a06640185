/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The log-linear latency bucket scheme, pure C: used by the BPF stage programs and by tailprofd.
 *
 * Scheme (HdrHistogram-like, 2^TP_HIST_SUB_BITS = 32 sub-buckets per power of two):
 *   v < 64 ns:            bucket = v (exact, width 1)
 *   2^e <= v < 2^(e+1):   bucket = (e - 5) * 32 + (v >> (e - 5)),  e = 6 .. TP_HIST_MAX_LOG2
 *   v >= 2^(TP_HIST_MAX_LOG2 + 1) (about 2.4 h): the last bucket, TP_HIST_OVERFLOW
 * A bucket covers [lower, lower + width) with width = 2^(e-5) <= lower / 32. Reporting its
 * midpoint, lower + width / 2, is off from any value inside by at most width / 2, so the
 * relative error is at most 1/64 = 1.6% (bound: 3%). Values in the overflow bucket are reported
 * as the largest value seen (tracked exactly beside the buckets). */
#ifndef TAILPROF_TP_HIST_H
#define TAILPROF_TP_HIST_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define TP_HIST_SUB_BITS 5
#define TP_HIST_SUB	 (1u << TP_HIST_SUB_BITS)
#define TP_HIST_MAX_LOG2 42
/* buckets 0 .. 63 are exact, then 32 per power of two from 2^6 to 2^42, then the overflow */
#define TP_HIST_OVERFLOW ((TP_HIST_MAX_LOG2 - TP_HIST_SUB_BITS) * TP_HIST_SUB + 2 * TP_HIST_SUB)
#define TP_HIST_BUCKETS	 (TP_HIST_OVERFLOW + 1)

/* floor(log2(v)) for v >= 1, without loops (BPF) or builtins (host and BPF alike). */
static inline __u32 tp_hist_log2(__u64 v)
{
	__u32 r = 0, s;

	s = (v > 0xffffffffULL) << 5;
	v >>= s;
	r |= s;
	s = (v > 0xffff) << 4;
	v >>= s;
	r |= s;
	s = (v > 0xff) << 3;
	v >>= s;
	r |= s;
	s = (v > 0xf) << 2;
	v >>= s;
	r |= s;
	s = (v > 0x3) << 1;
	v >>= s;
	r |= s;
	r |= (__u32)(v >> 1);
	return r;
}

/* The bucket of a duration in ns, 0 .. TP_HIST_OVERFLOW. */
static inline __u32 tp_hist_bucket(__u64 v)
{
	__u32 e;

	if (v < 2 * TP_HIST_SUB)
		return (__u32)v;
	e = tp_hist_log2(v);
	if (e > TP_HIST_MAX_LOG2)
		return TP_HIST_OVERFLOW;
	return (e - TP_HIST_SUB_BITS) * TP_HIST_SUB + (__u32)(v >> (e - TP_HIST_SUB_BITS));
}

/* The smallest value in bucket b (b < TP_HIST_OVERFLOW). */
static inline __u64 tp_hist_lower(__u32 b)
{
	__u32 e;

	if (b < 2 * TP_HIST_SUB)
		return b;
	e = b / TP_HIST_SUB + TP_HIST_SUB_BITS - 1;
	return (__u64)(b % TP_HIST_SUB + TP_HIST_SUB) << (e - TP_HIST_SUB_BITS);
}

/* The width of bucket b (b < TP_HIST_OVERFLOW): values lower .. lower + width - 1. */
static inline __u64 tp_hist_width(__u32 b)
{
	if (b < 2 * TP_HIST_SUB)
		return 1;
	return 1ULL << (b / TP_HIST_SUB - 1);
}

/* The value reported for bucket b: its midpoint (exact for the width-1 buckets). */
static inline __u64 tp_hist_value(__u32 b)
{
	return tp_hist_lower(b) + tp_hist_width(b) / 2;
}

#endif
