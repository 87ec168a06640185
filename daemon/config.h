/* SPDX-License-Identifier: GPL-2.0-only */
/* The configuration file (INI, parsed with inih): [daemon] settings that flags override,
 * [stage NAME] sections (a function's entry and return, or a USDT begin/end pair),
 * [usdt-app NAME] sections (binaries that mark stages with include/tailprof/stage.h), a [gc]
 * section (enabled = auto|off; jvm, python, go = on|off), a [spikes] section (spike detection
 * and keeping: k, baseline_windows, min_requests, min_rise, pin_budget, state_dir, write_rate),
 * a [snapshots] section (the bounds of saved comparison sides: max_count, max_bytes, save_rate)
 * and a [limits] section (the caps of the tables that grow with the outside world,
 * resource_limits.h).
 *
 * Only syntax and values are checked here; whether binaries and symbols exist is the probes'
 * business, per stage, at attach time. */
#ifndef TAILPROF_CONFIG_H
#define TAILPROF_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "resource_limits.h"
#include "tailprof.h"

#define CONFIG_DEFAULT_PATH "/etc/tailprof/tailprofd.conf"
#define CONFIG_MAX_STAGES   (TP_FIRST_DYN_STAGE - 1)
#define CONFIG_MAX_APPS	    16

struct config_stage {
	char name[TP_STAGE_NAME_LEN];
	char *binary;	  /* executable or shared library */
	char *function;	  /* entry uprobe + uretprobe; or NULL and the two below */
	char *usdt_begin; /* "provider:name" */
	char *usdt_end;
	uint64_t threshold_ns; /* 0: none (an absolute p95 limit for spike detection) */
	int32_t pid;	       /* -1: every process */
	int line;	       /* of the section header */
};

struct config_app {
	char name[TP_STAGE_NAME_LEN];
	char *binary;
	int32_t pid; /* -1: every process */
	int line;
};

/* A [daemon] setting as written (checked by whoever applies it); value NULL when absent. */
struct config_setting {
	char *value;
	int line;
};

struct config {
	char *path;
	struct config_stage stages[CONFIG_MAX_STAGES];
	size_t nr_stages;
	struct config_app apps[CONFIG_MAX_APPS];
	size_t nr_apps;
	struct config_setting frequency, window, retention, listen, ringbuf_size;
	/* [daemon] socket and auth_token_file (docs/security.md) */
	struct config_setting socket, auth_token_file;
	/* [daemon] bpf_stats: on or off, as --bpf-stats */
	struct config_setting bpf_stats;
	/* [gc]: enabled is "auto" or "off", the runtimes "on" or "off" (checked here) */
	struct config_setting gc_enabled, gc_jvm, gc_python, gc_go;
	/* [spikes]: as written, checked by spikes_opts__set when applied (flags win) */
	struct config_setting spikes_k, spikes_baseline_windows, spikes_min_requests,
	    spikes_min_rise, spikes_pin_budget, spikes_state_dir, spikes_write_rate;
	/* [snapshots]: as written, checked by snapshots_opts__set when applied (flags win) */
	struct config_setting snapshots_max_count, snapshots_max_bytes;
	/* [push]: as written, checked by push_opts__set when applied (--push-url wins for url) */
	struct config_setting push_url, push_app, push_token_file, push_queue_windows, push_labels,
	    push_keep_labels, push_drop_labels;
	/* [snapshots] save_rate, as written (snapshots_opts__set) */
	struct config_setting snapshots_save_rate;
	/* [limits]: as written, by enum limits_key, checked by limits_opts__set when applied */
	struct config_setting limits[LIMITS_NR_KEYS];
};

/* Reads and checks the file at path. Returns a config to free with config__free, or NULL with
 * errno set: ENOENT/EACCES when the file cannot be opened, EINVAL when it is malformed; in both
 * cases err (errlen bytes) receives one sentence for people, "PATH:LINE: what is wrong; what is
 * allowed" for the latter. */
struct config *config__load(const char *path, char *err, size_t errlen);
/* NULL allowed. */
void config__free(struct config *c);

/* Whether s is a valid stage name: 1 to TP_STAGE_NAME_LEN - 1 characters of [A-Za-z0-9_.-]. */
int config__valid_stage_name(const char *s);

#endif
