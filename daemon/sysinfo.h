/* SPDX-License-Identifier: GPL-2.0-only */
/* Facts about this host and this process: host name, kernel release, online CPUs, own memory and
 * CPU time, clocks. */
#ifndef TAILPROF_SYSINFO_H
#define TAILPROF_SYSINFO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/sysmacros.h>

/* Parses a kernel CPU list ("0-3,8,10-11") into mask[0..n): 1 for listed CPUs. Returns the number
 * of CPUs listed, or -EINVAL for a malformed list. CPUs >= n are ignored. */
int sysinfo__parse_cpu_list(const char *list, uint8_t *mask, size_t n);
/* Reads /sys/devices/system/cpu/online into mask (see parse_cpu_list). Keeps the file open between
 * calls: for one thread at a time (the loader, then the drain). Returns as parse_cpu_list, or
 * -errno. */
int sysinfo__online_cpus(uint8_t *mask, size_t n);
/* Host name and kernel release (uname), never NULL. */
const char *sysinfo__hostname(void);
const char *sysinfo__kernel_release(void);
/* Resident set size of this process in bytes (/proc/self/statm), 0 when unknown. */
uint64_t sysinfo__rss_bytes(void);
/* User + system CPU time of this process in ns (getrusage). */
uint64_t sysinfo__cpu_ns(void);
/* CLOCK_MONOTONIC and CLOCK_REALTIME now, in ns. CLOCK_REALTIME has the test offset added
 * (sysinfo__test_clock_refresh). */
uint64_t sysinfo__mono_ns(void);
/* CLOCK_BOOTTIME now, in ns: the clock of a task's start_boottime (tp_event_hdr.start_ns). */
uint64_t sysinfo__boot_ns(void);
int64_t sysinfo__real_ns(void);
/* CLOCK_REALTIME - CLOCK_MONOTONIC in ns (what turns a monotonic time into a Unix one): the
 * realtime read bracketed by two monotonic reads, against their midpoint, the tightest of three
 * tries, so that a thread preempted between two reads (tens of ms on a busy or emulated host)
 * does not put its wait into every window's wall-clock time. */
int64_t sysinfo__wall_offset_ns(void);
/* Test-only: when TAILPROF_TEST_REALTIME_OFFSET_FILE names a file, reads a signed integer from it
 * (ns; missing, empty or unparsable: 0) and adds it to CLOCK_REALTIME from now on, as a wall-clock
 * step would. Called at each drain. Without the variable, does nothing. */
void sysinfo__test_clock_refresh(void);

/* dev (makedev() form, as stat() and /proc/PID/maps give it) as the kernel's dev_t, as BPF reads
 * it (super_block.s_dev): major << 20 | minor (MINORBITS, include/linux/kdev_t.h). */
static inline uint32_t sysinfo__kernel_dev(uint64_t dev)
{
	return (uint32_t)(major(dev) << 20 | minor(dev));
}

/* The kernel's dev_t kdev (as BPF reads it) in makedev() form: sysinfo__kernel_dev's inverse. */
static inline uint64_t sysinfo__dev_of_kernel(uint32_t kdev)
{
	return makedev(kdev >> 20, kdev & 0xfffff);
}

#endif
