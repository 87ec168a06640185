// SPDX-License-Identifier: GPL-2.0-only
/* Loads a library with dlopen only after a delay (so after tailprofd attached to it by path)
 * and calls its lib_stage (1 ms) COUNT times. Usage: tp_dlopen LIBRARY COUNT DELAY_SECONDS */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	void (*stage)(void);
	void *h;
	int n;

	if (argc < 4) {
		fprintf(stderr, "usage: tp_dlopen LIBRARY COUNT DELAY_SECONDS\n");
		return 2;
	}
	printf("%d\n", getpid());
	fflush(stdout);
	usleep((useconds_t)(atof(argv[3]) * 1e6));
	h = dlopen(argv[1], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "tp_dlopen: %s\n", dlerror());
		return 1;
	}
	stage = (void (*)(void))dlsym(h, "lib_stage");
	if (!stage) {
		fprintf(stderr, "tp_dlopen: %s\n", dlerror());
		return 1;
	}
	n = atoi(argv[2]);
	for (int i = 0; i < n; i++)
		stage();
	return 0;
}
