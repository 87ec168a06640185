// SPDX-License-Identifier: GPL-2.0-only
/* Known answer for JIT perf maps: generates a spin loop in anonymous executable memory, names it
 * in /tmp/perf-PID.map (PID as the process sees itself), runs it, then names the same code anew
 * (appending an entry for the same range, as a JIT does when it reuses memory) and runs it again.
 * Prints its pid, then "renamed" when the second name is in place.
 * Usage: tp_jit FIRST_SECONDS SECOND_SECONDS */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "workload.h"

typedef void (*jit_fn)(void);

/* x86-64: mov ecx, 100000; 1: dec ecx; jnz 1b; ret */
static const unsigned char code[] = {0xb9, 0xa0, 0x86, 0x01, 0x00, 0xff, 0xc9, 0x75, 0xfc, 0xc3};

static void name_code(const void *at, const char *name)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", getpid());
	f = fopen(path, "a");
	if (!f) {
		perror(path);
		_exit(1);
	}
	fprintf(f, "%lx %zx %s\n", (unsigned long)at, sizeof(code), name);
	fclose(f);
}

__attribute__((noinline)) void run_jit(jit_fn fn, double seconds)
{
	uint64_t end = now_ns() + (uint64_t)(seconds * 1e9);

	while (now_ns() < end)
		fn();
}

int main(int argc, char **argv)
{
	void *mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char path[64];

	if (mem == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	memcpy(mem, code, sizeof(code));
	name_code(mem, "jit_first_name");
	printf("%d\n", getpid());
	fflush(stdout);
	run_jit((jit_fn)mem, arg_seconds(argc, argv, 1, 1.5));
	name_code(mem, "jit_second_name");
	printf("renamed\n");
	fflush(stdout);
	run_jit((jit_fn)mem, arg_seconds(argc, argv, 2, 1.5));
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", getpid());
	unlink(path);
	return 0;
}
