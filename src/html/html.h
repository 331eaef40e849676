/* `lantern report`: one self-contained HTML page about a Lantern database (no network, no
 * external script or font): the session, a timeline overview per GPU, where the time went,
 * the `lantern analyze` findings most costly first with their evidence, and energy. Charts are
 * inline SVG; a small inline script sorts tables. Everything is aggregated before it reaches
 * the page (500 bins per GPU, top-N tables), so its size is bounded whatever the run's. */
#ifndef LANTERN_HTML_H
#define LANTERN_HTML_H

#include <sqlite3.h>
#include <stdio.h>

/* Writes the page for db to out. Returns 0, or a negative errno with error set
 * (-EIO, -ENOMEM; a failed write's -errno, errno still set). */
int html_report_write(sqlite3 *db, FILE *out, char *error, size_t error_size);

#endif
