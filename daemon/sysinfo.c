// SPDX-License-Identifier: GPL-2.0-only
/* Host and process facts read from uname, /proc and /sys. */
#include "sysinfo.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

int sysinfo__parse_cpu_list(const char *p, uint8_t *mask, size_t n)
{
	int count = 0;

	memset(mask, 0, n);
	while (*p && *p != '\n') {
		char *end;
		unsigned long a = strtoul(p, &end, 10), b;

		if (end == p)
			return -EINVAL;
		b = a;
		p = end;
		if (*p == '-') {
			p++;
			b = strtoul(p, &end, 10);
			if (end == p || b < a)
				return -EINVAL;
			p = end;
		}
		for (unsigned long c = a; c <= b; c++) {
			if (c < n)
				mask[c] = 1;
			count++;
		}
		if (*p == ',')
			p++;
		else if (*p && *p != '\n')
			return -EINVAL;
	}
	return count;
}

int sysinfo__online_cpus(uint8_t *mask, size_t n)
{
	/* opened once and read again from offset 0 (sysfs makes the text anew at each read): the
	 * open's path walk was a quarter of an idle tailprofd's CPU time, at every drain */
	static int fd = -1;
	char buf[4096];
	ssize_t len;

	if (fd < 0)
		fd = open("/sys/devices/system/cpu/online", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	len = pread(fd, buf, sizeof(buf) - 1, 0);
	if (len <= 0) {
		int err = len < 0 ? -errno : -EIO;

		close(fd);
		fd = -1;
		return err;
	}
	buf[len] = 0;
	return sysinfo__parse_cpu_list(buf, mask, n);
}

static struct utsname *uts(void)
{
	static struct utsname u;
	static int done;

	if (!done) {
		if (uname(&u))
			strcpy(u.nodename, "unknown");
		done = 1;
	}
	return &u;
}

const char *sysinfo__hostname(void)
{
	return uts()->nodename;
}

const char *sysinfo__kernel_release(void)
{
	return uts()->release;
}

uint64_t sysinfo__rss_bytes(void)
{
	unsigned long size, resident = 0;
	FILE *f = fopen("/proc/self/statm", "re");

	if (!f)
		return 0;
	if (fscanf(f, "%lu %lu", &size, &resident) != 2)
		resident = 0;
	fclose(f);
	return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

uint64_t sysinfo__cpu_ns(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ULL +
	       (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ULL;
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

uint64_t sysinfo__mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

uint64_t sysinfo__boot_ns(void)
{
	return clock_ns(CLOCK_BOOTTIME);
}

/* the wall-clock step tests make (tests/integration/test_faults.py): 0 in a daemon run by people */
static int64_t test_real_offset_ns;

int64_t sysinfo__real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec +
	       __atomic_load_n(&test_real_offset_ns, __ATOMIC_RELAXED);
}

int64_t sysinfo__wall_offset_ns(void)
{
	uint64_t best = UINT64_MAX;
	int64_t offset = 0;

	for (int i = 0; i < 3; i++) {
		uint64_t m0 = sysinfo__mono_ns();
		int64_t real = sysinfo__real_ns();
		uint64_t m1 = sysinfo__mono_ns();

		if (m1 - m0 < best) {
			best = m1 - m0;
			offset = real - (int64_t)(m0 + (m1 - m0) / 2);
		}
	}
	return offset;
}

static const char *test_offset_path;

static void test_offset_path_init(void)
{
	test_offset_path = getenv("TAILPROF_TEST_REALTIME_OFFSET_FILE");
}

void sysinfo__test_clock_refresh(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	const char *path;
	long long v = 0;
	FILE *f;

	/* the environment is looked up once: a getenv at every drain was 1% of a busy daemon's CPU
	 * (the walk of a long environment) */
	pthread_once(&once, test_offset_path_init);
	path = test_offset_path;
	if (!path || !*path)
		return;
	f = fopen(path, "re");
	if (f) {
		if (fscanf(f, "%lld", &v) != 1)
			v = 0;
		fclose(f);
	}
	__atomic_store_n(&test_real_offset_ns, (int64_t)v, __ATOMIC_RELAXED);
}
