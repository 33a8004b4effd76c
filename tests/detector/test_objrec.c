/*
 * test_objrec.c - what the detector keeps per object for the HTML viewer
 * (opt.keep_objects 2, keep_accesses) and the level of detail it shares
 * with the Perfetto exporter (stp_det_select):
 *   - each object's end is the event that ended it: its FREE, or the ALLOC
 *     that reused its address (a lost free); never freed: UINT64_MAX;
 *   - its module is the innermost module open when it was made;
 *   - its accesses are the API events whose ranges touch it, interior
 *     ranges included, at most keep_accesses of them, all counted;
 *   - stp_det_select keeps the objects with the largest bytes x lifetime,
 *     a finding's object before any other, only eligible ones, and the
 *     window's part of a lifetime.
 */
#include "check.h"
#include "tracegen.h"
#include "stprof/detector.h"

static uint64_t seqs[64];
static unsigned nseqs;

/* The seqs of the ALLOC and FREE events, in order. */
static void read_seqs(const char *path)
{
	char err[256];
	stp_reader *r = stp_reader_open(path, err, sizeof err);
	CHECK(r != NULL);
	stp_event ev;
	nseqs = 0;
	while (r && stp_reader_next(r, &ev) > 0)
		if ((ev.type == STP_EV_ALLOC || ev.type == STP_EV_FREE) && nseqs < 64)
			seqs[nseqs++] = ev.seq;
	if (r)
		stp_reader_close(r);
}

static void records(void)
{
	const char *path = check_tmp("objrec.stp");
	tg g;
	CHECK(tg_open(&g, path) == 0);
	uint32_t s = tg_stack(&g, 0x10, 0x20, 0);
	tg_mark(&g, STP_MARK_MODULE_ENTER, "net", 0);
	tg_mark(&g, STP_MARK_MODULE_ENTER, "net.a", 0);
	tg_alloc_k(&g, 0x1000, 64, s, STP_MEM_DEVICE, 0, 0);  /* X: seqs[0] */
	tg_mark(&g, STP_MARK_MODULE_EXIT, "net.a", 0);
	tg_alloc_k(&g, 0x2000, 128, s, STP_MEM_DEVICE, 0, 0); /* Y: seqs[1], in "net" */
	tg_mark(&g, STP_MARK_MODULE_EXIT, "net", 0);
	tg_free_k(&g, 0x1000, 0, 0);                          /* X ends: seqs[2] */
	tg_alloc_k(&g, 0x2000, 32, s, STP_MEM_DEVICE, 0, 0);  /* Z at Y's address: seqs[3] ends Y */
	stp_range r1 = {0x2000 + 8, 4, STP_ACCESS_WRITE}, r2 = {0x1f00, 0x200, STP_ACCESS_READ};
	tg_api(&g, STP_API_KERNEL, "kern_a", 0, &r1, 1);
	tg_api(&g, STP_API_KERNEL, "kern_b", 0, &r2, 1);
	tg_api(&g, STP_API_KERNEL, "kern_c", 0, &r1, 1);
	tg_free_k(&g, 0x2000, 0, 0);                          /* Z ends: seqs[4] */
	tg_alloc_k(&g, 0x3000, 16, s, STP_MEM_DEVICE, 0, 0);  /* W, never freed: seqs[5] */
	CHECK(tg_close(&g) == 0);
	read_seqs(path);
	CHECK_EQ_U(nseqs, 6);

	char err[512];
	stp_det_options o;
	stp_det_options_default(&o);
	o.keep_objects = 2;
	o.keep_accesses = 2;
	stp_det *d = stp_det_run(path, &o, err, sizeof err);
	CHECK(d != NULL);
	if (!d)
		return;
	stp_det_object_rec x;
	CHECK(stp_det_object(d, seqs[0], &x) == 0);
	CHECK_EQ_U(x.end_seq, seqs[2]);
	CHECK_STR(x.module, "net.a");
	CHECK(stp_det_object(d, seqs[1], &x) == 0);
	CHECK_EQ_U(x.end_seq, seqs[3]);
	CHECK_STR(x.module, "net");
	CHECK(stp_det_object(d, seqs[3], &x) == 0);
	CHECK_EQ_U(x.end_seq, seqs[4]);
	CHECK(x.module == NULL);
	CHECK_EQ_U(x.accesses, 3);
	stp_det_access a[4];
	CHECK_EQ_U(stp_det_object_accesses(d, seqs[3], a, 4), 2); /* keep_accesses */
	CHECK_STR(a[0].name, "kern_a");
	CHECK_EQ_U(a[0].mode, STP_ACCESS_WRITE);
	CHECK_EQ_U(a[0].kind, STP_API_KERNEL);
	CHECK_STR(a[1].name, "kern_b");
	CHECK_EQ_U(a[1].mode, STP_ACCESS_READ);
	CHECK(a[0].ns <= a[1].ns);
	CHECK(stp_det_object(d, seqs[5], &x) == 0);
	CHECK_EQ_U(x.end_seq, UINT64_MAX);
	CHECK(stp_det_object(d, seqs[2], &x) < 0); /* a FREE is no object */
	const stp_det_result *r = stp_det_result_of(d);
	stp_alloc_info dev = {.kind = STP_MEM_DEVICE, .device = 0}, host = {.kind = STP_MEM_HOST, .device = -1};
	CHECK(stp_det_alloc_space(d, &dev) == r->primary);
	CHECK(stp_det_alloc_space(d, &host) < 0);
	stp_det_free(d);
	/* keep_objects 1: classes only, no lifetimes */
	o.keep_objects = 1;
	d = stp_det_run(path, &o, err, sizeof err);
	CHECK(d && stp_det_object(d, seqs[0], &x) < 0 && stp_det_object_info(d, seqs[0], NULL) >= 0);
	stp_det_free(d);
	unlink(path);
}

