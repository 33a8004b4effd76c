/*
 * test_detector.c - the detector on crafted traces with exact answers:
 * counts, peak and where it falls, classes per call site, the steady
 * state, a trace cut short.
 */
#include "check.h"
#include "checked_run.h"
#include "scenarios.h"
#include "stprof/detector.h"

static stp_det *run(const char *path, const stp_det_options *o)
{
	char err[512];
	stp_det *d = checked_det_run(path, o, err, sizeof err);
	if (!d)
		fprintf(stderr, "stp_det_run: %s\n", err);
	return d;
}

/* every call site of d, expanded (stp_det_site_get) into one static array,
 * refilled on each call so pointers into it compare by site */
static stp_det_site g_sites[4096];
static const stp_det_site *sites_of(stp_det *d)
{
	const stp_det_result *r = stp_det_result_of(d);
	for (uint32_t i = 0; i < r->nsites && i < 4096; i++)
		stp_det_site_get(d, i, &g_sites[i]);
	return g_sites;
}

/* the site whose call path starts at offset off of /bin/prog */
static const stp_det_site *site_at(stp_det *d, uint64_t off)
{
	const stp_det_result *r = stp_det_result_of(d);
	for (uint32_t i = 0; i < r->nsites; i++) {
		stp_det_frame f;
		if (stp_det_site_frames(d, i, &f, 1) == 1 && f.offset == TG_BASE + off)
			return &sites_of(d)[i];
	}
	return NULL;
}

static void test_train(void)
{
	const char *path = check_tmp("train.stp");
	tg g;
	CHECK(tg_open(&g, path) == 0);
	scenario_train(&g, 0);
	stp_det *d = run(path, NULL);
	CHECK(d != NULL);
	if (!d)
		return;
	const stp_det_result *r = stp_det_result_of(d);
	CHECK(r->whole);
	CHECK(r->error == NULL);
	CHECK_EQ_U(r->nspaces, 1);
	CHECK_EQ_U(r->spaces[0].allocs, 56);
	CHECK_EQ_U(r->spaces[0].frees, 51);
	CHECK_EQ_U(r->spaces[0].live_objects_end, 5);
	CHECK_EQ_U(r->spaces[0].live_bytes_end, 320);
	CHECK_EQ_U(r->spaces[0].peak_bytes, 1220320);
	CHECK_EQ_U(r->spaces[0].peak_objects, 11);
	CHECK_EQ_I(r->primary, 0);
	CHECK_EQ_U(r->timeline.niterations, 5);
	CHECK_EQ_U(r->timeline.iter_source, STP_DET_SRC_MARKERS);
	CHECK_EQ_U(r->timeline.phase_source, STP_DET_SRC_MARKERS);
	CHECK_EQ_U(r->timeline.nphases, 15);
	CHECK_EQ_I(r->peak_iteration, 4);
	CHECK(r->peak_phase >= 0 && !strcmp(r->timeline.phases[r->peak_phase].name, "forward"));
	CHECK_EQ_I(r->timeline.steady, 1);
	CHECK_EQ_U(r->class_objects[STP_CLASS_PERSISTENT], 1);
	CHECK_EQ_U(r->class_objects[STP_CLASS_SCOPED], 25);
	CHECK_EQ_U(r->class_objects[STP_CLASS_TRANSIENT], 25);
	CHECK_EQ_U(r->class_objects[STP_CLASS_LEAKED], 5);
	CHECK_EQ_U(r->class_objects[STP_CLASS_INIT_ONLY], 0);
	CHECK_EQ_U(r->nsites, 5);
	/* sites sorted by bytes live at the peak */
	CHECK_EQ_U(sites_of(d)[0].peak_bytes, 1000000);
	CHECK_EQ_U(sites_of(d)[1].peak_bytes, 200000);
	const stp_det_site *w = site_at(d, 0x100), *a = site_at(d, 0x200), *t = site_at(d, 0x300), *l = site_at(d, 0x400),
	                   *lf = site_at(d, 0x500);
	CHECK(w && a && t && l && lf);
	if (w && a && t && l && lf) {
		CHECK_EQ_U(w->dominant, STP_CLASS_PERSISTENT);
		CHECK_EQ_U(a->dominant, STP_CLASS_SCOPED);
		CHECK_EQ_U(a->class_objects[STP_CLASS_SCOPED], 20);
		CHECK_EQ_U(t->class_objects[STP_CLASS_TRANSIENT], 25);
		CHECK_EQ_U(l->class_objects[STP_CLASS_LEAKED], 5);
		CHECK_EQ_U(l->end_objects, 5);
		CHECK_EQ_U(lf->class_objects[STP_CLASS_SCOPED], 5);
		CHECK_EQ_U(a->peak_objects, 4);
		/* lifetimes: the weights live 140+ events, the temps one event */
		CHECK_EQ_U(t->life_logical[1], 25);
		CHECK_EQ_U(l->life_time[STP_DET_TIME_BUCKETS - 1], 5);
	}
	/* the leak is a finding with its call site */
	int leak = 0;
	for (uint32_t i = 0; i < r->nfindings; i++)
		if (r->findings[i].pattern == STP_PAT_LEAK && &sites_of(d)[r->findings[i].site] == l) {
			leak = 1;
			CHECK_EQ_U(r->findings[i].objects, 5);
			CHECK_EQ_U(r->findings[i].bytes, 320);
		}
	CHECK(leak);
	CHECK(!r->pattern_available[STP_PAT_EARLY_ALLOC]);
	CHECK(r->pattern_available[STP_PAT_LEAK]);
	stp_det_free(d);
	remove(path);
}

