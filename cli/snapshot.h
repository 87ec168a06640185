/* SPDX-License-Identifier: GPL-2.0-only */
/* tailprof snapshot: save a time range's windows in tailprofd's state directory under a name
 * (POST /api/v1/snapshots), list them (GET) and remove one (DELETE), as sides for compare. */
#ifndef TAILPROF_CLI_SNAPSHOT_H
#define TAILPROF_CLI_SNAPSHOT_H

#include <stdbool.h>
#include <stdio.h>

#define SNAPSHOT_NAME_RULE "1-64 characters of A-Z, a-z, 0-9, '.', '_', '-'; not . or .."

/* Runs `tailprof snapshot save|list|rm` (argv[0] is "snapshot"). Returns the exit status: 0, 1
 * or 2. */
int cmd_snapshot(int argc, char **argv);

/* Prints snapshot's usage to f. */
void usage_snapshot(FILE *f);

/* Whether name is a snapshot name the API takes: 1-64 of [A-Za-z0-9._-], not "." or "..". */
bool snapshot_name_valid(const char *name);

/* Returns 0 when name is a snapshot name, else 2 after a usage error naming what (e.g.
 * "--before: snap:") and cmd. */
int snapshot_name_check(const char *cmd, const char *what, const char *name);

#endif
