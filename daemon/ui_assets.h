/* SPDX-License-Identifier: GPL-2.0-only */
/* The web page's files (ui/dist), embedded at build time by ui/embed.py (daemon/meson.build's
 * ui_assets target). */
#ifndef TAILPROF_UI_ASSETS_H
#define TAILPROF_UI_ASSETS_H

#include <stddef.h>

struct ui_asset {
	const char *name;	   /* base name, e.g. "app.js" */
	const unsigned char *data; /* len bytes (and a NUL after them) */
	size_t len;
};

extern const struct ui_asset ui_assets[];
extern const unsigned int ui_nr_assets;

#endif
