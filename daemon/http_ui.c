// SPDX-License-Identifier: GPL-2.0-only
/* The web page's static files: GET / is ui/dist/index.html, GET /ui/FILE a file of ui/dist, both
 * from the copies embedded at build time (ui_assets.h), so the page needs no file at run time. */
#include <string.h>

#include "http_api_internal.h"
#include "http_util.h"
#include "ui_assets.h"

/* The Content-Type of a file by its extension. */
static const char *content_type(const char *name)
{
	static const struct {
		const char *ext, *type;
	} types[] = {
	    {".html", "text/html; charset=utf-8"},
	    {".js", "application/javascript; charset=utf-8"},
	    {".css", "text/css; charset=utf-8"},
	    {".svg", "image/svg+xml"},
	    {".json", "application/json"},
	    {".map", "application/json"},
	    {".txt", "text/plain; charset=utf-8"},
	    {".png", "image/png"},
	    {".ico", "image/x-icon"},
	};
	const char *dot = strrchr(name, '.');

	for (size_t i = 0; dot && i < sizeof(types) / sizeof(types[0]); i++)
		if (!strcmp(dot, types[i].ext))
			return types[i].type;
	return "application/octet-stream";
}

enum MHD_Result http_ui__handle(struct MHD_Connection *conn, const char *url)
{
	const char *name = strcmp(url, "/") ? url + 4 : "index.html";
	char u[ECHO_MAX * 4 + 8];

	for (unsigned int i = 0; i < ui_nr_assets; i++)
		if (!strcmp(ui_assets[i].name, name))
			/* file names carry no content hash: browsers must ask each time */
			return http_send_buf_hdr(conn, 200, content_type(name),
						 (void *)ui_assets[i].data, ui_assets[i].len, false,
						 (struct header){"Cache-Control", "no-cache"});
	return http_send_error(conn, 404,
			       "%s: no such file of the page; it has /ui/index.html, "
			       "/ui/app.js, /ui/app.css, /ui/LICENSES.txt",
			       http_printable(url, u, sizeof(u), ECHO_MAX));
}
