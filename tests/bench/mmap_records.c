// SPDX-License-Identifier: GPL-2.0-only
/* What the mmap records cost the processes that map code (the kernel writes each record in the
 * mapping process's mmap or exec): an executable file mapping made and unmapped N times, and
 * /bin/true and python3.11 -c pass started N and N/5 times, each round once without the records'
 * events and once with them open (tailprofd's events: mmap_records__new), alternated. Prints the
 * per-round figures and the medians: CPU per mmap+munmap, CPU per process start (its own and its
 * children's rusage) and records per process start. Which of the two goes first alternates by
 * round. Asserts nothing.
 *
 * Usage (root): tp_bench_mmap_records [ROUNDS [N]]   (defaults 5 and 300) */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include "bench_stats.h"
#include "mmap_records.h"
#include "sysinfo.h"

extern char **environ;

static double rusage_s(int who)
{
	struct rusage r;

	getrusage(who, &r);
	return (double)r.ru_utime.tv_sec + r.ru_utime.tv_usec / 1e6 + (double)r.ru_stime.tv_sec +
	       r.ru_stime.tv_usec / 1e6;
}

/* CPU us per start of argv, n times (children's rusage). */
static double starts(struct mmap_records *r, char **argv, int n)
{
	double c0 = rusage_s(RUSAGE_CHILDREN);

	for (int i = 0; i < n; i++) {
		pid_t p;
		int st;

		if (posix_spawn(&p, argv[0], NULL, NULL, argv, environ)) {
			perror(argv[0]);
			exit(1);
		}
		waitpid(p, &st, 0);
		if (r)
			mmap_records__drain(r);
	}
	return 1e6 * (rusage_s(RUSAGE_CHILDREN) - c0) / n;
}

/* CPU us per mmap + munmap of 64 KiB of path's code, n times. */
static double maps(struct mmap_records *r, const char *path, int n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	double c0 = rusage_s(RUSAGE_SELF);

	if (fd < 0) {
		perror(path);
		exit(1);
	}
	for (int i = 0; i < n; i++) {
		void *p = mmap(NULL, 65536, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);

		munmap(p, 65536);
		if (r && i % 100 == 99)
			mmap_records__drain(r);
	}
	close(fd);
	return 1e6 * (rusage_s(RUSAGE_SELF) - c0) / n;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 5, n = argc > 2 ? atoi(argv[2]) : 300;
	char *tru[] = {"/bin/true", NULL}, *py[] = {"/usr/bin/python3.11", "-c", "pass", NULL};
	const char *lib = "/usr/lib/x86_64-linux-gnu/libc.so.6";
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	double m[2][64], t[2][64], p[2][64], rec_t = 0, rec_p = 0;
	uint8_t online[1024];

	if (rounds < 1 || rounds > 64 || n < 5 || ncpu < 1 || ncpu > 1024) {
		fprintf(stderr, "usage: tp_bench_mmap_records [ROUNDS (1-64) [N (>= 5)]]\n");
		return 2;
	}
	if (sysinfo__online_cpus(online, (size_t)ncpu) <= 0) {
		fprintf(stderr, "cannot read the online CPUs\n");
		return 1;
	}
	for (int k = 0; k < rounds; k++) {
		for (int j = 0; j < 2; j++) {
			int on = j ^ (k & 1); /* which goes first alternates too */
			struct mmap_records *r = NULL;
			struct mmap_records_stats s0 = {0}, s1 = {0};

			if (on) {
				r = mmap_records__new((uint32_t)ncpu, online, 5);
				if (!r) {
					perror("the records' events (run as root)");
					return 1;
				}
			}
			m[on][k] = maps(r, lib, n * 20);
			if (r)
				mmap_records__stats(r, &s0);
			t[on][k] = starts(r, tru, n);
			if (r) {
				mmap_records__stats(r, &s1);
				rec_t = (double)(s1.records - s0.records) / n;
				s0 = s1;
			}
			p[on][k] = starts(r, py, n / 5);
			if (r) {
				mmap_records__stats(r, &s1);
				rec_p = (double)(s1.records - s0.records) / (n / 5);
			}
			printf("round %d, records %-3s: mmap+munmap %.2f us, /bin/true %.0f us, "
			       "python3.11 %.0f us a start\n",
			       k, on ? "on" : "off", m[on][k], t[on][k], p[on][k]);
			fflush(stdout);
			mmap_records__free(r);
		}
	}
	printf("medians: mmap+munmap of code %.2f -> %.2f us; /bin/true %.0f -> %.0f us a start "
	       "(%.1f records); python3.11 -c pass %.0f -> %.0f us (%.1f records)\n",
	       bench_median(m[0], rounds), bench_median(m[1], rounds), bench_median(t[0], rounds),
	       bench_median(t[1], rounds), rec_t, bench_median(p[0], rounds),
	       bench_median(p[1], rounds), rec_p);
	return 0;
}
