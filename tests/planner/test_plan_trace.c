/*
 * test_plan_trace.c - traces to requests (requests_from_trace.c): the
 * iteration window, persistent objects, the wrapping request (and one
 * that outlives its iteration: a spare request), phases,
 * layers, call-site hashes, size-varying requests, the no-marker case and
 * the detector's window; then plan, verify, write and read back.
 */
#include "check.h"
#include "mktrace.h"
#include "stprof/plan.h"

static void plan_and_verify(const stp_reqs *r, double max_ratio)
{
	stp_plan_opts o;
	stp_plan_opts_init(&o);
	o.align = 512;
	stp_plan p;
	char err[512];
	CHECK(stp_plan_build(r, &o, &p, err, sizeof err) == 0);
	CHECK(stp_plan_verify(r, &p, err, sizeof err) == 0);
	double ratio = (double)p.pool / (double)p.stats.lower_bound;
	printf("  pool %llu, bound %llu, ratio %.4f\n", (unsigned long long)p.pool,
	       (unsigned long long)p.stats.lower_bound, ratio);
	CHECK(ratio <= max_ratio);
	const char *path = check_tmp("trace.plan");
	CHECK(stp_plan_write(path, r, &p, err, sizeof err) == 0);
	stp_reqs r2;
	stp_plan p2;
	CHECK(stp_plan_read(path, &r2, &p2, err, sizeof err) == 0);
	CHECK(stp_plan_verify(&r2, &p2, err, sizeof err) == 0);
	CHECK_EQ_U(r2.n, r->n);
	stp_plan_free(&p2);
	stp_reqs_free(&r2);
	unlink(path);
	stp_plan_free(&p);
}

/* A trace writer whose 64 call sites are all one frame at ip; 0 or -1. */
static int mk_open(mk *m, const char *path, int device, uint64_t ip)
{
	char err[256];
	memset(m, 0, sizeof *m);
	m->device = device;
	m->w = stp_writer_open(path, err, sizeof err);
	CHECK(m->w != NULL);
	if (!m->w)
		return -1;
	for (int s = 0; s < 64; s++)
		m->stacks[s] = stp_writer_stack(m->w, &ip, 1);
	return 0;
}

/* PyTorch on a GPU recorded with its allocator (tensors: device, pool 1)
 * and a library's own cudaMalloc in the first iteration (cuBLAS's handle
 * workspace: pool 0): the device plan is PyTorch's tensors alone, their
 * ordinals counted without it.  On an H100 the two 64 MiB workspaces in
 * the plan shifted every later ordinal, and libstalloc then missed the
 * optimizer state's persistent slots (peak reserved 1.20x the pool). */
static void test_device_tensors_only(const char *path)
{
	char err[256];
	mk m;
	if (mk_open(&m, path, 1, 0x555500001000ull) < 0)
		return;
	stp_event ev;
	for (int it = 0; it < 3; it++) {
		mk_mark(&m, STP_MARK_ITER_BEGIN, NULL, it);
		for (int k = 0; k < 4; k++) {
			if (it == 0 && k == 2) { /* cuBLAS's workspace, never freed */
				memset(&ev, 0, sizeof ev);
				ev.type = STP_EV_ALLOC;
				ev.u.alloc = (stp_alloc_info){.addr = 0x7e0000000000ull, .size = 64u << 20, .requested = 64u << 20,
				                              .kind = STP_MEM_DEVICE, .device = 0, .stack = m.stacks[9]};
				mk_event(&m, &ev);
			}
			memset(&ev, 0, sizeof ev);
			ev.type = STP_EV_ALLOC;
			ev.u.alloc = (stp_alloc_info){.addr = 0x7f0000000000ull + (uint64_t)k * 0x100000, .size = 4096u << k,
			                              .requested = 4096u << k, .kind = STP_MEM_DEVICE, .device = 0,
			                              .pool = STP_POOL_TENSORS, .stack = m.stacks[k]};
			mk_event(&m, &ev);
		}
		for (int k = 0; k < 4; k++)
			mk_free(&m, 0x7f0000000000ull + (uint64_t)k * 0x100000);
		mk_mark(&m, STP_MARK_ITER_END, NULL, it);
	}
	CHECK(stp_writer_close(m.w, STP_END_EXIT, 0) == 0);
	stp_window w;
	stp_window_init(&w);
	w.iteration = 0;
	stp_reqs r;
	CHECK(stp_reqs_from_trace(path, &w, &r, err, sizeof err) == 0);
	CHECK(r.device == 1);
	CHECK_EQ_U(r.n, 4);
	for (size_t i = 0; i < r.n; i++) {
		CHECK(r.req[i].size < (64u << 20));
		CHECK_EQ_U(r.req[i].ordinal, i);
	}
	CHECK(strstr(stp_reqs_str(&r, r.notes), "1 device allocations of other libraries") != NULL);
	stp_reqs_free(&r);
	unlink(path);
}