/* ------------------------------------------------------------ selection */

static uint64_t finding_seq = UINT64_MAX;
static int has_finding(void *ctx, uint64_t seq)
{
	(void)ctx;
	return seq == finding_seq;
}
static int only_device(void *ctx, const stp_event *ev)
{
	(void)ctx;
	return ev->u.alloc.kind == STP_MEM_DEVICE;
}

static int picked(const uint64_t *bits, uint64_t nbits, uint64_t seq)
{
	return seq < nbits && (bits[seq / 64] >> (seq % 64) & 1);
}

static void selection(void)
{
	const char *path = check_tmp("select.stp");
	tg g;
	CHECK(tg_open(&g, path) == 0);
	g.step_ns = 1000;
	uint32_t s = tg_stack(&g, 0x10, 0, 0);
	tg_alloc_k(&g, 0x100, 1000, s, STP_MEM_DEVICE, 0, 0); /* A: long and large */
	tg_alloc_k(&g, 0x200, 10, s, STP_MEM_DEVICE, 0, 0);   /* B: long and small */
	tg_alloc(&g, 0x300, 5000, s);                         /* H: host, large */
	tg_alloc_k(&g, 0x400, 4000, s, STP_MEM_DEVICE, 0, 0); /* C: short and larger */
	tg_free_k(&g, 0x400, 0, 0);
	for (int i = 0; i < 20; i++)
		tg_mark(&g, STP_MARK_ANNOTATION, "tick", i);
	tg_free_k(&g, 0x100, 0, 0);
	tg_free_k(&g, 0x200, 0, 0);
	tg_free(&g, 0x300);
	CHECK(tg_close(&g) == 0);
	read_seqs(path);
	uint64_t A = seqs[0], B = seqs[1], H = seqs[2], C = seqs[3];
	char err[256];
	uint64_t *bits = NULL, nbits = 0;
	/* bytes x lifetime: A (1000 x 24 us) and H (5000 x 25 us) beat C (4000 x 1 us) */
	stp_det_select_opts o = {.n = 2};
	CHECK(stp_det_select(path, &o, &bits, &nbits, err, sizeof err) == 0);
	CHECK(picked(bits, nbits, A) && picked(bits, nbits, H) && !picked(bits, nbits, C) && !picked(bits, nbits, B));
	free(bits);
	/* only the device's: A and C */
	o.eligible = only_device;
	CHECK(stp_det_select(path, &o, &bits, &nbits, err, sizeof err) == 0);
	CHECK(picked(bits, nbits, A) && picked(bits, nbits, C) && !picked(bits, nbits, H));
	free(bits);
	/* by size: C (4000) and A (1000) */
	o.by_size = 1;
	CHECK(stp_det_select(path, &o, &bits, &nbits, err, sizeof err) == 0);
	CHECK(picked(bits, nbits, C) && picked(bits, nbits, A) && !picked(bits, nbits, B));
	free(bits);
	/* a finding's object comes first: B */
	finding_seq = B;
	o.has_finding = has_finding;
	CHECK(stp_det_select(path, &o, &bits, &nbits, err, sizeof err) == 0);
	CHECK(picked(bits, nbits, B) && picked(bits, nbits, C) && !picked(bits, nbits, A));
	free(bits);
	/* one device object: A over the whole trace; over a window around C,
	 * C (its whole life, 4000 B x 1 us) beats A (1000 B x 2 us of its life) */
	stp_det_select_opts w = {.n = 1, .eligible = only_device};
	CHECK(stp_det_select(path, &w, &bits, &nbits, err, sizeof err) == 0);
	CHECK(picked(bits, nbits, A) && !picked(bits, nbits, C));
	free(bits);
	w.has_window = 1;
	w.lo = 1000000000ull + 3500;
	w.hi = 1000000000ull + 5500;
	CHECK(stp_det_select(path, &w, &bits, &nbits, err, sizeof err) == 0);
	CHECK(picked(bits, nbits, C) && !picked(bits, nbits, A));
	free(bits);
	CHECK(stp_det_select("/nonexistent/x.stp", &o, &bits, &nbits, err, sizeof err) < 0 && bits == NULL);
	CHECK(strstr(err, "/nonexistent/x.stp") != NULL);
	unlink(path);
}

int main(void)
{
	records();
	selection();
	return check_done();
}