static void test_train_cut(void)
{
	const char *path = check_tmp("train-cut.stp");
	tg g;
	CHECK(tg_open(&g, path) == 0);
	scenario_train(&g, 1);
	stp_det *d = run(path, NULL);
	CHECK(d != NULL);
	if (!d)
		return;
	const stp_det_result *r = stp_det_result_of(d);
	CHECK(!r->whole);
	CHECK(r->error == NULL);
	CHECK_EQ_U(r->timeline.niterations, 5);
	/* live at the end: weights (persistent), 5 leaks (4 complete iterations
	 * of them: a leaky site), the late buffer of iteration 4 (live-at-end) */
	CHECK_EQ_U(r->spaces[0].live_objects_end, 7);
	CHECK_EQ_U(r->class_objects[STP_CLASS_PERSISTENT], 1);
	CHECK_EQ_U(r->class_objects[STP_CLASS_LEAKED], 5);
	CHECK_EQ_U(r->class_objects[STP_CLASS_LIVE_AT_END], 1);
	CHECK_EQ_I(r->timeline.steady, 1);
	stp_det_free(d);
	remove(path);
}

static const stp_det_finding *finding(stp_det *d, stp_det_pattern p, uint64_t off)
{
	const stp_det_result *r = stp_det_result_of(d);
	const stp_det_site *s = site_at(d, off);
	for (uint32_t i = 0; s && i < r->nfindings; i++)
		if (r->findings[i].pattern == p && &sites_of(d)[r->findings[i].site] == s)
			return &r->findings[i];
	return NULL;
}

static unsigned count_findings(stp_det *d, stp_det_pattern p)
{
	const stp_det_result *r = stp_det_result_of(d);
	unsigned n = 0;
	for (uint32_t i = 0; i < r->nfindings; i++)
		n += r->findings[i].pattern == p;
	return n;
}

