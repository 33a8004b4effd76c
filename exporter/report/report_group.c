/*
 * report_group.c - the text report's top call sites summed by function, by
 * line or by module (`stprof report --group function|line|module`).  Sites that differ
 * only by line in one function (8 rows of tensor_zeros <- param_init)
 * become one row with the number of sites it sums.
 *
 * The key of a site is its first frame as shown (the user's own line when
 * paths are folded, detector/fold.c): the function's name (else
 * module+offset), the line, or the module's file name (a Python frame's
 * file).  Only
 * the first GROUP_SITES sites (by bytes live at the peak) are read, so the
 * cost does not grow with a run's hundreds of thousands of sites; the
 * output says so when sites were left out.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report_fmt.h"
#include "report_internal.h"
#include "stprof/report.h"

#define GROUP_SITES 20000u

typedef struct grp {
	char *key;
	uint64_t peak_bytes, peak_objects, allocs, bytes_allocated;
	uint32_t sites, first_site;
} grp;

static int cmp_grp(const void *a, const void *b)
{
	const grp *x = a, *y = b;
	if (x->peak_bytes != y->peak_bytes)
		return x->peak_bytes > y->peak_bytes ? -1 : 1;
	if (x->bytes_allocated != y->bytes_allocated)
		return x->bytes_allocated > y->bytes_allocated ? -1 : 1;
	return strcmp(x->key, y->key);
}

static int cmp_key(const void *a, const void *b) { return strcmp(((const grp *)a)->key, ((const grp *)b)->key); }

/* The key of a site: of its first frame (folded: the user's own line),
 * the function (Python: the file's name beside it), the line, or the
 * module (Python: the file). */
static void key_of(stp_det *d, uint32_t site, unsigned group, char *buf, size_t len)
{
	stp_det_frame f;
	if (stp_det_site_frames(d, site, &f, 1) == 0) {
		snprintf(buf, len, "(no call path)");
		return;
	}
	f.op = NULL;
	const char *m = f.module && *f.module ? f.module : NULL;
	const char *base = m ? strrchr(m, '/') : NULL;
	base = base ? base + 1 : m;
	const char *fb = f.file ? strrchr(f.file, '/') : NULL;
	fb = fb ? fb + 1 : f.file;
	if (!base && fb && group != STP_GROUP_LINE) /* a Python frame: its file */
		base = fb;
	if (group == STP_GROUP_MODULE)
		snprintf(buf, len, "%s", base ? base : "(unknown module)");
	else if (group == STP_GROUP_LINE)
		stp_det_frame_text(&f, buf, len);
	else if (f.function)
		snprintf(buf, len, "%s%s%s", f.function, base ? " in " : "", base ? base : "");
	else
		stp_det_frame_text(&f, buf, len);
}

void report_text_grouped(stp_det *d, const stp_det_result *r, const stp_report_options *o, FILE *f)
{
	uint32_t n = r->nsites < GROUP_SITES ? r->nsites : GROUP_SITES;
	grp *g = calloc(n ? n : 1, sizeof *g);
	if (!g) {
		fprintf(f, "  (out of memory grouping the call sites)\n\n");
		return;
	}
	char key[1024], b[4][64];
	uint32_t ng = 0;
	for (uint32_t i = 0; i < n; i++) {
		stp_det_site s;
		stp_det_site_get(d, i, &s);
		key_of(d, i, o->group, key, sizeof key);
		g[ng] = (grp){.key = strdup(key), .peak_bytes = s.peak_bytes, .peak_objects = s.peak_objects,
		              .allocs = s.allocs, .bytes_allocated = s.bytes_allocated, .sites = 1, .first_site = i};
		if (!g[ng].key)
			break;
		ng++;
	}
	/* sum the rows of one key */
	qsort(g, ng, sizeof *g, cmp_key);
	uint32_t m = 0;
	for (uint32_t i = 0; i < ng; i++) {
		if (m && !strcmp(g[m - 1].key, g[i].key)) {
			grp *t = &g[m - 1];
			t->peak_bytes += g[i].peak_bytes;
			t->peak_objects += g[i].peak_objects;
			t->allocs += g[i].allocs;
			t->bytes_allocated += g[i].bytes_allocated;
			t->sites++;
			if (g[i].first_site < t->first_site)
				t->first_site = g[i].first_site;
			free(g[i].key);
			continue;
		}
		g[m++] = g[i];
	}
	qsort(g, m, sizeof *g, cmp_grp);
	const char *what = o->group == STP_GROUP_MODULE ? "module" : o->group == STP_GROUP_LINE ? "line" : "function";
	fprintf(f, "  (grouped by %s: of the user's own frame, else the first one shown; sites = call sites summed)\n",
	        what);
	fprintf(f, "   #   live@peak  objects    allocs  bytes allocated  sites  %s\n", what);
	uint32_t shown = 0;
	for (uint32_t i = 0; i < m && shown < o->top; i++) {
		if (!g[i].peak_bytes && shown)
			break;
		shown++;
		fprintf(f, "  %2u %11s %8s %9s %16s %6u  %s\n", shown, rf_bytes(g[i].peak_bytes, b[0], 64),
		        rf_count(g[i].peak_objects, b[1], 64), rf_count(g[i].allocs, b[2], 64),
		        rf_bytes(g[i].bytes_allocated, b[3], 64), g[i].sites, g[i].key);
	}
	if (m > shown)
		fprintf(f, "  (%u more %ss; --top N shows more)\n", m - shown, what);
	if (r->nsites > n)
		fprintf(f, "  (the %u call sites holding the most at the peak were grouped; %u more hold less)\n", n,
		        r->nsites - n);
	for (uint32_t i = 0; i < m; i++)
		free(g[i].key);
	free(g);
	fputc('\n', f);
}
