/* SPDX-License-Identifier: GPL-2.0-only */
/* tailprof spikes, explain and mark: the p95 spikes of the stages (GET /api/v1/spikes), the
 * evidence behind one (GET /api/v1/spikes/ID), and marks (POST /api/v1/marks). */
#ifndef TAILPROF_CLI_SPIKES_H
#define TAILPROF_CLI_SPIKES_H

#include <stdbool.h>
#include <stdio.h>

/* The longest spike id the API gives, and the size of a buffer holding one. */
#define SPIKE_ID_MAX  64
#define SPIKE_ID_SIZE (SPIKE_ID_MAX + 1)

/* Runs `tailprof spikes`, `tailprof explain`, `tailprof mark` (argv[0] is the subcommand).
 * Each returns the exit status: 0, 1 or 2. */
int cmd_spikes(int argc, char **argv);
int cmd_explain(int argc, char **argv);
int cmd_mark(int argc, char **argv);

/* Print each subcommand's usage to f. */
void usage_spikes(FILE *f);
void usage_explain(FILE *f);
void usage_mark(FILE *f);

/* Whether id is 1-64 characters of [A-Za-z0-9._-], as the API's spike and request ids are. */
bool spike_id_valid(const char *id);

/* Returns 0 when id is a spike id (1-64 characters of [A-Za-z0-9._-]) or "latest", else 2
 * after a usage error naming flag (e.g. "--spike") and cmd. */
int spike_id_check(const char *cmd, const char *flag, const char *id);

/*
 * Resolves the spike id given to a subcommand into out (SPIKE_ID_SIZE bytes): an id is copied;
 * "latest" is the newest spike of GET /api/v1/spikes (of stage, when not NULL), resolved here.
 * Needs server_resolve() done. Returns 0, or 1 after printing why not (none held, server error,
 * daemon down).
 */
int spike_resolve(const char *id, const char *stage, char *out);

#endif
