// SPDX-License-Identifier: GPL-2.0-only
/* Known answer: spins in main_spin, then dlopens PLUGIN and spins in its plugin_spin (called
 * from run_plugin <- main), or with "nap" blocks there in plugin_nap's 20 ms sleeps. A mapping
 * that appears after the process was first seen.
 * Usage: tp_dlopen SECONDS_BEFORE SECONDS_IN_PLUGIN PLUGIN [nap] */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "workload.h"

__attribute__((noinline)) void main_spin(double seconds)
{
	BURN_NS((uint64_t)(seconds * 1e9));
}

__attribute__((noinline)) int run_plugin(const char *path, double seconds, const char *fn)
{
	void *h = dlopen(path, RTLD_NOW);
	void (*spin)(double);

	if (!h) {
		fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
		return 1;
	}
	spin = (void (*)(double))dlsym(h, fn);
	if (!spin)
		return 1;
	spin(seconds);
	return dlclose(h); /* work after the call: no tail call */
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: tp_dlopen SECONDS_BEFORE SECONDS_IN_PLUGIN PLUGIN\n");
		return 2;
	}
	printf("%d\n", getpid());
	fflush(stdout);
	main_spin(atof(argv[1]));
	return run_plugin(argv[3], atof(argv[2]),
			  argc > 4 && !strcmp(argv[4], "nap") ? "plugin_nap" : "plugin_spin");
}
