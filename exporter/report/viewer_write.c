/*
 * viewer_write.c - the "Memory timeline" section of the HTML report: an
 * element the viewer fills (#stpv), the description of each trace as JSON
 * (#stpv-meta), the columns of every trace in one deflated base64 blob
 * (#stpv-bin) and viewer.js itself.  Nothing is fetched: the page is one
 * file.  docs/report.md ("The interactive viewer") gives the format.
 *
 * A trace the viewer cannot show (no allocations, damaged, out of memory)
 * gets a line saying why; the static report below stays whole.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report_fmt.h"
#include "viewer.h"

#define MAX_FINDINGS 1000u
#define MIN_TOP 20u
#define ADDR_MAX_OBJECTS 200000u

/* Column KEY + suffix of an allocator state. */
static void state_column(vw_bytes *blob, vw_bytes *cols, const vw_state *st, char suffix, const vw_u64s *a,
                         char codec, char type)
{
	char name[24];
	snprintf(name, sizeof name, "%s%c", st->key, suffix);
	vw_column(blob, cols, name, a->v, a->n, codec, type);
}

/* One refused request for the viewer's "refused" band: [ns, bytes, text]. */
static void refusal_json(stp_det *d, const stp_det_refusal *x, vw_bytes *m)
{
	char b[3][64], t[512] = "", text[900];
	stp_det_frame fr;
	int at = x->stack && stp_det_stack_frames(d, x->stack, &fr, 1);
	snprintf(text, sizeof text, "refused: %s asked for with %s live%s%s%s%s%s", rf_bytes(x->bytes, b[0], 64),
	         rf_bytes(x->live, b[1], 64), x->reserved ? " of " : "", x->reserved ? rf_bytes(x->reserved, b[2], 64) : "",
	         x->reserved ? " reserved" : "", at ? " at " : "", at ? stp_det_frame_text(&fr, t, sizeof t) : "");
	vw_printf(m, "[%" PRIu64 ",%" PRIu64 ",", x->ns, x->bytes);
	vw_json_str(m, text);
	vw_puts(m, "]");
}

/* "refused": the primary space's first and last refused requests (one
 * when they are the same request) */
static void refused_json(stp_det *d, const stp_det_space *sp, vw_bytes *m)
{
	vw_puts(m, ",\"refused\":[");
	if (sp->refused)
		refusal_json(d, &sp->refused_first, m);
	if (sp->refused > 1 && sp->refused_last.seq != sp->refused_first.seq) {
		vw_puts(m, ",");
		refusal_json(d, &sp->refused_last, m);
	}
	vw_puts(m, "]");
}