/* `loss = f(x)` in a loop: each iteration's loss is made before the last
 * one is let go, so two are live at once.  The request is kept for the
 * whole iteration and gets a spare request of its size (STP_REQ_SPARE),
 * which the plan places apart and the plan file keeps.  Without it, on an
 * H100, libstalloc moved the new loss onto other entries' ranges in every
 * iteration: 34 fallbacks, peak reserved 1.088 x the pool. */
static void test_outlives_iteration(const char *path)
{
	char err[256];
	mk m;
	if (mk_open(&m, path, 0, 0x555500002000ull) < 0)
		return;
	uint64_t loss_ip = 0x555500003000ull;
	m.stacks[1] = stp_writer_stack(m.w, &loss_ip, 1);
	uint64_t loss = 0;
	for (int it = 0; it < 4; it++) {
		mk_mark(&m, STP_MARK_ITER_BEGIN, NULL, it);
		mk_alloc(&m, 0x10000, 65536, 0); /* activation */
		uint64_t nl = 0x20000 + (uint64_t)(it & 1) * 0x1000;
		mk_alloc(&m, nl, 4096, 1);       /* the new loss */
		if (loss)
			mk_free(&m, loss);       /* the old one, after */
		loss = nl;
		mk_free(&m, 0x10000);
		mk_mark(&m, STP_MARK_ITER_END, NULL, it);
	}
	CHECK(stp_writer_close(m.w, STP_END_EXIT, 0) == 0);
	stp_window w;
	stp_window_init(&w);
	stp_reqs r;
	CHECK(stp_reqs_from_trace(path, &w, &r, err, sizeof err) == 0);
	printf("outlives: %s\n", stp_reqs_str(&r, r.notes));
	CHECK(strstr(stp_reqs_str(&r, r.notes), "1 outlive the iteration") != NULL);
	CHECK(strstr(stp_reqs_str(&r, r.notes), "without a partner") == NULL);
	size_t whole = 0, spare = 0, stat = 0;
	for (size_t i = 0; i < r.n; i++) {
		const stp_req *q = &r.req[i];
		if (q->flags & STP_REQ_SPARE) {
			spare++;
			CHECK_EQ_U(q->size, 4096);
			CHECK(q->t_start == q->t_end);
		} else if (q->size == 4096) {
			whole++;
			CHECK(q->t_start == q->t_end);
		} else {
			stat++;
		}
	}
	CHECK_EQ_U(whole, 1);
	CHECK_EQ_U(spare, 1);
	CHECK_EQ_U(stat, 1);
	stp_plan_opts o;
	stp_plan_opts_init(&o);
	o.align = 512;
	stp_plan p, p2;
	CHECK(stp_plan_build(&r, &o, &p, err, sizeof err) == 0);
	CHECK(stp_plan_verify(&r, &p, err, sizeof err) == 0);
	const char *pp = check_tmp("outlives.plan");
	CHECK(stp_plan_write(pp, &r, &p, err, sizeof err) == 0);
	stp_reqs r2;
	CHECK(stp_plan_read(pp, &r2, &p2, err, sizeof err) == 0);
	size_t spare2 = 0;
	uint64_t off[2] = {0, 0};
	for (size_t i = 0; i < r2.n; i++)
		if (r2.req[i].size == 4096)
			off[!!(r2.req[i].flags & STP_REQ_SPARE)] = p2.offset[i], spare2 += !!(r2.req[i].flags & STP_REQ_SPARE);
	CHECK_EQ_U(spare2, 1);
	CHECK(off[0] != off[1]);
	unlink(pp);
	stp_plan_free(&p2);
	stp_reqs_free(&r2);
	stp_plan_free(&p);
	stp_reqs_free(&r);
}

