/* SPDX-License-Identifier: GPL-2.0-only */
/* tailprofd's options: the flags (tailprofd --help, docs/configuration.md), the configuration
 * file's settings where no flag was given (a flag wins), and the checks across them. main.c
 * starts the daemon from a struct options these functions filled. */
#ifndef TAILPROF_OPTIONS_H
#define TAILPROF_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gc.h"
#include "resource_limits.h"
#include "push.h"
#include "snapshots.h"
#include "spikes.h"

struct config;

#define MAX_DEBUG_DIRS 16

struct options {
	uint32_t frequency_hz;
	uint64_t window_ns;
	uint64_t retention_ns;
	const char *listen;
	const char *socket;	     /* --socket: NULL for none; default ACCESS_SOCKET_DEFAULT */
	bool socket_explicit;	     /* --socket or [daemon] socket given: failing to serve it
				      * stops start-up (the default only warns) */
	const char *auth_token_file; /* --auth-token-file, or NULL */
	size_t ringbuf_bytes;
	uint64_t offcpu_min_ns;
	const char *debug_dirs[MAX_DEBUG_DIRS];
	size_t nr_debug_dirs;
	bool verbose;
	const char *config; /* --config, or NULL: CONFIG_DEFAULT_PATH if it exists */
	unsigned set;	    /* opt_bit() of each option given as a flag: flags win */
	bool retention_set;
	struct gc_opts gc;
	bool gc_set;			 /* --gc given: the config's [gc] enabled does not apply */
	bool unwind_tables;		 /* --unwind=dwarf */
	size_t unwind_memory_bytes;	 /* --unwind-memory */
	uint32_t unwind_max_processes;	 /* --unwind-max-processes */
	bool check;			 /* --check */
	bool python_frames;		 /* --python-frames=on|off */
	bool bpf_stats;			 /* --bpf-stats=on|off */
	struct spikes_opts spikes;	 /* [spikes], --spike-*, --pin-budget, --state-dir */
	struct snapshots_opts snapshots; /* [snapshots], --snapshot-* */
	struct push_opts push;		 /* [push], --push-url */
	struct limits_opts limits;	 /* [limits] (resource_limits.h) */
	uint32_t section_set;		 /* bit per section_flags entry given as a flag */
};

/* Prints --help to f. */
void options__usage(FILE *f);
/* Prints "tailprofd: MESSAGE" and a pointer to --help on stderr; returns 2 (the exit code of a
 * usage error). */
int options__usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Fills *o with the defaults and the flags of argv. Returns 0, or 2 after a usage error
 * (printed); --help and --version print and exit(0). */
int options__parse(int argc, char **argv, struct options *o);
/* The configuration file: --config, else CONFIG_DEFAULT_PATH when it exists (NULL, *rc 0, when
 * not). NULL with *rc non-zero (the exit code) after an error, printed. */
struct config *options__read_config(const struct options *o, int *rc);
/* The settings of cfg that no flag gave. Returns 0 or the exit code after an error, printed. */
int options__apply_config(struct options *o, const struct config *cfg);
/* Checks across options (retention against window). Returns 0 or 2 after a usage error. */
int options__check(const struct options *o);

#endif
