// SPDX-License-Identifier: GPL-2.0-only
/* Known answer for application-named stages whose name lives in a page the program never reads
 * itself (a string literal passed only to the marker): N calls of a stage "serialize" that
 * sleeps 1 ms. Usage: tp_usdt_cold_name [N] */
#define TAILPROF_STAGE_DEFINE
#include <tailprof/stage.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200;

	for (long i = 1; i <= n; i++) {
		TAILPROF_STAGE_BEGIN("serialize", i);
		usleep(1000);
		TAILPROF_STAGE_END("serialize", i);
	}
	return 0;
}
