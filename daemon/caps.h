/* SPDX-License-Identifier: GPL-2.0-only */
/* Capabilities after start-up: once the programs are loaded and attached and the BPF statistics
 * descriptor is held, tailprofd keeps only what run-time work needs (docs/deployment.md). */
#ifndef TAILPROF_CAPS_H
#define TAILPROF_CAPS_H

#include <stddef.h>
#include <stdint.h>

/* The capabilities tailprofd keeps on a kernel whose highest capability is last_cap (from
 * /proc/sys/kernel/cap_last_cap): CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH,
 * CAP_SYSLOG, and CAP_CHECKPOINT_RESTORE where the kernel has it, else CAP_SYS_ADMIN (what
 * /proc/PID/map_files needs there). A kernel without CAP_BPF or CAP_PERFMON keeps CAP_SYS_ADMIN. */
uint64_t caps__keep_mask(int last_cap);

/* Lowers the permitted and effective sets of the calling thread (call it before other threads
 * start: they inherit it) to caps__keep_mask() of the running kernel and what of it the process
 * has, plus CAP_SYS_ADMIN where this kernel's perf uprobe PMU asks it (probed), and empties the
 * inheritable and ambient sets. Writes the kept set as
 * "cap_bpf,cap_perfmon,..." into names. Returns 0 or -errno (nothing changed then). */
int caps__drop_after_startup(char *names, size_t len);

/* "cap_bpf,cap_perfmon,...": the names of mask's capabilities, lowest first. */
void caps__names(uint64_t mask, char *buf, size_t len);

#endif
