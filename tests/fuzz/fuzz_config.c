// SPDX-License-Identifier: GPL-2.0-only
/* libFuzzer target: the configuration file (config__load, INI through inih), read as tailprofd
 * reads /etc/tailprof/tailprofd.conf; then its [daemon] and [snapshots] values parsed the way
 * they are applied (timeparse.h, snapshots_opts__set). Checks what a loaded config holds and
 * that a refusal says where. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "fuzz.h"
#include "snapshots.h"
#include "timeparse.h"

static void check_setting(const struct config_setting *s)
{
	if (s->value)
		FUZZ_CHECK(s->line > 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct snapshots_opts so = {0};
	char path[64], err[512], msg[256];
	struct config *c;
	uint64_t v;

	fuzz_fd_path(fuzz_file(0, data, size), path, sizeof(path));
	err[0] = 0;
	c = config__load(path, err, sizeof(err));
	if (!c) {
		FUZZ_CHECK(errno == EINVAL);
		FUZZ_CHECK(err[0] && strlen(err) < sizeof(err));
		return 0;
	}
	FUZZ_CHECK(c->nr_stages <= CONFIG_MAX_STAGES && c->nr_apps <= CONFIG_MAX_APPS);
	for (size_t i = 0; i < c->nr_stages; i++) {
		const struct config_stage *s = &c->stages[i];

		FUZZ_CHECK(config__valid_stage_name(s->name));
		FUZZ_CHECK(s->binary != NULL);
		FUZZ_CHECK(s->function ? !s->usdt_begin && !s->usdt_end
				       : s->usdt_begin && s->usdt_end);
	}
	for (size_t i = 0; i < c->nr_apps; i++) {
		FUZZ_CHECK(config__valid_stage_name(c->apps[i].name));
		FUZZ_CHECK(c->apps[i].binary != NULL);
	}
	check_setting(&c->frequency);
	check_setting(&c->window);
	check_setting(&c->spikes_state_dir);
	/* the values as main.c applies them: durations, integers, sizes, [snapshots] */
	if (c->frequency.value)
		tp_parse_uint(c->frequency.value, 1, 1000, &v);
	if (c->window.value)
		tp_parse_duration(c->window.value, &v);
	if (c->retention.value)
		tp_parse_duration(c->retention.value, &v);
	if (c->ringbuf_size.value)
		tp_parse_size(c->ringbuf_size.value, 4096, 1ull << 30, &v);
	if (c->snapshots_max_count.value)
		snapshots_opts__set(&so, "max_count", c->snapshots_max_count.value, msg,
				    sizeof(msg));
	if (c->snapshots_max_bytes.value)
		snapshots_opts__set(&so, "max_bytes", c->snapshots_max_bytes.value, msg,
				    sizeof(msg));
	FUZZ_CHECK(so.max_count <= SNAPSHOTS_MAX_COUNT);
	FUZZ_CHECK(!so.max_bytes ||
		   (so.max_bytes >= SNAPSHOTS_MIN_BYTES && so.max_bytes <= SNAPSHOTS_MAX_BYTES));
	config__free(c);
	return 0;
}
