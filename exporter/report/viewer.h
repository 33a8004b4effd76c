/*
 * viewer.h - the interactive viewer of the HTML report, inside the report
 * library (not its face: stprof/report.h):
 *
 *   viewer_enc.c     bytes, varint columns, the deflated base64 blob, JSON
 *                    strings, a u64 map (strings, call-path trie)
 *   viewer_rank.c    one trace read once: the objects of the space analyzed
 *                    in depth, their events, the grey band of the objects
 *                    not embedded, call paths as a trie, modules, segments
 *   viewer_models.c  the allocator models replayed on those objects: each
 *                    object's block and every range mapped or unmapped
 *   viewer_write.c   the page section: the JSON description, the blob and
 *                    viewer.js (embedded at build time, viewer_js.c)
 *
 * Data flows one way: report_html.c and report_ranks_html.c call
 * viewer_write.c, which calls viewer_rank.c, which calls viewer_models.c
 * and viewer_enc.c.  The format the page reads is in docs/report.md ("The
 * interactive viewer").
 */
#ifndef STP_REPORT_VIEWER_H
#define STP_REPORT_VIEWER_H

#include <stdint.h>
#include <stdio.h>

#include "stprof/allocsim.h"
#include "stprof/detector.h"
#include "stprof/report.h"

/* ------------------------------------------------------------ viewer_enc.c */

typedef struct vw_bytes {
	uint8_t *p;
	size_t n, cap;
	int oom;
} vw_bytes;

void vw_put(vw_bytes *b, const void *p, size_t n);
void vw_puts(vw_bytes *b, const char *s);
void vw_printf(vw_bytes *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* s as a JSON string safe inside <script> (< > & escaped) */
void vw_json_str(vw_bytes *b, const char *s);
void vw_bytes_free(vw_bytes *b);

/* A growable array of uint64_t (columns before encoding). */
typedef struct vw_u64s {
	uint64_t *v;
	size_t n, cap;
	int oom;
} vw_u64s;
void vw_push(vw_u64s *a, uint64_t v);
void vw_u64s_free(vw_u64s *a);

/* Columns go into one blob; each trace's description lists its own as
 * "name":[offset,count,codec,type] (written into cols).  Codecs: 'u'
 * unsigned varints, 'z' zigzag (signed), 'd' zigzag deltas of the values
 * taken as int64; type 'u' (fits 32 bits) or 'f' (up to 2^53). */
void vw_column(vw_bytes *blob, vw_bytes *cols, const char *name, const uint64_t *v, size_t n, char codec,
               char type);
/* Writes the blob deflated (zlib) and base64 encoded; *enc gets "deflate".
 * -1 on a write or zlib error. */
int vw_blob_write(const vw_bytes *blob, FILE *f, const char **enc);

/* u64 -> u64, open addressing; key UINT64_MAX is reserved. */
typedef struct vw_map {
	uint64_t *k, *v;
	size_t cap, n;
} vw_map;
int vw_map_get(const vw_map *m, uint64_t key, uint64_t *val);
int vw_map_put(vw_map *m, uint64_t key, uint64_t val); /* -1 on OOM */
void vw_map_free(vw_map *m);

/* Interned strings: id by text, in first-seen order; stops taking new ones
 * past max_bytes (then -1). */
typedef struct vw_strs {
	char **s;
	size_t n, cap, bytes, max_bytes;
	vw_map ix;  /* FNV-1a 64 of the text (chained by +1 on collision) -> id */
	int oom;
} vw_strs;
int64_t vw_str(vw_strs *t, const char *s);
void vw_strs_free(vw_strs *t);

/* ------------------------------------------------------------ viewer_models.c */

#define VW_MAX_MODELS 4

/* One allocator state the viewer can show: recorded segments or a model
 * replayed on the objects. */
typedef struct vw_state {
	char key[16];              /* "real", "m0", "m1", ... */
	char name[192];
	char note[384];
	allocsim_model *model;     /* NULL for the recorded segments */
	vw_u64s addr, extra;       /* per embedded object: block address, block - size */
	vw_u64s ev, at, sz, id;    /* ranges mapped (sz > 0) or unmapped (sz < 0, as int64) */
	uint64_t pending_ev;       /* the embedded event the next range change precedes */
	uint64_t seg_n;            /* recorded segments: addr -> size while reserved */
	vw_map seg_size;
} vw_state;

/* The models of the detector's report (r->sim) that have blocks (not raw),
 * set up for the space analyzed; returns how many (<= VW_MAX_MODELS). */
int vw_models_open(stp_det *d, vw_state *st, int max);
/* Whether the report's models were fed this allocation of the space. */
int vw_models_fed(const stp_det_result *r, const stp_alloc_info *a);
/* An allocation of the space: fed (vw_models_fed) to every model; an
 * embedded one gets its block in each (none when not fed). */
void vw_models_alloc(vw_state *st, int n, const stp_event *ev, uint64_t t, int fed, int embedded);
void vw_models_free(vw_state *st, int n, uint64_t seq, uint64_t t);
void vw_states_free(vw_state *st, int n);

/* ------------------------------------------------------------ viewer_rank.c */

/* Everything the page gets about one trace, before encoding. */
typedef struct vw_rank {
	stp_det *d;
	const stp_det_result *r;
	char label[128];
	uint64_t objects_total;    /* objects of the space */
	uint64_t nobj, nev;
	int selected;              /* the objects were bounded (stp_det_select) */
	/* per object, in allocation order */
	vw_u64s seq, oa, life, size, round, info, node, site, mod, addr;
	/* per event */
	vw_u64s et, res;
	/* accesses (when the trace has them) */
	vw_u64s xn, xc, xt, xa, xm;
	/* call paths: a trie of frames, outermost at the root */
	vw_u64s kp, kf;
	/* call sites used: detector index and figures */
	vw_u64s sdet, suser, speak, sallocs, scls;
	vw_map siteix;             /* detector site -> index in sdet */
	vw_strs strs;
	vw_bytes modules;          /* JSON rows [name, depth, begin, end] */
	uint64_t nmodules, modules_dropped;
	vw_state st[1 + VW_MAX_MODELS];
	int nst, nreal;            /* states; nreal: st[0] is the recorded segments */
	uint64_t frames_cut;       /* call paths cut by the strings' bound */
	char error[512];
} vw_rank;

/* Reads d's trace and fills *k.  0, or -1 with k->error set. */
int vw_rank_build(vw_rank *k, stp_det *d, const stp_report_options *o);
void vw_rank_free(vw_rank *k);
/* The viewer's site index of a detector site (adding it when new). */
uint64_t vw_rank_site(vw_rank *k, uint32_t det_site);
/* The embedded object of an ALLOC seq, -1 when not embedded. */
int64_t vw_rank_object(const vw_rank *k, uint64_t alloc_seq);

/* ------------------------------------------------------------ viewer_write.c */

/* The section "Memory timeline": the viewer of one trace or of the ranks
 * side by side.  Returns 0, or -1 after writing a note in its place (the
 * page stays valid: the static report follows). */
int report_html_viewer(stp_det *const *d, size_t n, const stp_report_options *o, FILE *f);

/* viewer_js.c (generated from viewer.js at build time) */
extern const char stp_viewer_js[];
#endif
