// SPDX-License-Identifier: GPL-2.0-only
/* Opens the shared library argv[1] with dlopen N times (argv[2], default 1) after exec, prints
 * its pid and waits for a line on stdin: how the java launcher loads libjvm.so. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int n = argc > 2 ? atoi(argv[2]) : 1;
	char line[16];

	if (argc < 2)
		return 2;
	for (int i = 0; i < n; i++) {
		if (!dlopen(argv[1], RTLD_NOW)) {
			fprintf(stderr, "%s\n", dlerror());
			return 1;
		}
	}
	printf("%d\n", (int)getpid());
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 0;
	return 0;
}