static void test_patterns(void)
{
	const char *path = check_tmp("patterns.stp");
	tg g;
	CHECK(tg_open(&g, path) == 0);
	scenario_patterns(&g);
	stp_det *d = run(path, NULL);
	CHECK(d != NULL);
	if (!d)
		return;
	const stp_det_result *r = stp_det_result_of(d);
	CHECK(r->have_accesses);
	for (unsigned p = 0; p < STP_PAT_COUNT; p++)
		CHECK(r->pattern_available[p] == (p != STP_PAT_LATE_FREE));
	const stp_det_finding *f;
	/* distances count the APIs in between (k1 .. k9: 11 while U lived);
	 * the levels are DrGPUM's */
	CHECK((f = finding(d, STP_PAT_UNUSED_ALLOC, 0x110)) && f->objects == 1 && f->max_distance == 11 &&
	      f->worst.levels == 18);
	CHECK((f = finding(d, STP_PAT_EARLY_ALLOC, 0x120)) && f->objects == 1 && f->max_distance == 2 &&
	      f->worst.levels == 4);
	CHECK((f = finding(d, STP_PAT_LATE_DEALLOC, 0x130)) && f->objects == 1 && f->max_distance == 1 &&
	      f->worst.levels == 2);
	/* A: k3's write overwritten by the memcpy, the memcpy's by the memset */
	CHECK((f = finding(d, STP_PAT_DEAD_WRITE, 0x120)) && f->objects == 1 && f->max_distance == 2);
	CHECK((f = finding(d, STP_PAT_TEMP_IDLE, 0x120)) && f->objects == 1 && f->max_distance == 2 &&
	      f->worst.levels == 2);
	CHECK((f = finding(d, STP_PAT_REDUNDANT_ALLOC, 0x140)) && f->max_distance == 1 && f->worst.levels == 3 &&
	      f->worst.other_site < r->nsites && &sites_of(d)[f->worst.other_site] == site_at(d, 0x120));
	CHECK((f = finding(d, STP_PAT_REDUNDANT_ALLOC, 0x120)) && f->max_distance == 1 && f->worst.levels == 1 &&
	      f->worst.other_site < r->nsites && &sites_of(d)[f->worst.other_site] == site_at(d, 0x130));
	CHECK((f = finding(d, STP_PAT_LEAK, 0x150)) && f->objects == 1 && f->bytes == 64);
	CHECK_EQ_U(count_findings(d, STP_PAT_EARLY_ALLOC), 1);
	CHECK_EQ_U(count_findings(d, STP_PAT_LATE_DEALLOC), 1);
	CHECK_EQ_U(count_findings(d, STP_PAT_UNUSED_ALLOC), 1);
	CHECK_EQ_U(count_findings(d, STP_PAT_DEAD_WRITE), 1);
	CHECK_EQ_U(count_findings(d, STP_PAT_TEMP_IDLE), 1);
	CHECK_EQ_U(count_findings(d, STP_PAT_REDUNDANT_ALLOC), 2);
	CHECK_EQ_U(count_findings(d, STP_PAT_LEAK), 1);
	CHECK_EQ_U(count_findings(d, STP_PAT_LATE_FREE), 0);
	/* thresholds: idleness needs 3 idle levels now, early 4 */
	stp_det_options o;
	stp_det_options_default(&o);
	o.idle_min_apis = 3;
	o.early_min_apis = 4;
	stp_det_free(d);
	d = run(path, &o);
	CHECK(d != NULL);
	if (d) {
		CHECK_EQ_U(count_findings(d, STP_PAT_TEMP_IDLE), 0);
		CHECK_EQ_U(count_findings(d, STP_PAT_EARLY_ALLOC), 0);
		stp_det_free(d);
	}
	remove(path);
}

static void test_streams(void)
{
	const char *path = check_tmp("streams.stp");
	tg g;
	CHECK(tg_open(&g, path) == 0);
	scenario_streams(&g);
	stp_det *d = run(path, NULL);
	CHECK(d != NULL);
	if (!d)
		return;
	const stp_det_finding *f;
	CHECK((f = finding(d, STP_PAT_EARLY_ALLOC, 0x170)) && f->max_distance == 3);
	CHECK(finding(d, STP_PAT_EARLY_ALLOC, 0x160) == NULL);
	CHECK_EQ_U(count_findings(d, STP_PAT_LATE_DEALLOC), 0);
	stp_det_free(d);
	remove(path);
}