/* The JSON description of trace k (its columns appended to blob). */
static void describe(vw_rank *k, const stp_report_options *o, vw_bytes *m, vw_bytes *blob)
{
	stp_det *d = k->d;
	const stp_det_result *r = k->r;
	const stp_det_space *sp = &r->spaces[r->primary];
	char b[1024];
	/* what adds strings and sites comes first: findings, top sites, phases */
	vw_bytes fnd = {0}, top = {0}, ph = {0};
	uint32_t nf = r->nfindings < MAX_FINDINGS ? r->nfindings : MAX_FINDINGS;
	for (uint32_t i = 0; i < nf; i++) {
		const stp_det_finding *x = &r->findings[i];
		vw_printf(&fnd, "%s{\"det\":%u,\"pat\":%u,\"site\":%" PRIu64 ",\"objects\":%" PRIu64 ",\"bytes\":%" PRIu64
		          ",\"obj\":%" PRId64 ",\"waste\":",
		          i ? "," : "", i, (unsigned)x->pattern, vw_rank_site(k, x->site), x->objects, x->bytes,
		          vw_rank_object(k, x->worst.alloc_seq));
		vw_json_str(&fnd, rf_byte_time(x->waste_byte_ns, b, sizeof b));
		vw_puts(&fnd, ",\"sug\":");
		vw_json_str(&fnd, stp_det_suggestion(d, x, b, sizeof b));
		vw_puts(&fnd, "}");
	}
	unsigned ntop = o->top > MIN_TOP ? o->top : MIN_TOP;
	for (uint32_t i = 0, n = 0; i < r->nsites && n < ntop; i++) {
		stp_det_site s;
		stp_det_site_get(d, i, &s);
		if (!s.peak_bytes)
			break;
		vw_printf(&top, "%s%" PRIu64, n++ ? "," : "", vw_rank_site(k, i));
	}
	const stp_det_timeline *t = &r->timeline;
	for (uint32_t i = 0; i < t->nphases; i++) {
		const stp_det_phase *p = &t->phases[i];
		int64_t name = vw_str(&k->strs, p->name ? p->name : "phase");
		vw_printf(&ph, "%s[%" PRId64 ",%" PRId64 ",%d,%" PRIu64 ",%" PRIu64 "]", i ? "," : "", name < 0 ? 0 : name,
		          p->micro_batch, p->iteration, p->begin_ns, p->end_ns);
	}
	vw_puts(m, "{\"label\":");
	vw_json_str(m, k->label);
	vw_puts(m, ",\"path\":");
	vw_json_str(m, r->path);
	vw_puts(m, ",\"space\":");
	vw_json_str(m, rf_space(sp, b, sizeof b));
	vw_printf(m, ",\"duration_ns\":%" PRIu64 ",\"nobj\":%" PRIu64 ",\"nev\":%" PRIu64 ",\"objects_total\":%" PRIu64
	          ",\"selected\":%d,\"frames_cut\":%" PRIu64 ",\"modules_dropped\":%" PRIu64,
	          r->duration_ns, k->nobj, k->nev, k->objects_total, k->selected, k->frames_cut, k->modules_dropped);
	vw_printf(m, ",\"peak\":{\"bytes\":%" PRIu64 ",\"ns\":%" PRIu64 ",\"objects\":%" PRIu64 "}", sp->peak_bytes,
	          sp->peak_ns, sp->peak_objects);
	refused_json(d, sp, m);
	vw_puts(m, ",\n\"iters\":[");
	for (uint32_t i = 0; i < t->niterations; i++)
		vw_printf(m, "%s[%" PRId64 ",%" PRIu64 ",%" PRIu64 "]", i ? "," : "", t->iterations[i].index,
		          t->iterations[i].begin_ns, t->iterations[i].end_ns);
	vw_puts(m, "],\n\"phases\":[");
	vw_put(m, ph.p ? ph.p : (uint8_t *)"", ph.n);
	vw_puts(m, "],\n\"modules\":[");
	vw_put(m, k->modules.p ? k->modules.p : (uint8_t *)"", k->modules.n);
	vw_puts(m, "],\n\"findings\":[");
	vw_put(m, fnd.p ? fnd.p : (uint8_t *)"", fnd.n);
	vw_puts(m, "],\n\"top\":[");
	vw_put(m, top.p ? top.p : (uint8_t *)"", top.n);
	vw_puts(m, "],\n\"segs\":[");
	for (int s = 0; s < k->nst; s++) {
		vw_printf(m, "%s{\"key\":\"%s\",\"name\":", s ? "," : "", k->st[s].key);
		vw_json_str(m, k->st[s].name);
		vw_puts(m, ",\"note\":");
		vw_json_str(m, k->st[s].note);
		vw_puts(m, "}");
	}
	vw_puts(m, "],\n\"strings\":[");
	for (size_t i = 0; i < k->strs.n; i++) {
		if (i)
			vw_puts(m, i % 8 ? "," : ",\n");
		vw_json_str(m, k->strs.s[i]);
	}
	vw_puts(m, "],\n\"cols\":{");
	vw_bytes cols = {0};
	vw_column(blob, &cols, "et", k->et.v, k->et.n, 'd', 'f');
	vw_column(blob, &cols, "res", k->res.v, k->res.n, 'd', 'f');
	vw_column(blob, &cols, "oa", k->oa.v, k->oa.n, 'd', 'u');
	vw_column(blob, &cols, "ol", k->life.v, k->life.n, 'u', 'u');
	vw_column(blob, &cols, "os", k->size.v, k->size.n, 'u', 'f');
	vw_column(blob, &cols, "or", k->round.v, k->round.n, 'u', 'f');
	vw_column(blob, &cols, "oc", k->info.v, k->info.n, 'u', 'u');
	vw_column(blob, &cols, "osi", k->site.v, k->site.n, 'u', 'u');
	vw_column(blob, &cols, "ok", k->node.v, k->node.n, 'u', 'u');
	vw_column(blob, &cols, "om", k->mod.v, k->mod.n, 'u', 'u');
	if (k->nreal || k->nobj <= ADDR_MAX_OBJECTS) /* addresses: for the recorded segments, else shown if small */
		vw_column(blob, &cols, "oad", k->addr.v, k->addr.n, 'd', 'f');
	for (size_t i = 0; i < k->kp.n; i++) /* parents as distances back: mostly 1 */
		k->kp.v[i] = i + 1 - k->kp.v[i];
	vw_column(blob, &cols, "kp", k->kp.v, k->kp.n, 'u', 'u');
	vw_column(blob, &cols, "kf", k->kf.v, k->kf.n, 'u', 'u');
	vw_column(blob, &cols, "sd", k->sdet.v, k->sdet.n, 'u', 'u');
	vw_column(blob, &cols, "su", k->suser.v, k->suser.n, 'u', 'u');
	vw_column(blob, &cols, "sp", k->speak.v, k->speak.n, 'u', 'f');
	vw_column(blob, &cols, "sn", k->sallocs.v, k->sallocs.n, 'u', 'f');
	vw_column(blob, &cols, "sc", k->scls.v, k->scls.n, 'u', 'u');
	if (k->xn.n) {
		vw_column(blob, &cols, "xn", k->xn.v, k->xn.n, 'u', 'u');
		vw_column(blob, &cols, "xc", k->xc.v, k->xc.n, 'u', 'u');
		vw_column(blob, &cols, "xt", k->xt.v, k->xt.n, 'd', 'f');
		vw_column(blob, &cols, "xa", k->xa.v, k->xa.n, 'u', 'u');
		vw_column(blob, &cols, "xm", k->xm.v, k->xm.n, 'u', 'u');
	}
	for (int s = 0; s < k->nst; s++) {
		vw_state *st = &k->st[s];
		state_column(blob, &cols, st, 'e', &st->ev, 'd', 'u');
		state_column(blob, &cols, st, 'g', &st->at, 'd', 'f');
		state_column(blob, &cols, st, 'z', &st->sz, 'z', 'f');
		if (!st->model)
			continue;
		state_column(blob, &cols, st, 'i', &st->id, 'u', 'u');
		state_column(blob, &cols, st, 'a', &st->addr, 'd', 'f');
		state_column(blob, &cols, st, 'b', &st->extra, 'u', 'f');
	}
	vw_put(m, cols.p ? cols.p : (uint8_t *)"", cols.n);
	vw_puts(m, "}}");
	if (fnd.oom || top.oom || ph.oom || cols.oom)
		m->oom = 1;
	vw_bytes_free(&fnd);
	vw_bytes_free(&top);
	vw_bytes_free(&ph);
	vw_bytes_free(&cols);
}

