// SPDX-License-Identifier: GPL-2.0-only
/* Dropping the capabilities that only start-up needs (capget/capset directly: two system calls
 * do not need libcap). */
#include <errno.h>
#include <linux/capability.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "caps.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif
#ifndef CAP_CHECKPOINT_RESTORE
#define CAP_CHECKPOINT_RESTORE 40
#endif

#define BIT(cap) (1ULL << (cap))

static const char *const cap_names[] = {
    "cap_chown",
    "cap_dac_override",
    "cap_dac_read_search",
    "cap_fowner",
    "cap_fsetid",
    "cap_kill",
    "cap_setgid",
    "cap_setuid",
    "cap_setpcap",
    "cap_linux_immutable",
    "cap_net_bind_service",
    "cap_net_broadcast",
    "cap_net_admin",
    "cap_net_raw",
    "cap_ipc_lock",
    "cap_ipc_owner",
    "cap_sys_module",
    "cap_sys_rawio",
    "cap_sys_chroot",
    "cap_sys_ptrace",
    "cap_sys_pacct",
    "cap_sys_admin",
    "cap_sys_boot",
    "cap_sys_nice",
    "cap_sys_resource",
    "cap_sys_time",
    "cap_sys_tty_config",
    "cap_mknod",
    "cap_lease",
    "cap_audit_write",
    "cap_audit_control",
    "cap_setfcap",
    "cap_mac_override",
    "cap_mac_admin",
    "cap_syslog",
    "cap_wake_alarm",
    "cap_block_suspend",
    "cap_audit_read",
    "cap_perfmon",
    "cap_bpf",
    "cap_checkpoint_restore",
};

uint64_t caps__keep_mask(int last_cap)
{
	/* other processes' maps, memory (Python frames) and /proc/PID/root files; any file of
	 * any owner for symbols and unwind tables; kernel addresses in /proc/kallsyms */
	uint64_t keep = BIT(CAP_SYS_PTRACE) | BIT(CAP_DAC_READ_SEARCH) | BIT(CAP_SYSLOG);

	if (last_cap >= CAP_BPF)
		/* uprobes attached at run time: GC discovery, stage reloads, dlopen'ed libraries */
		keep |= BIT(CAP_BPF) | BIT(CAP_PERFMON);
	else
		keep |= BIT(CAP_SYS_ADMIN);
	if (last_cap >= CAP_CHECKPOINT_RESTORE)
		/* /proc/PID/map_files (Linux 5.9+: CAP_CHECKPOINT_RESTORE or CAP_SYS_ADMIN) */
		keep |= BIT(CAP_CHECKPOINT_RESTORE);
	else
		keep |= BIT(CAP_SYS_ADMIN);
	return keep;
}

void caps__names(uint64_t mask, char *buf, size_t len)
{
	size_t off = 0;

	if (len)
		buf[0] = '\0';
	for (int cap = 0; cap < 64 && off < len; cap++) {
		int n;

		if (!(mask & BIT(cap)))
			continue;
		if (cap < (int)(sizeof(cap_names) / sizeof(cap_names[0])))
			n = snprintf(buf + off, len - off, "%s%s", off ? "," : "", cap_names[cap]);
		else
			n = snprintf(buf + off, len - off, "%scap_%d", off ? "," : "", cap);
		if (n < 0)
			break;
		off += (size_t)n;
	}
}

/* The non-negative integer in file path, or -1. */
static int read_int_file(const char *path)
{
	FILE *f = fopen(path, "re");
	int v = -1;

	if (f) {
		if (fscanf(f, "%d", &v) != 1 || v < 0)
			v = -1;
		fclose(f);
	}
	return v;
}

static int read_last_cap(void)
{
	int last = read_int_file("/proc/sys/kernel/cap_last_cap");

	/* unreadable: the oldest kernel tailprofd runs on (5.8: no CAP_CHECKPOINT_RESTORE) */
	return last >= 0 ? last : CAP_BPF;
}

static int set_caps(uint64_t keep)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2] = {};

	data[0].permitted = data[0].effective = (uint32_t)keep;
	data[1].permitted = data[1].effective = (uint32_t)(keep >> 32);
	/* nothing is executed: no capability is to be passed on */
	return syscall(SYS_capset, &hdr, data) ? -errno : 0;
}

/* On a thread of its own, since capabilities are per thread: with the set to keep, can a
 * uprobe be created through the perf uprobe PMU? Linux 5.8 let CAP_PERFMON do it; the fix for
 * Jann Horn's report (backported to the stable kernels) asks CAP_SYS_ADMIN again. The path is
 * "/", so where the capability check passes the kernel refuses the directory (EINVAL) and no
 * probe is made. */
static void *uprobe_probe_thread(void *arg)
{
	uint64_t *keep = arg;
	struct perf_event_attr attr = {.size = sizeof(attr)};
	int type = read_int_file("/sys/bus/event_source/devices/uprobe/type"), fd;

	if (type < 0 || set_caps(*keep)) {
		*keep |= BIT(CAP_SYS_ADMIN);
		return NULL;
	}
	attr.type = (uint32_t)type;
	attr.config1 = (uint64_t)(uintptr_t) "/";
	fd = (int)syscall(__NR_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd >= 0)
		close(fd);
	else if (errno == EACCES || errno == EPERM)
		*keep |= BIT(CAP_SYS_ADMIN);
	return NULL;
}

/* keep, with CAP_SYS_ADMIN when this kernel's uprobes need it (probes are attached at run
 * time: GC discovery, stage reloads, dlopen'ed libraries). */
static uint64_t with_uprobe_caps(uint64_t keep, uint64_t permitted)
{
	pthread_t t;

	if ((keep & BIT(CAP_SYS_ADMIN)) || !(permitted & BIT(CAP_SYS_ADMIN)))
		return keep;
	if (pthread_create(&t, NULL, uprobe_probe_thread, &keep))
		return keep | BIT(CAP_SYS_ADMIN);
	pthread_join(t, NULL);
	return keep;
}

int caps__drop_after_startup(char *names, size_t len)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2] = {};
	uint64_t permitted, keep;
	int err;

	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	permitted = data[0].permitted | ((uint64_t)data[1].permitted << 32);
	keep = with_uprobe_caps(caps__keep_mask(read_last_cap()) & permitted, permitted);
	err = set_caps(keep);
	if (err)
		return err;
	/* emptied by the inheritable set already; said explicitly (EINVAL before Linux 4.3) */
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	caps__names(keep, names, len);
	return 0;
}
