// SPDX-License-Identifier: GPL-2.0-only
/* Known answer: most of its CPU time is in the kernel, reading /dev/zero (read_zero, vfs_read).
 * The syscall instruction is issued from syscall_loop itself, not through libc's frameless
 * wrapper, so the frame-pointer user stack starts in syscall_loop. Usage: tp_syscalls [SECONDS] */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "workload.h"

static inline long raw_read(int fd, void *buf, unsigned long len)
{
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "0"(0L /* __NR_read */), "D"((long)fd), "S"(buf), "d"(len)
			 : "rcx", "r11", "memory");
	return ret;
}

__attribute__((noinline)) void syscall_loop(int fd, double seconds)
{
	static char buf[1 << 16];
	uint64_t end = now_ns() + (uint64_t)(seconds * 1e9);

	while (now_ns() < end)
		for (int i = 0; i < 16; i++)
			if (raw_read(fd, buf, sizeof(buf)) < 0)
				return;
}

int main(int argc, char **argv)
{
	int fd = open("/dev/zero", O_RDONLY);

	if (fd < 0) {
		perror("/dev/zero");
		return 1;
	}
	printf("%d\n", getpid());
	fflush(stdout);
	syscall_loop(fd, arg_seconds(argc, argv, 1, 3));
	return 0;
}