/* Issue 28: a gap of one kernel (an op's output allocated before another
 * kernel of the op; a kernel between two uses) is no early allocation and
 * no temporary idleness, though DrGPUM's levels count the allocations and
 * frees between; an idle gap wasting 1/10000 of the same object's late
 * deallocation is kept apart (minor), not listed a second time. */
static void test_adjacent(void)
{
	const char *path = check_tmp("adjacent.stp");
	tg g;
	CHECK(tg_open(&g, path) == 0);
	scenario_adjacent(&g);
	stp_det *d = run(path, NULL);
	CHECK(d != NULL);
	if (!d)
		return;
	const stp_det_result *r = stp_det_result_of(d);
	CHECK_EQ_U(count_findings(d, STP_PAT_EARLY_ALLOC), 0);
	CHECK_EQ_U(count_findings(d, STP_PAT_TEMP_IDLE), 0);
	CHECK(finding(d, STP_PAT_LATE_DEALLOC, 0x190) != NULL);
	for (unsigned p = 0; p < STP_PAT_COUNT; p++)
		CHECK(finding(d, (stp_det_pattern)p, 0x180) == NULL);
	CHECK_EQ_U(r->expect_objects[STP_EXPECT_MINOR], 1);
	int minor_idle = 0;
	for (uint32_t i = 0; i < r->nexpected; i++)
		minor_idle += r->expected[i].pattern == STP_PAT_TEMP_IDLE && r->expected[i].expected == STP_EXPECT_MINOR &&
		              &sites_of(d)[r->expected[i].site] == site_at(d, 0x190);
	CHECK_EQ_I(minor_idle, 1);
	/* DrGPUM's own early threshold (1) finds E's early allocation again,
	 * distance 1; its idle gap of one kernel stays below --idle-apis 2 */
	stp_det_options o;
	stp_det_options_default(&o);
	o.early_min_apis = 1;
	stp_det_free(d);
	d = run(path, &o);
	CHECK(d != NULL);
	if (d) {
		const stp_det_finding *f = finding(d, STP_PAT_EARLY_ALLOC, 0x180);
		CHECK(f && f->max_distance == 1);
		CHECK_EQ_U(count_findings(d, STP_PAT_TEMP_IDLE), 0);
		stp_det_free(d);
	}
	remove(path);
}

/* Issue 28: kernels timed on a device running behind the host; the early
 * allocation's waste counts from when the allocation takes effect there. */
static void test_lagging(void)
{
	const char *path = check_tmp("lagging.stp");
	tg g;
	CHECK(tg_open(&g, path) == 0);
	scenario_lagging(&g);
	stp_det *d = run(path, NULL);
	CHECK(d != NULL);
	if (!d)
		return;
	const stp_det_finding *f = finding(d, STP_PAT_EARLY_ALLOC, 0x1c0);
	CHECK(f && f->max_distance == 2);
	CHECK(f && f->waste_byte_ns > 0.99 * (1 << 20) * 2e6 && f->waste_byte_ns < 1.01 * (1 << 20) * 2e6);
	CHECK(f && f->worst.until_ns - f->worst.at_ns == 2000000);
	stp_det_free(d);
	remove(path);
}

/* An activation the backward reads: its idle gap in the forward is kept
 * apart (it stays allocated for the backward anyway); one the backward
 * does not read is a finding. */
