// SPDX-License-Identifier: GPL-2.0-only
/* Known answers for off-CPU time: a thread that sleeps in nap_here (nanosleep, 20 ms at a time),
 * one blocked reading a pipe in wait_pipe (a feeder writes every 10 ms), the main thread in
 * main -> g -> f -> sleep(), then joining the others, and an alternator that blocks in
 * block_here from wait_a (3 ms) and from wait_b (6 ms) in turn: the same registers at the same
 * syscall, only the return address in block_here's frame tells them apart (a stack cache must
 * see it), and a kreader that reads a pipe and a Unix socket in turn through one read_one (fed
 * every 4 ms by a kfeeder). Each measures its own blocked wall time. Prints its pid first, then at
 * the end one line per thread ("alt_a"/"alt_b", "kr_pipe"/"kr_sock" for the two that block two
 * ways): "NAME TID BLOCKED_NS". Usage: tp_offcpu [SECONDS [FIRST_MS]]: FIRST_MS (default 50)
 * is how long the main thread first waits in poll(), 50 ms at a time, for tailprofd to know the
 * process before the measured sleeps and the threads start. */
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "workload.h"

static double seconds;
static int pipefd[2];
static volatile int stop;

struct result {
	const char *name;
	pid_t tid;
	uint64_t blocked_ns;
};

static struct result nap_r = {"nap"}, pipe_r = {"pipe"}, sleep_r = {"sleep"}, alt_a = {"alt_a"},
		     alt_b = {"alt_b"}, kr_pipe = {"kr_pipe"}, kr_sock = {"kr_sock"};
static int kpipe[2], ksock[2];

__attribute__((noinline)) void nap_here(uint64_t ns)
{
	struct timespec ts = {0, (long)ns};
	uint64_t t0 = now_ns();

	nanosleep(&ts, NULL);
	nap_r.blocked_ns += now_ns() - t0;
}

static void *napper(void *arg)
{
	uint64_t end = now_ns() + (uint64_t)(seconds * 1e9);

	pthread_setname_np(pthread_self(), "napper");
	nap_r.tid = syscall(SYS_gettid);
	while (now_ns() < end)
		nap_here(20000000);
	return NULL;
}

__attribute__((noinline)) int wait_pipe(void)
{
	char c;
	uint64_t t0 = now_ns();
	ssize_t n = read(pipefd[0], &c, 1);

	pipe_r.blocked_ns += now_ns() - t0;
	return n == 1 && c != 'q';
}

static void *piper(void *arg)
{
	pthread_setname_np(pthread_self(), "piper");
	pipe_r.tid = syscall(SYS_gettid);
	while (wait_pipe())
		;
	return NULL;
}

static void *feeder(void *arg)
{
	struct timespec ts = {0, 10000000};

	pthread_setname_np(pthread_self(), "feeder");
	while (!stop) {
		nanosleep(&ts, NULL);
		if (write(pipefd[1], "x", 1) != 1)
			break;
	}
	return write(pipefd[1], "q", 1) == 1 ? NULL : NULL;
}

__attribute__((noinline)) void block_here(uint64_t ns)
{
	struct timespec ts = {0, (long)ns};

	nanosleep(&ts, NULL);
}

/* Two callers with the same frame: block_here's syscall sees the same stack pointer from both.
 * The empty asm after the call keeps it a call (not a tail jump). */
