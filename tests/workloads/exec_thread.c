// SPDX-License-Identifier: GPL-2.0-only
/* A thread that is not the leader execs, TIMES times over: in execve it takes its leader's pid
 * (de_thread) and waits there for the other threads to die, a block it ends under a new pid.
 * Prints its pid once, at the start. Usage: tp_exec_thread TIMES */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char **args;
static int times;

static void *execer(void *arg)
{
	char n[16], *av[3] = {args[0], n, NULL};

	(void)arg;
	usleep(2000);
	snprintf(n, sizeof(n), "%d", times - 1);
	execv("/proc/self/exe", av);
	perror("tp_exec_thread: execv");
	exit(1);
}

int main(int argc, char **argv)
{
	pthread_t t;

	args = argv;
	times = argc > 1 ? atoi(argv[1]) : 10;
	if (argc < 3 && getenv("TP_EXEC_THREAD_CHILD") == NULL) {
		printf("%d\n", getpid());
		fflush(stdout);
		setenv("TP_EXEC_THREAD_CHILD", "1", 1);
	}
	if (times <= 0)
		return 0;
	if (pthread_create(&t, NULL, execer, NULL))
		return 1;
	for (;;)
		pause();
}