static void test_residual(void)
{
	const char *path = check_tmp("residual.stp");
	tg g;
	CHECK(tg_open(&g, path) == 0);
	scenario_residual(&g);
	stp_det *d = run(path, NULL);
	CHECK(d != NULL);
	if (!d)
		return;
	const stp_det_result *r = stp_det_result_of(d);
	const stp_det_finding *f = finding(d, STP_PAT_TEMP_IDLE, 0x1e0);
	CHECK(f && f->objects == 3 && f->max_distance == 5);
	CHECK(finding(d, STP_PAT_TEMP_IDLE, 0x1d0) == NULL);
	int apart = 0;
	for (uint32_t i = 0; i < r->nexpected; i++)
		apart += r->expected[i].pattern == STP_PAT_TEMP_IDLE && r->expected[i].expected == STP_EXPECT_PHASES &&
		         &sites_of(d)[r->expected[i].site] == site_at(d, 0x1d0);
	CHECK_EQ_I(apart, 1);
	stp_det_free(d);
	remove(path);
}

static void test_late_free(void)
{
	const char *path = check_tmp("late.stp");
	tg g;
	CHECK(tg_open(&g, path) == 0);
	scenario_train(&g, 0);
	stp_det *d = run(path, NULL);
	CHECK(d != NULL);
	if (!d)
		return;
	/* the +0x500 buffers: allocated in forward, freed after the optimizer;
	 * forward's other objects die within 2 segments (forward -> backward):
	 * rel 5, R 2, distance 3 */
	const stp_det_finding *f = finding(d, STP_PAT_LATE_FREE, 0x500);
	CHECK(f && f->objects == 5 && f->bytes == 100000 && f->max_distance == 3);
	CHECK_EQ_U(count_findings(d, STP_PAT_LATE_FREE), 1);
	CHECK(finding(d, STP_PAT_LEAK, 0x400) != NULL);
	stp_det_free(d);
	remove(path);
}

/* The report's header names the allocation wrappers that it hides from
 * every path: frames that most call sites share, but only when the top
 * sites go through them too (issue 11: the header named
 * c10::Dispatcher frames that the top sites of a PyTorch run do not pass). */
static void wrappers_case(int top_through_wrapper)
{
	const char *path = check_tmp("wrap.stp");
	tg g;
	CHECK(tg_open(&g, path) == 0);
	for (uint64_t i = 0; i < 20; i++) /* 20 small sites through the wrapper at 0x100 */
		tg_alloc(&g, 0x10000 + i * 0x1000, 1000, tg_stack(&g, 0x100, 0x1000 + i * 0x10, 0x9000));
	/* the top site by bytes, through the wrapper or not */
	tg_alloc(&g, 0x800000, 1 << 20, tg_stack(&g, top_through_wrapper ? 0x100 : 0x200, 0x300, 0x9000));
	tg_free(&g, 0x800000);
	for (uint64_t i = 0; i < 20; i++)
		tg_free(&g, 0x10000 + i * 0x1000);
	CHECK(tg_close(&g) == 0);
	stp_det *d = run(path, NULL);
	CHECK(d != NULL);
	if (!d)
		return;
	stp_det_frame f[8];
	uint32_t n = stp_det_wrappers(d, f, 8);
	if (top_through_wrapper) {
		CHECK_EQ_U(n, 1);
		CHECK(n == 1 && f[0].offset == TG_BASE + 0x100);
	} else {
		CHECK_EQ_U(n, 0); /* 20 of 21 sites share it, the top one does not */
	}
	stp_det_free(d);
}

static void test_wrappers(void)
{
	wrappers_case(0);
	wrappers_case(1);
}

/* Kernels' write-only ranges (--accesses=exact) make dead writes like
 * copies and sets do; framework ops' do not (their modes are per tensor
 * argument).  W: k1 writes, k2 writes (k1's write dead), k3 reads, k4
 * writes, freed (k4's write dead: never read); P: op1 writes, op2 writes
 * (not counted). */