int main(void)
{
	const char *path = check_tmp("t.stp");
	mk_opts mo = {4, 6, 3, 1, 1, 1, 0};
	CHECK(mk_trace(path, &mo) == 0);
	stp_window w;
	stp_window_init(&w);
	stp_reqs r;
	char err[512];
	CHECK(stp_reqs_from_trace(path, &w, &r, err, sizeof err) == 0);
	printf("notes: %s\n", stp_reqs_str(&r, r.notes));
	CHECK_EQ_I(r.iteration, 3);
	CHECK(r.device == 1);
	size_t pers = 0, wraps = 0, dyn = 0, stat = 0, vary = 0;
	uint64_t site_l0 = 0;
	int same_site = 1;
	for (size_t i = 0; i < r.n; i++) {
		const stp_req *q = &r.req[i];
		vary += (q->flags & STP_REQ_VARYING) != 0;
		if (q->flags & STP_REQ_PERSISTENT)
			pers++;
		else if (q->flags & STP_REQ_DYNAMIC)
			dyn++;
		else if (q->t_end <= q->t_start)
			wraps++;
		else
			stat++;
		/* activations of even layers share a call site (site 2) and size */
		if (!(q->flags & (STP_REQ_PERSISTENT | STP_REQ_DYNAMIC)) && q->size == 65536) {
			if (!site_l0)
				site_l0 = q->callsite;
			same_site &= q->callsite == site_l0;
		}
	}
	/* 6 weights; per iteration: batch, 3 mb x (6 act + 6 transient + 1 varying),
	 * 3 mb x 6 grads, optimizer temp, loss; the varying ones are planned at
	 * the largest size seen at their place in iterations 1-3 (4096 x 5, 5
	 * and 4), in iteration 3, the one with the most bytes live */
	CHECK_EQ_U(pers, 6);
	CHECK_EQ_U(wraps, 1);
	CHECK_EQ_U(dyn, 0);
	CHECK_EQ_U(vary, 3);
	for (size_t i = 0, k = 0; i < r.n; i++)
		if (r.req[i].flags & STP_REQ_VARYING)
			CHECK_EQ_U(r.req[i].size, 4096 * (uint64_t)(k++ < 2 ? 5 : 4));
	CHECK_EQ_U(stat, 1 + 3 * 13 + 18 + 1);
	CHECK(r.shapes_vary);
	CHECK(same_site && site_l0);
	/* phases: 3 forward, 3 backward, optimizer; layers: 6 x 3 x 2 */
	CHECK_EQ_U(r.nphases, 1 + 7);
	CHECK_EQ_U(r.nlayers, 1 + 36);
	CHECK_STR(stp_reqs_str(&r, r.phases[1].name), "forward");
	/* activations start in a forward phase and end in a backward one */
	for (size_t i = 0; i < r.n; i++)
		if (r.req[i].size == 65536 && !(r.req[i].flags & STP_REQ_PERSISTENT)) {
			CHECK_STR(stp_reqs_str(&r, r.phases[r.req[i].phase_start].name), "forward");
			CHECK_STR(stp_reqs_str(&r, r.phases[r.req[i].phase_end].name), "backward");
			CHECK(r.req[i].layer_start && r.req[i].layer_end);
		}
	plan_and_verify(&r, 1.01);
	stp_reqs_free(&r);
	/* STAlloc's way: the varying ones dynamic, with reusable space */
	w.detect_varying = STP_VARYING_DYNAMIC;
	CHECK(stp_reqs_from_trace(path, &w, &r, err, sizeof err) == 0);
	size_t ndyn = 0;
	for (size_t i = 0; i < r.n; i++)
		ndyn += (r.req[i].flags & STP_REQ_DYNAMIC) != 0;
	CHECK_EQ_U(ndyn, 3);
	plan_and_verify(&r, 1.01);
	stp_reqs_free(&r);
	w.detect_varying = STP_VARYING_MAX;

	/* a chosen iteration, and one that does not exist */
	w.iteration = 1;
	CHECK(stp_reqs_from_trace(path, &w, &r, err, sizeof err) == 0);
	CHECK_EQ_I(r.iteration, 1);
	uint64_t b1 = r.begin_seq, e1 = r.end_seq;
	stp_reqs_free(&r);
	w.iteration = 17;
	CHECK(stp_reqs_from_trace(path, &w, &r, err, sizeof err) < 0);
	CHECK(strstr(err, "no complete iteration 17") != NULL);

	/* the detector's window gives the same requests as the markers */
	stp_window_init(&w);
	w.use_seq = 1;
	w.begin_seq = b1;
	w.end_seq = e1;
	CHECK(stp_reqs_from_trace(path, &w, &r, err, sizeof err) == 0);
	size_t n_seq = r.n;
	stp_reqs_free(&r);
	stp_window_init(&w);
	w.iteration = 1;
	CHECK(stp_reqs_from_trace(path, &w, &r, err, sizeof err) == 0);
	CHECK_EQ_U(n_seq, r.n);
	stp_reqs_free(&r);

	/* detector cuts instead of phase markers */
	stp_window_init(&w);
	w.use_seq = 1;
	w.begin_seq = b1;
	w.end_seq = e1;
	stp_phase_cut cuts[2] = {{b1, b1 + (e1 - b1) / 2, "first-half", 0}, {b1 + (e1 - b1) / 2, e1, "second-half", 0}};
	w.cuts = cuts;
	w.ncuts = 2;
	CHECK(stp_reqs_from_trace(path, &w, &r, err, sizeof err) == 0);
	CHECK_EQ_U(r.nphases, 3);
	CHECK_STR(stp_reqs_str(&r, r.phases[2].name), "second-half");
	plan_and_verify(&r, 1.01);
	stp_reqs_free(&r);

	/* no markers: one iteration, said so */
	mk_opts nm = {2, 3, 2, 0, 0, 0, 0};
	CHECK(mk_trace(path, &nm) == 0);
	stp_window_init(&w);
	CHECK(stp_reqs_from_trace(path, &w, &r, err, sizeof err) == 0);
	CHECK(strstr(stp_reqs_str(&r, r.notes), "no iteration markers") != NULL);
	CHECK(r.device == 0);
	plan_and_verify(&r, 1.05);
	stp_reqs_free(&r);

	/* not a trace */
	FILE *f = fopen(path, "w");
	fputs("hello", f);
	fclose(f);
	CHECK(stp_reqs_from_trace(path, &w, &r, err, sizeof err) < 0);
	unlink(path);
	test_device_tensors_only(path);
	test_outlives_iteration(path);
	return check_done();
}