int report_html_viewer(stp_det *const *d, size_t n, const stp_report_options *o, FILE *f)
{
	fputs("<h2>Memory timeline</h2>\n", f);
	if (!o->viewer_objects) {
		fputs("<p>The interactive viewer was left out (--viewer-objects 0).</p>\n", f);
		return 0;
	}
	vw_rank *k = calloc(n ? n : 1, sizeof *k);
	if (!k) {
		fputs("<p class=warn>The interactive viewer is missing: out of memory.</p>\n", f);
		return -1;
	}
	vw_bytes meta = {0}, blob = {0};
	vw_puts(&meta, "{\"version\":1,\"enc\":\"deflate\",\"classes\":[");
	for (unsigned c = 0; c < STP_CLASS_COUNT; c++) {
		vw_puts(&meta, c ? "," : "");
		vw_json_str(&meta, stp_det_class_name(c));
	}
	vw_puts(&meta, "],\"patterns\":[");
	for (unsigned p = 0; p < STP_PAT_COUNT; p++) {
		vw_puts(&meta, p ? "," : "");
		vw_json_str(&meta, stp_det_pattern_name(p));
	}
	vw_puts(&meta, "],\"pattern_titles\":[");
	for (unsigned p = 0; p < STP_PAT_COUNT; p++) {
		vw_puts(&meta, p ? "," : "");
		vw_json_str(&meta, stp_det_pattern_title(p));
	}
	vw_puts(&meta, "],\"ranks\":[\n");
	size_t shown = 0;
	for (size_t i = 0; i < n; i++) {
		if (!d[i])
			continue;
		if (vw_rank_build(&k[i], d[i], o) < 0) {
			fputs("<p class=warn>Not in the viewer: ", f);
			rf_html(f, k[i].error);
			fputs("</p>\n", f);
			vw_rank_free(&k[i]);
			continue;
		}
		if (shown++)
			vw_puts(&meta, ",\n");
		describe(&k[i], o, &meta, &blob);
		vw_rank_free(&k[i]);
	}
	vw_puts(&meta, "]}");
	free(k);
	int rc = 0;
	if (!shown || meta.oom || blob.oom) {
		if (shown)
			fputs("<p class=warn>The interactive viewer is missing: out of memory.</p>\n", f);
		rc = shown ? -1 : 0;
		goto out;
	}
	fputs("<div id=stpv class=stpv><p>Loading the interactive viewer&hellip;</p>"
	      "<noscript><p>The interactive viewer needs JavaScript; the plots below are static.</p></noscript></div>\n"
	      "<script type=application/json id=stpv-meta>",
	      f);
	fwrite(meta.p, 1, meta.n, f);
	fputs("</script>\n<script type=text/plain id=stpv-bin>\n", f);
	const char *enc = NULL;
	rc = vw_blob_write(&blob, f, &enc);
	fputs("</script>\n<script>\n", f);
	fputs(stp_viewer_js, f);
	fputs("</script>\n", f);
out:
	vw_bytes_free(&meta);
	vw_bytes_free(&blob);
	return rc;
}