static void test_kernel_dead_write(void)
{
	const char *path = check_tmp("kdead.stp");
	tg g;
	CHECK(tg_open(&g, path) == 0);
	uint32_t sw = tg_stack(&g, 0x180, 0x900, 0), sp = tg_stack(&g, 0x190, 0x900, 0);
	const uint64_t W = 0x9000000, P = 0x9100000;
	stp_range ww = {W, 512, STP_ACCESS_WRITE}, rw = {W + 8, 4, STP_ACCESS_READ}, wp = {P, 512, STP_ACCESS_WRITE};
	tg_alloc_k(&g, W, 512, sw, STP_MEM_DEVICE, 0, 0);
	tg_alloc_k(&g, P, 512, sp, STP_MEM_DEVICE, 0, 0);
	tg_api(&g, STP_API_KERNEL, "k1", 0, &ww, 1);
	tg_api(&g, STP_API_KERNEL, "k2", 0, &ww, 1);
	tg_api(&g, STP_API_KERNEL, "k3", 0, &rw, 1);
	tg_api(&g, STP_API_KERNEL, "k4", 0, &ww, 1);
	tg_api(&g, STP_API_OP, "op1", 0, &wp, 1);
	tg_api(&g, STP_API_OP, "op2", 0, &wp, 1);
	tg_free_k(&g, W, 0, 0);
	tg_free_k(&g, P, 0, 0);
	tg_close(&g);
	stp_det *d = run(path, NULL);
	CHECK(d != NULL);
	if (!d)
		return;
	const stp_det_finding *f;
	CHECK((f = finding(d, STP_PAT_DEAD_WRITE, 0x180)) && f->objects == 1 && f->max_distance == 2);
	CHECK(finding(d, STP_PAT_DEAD_WRITE, 0x190) == NULL);
	stp_det_free(d);
	remove(path);
}

/* DrGPUM's intra-object patterns from kernels' parts of objects: before a
 * training loop, 0x650 is taken in quarters by 4 kernels (structured
 * access), 0x660 written whole, its first sixteenth then read by 10
 * kernels and all of it once more (non-uniform frequency: 12 against 2);
 * 0x670 in halves by 2 kernels only, 0x680 in quarters with one overlap:
 * neither.  Then 100 iterations of the loop's own shapes, none a finding:
 * an embedding table (0x610: one 64th gathered, all of it updated), a
 * cache filled in order and read up to the newest entry (0x620), a fused
 * weight read in thirds and updated whole (0x630). */
