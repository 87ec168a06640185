// SPDX-License-Identifier: GPL-2.0-only
/* Known answer for signal frames: interrupted() raises SIGUSR1, whose handler spins in
 * handler_spin; the stack is handler_spin <- on_signal <- __restore_rt (libc's signal
 * trampoline) <- libc's raise <- interrupted <- main. Built without frame pointers, so only
 * the table unwinder, following the kernel's signal frame, gets past the trampoline. Spins
 * 0.5 s in warm_up first. Usage: tp_signal SECONDS */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "workload.h"

static double spin_seconds = 2;

__attribute__((noinline)) void handler_spin(double seconds)
{
	BURN_NS((uint64_t)(seconds * 1e9));
}

__attribute__((noinline)) void on_signal(int sig)
{
	handler_spin(spin_seconds);
}

/* Before the signal: the unwinder has the process's tables by the time the handler runs. */
__attribute__((noinline)) void warm_up(void)
{
	BURN_NS(500000000);
}

__attribute__((noinline)) int interrupted(void)
{
	volatile int after = raise(SIGUSR1);

	return after; /* work after the call: no tail call */
}

int main(int argc, char **argv)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGUSR1, &sa, NULL);
	spin_seconds = arg_seconds(argc, argv, 1, 2);
	printf("%d\n", getpid());
	fflush(stdout);
	warm_up();
	return interrupted();
}
