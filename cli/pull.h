/* SPDX-License-Identifier: GPL-2.0-only */
/* tailprof pull: a pprof profile of a time range, of a spike (and its baseline) or of one
 * request, written to a file. */
#ifndef TAILPROF_CLI_PULL_H
#define TAILPROF_CLI_PULL_H

#include <stdio.h>

/* Runs `tailprof pull` (argv[0] is "pull"). Returns the exit status: 0, 1 or 2. */
int cmd_pull(int argc, char **argv);

/* Prints pull's usage to f. */
void usage_pull(FILE *f);

#endif