static void test_intra_object(void)
{
	const char *path = check_tmp("intra.stp");
	tg g;
	CHECK(tg_open(&g, path) == 0);
	const uint64_t M = 1 << 20, SL = 0xa000000, HOT = 0xa100000, TWO = 0xa200000, OV = 0xa300000,
	               EMB = 0xa400000, KV = 0xa500000, QKV = 0xa600000;
	uint32_t ssl = tg_stack(&g, 0x650, 0x900, 0), shot = tg_stack(&g, 0x660, 0x900, 0),
	         stwo = tg_stack(&g, 0x670, 0x900, 0), sov = tg_stack(&g, 0x680, 0x900, 0),
	         semb = tg_stack(&g, 0x610, 0x900, 0), skv = tg_stack(&g, 0x620, 0x900, 0),
	         sqkv = tg_stack(&g, 0x630, 0x900, 0);
	const uint32_t RW = STP_ACCESS_READ | STP_ACCESS_WRITE;
	tg_alloc_k(&g, SL, M, ssl, STP_MEM_DEVICE, 0, 0);
	for (uint64_t k = 0; k < 4; k++) {
		stp_range r = {SL + k * M / 4, M / 4, RW};
		tg_api(&g, STP_API_KERNEL, "slice", 0, &r, 1);
	}
	tg_free_k(&g, SL, 0, 0);
	tg_alloc_k(&g, HOT, M, shot, STP_MEM_DEVICE, 0, 0);
	stp_range hw = {HOT, M, STP_ACCESS_WRITE}, hr = {HOT, M / 16, STP_ACCESS_READ}, ha = {HOT, M, STP_ACCESS_READ};
	tg_api(&g, STP_API_KERNEL, "init", 0, &hw, 1);
	for (int k = 0; k < 10; k++)
		tg_api(&g, STP_API_KERNEL, "lookup", 0, &hr, 1);
	tg_api(&g, STP_API_KERNEL, "all", 0, &ha, 1);
	tg_free_k(&g, HOT, 0, 0);
	tg_alloc_k(&g, TWO, M, stwo, STP_MEM_DEVICE, 0, 0);
	for (uint64_t k = 0; k < 2; k++) {
		stp_range r = {TWO + k * M / 2, M / 2, RW};
		tg_api(&g, STP_API_KERNEL, "half", 0, &r, 1);
	}
	tg_free_k(&g, TWO, 0, 0);
	tg_alloc_k(&g, OV, M, sov, STP_MEM_DEVICE, 0, 0);
	for (uint64_t k = 0; k < 4; k++) {
		stp_range r = {OV + k * M / 4 - (k == 3 ? 4096 : 0), M / 4, RW};
		tg_api(&g, STP_API_KERNEL, "slice", 0, &r, 1);
	}
	tg_free_k(&g, OV, 0, 0);
	tg_alloc_k(&g, EMB, M, semb, STP_MEM_DEVICE, 0, 0);
	tg_alloc_k(&g, KV, M, skv, STP_MEM_DEVICE, 0, 0);
	tg_alloc_k(&g, QKV, 3 * M / 4, sqkv, STP_MEM_DEVICE, 0, 0);
	for (int it = 0; it < 100; it++) {
		tg_mark(&g, STP_MARK_ITER_BEGIN, NULL, it);
		stp_range gather = {EMB + (uint64_t)(it * 7 % 64) * M / 64, M / 64, STP_ACCESS_READ};
		stp_range upd = {EMB, M, RW};
		tg_api(&g, STP_API_KERNEL, "gather", 0, &gather, 1);
		uint64_t pos = (uint64_t)(it % 64);
		stp_range kw = {KV + pos * M / 64, M / 64, STP_ACCESS_WRITE}, kr = {KV, (pos + 1) * M / 64, STP_ACCESS_READ};
		tg_api(&g, STP_API_KERNEL, "cache_put", 0, &kw, 1);
		tg_api(&g, STP_API_KERNEL, "attend", 0, &kr, 1);
		for (uint64_t k = 0; k < 3; k++) {
			stp_range q = {QKV + k * M / 4, M / 4, STP_ACCESS_READ};
			tg_api(&g, STP_API_KERNEL, "proj", 0, &q, 1);
		}
		stp_range qu = {QKV, 3 * M / 4, RW};
		tg_api(&g, STP_API_KERNEL, "sgd", 0, &qu, 1);
		tg_api(&g, STP_API_KERNEL, "adam", 0, &upd, 1);
	}
	tg_free_k(&g, QKV, 0, 0);
	tg_free_k(&g, KV, 0, 0);
	tg_free_k(&g, EMB, 0, 0);
	tg_close(&g);
	stp_det *d = run(path, NULL);
	CHECK(d != NULL);
	if (!d)
		return;
	const stp_det_finding *f;
	CHECK((f = finding(d, STP_PAT_STRUCTURED, 0x650)) && f->objects == 1 && f->worst.distance == 4 &&
	      f->worst.used_bytes == M / 4 && f->worst.used_lo == 0 && f->worst.used_hi == M);
	CHECK((f = finding(d, STP_PAT_NONUNIFORM, 0x660)) && f->worst.hot_apis == 12 && f->worst.cold_apis == 2.0 &&
	      f->worst.used_lo == 0 && f->worst.used_hi == M / 16 && f->worst.used_bytes == M / 16);
	CHECK_EQ_U(count_findings(d, STP_PAT_STRUCTURED), 1);
	CHECK_EQ_U(count_findings(d, STP_PAT_NONUNIFORM), 1);
	const stp_det_result *r = stp_det_result_of(d);
	for (uint32_t i = 0; i < r->nexpected; i++)
		CHECK(r->expected[i].pattern != STP_PAT_STRUCTURED && r->expected[i].pattern != STP_PAT_NONUNIFORM);
	CHECK(r->pattern_available[STP_PAT_STRUCTURED] && r->pattern_available[STP_PAT_NONUNIFORM]);
	stp_det_free(d);
	remove(path);
}

