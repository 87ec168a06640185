/* SPDX-License-Identifier: GPL-2.0-only */
/* tailprof compare: before and after, each a range of windows or a snapshot, compared by
 * tailprofd (GET /api/v1/compare) and printed benchstat-like, with an exit status for CI; or two
 * pprof files compared here (profile_diff.h). The contract is docs/compare.md. */
#ifndef TAILPROF_CLI_COMPARE_H
#define TAILPROF_CLI_COMPARE_H

#include <stdio.h>

/* Runs `tailprof compare` (argv[0] is "compare"). Returns the exit status: 0; 1 when the daemon
 * cannot be reached or refuses, a profile cannot be read, or --fail-on-regression trips; 2 for
 * usage errors. */
int cmd_compare(int argc, char **argv);

/* Prints compare's usage to f. */
void usage_compare(FILE *f);

#endif
