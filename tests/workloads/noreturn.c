// SPDX-License-Identifier: GPL-2.0-only
/* Known answer for caller frames whose return address is not in their function: enter_spin's
 * last instruction is its call of spin_then_exit, which never returns, so the return address
 * on the stack is the first byte after enter_spin (padding, or the next function). Callers are
 * named by the byte before their return address, as addr2line and perf do: main -> enter_spin
 * -> spin_then_exit. Usage: tp_noreturn [SECONDS] */
#include <stdio.h>
#include <unistd.h>

#include "workload.h"

static double seconds;

__attribute__((noinline, noreturn)) void spin_then_exit(void)
{
	uint64_t end = now_ns() + (uint64_t)(seconds * 1e9);
	volatile uint64_t x = 0;

	while (now_ns() < end)
		x++;
	_exit(0);
}

__attribute__((noinline, noreturn)) void enter_spin(void)
{
	spin_then_exit();
}

/* placed after enter_spin by the compiler: the function a lookup of the return address finds */
__attribute__((noinline)) int right_after(int v)
{
	return v * 3 + 1;
}

int main(int argc, char **argv)
{
	seconds = arg_seconds(argc, argv, 1, 2);
	printf("%d\n", getpid());
	fflush(stdout);
	if (argc > 5)
		return right_after(argc);
	enter_spin();
}