/* 200 iterations, each with a transient object (0x200); 0x300 keeps one
 * object every 10 iterations (a slow leak), 0x400 one every iteration from
 * iteration 140 (a late growth), 0x500 keeps the last 50 (a window: frees
 * the older ones); all three freed after the loop (a list emptied at exit),
 * 0x300's leak also when never freed. */
static void slow_leak_trace(const char *path, int free_at_exit)
{
	tg g;
	CHECK(tg_open(&g, path) == 0);
	uint32_t st = tg_stack(&g, 0x200, 0, 0), s3 = tg_stack(&g, 0x300, 0, 0), s4 = tg_stack(&g, 0x400, 0, 0),
	         s5 = tg_stack(&g, 0x500, 0, 0);
	for (int it = 0; it < 200; it++) {
		tg_mark(&g, STP_MARK_ITER_BEGIN, NULL, it);
		tg_alloc(&g, 0x10000, 4096, st);
		tg_free(&g, 0x10000);
		if (it % 10 == 9)
			tg_alloc(&g, 0x100000 + (uint64_t)it * 0x1000, 4096, s3);
		if (it >= 140)
			tg_alloc(&g, 0x800000 + (uint64_t)it * 0x1000, 4096, s4);
		tg_alloc(&g, 0x1000000 + (uint64_t)it * 0x1000, 4096, s5);
		if (it >= 50)
			tg_free(&g, 0x1000000 + (uint64_t)(it - 50) * 0x1000);
		tg_mark(&g, STP_MARK_ITER_END, NULL, it);
	}
	for (int it = 0; it < 200; it++) {
		if (it % 10 == 9 && free_at_exit)
			tg_free(&g, 0x100000 + (uint64_t)it * 0x1000);
		if (it >= 140)
			tg_free(&g, 0x800000 + (uint64_t)it * 0x1000);
		if (it >= 150)
			tg_free(&g, 0x1000000 + (uint64_t)it * 0x1000);
	}
	tg_close(&g);
}

static void test_slow_leak(void)
{
	for (int at_exit = 1; at_exit >= 0; at_exit--) {
		const char *path = check_tmp("slow-leak.stp");
		slow_leak_trace(path, at_exit);
		stp_det *d = run(path, NULL);
		CHECK(d != NULL);
		if (!d)
			return;
		const stp_det_finding *f;
		CHECK((f = finding(d, STP_PAT_LEAK, 0x300)) != NULL);
		if (f) {
			CHECK_EQ_U(f->objects, 20);
			CHECK_EQ_U(f->leak_iters, 20);
			CHECK_EQ_I(f->leak_first_iter, 9);
			CHECK_EQ_I(f->leak_last_iter, 199);
			CHECK_EQ_U(f->leak_freed_after, at_exit ? 20 : 0);
		}
		CHECK((f = finding(d, STP_PAT_LEAK, 0x400)) != NULL);
		if (f) {
			CHECK_EQ_U(f->objects, 60);
			CHECK_EQ_I(f->leak_first_iter, 140);
		}
		CHECK(finding(d, STP_PAT_LEAK, 0x500) == NULL); /* the window */
		CHECK(finding(d, STP_PAT_LEAK, 0x200) == NULL);
		stp_det_free(d);
		remove(path);
	}
}

int main(void)
{
	test_slow_leak();
	test_train();
	test_train_cut();
	test_patterns();
	test_streams();
	test_adjacent();
	test_lagging();
	test_residual();
	test_late_free();
	test_wrappers();
	test_kernel_dead_write();
	test_intra_object();
	return check_done();
}