__attribute__((noinline)) void wait_a(void)
{
	uint64_t t0 = now_ns();

	block_here(3000000);
	alt_a.blocked_ns += now_ns() - t0;
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void wait_b(void)
{
	uint64_t t0 = now_ns();

	block_here(6000000);
	alt_b.blocked_ns += now_ns() - t0;
	__asm__ volatile("" ::: "memory");
}

static void *alternator(void *arg)
{
	uint64_t end = now_ns() + (uint64_t)(seconds * 1e9);

	pthread_setname_np(pthread_self(), "alternator");
	alt_a.tid = alt_b.tid = syscall(SYS_gettid);
	while (now_ns() < end) {
		wait_a();
		wait_b();
	}
	return NULL;
}

/* One read(2) call site for two kernel paths: a pipe (pipe_read) and a Unix socket
 * (unix_stream_read_generic): the same syscall and user stack, kernel stacks of their own. */
__attribute__((noinline)) int read_one(int fd, struct result *r)
{
	char c;
	uint64_t t0 = now_ns();
	ssize_t n = read(fd, &c, 1);

	r->blocked_ns += now_ns() - t0;
	return n == 1 && c != 'q';
}

static void *kreader(void *arg)
{
	pthread_setname_np(pthread_self(), "kreader");
	kr_pipe.tid = kr_sock.tid = syscall(SYS_gettid);
	while (read_one(kpipe[0], &kr_pipe) && read_one(ksock[0], &kr_sock))
		;
	return NULL;
}

static void *kfeeder(void *arg)
{
	struct timespec ts = {0, 4000000};

	pthread_setname_np(pthread_self(), "kfeeder");
	while (!stop) {
		nanosleep(&ts, NULL);
		if (write(kpipe[1], "x", 1) != 1)
			break;
		nanosleep(&ts, NULL);
		if (write(ksock[1], "x", 1) != 1)
			break;
	}
	return write(kpipe[1], "q", 1) == 1 && write(ksock[1], "q", 1) == 1 ? NULL : NULL;
}

__attribute__((noinline)) void f(void)
{
	uint64_t t0 = now_ns();

	sleep(1);
	sleep_r.blocked_ns += now_ns() - t0;
}

__attribute__((noinline)) void g(void)
{
	f();
}

int main(int argc, char **argv)
{
	pthread_t a, b, c, d, e, k;
	uint64_t end, t0;
	int first_ms;

	seconds = arg_seconds(argc, argv, 1, 3);
	first_ms = argc > 2 ? atoi(argv[2]) : 50;
	if (pipe(pipefd) || pipe(kpipe) || socketpair(AF_UNIX, SOCK_STREAM, 0, ksock))
		return 1;
	printf("%d\n", getpid());
	fflush(stdout);
	sleep_r.tid = getpid();
	/* first blocks, so that tailprofd knows the process (and walks its next blocks with
	 * unwind tables) before the threads start; measured like the others, in poll(): not
	 * hrtimer_nanosleep, so their stacks (cut while the tables load) are not sleep()'s */
	t0 = now_ns();
	for (int ms = 0; ms < first_ms; ms += 50)
		poll(NULL, 0, first_ms - ms < 50 ? first_ms - ms : 50);
	sleep_r.blocked_ns += now_ns() - t0;
	pthread_create(&a, NULL, napper, NULL);
	pthread_create(&b, NULL, piper, NULL);
	pthread_create(&c, NULL, feeder, NULL);
	pthread_create(&d, NULL, alternator, NULL);
	pthread_create(&e, NULL, kreader, NULL);
	pthread_create(&k, NULL, kfeeder, NULL);
	end = now_ns() + (uint64_t)(seconds * 1e9);
	while (now_ns() + 1000000000ull <= end)
		g();
	/* the joins block too: measured with the rest of the main thread's waits */
	t0 = now_ns();
	pthread_join(a, NULL);
	stop = 1;
	pthread_join(c, NULL);
	pthread_join(b, NULL);
	pthread_join(d, NULL);
	pthread_join(k, NULL);
	pthread_join(e, NULL);
	sleep_r.blocked_ns += now_ns() - t0;
	for (size_t i = 0; i < 7; i++) {
		struct result *r = (struct result *[]){&nap_r, &pipe_r,	 &sleep_r, &alt_a,
						       &alt_b, &kr_pipe, &kr_sock}[i];

		printf("%s %d %llu\n", r->name, (int)r->tid, (unsigned long long)r->blocked_ns);
	}
	return 0;
}
