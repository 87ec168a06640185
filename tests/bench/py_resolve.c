// SPDX-License-Identifier: GPL-2.0-only
/* Benchmark of Python frames in user space: python__resolve() on the samples of a live
 * interpreter, as the drain does between two timer drains (code objects cached, none checked
 * again). The child defines FUNCS functions of 12 lines each and waits; each sample is a stack
 * of FUNCS frames, one per function, each waiting at one of 3 call sites (LASTI units 8, 16 and
 * 24), so a profile of many samples asks for the same few lines of each code object again and
 * again. Prints the CPU time per frame resolved (CLOCK_PROCESS_CPUTIME_ID, median of RUNS runs
 * of SAMPLES samples each) and the frames resolved per sample.
 * Usage: tp_bench_py_resolve PYTHON [SAMPLES] [RUNS] */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_stats.h"
#include "python.h"

#define FUNCS 40

/* FUNCS functions f0.. of 12 lines each; prints their code objects' addresses, then waits. */
static const char SCRIPT[] =
    "import sys\n"
    "src = ''.join('def f%d(x):\\n' % i + ''.join('    x = x * %d + %d\\n' % (j, i)\n"
    "              for j in range(11)) + '    return x\\n' for i in range(40))\n"
    "ns = {}\n"
    "exec(compile(src, '/bench/generated.py', 'exec'), ns)\n"
    "print(' '.join(str(id(ns['f%d' % i].__code__)) for i in range(40)), flush=True)\n"
    "sys.stdin.readline()\n";

int main(int argc, char **argv)
{
	int samples = argc > 2 ? atoi(argv[2]) : 20000, runs = argc > 3 ? atoi(argv[3]) : 5;
	struct tp_py_frame frames[3][FUNCS];
	struct python_frame out[FUNCS];
	double per_frame[32];
	int to_child[2], from_child[2], r = -1;
	unsigned long long code[FUNCS];
	char buf[4096], *p;
	struct python *py;
	uint32_t got = 0;
	FILE *in;
	pid_t pid;

	if (argc < 2 || samples <= 0 || runs <= 0 || runs > 32) {
		fprintf(stderr, "usage: %s PYTHON [SAMPLES] [RUNS (1-32)]\n", argv[0]);
		return 2;
	}
	if (pipe(to_child) || pipe(from_child))
		return perror("pipe"), 1;
	pid = fork();
	if (!pid) {
		dup2(to_child[0], 0);
		dup2(from_child[1], 1);
		execl(argv[1], argv[1], "-c", SCRIPT, NULL);
		_exit(127);
	}
	close(to_child[0]);
	close(from_child[1]);
	in = fdopen(from_child[0], "r");
	if (!in || !fgets(buf, sizeof(buf), in)) {
		fprintf(stderr, "%s did not start\n", argv[1]);
		return 1;
	}
	p = buf;
	for (int i = 0; i < FUNCS; i++)
		code[i] = strtoull(p, &p, 10);
	py = python__new(NULL);
	for (int i = 0; py && i < 50 && r != 1; i++)
		r = python__note_process(py, (uint32_t)pid, 1);
	if (r != 1) {
		fprintf(stderr, "%s (pid %d) is not a supported interpreter\n", argv[1], pid);
		kill(pid, SIGKILL);
		return 1;
	}
	for (int s = 0; s < 3; s++)
		for (int i = 0; i < FUNCS; i++)
			frames[s][i] = (struct tp_py_frame){.code = code[i], .info = 8 * (s + 1)};
	python__drain_begin(py, true);
	for (int s = 0; s < 3; s++) /* the code objects read, as after a process's first samples */
		got = python__resolve(py, (uint32_t)pid, 1, frames[s], FUNCS, false, out);
	for (int run = 0; run < runs; run++) {
		double t0 = bench_seconds(CLOCK_PROCESS_CPUTIME_ID);

		for (int i = 0; i < samples; i++)
			got =
			    python__resolve(py, (uint32_t)pid, 1, frames[i % 3], FUNCS, false, out);
		per_frame[run] =
		    (bench_seconds(CLOCK_PROCESS_CPUTIME_ID) - t0) / ((double)samples * FUNCS);
	}
	bench_median(per_frame, runs); /* sorts */
	printf("python__resolve: %.1f ns per frame (median of %d runs of %d samples of %d frames; "
	       "%.1f-%.1f), %u frames resolved per sample\n",
	       per_frame[runs / 2] * 1e9, runs, samples, FUNCS, per_frame[0] * 1e9,
	       per_frame[runs - 1] * 1e9, got);
	if (write(to_child[1], "\n", 1) < 0)
		kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	python__free(py);
	return 0;
}
