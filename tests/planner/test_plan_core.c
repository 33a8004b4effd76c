/*
 * test_plan_core.c - the planner on request sets built in memory: lower
 * bound, instances whose optimum is known by construction, the cyclic cut,
 * the verifier catching bad plans, the plan file (its start-up placements
 * too) and the CSV format.
 * Every plan produced here goes through stp_plan_verify.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "stprof/plan.h"
#include "stprof/programkey.h"
#include "stprof/trace_codec.h"

static void add(stp_reqs *r, uint64_t size, uint64_t s, uint64_t e, uint32_t flags)
{
	stp_req q = {0};
	q.size = size;
	q.t_start = s;
	q.t_end = e;
	q.flags = flags;
	q.ordinal = (uint32_t)r->n;
	q.callsite = 0x1000 + r->n;
	CHECK(stp_reqs_add(r, &q) >= 0);
}

/* builds with algo, verifies, returns the pool (0 on failure) */
static uint64_t plan_ok(const stp_reqs *r, stp_plan_algo algo, stp_plan *out)
{
	stp_plan_opts o;
	stp_plan_opts_init(&o);
	o.algo = algo;
	stp_plan p;
	char err[512];
	int rc = stp_plan_build(r, &o, &p, err, sizeof err);
	CHECK(rc == 0);
	if (rc) {
		fprintf(stderr, "build: %s\n", err);
		return 0;
	}
	rc = stp_plan_verify(r, &p, err, sizeof err);
	CHECK(rc == 0);
	if (rc)
		fprintf(stderr, "verify: %s\n", err);
	uint64_t pool = p.pool;
	if (out)
		*out = p;
	else
		stp_plan_free(&p);
	return pool;
}

static void test_lower_bound(void)
{
	stp_reqs r;
	stp_reqs_init(&r);
	r.period = 10;
	add(&r, 100, 0, 5, 0);
	add(&r, 50, 5, 10, 0);  /* half-open: not live with the first */
	add(&r, 30, 2, 7, 0);
	add(&r, 7, 0, 0, STP_REQ_PERSISTENT);
	CHECK_EQ_U(stp_lower_bound(&r, 0), 137);
	/* a wrapping request counts at both ends */
	add(&r, 1000, 9, 1, 0);
	CHECK_EQ_U(stp_lower_bound(&r, 0), 1107);
	add(&r, 5000, 3, 4, STP_REQ_DYNAMIC);
	CHECK_EQ_U(stp_lower_bound(&r, 0), 1107);
	CHECK_EQ_U(stp_lower_bound(&r, 1), 5137);
	for (int a = 0; a < 3; a++) {
		uint64_t pool = plan_ok(&r, a, NULL);
		CHECK(pool >= 1107);
	}
	stp_reqs_free(&r);
}

/* same-size requests: Algorithm 1 is interval colouring, optimal */
static void test_homosize_optimal(void)
{
	stp_reqs r;
	stp_reqs_init(&r);
	r.period = 1000;
	uint64_t rng = 42;
	for (int i = 0; i < 500; i++) {
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		uint64_t s = (rng >> 33) % 990, len = 1 + (rng >> 13) % 40;
		add(&r, 256, s, s + len > 1000 ? 1000 : s + len, 0);
	}
	uint64_t lb = stp_lower_bound(&r, 0);
	CHECK_EQ_U(plan_ok(&r, STP_ALGO_STALLOC_ONLY, NULL), lb);
	CHECK_EQ_U(plan_ok(&r, STP_ALGO_STALLOC, NULL), lb);
	stp_reqs_free(&r);
}

/* forward/backward LIFO activations of 4 micro-batches, GPipe order, with
 * transients: the optimum is the lower bound */
static void test_phases(void)
{
	stp_reqs r;
	stp_reqs_init(&r);
	uint64_t t = 0;
	uint32_t ph[8];
	long fwd[4][6];
	for (int mb = 0; mb < 4; mb++) {
		ph[mb] = stp_reqs_add_phase(&r, "forward", mb, t, t);
		for (int l = 0; l < 6; l++) {
			stp_req q = {0};
			q.size = 1024 * (uint64_t)(1 + l % 3);
			q.t_start = t++;
			q.phase_start = ph[mb];
			q.ordinal = (uint32_t)r.n;
			fwd[mb][l] = stp_reqs_add(&r, &q);
			stp_req tr = q; /* a transient */
			tr.t_start = t++;
			tr.t_end = t++;
			tr.size = 512;
			tr.phase_end = ph[mb];
			tr.ordinal = (uint32_t)r.n;
			stp_reqs_add(&r, &tr);
		}
		r.phases[ph[mb]].t_end = t;
	}
	for (int mb = 0; mb < 4; mb++) {
		ph[4 + mb] = stp_reqs_add_phase(&r, "backward", mb, t, t);
		for (int l = 6; l-- > 0;) {
			stp_req tr = {0};
			tr.size = 2048;
			tr.t_start = t++;
			tr.t_end = t++;
			tr.phase_start = tr.phase_end = ph[4 + mb];
			tr.ordinal = (uint32_t)r.n;
			stp_reqs_add(&r, &tr);
			r.req[fwd[mb][l]].t_end = t++;
			r.req[fwd[mb][l]].phase_end = ph[4 + mb];
		}
		r.phases[ph[4 + mb]].t_end = t;
	}
	r.period = t;
	char err[256];
	CHECK(stp_reqs_check(&r, err, sizeof err) == 0);
	uint64_t lb = stp_lower_bound(&r, 0);
	stp_plan p;
	uint64_t pool = plan_ok(&r, STP_ALGO_STALLOC, &p);
	CHECK_EQ_U(pool, lb);
	CHECK_EQ_U(p.stats.phase_groups, 4);
	stp_plan_free(&p);
	stp_reqs_free(&r);
}

/* activations of phase 1 freed during phase 2 while gradients of phase 2
 * (kept until phase 3) are allocated: the groups (1,2) and (2,3) fuse */
static void test_fusion(void)
{
	stp_reqs r;
	stp_reqs_init(&r);
	uint32_t p1 = stp_reqs_add_phase(&r, "forward", 0, 0, 10);
	uint32_t p2 = stp_reqs_add_phase(&r, "backward", 0, 10, 30);
	uint32_t p3 = stp_reqs_add_phase(&r, "optimizer", 0, 30, 40);
	for (int k = 0; k < 8; k++) {
		stp_req a = {0};
		a.size = 1000;
		a.t_start = (uint64_t)k;          /* forward: allocated 0..7 */
		a.t_end = 10 + 2 * (uint64_t)(7 - k); /* backward: freed in reverse, 10..24 */
		a.phase_start = p1;
		a.phase_end = p2;
		a.ordinal = (uint32_t)r.n;
		stp_reqs_add(&r, &a);
		stp_req g = {0};
		g.size = 1000;
		g.t_start = 11 + 2 * (uint64_t)(7 - k); /* a gradient right after each free */
		g.t_end = 35;
		g.phase_start = p2;
		g.phase_end = p3;
		g.ordinal = (uint32_t)r.n;
		stp_reqs_add(&r, &g);
	}
	r.period = 40;
	stp_plan p;
	uint64_t pool = plan_ok(&r, STP_ALGO_STALLOC_ONLY, &p);
	CHECK_EQ_U(p.stats.phase_groups, 2);
	CHECK_EQ_U(p.stats.fused_groups, 1);
	CHECK_EQ_U(pool, stp_lower_bound(&r, 0)); /* 8 x 1000 + 1000: one gradient overlaps */
	stp_plan_free(&p);
	stp_plan_opts o;
	stp_plan_opts_init(&o);
	o.algo = STP_ALGO_STALLOC_ONLY;
	o.no_fusion = 1;
	char err[256];
	CHECK(stp_plan_build(&r, &o, &p, err, sizeof err) == 0);
	CHECK_EQ_U(p.stats.fused_groups, 0);
	CHECK(p.pool > pool); /* two stacked blocks */
	CHECK(stp_plan_verify(&r, &p, err, sizeof err) == 0);
	stp_plan_free(&p);
	stp_reqs_free(&r);
}

/* random guillotine tilings: the optimum is the width */
static void test_guillotine(void)
{
	for (uint64_t seed = 1; seed <= 20; seed++) {
		stp_reqs r;
		CHECK(stp_gen_guillotine(1 << 20, 10000, 50 + 20 * seed, seed, &r) == 0);
		CHECK_EQ_U(stp_lower_bound(&r, 0), 1 << 20);
		uint64_t a = plan_ok(&r, STP_ALGO_STALLOC, NULL);
		uint64_t g = plan_ok(&r, STP_ALGO_GREEDY, NULL);
		CHECK(a >= (1 << 20) && g >= (1 << 20));
		/* the generator's own placement (kept in callsite) is optimal and valid */
		stp_plan p = {0};
		p.n = r.n;
		p.align = 1;
		p.pool = 1 << 20;
		p.offset = malloc(r.n * sizeof *p.offset);
		for (size_t i = 0; i < r.n; i++)
			p.offset[i] = r.req[i].callsite;
		char err[512];
		CHECK(stp_plan_verify(&r, &p, err, sizeof err) == 0);
		stp_plan_free(&p);
		if (seed == 20)
			printf("guillotine n=%zu: stalloc %.3f, greedy %.3f x optimum\n", r.n, a / (double)(1 << 20),
			       g / (double)(1 << 20));
		stp_reqs_free(&r);
	}
}

/* requests that wrap around the iteration boundary */
static void test_cyclic(void)
{
	stp_reqs r;
	stp_reqs_init(&r);
	r.period = 10;
	add(&r, 100, 8, 2, 0);  /* wraps: live 8,9,0,1 */
	add(&r, 100, 1, 5, 0);  /* meets it at tick 1 */
	add(&r, 100, 3, 9, 0);  /* meets it at tick 8 */
	add(&r, 100, 2, 8, 0);  /* fits after it at 2..8 */
	for (int a = 0; a < 3; a++) {
		stp_plan p;
		uint64_t pool = plan_ok(&r, a, &p);
		CHECK(pool >= stp_lower_bound(&r, 0));
		CHECK(p.offset[0] != p.offset[1] && p.offset[0] != p.offset[2]);
		stp_plan_free(&p);
	}
	/* a hand-made plan that is only wrong across the boundary */
	stp_plan p = {0};
	p.n = 4;
	p.align = 1;
	p.pool = 300;
	uint64_t bad[4] = {0, 100, 200, 0}; /* 0 and 3 share 0: 3 ends at 8 when 0 starts: fine */
	p.offset = bad;
	char err[512];
	CHECK(stp_plan_verify(&r, &p, err, sizeof err) == 0);
	bad[1] = 0; /* 1 (1..5) and 0 (wraps to 2) meet at tick 1 */
	CHECK(stp_plan_verify(&r, &p, err, sizeof err) < 0);
	CHECK(strstr(err, "overlap at tick 1") != NULL);
	bad[1] = 100;
	bad[2] = 50; /* overlaps 1 (100..200) in address at ticks 3..5 */
	CHECK(stp_plan_verify(&r, &p, err, sizeof err) < 0);
	bad[2] = 200;
	p.pool = 250; /* request 2 sticks out */
	CHECK(stp_plan_verify(&r, &p, err, sizeof err) < 0);
	stp_reqs_free(&r);
}

static void test_generator(void)
{
	struct {
		stp_gen_schedule s;
		int recompute;
		uint32_t experts;
		const char *name;
	} cases[] = {
		{STP_GEN_1F1B, 0, 0, "1f1b"},         {STP_GEN_INTERLEAVED, 0, 0, "interleaved"},
		{STP_GEN_GPIPE, 0, 0, "gpipe"},       {STP_GEN_1F1B, 1, 0, "1f1b+recompute"},
		{STP_GEN_INTERLEAVED, 1, 0, "interleaved+recompute"},
		{STP_GEN_1F1B, 0, 8, "1f1b+moe"},
		{STP_GEN_1F1B, 0, 0, "1f1b+jitter"},
		{STP_GEN_INTERLEAVED, 1, 0, "interleaved+recompute+jitter"},
	};
	for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
		stp_gen_opts o;
		stp_gen_opts_init(&o);
		o.schedule = cases[k].s;
		o.recompute = cases[k].recompute;
		o.experts = cases[k].experts;
		o.stage = 1;
		o.jitter = strstr(cases[k].name, "jitter") != NULL;
		stp_gen_opts_for_size(&o, 8000);
		stp_reqs r;
		char err[256];
		CHECK(stp_gen_megatron(&o, &r, err, sizeof err) == 0);
		size_t wraps = 0;
		for (size_t i = 0; i < r.n; i++)
			wraps += !(r.req[i].flags & STP_REQ_PERSISTENT) && r.req[i].t_end <= r.req[i].t_start;
		CHECK_EQ_U(wraps, 1); /* the loss-scale buffer, nothing else */
		stp_plan p;
		plan_ok(&r, STP_ALGO_STALLOC, &p);
		double ratio = (double)(p.pool - p.stats.persistent_bytes) /
		               (double)(p.stats.lower_bound - p.stats.persistent_bytes);
		printf("generated %-22s n=%6zu pool/bound %.4f (non-persistent part %.4f), %llu dynamic\n", cases[k].name,
		       r.n, (double)p.pool / p.stats.lower_bound, ratio, (unsigned long long)p.stats.dynamic_requests);
		if (cases[k].experts)
			CHECK(p.ngroups > 0 && p.stats.dynamic_requests > 0);
		else
			CHECK((double)p.pool / p.stats.lower_bound <= 1.01);
		if (!cases[k].experts && !o.jitter)
			CHECK(ratio <= 1.01);
		stp_plan_free(&p);
		if (cases[k].s != STP_GEN_GPIPE) /* greedy is slow with many live requests */
			plan_ok(&r, STP_ALGO_GREEDY, NULL);
		stp_reqs_free(&r);
	}
}

static void test_plan_file(void)
{
	stp_gen_opts o;
	stp_gen_opts_init(&o);
	o.experts = 4;
	stp_gen_opts_for_size(&o, 3000);
	stp_reqs r;
	char err[512];
	CHECK(stp_gen_megatron(&o, &r, err, sizeof err) == 0);
	stp_plan p;
	plan_ok(&r, STP_ALGO_STALLOC, &p);
	const char *path = check_tmp("plan");
	CHECK(stp_plan_write(path, &r, &p, err, sizeof err) == 0);
	stp_reqs r2;
	stp_plan p2;
	CHECK(stp_plan_read(path, &r2, &p2, err, sizeof err) == 0);
	CHECK_EQ_U(r2.n, r.n);
	CHECK_EQ_U(p2.pool, p.pool);
	CHECK_EQ_U(p2.ngroups, p.ngroups);
	CHECK_EQ_U(p2.nintervals, p.nintervals);
	CHECK_EQ_U(r2.nphases, r.nphases);
	int same = 1;
	for (size_t i = 0; i < r.n; i++)
		same &= p2.offset[i] == p.offset[i] && r2.req[i].callsite == r.req[i].callsite &&
		        r2.req[i].ordinal == r.req[i].ordinal && r2.req[i].size == r.req[i].size &&
		        r2.req[i].phase_start == r.req[i].phase_start && p2.group[i] == p.group[i];
	CHECK(same);
	CHECK(stp_plan_verify(&r2, &p2, err, sizeof err) == 0);
	CHECK_STR(stp_reqs_str(&r2, r2.source), stp_reqs_str(&r, r.source));
	CHECK_EQ_U(r2.program, 0); /* a plan made from no trace keeps no program */
	FILE *devnull = fopen("/dev/null", "w");
	stp_plan_show(devnull, &r2, &p2, 0);
	fclose(devnull);
	stp_plan_free(&p2);
	stp_reqs_free(&r2);
	/* 1.5: the program the plan is of (stprof/programkey.h), read back */
	r.program = stp_reqs_string(&r, "/usr/bin/python3.11\ntrain.py");
	CHECK(stp_plan_write(path, &r, &p, err, sizeof err) == 0);
	CHECK(stp_plan_read(path, &r2, &p2, err, sizeof err) == 0);
	CHECK_STR(stp_reqs_str(&r2, r2.program), "/usr/bin/python3.11\ntrain.py");
	char *shown = NULL;
	size_t shown_len = 0;
	FILE *mf = open_memstream(&shown, &shown_len);
	stp_plan_show(mf, &r2, &p2, 0);
	fclose(mf);
	CHECK(strstr(shown, "program:        /usr/bin/python3.11 train.py\n") != NULL);
	free(shown);
	stp_plan_free(&p2);
	stp_reqs_free(&r2);
	/* damage: one flipped byte, a truncation */
	FILE *f = fopen(path, "r+b");
	fseek(f, 200, SEEK_SET);
	int ch = fgetc(f);
	fseek(f, 200, SEEK_SET);
	fputc(ch ^ 0x40, f);
	fclose(f);
	CHECK(stp_plan_read(path, &r2, &p2, err, sizeof err) < 0);
	CHECK(strstr(err, "checksum") != NULL);
	CHECK(truncate(path, 100) == 0);
	CHECK(stp_plan_read(path, &r2, &p2, err, sizeof err) < 0);
	CHECK(strstr(err, "offset") != NULL);
	unlink(path);
	stp_plan_free(&p);
	stp_reqs_free(&r);
}

/* A plan with a start-up placement (1.4, section 9): W (persistent,
 * position 0), B (a start-up temporary freed before position 2), N
 * (persistent, position 2): B is placed over N's slot; the file keeps it,
 * and a reader refuses a placement at a position out of range, at one that
 * does not outlive start-up, or outside the pool, naming the offset. */
static void placed_plan(stp_reqs *r, stp_plan *p)
{
	stp_reqs_init(r);
	r->period = 10;
	add(r, 4096, 2, 6, 0);
	add(r, 65536, 0, 0, STP_REQ_PERSISTENT);
	add(r, 8192, 0, 0, STP_REQ_PERSISTENT);
	r->req[1].ordinal = 0;
	r->req[2].ordinal = 2;
	uint64_t seq[] = {65536 | STP_STARTUP_OUTLIVES, 8192 | STP_STARTUP_OUTLIVES, 8192 | STP_STARTUP_OUTLIVES};
	for (int k = 0; k < 3; k++)
		CHECK(stp_reqs_add_startup(r, seq[k]) == 0);
	r->startup_until = malloc(3 * sizeof *r->startup_until);
	CHECK(r->startup_until != NULL);
	r->startup_until[0] = r->startup_until[2] = UINT32_MAX;
	r->startup_until[1] = 2;
	CHECK(plan_ok(r, STP_ALGO_STALLOC, p) > 0);
}

/* the file's bytes with section 9's first record changed, checksum redone */
static int parse_with_placement(unsigned char *b, size_t len, uint32_t pos, uint64_t off, char *err, size_t errlen)
{
	uint32_t nsec = b[24] | b[25] << 8;
	for (uint32_t k = 0; k < nsec; k++) {
		unsigned char *d = b + 64 + k * 24;
		if (d[0] != 9)
			continue;
		uint64_t at = 0;
		for (int i = 0; i < 8; i++)
			at |= (uint64_t)d[8 + i] << (8 * i);
		for (int i = 0; i < 4; i++)
			b[at + i] = (unsigned char)(pos >> (8 * i));
		for (int i = 0; i < 8; i++)
			b[at + 8 + i] = (unsigned char)(off >> (8 * i));
	}
	uint32_t crc = stp_crc32c(0, b, len - 8);
	for (int i = 0; i < 4; i++)
		b[len - 8 + i] = (unsigned char)(crc >> (8 * i));
	stp_reqs r;
	stp_plan p;
	int rc = stp_plan_parse(b, len, "x.plan", &r, &p, err, errlen);
	if (!rc) {
		stp_plan_free(&p);
		stp_reqs_free(&r);
	}
	return rc;
}

static void test_plan_file_placed(void)
{
	stp_reqs r;
	stp_plan p;
	char err[512];
	placed_plan(&r, &p);
	CHECK_EQ_U(p.nplaced, 1);
	CHECK(p.startup_offset && p.startup_offset[1] == p.offset[2]);
	const char *path = check_tmp("placed.plan");
	CHECK(stp_plan_write(path, &r, &p, err, sizeof err) == 0);
	stp_reqs r2;
	stp_plan p2;
	CHECK(stp_plan_read(path, &r2, &p2, err, sizeof err) == 0);
	CHECK_EQ_U(p2.nplaced, 1);
	CHECK(p2.startup_offset && p2.startup_offset[1] == p.offset[2] && p2.startup_offset[0] == STP_NO_OFFSET);
	stp_plan_free(&p2);
	stp_reqs_free(&r2);
	FILE *f = fopen(path, "rb");
	unsigned char b[8192];
	size_t len = f ? fread(b, 1, sizeof b, f) : 0;
	if (f)
		fclose(f);
	CHECK(len > 64 && len < sizeof b);
	CHECK(parse_with_placement(b, len, 1, p.offset[2], err, sizeof err) == 0);
	CHECK(parse_with_placement(b, len, 3, p.offset[2], err, sizeof err) < 0);
	CHECK(strstr(err, "x.plan: offset ") && strstr(err, "start-up position 3 out of order or range"));
	r.startup[1] &= ~STP_STARTUP_OUTLIVES;
	CHECK(stp_plan_write(path, &r, &p, err, sizeof err) == 0);
	f = fopen(path, "rb");
	len = f ? fread(b, 1, sizeof b, f) : 0;
	if (f)
		fclose(f);
	CHECK(parse_with_placement(b, len, 1, p.offset[2], err, sizeof err) < 0);
	CHECK(strstr(err, "does not outlive start-up") != NULL);
	r.startup[1] |= STP_STARTUP_OUTLIVES;
	CHECK(stp_plan_write(path, &r, &p, err, sizeof err) == 0);
	f = fopen(path, "rb");
	len = f ? fread(b, 1, sizeof b, f) : 0;
	if (f)
		fclose(f);
	CHECK(parse_with_placement(b, len, 1, p.pool, err, sizeof err) < 0);
	CHECK(strstr(err, "outside the pool") != NULL);
	unlink(path);
	stp_plan_free(&p);
	stp_reqs_free(&r);
}

/* the verifier checks start-up placements: over slots of persistent
 * requests made after the temporary is freed, clear of each other */
static void test_verify_placed(void)
{
	stp_reqs r;
	stp_plan p;
	char err[512];
	placed_plan(&r, &p);
	CHECK(stp_plan_verify(&r, &p, err, sizeof err) == 0);
	/* over the slot of request 1 (ordinal 0: made before the temporary is
	 * freed, at position 2) */
	uint64_t good = p.startup_offset[1];
	p.startup_offset[1] = p.offset[1];
	CHECK(stp_plan_verify(&r, &p, err, sizeof err) < 0);
	CHECK(strstr(err, "start-up temporary at position 1") && strstr(err, "freed before position 2") &&
	      strstr(err, "made before that"));
	/* without the trace's free positions (a plan file): made before it */
	uint32_t *until = r.startup_until;
	r.startup_until = NULL;
	CHECK(stp_plan_verify(&r, &p, err, sizeof err) < 0);
	CHECK(strstr(err, "made at position 1") != NULL);
	p.startup_offset[1] = good;
	CHECK(stp_plan_verify(&r, &p, err, sizeof err) == 0);
	r.startup_until = until;
	/* past the pool, then over the iteration's request's range */
	p.startup_offset[1] = p.pool;
	CHECK(stp_plan_verify(&r, &p, err, sizeof err) < 0);
	CHECK(strstr(err, "outside the pool") != NULL);
	p.startup_offset[1] = p.offset[0];
	p.pool += 8192;
	CHECK(stp_plan_verify(&r, &p, err, sizeof err) < 0);
	CHECK(strstr(err, "lies in no persistent request's slot") != NULL);
	p.pool -= 8192;
	p.startup_offset[1] = good;
	/* a second temporary placed over the same bytes while the first lives */
	r.startup[0] = 8192 | STP_STARTUP_OUTLIVES;
	r.req[1].ordinal = 3; /* the 64 KiB one now arrives last */
	CHECK(stp_reqs_add_startup(&r, 65536 | STP_STARTUP_OUTLIVES) == 0);
	uint32_t *u = realloc(r.startup_until, 4 * sizeof *u);
	CHECK(u != NULL);
	if (u) {
		r.startup_until = u;
		u[0] = 2;
		u[3] = UINT32_MAX;
		uint64_t *so = realloc(p.startup_offset, 4 * sizeof *so);
		CHECK(so != NULL);
		if (so) {
			p.startup_offset = so;
			so[0] = so[1] = good;
			so[3] = STP_NO_OFFSET;
			p.nplaced = 2;
			CHECK(stp_plan_verify(&r, &p, err, sizeof err) < 0);
			CHECK(strstr(err, "positions 0 and 1 overlap") != NULL);
			u[0] = 1; /* freed before the second is made: they may share */
			CHECK(stp_plan_verify(&r, &p, err, sizeof err) == 0);
		}
	}
	stp_plan_free(&p);
	stp_reqs_free(&r);
}

static void test_csv(void)
{
	const char *good = "id,lower,upper,size\n0,0,10,5\n1,5,15,5\r\n\n2,10,20,10\n";
	stp_reqs r;
	uint64_t *off;
	char err[256];
	CHECK(stp_reqs_parse_csv(good, strlen(good), "g.csv", &r, &off, err, sizeof err) == 0);
	CHECK_EQ_U(r.n, 3);
	CHECK(off == NULL);
	CHECK_EQ_U(r.period, 20);
	stp_plan p;
	CHECK_EQ_U(plan_ok(&r, STP_ALGO_STALLOC, &p), 15);
	const char *path = check_tmp("csv");
	CHECK(stp_reqs_write_csv(path, &r, p.offset, err, sizeof err) == 0);
	stp_plan_free(&p);
	stp_reqs_free(&r);
	CHECK(stp_reqs_read_csv(path, &r, &off, err, sizeof err) == 0);
	CHECK(off != NULL);
	CHECK_EQ_U(r.n, 3);
	free(off);
	stp_reqs_free(&r);
	unlink(path);
	struct {
		const char *text, *want;
	} bad[] = {
		{"", "g.csv:1: empty"},
		{"id,lower,size\n", "g.csv:1: header lacks column 'upper'"},
		{"id,lower,upper,size\n0,5,5,1\n", "g.csv:2: upper (5) must be greater"},
		{"id,lower,upper,size\n0,0,5\n", "g.csv:2: 3 fields"},
		{"id,lower,upper,size\n0,0,5,-1\n", "g.csv:2: size is not"},
		{"id,lower,upper,size\n0,0,5,0\n", "g.csv:2: size 0"},
		{"id,lower,upper,size\n0,0,99999999999999999999999,1\n", "g.csv:2: upper is not"},
		{"id,id,lower,upper,size\n", "g.csv:1: column 'id' twice"},
	};
	for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
		int rc = stp_reqs_parse_csv(bad[k].text, strlen(bad[k].text), "g.csv", &r, &off, err, sizeof err);
		CHECK(rc < 0);
		if (rc == 0)
			stp_reqs_free(&r);
		else if (!strstr(err, bad[k].want)) {
			fprintf(stderr, "got '%s', want '%s'\n", err, bad[k].want);
			CHECK(0);
		}
	}
}

/* The key of the program a process runs (stprof/programkey.h): a plan's,
 * and libstalloc's of each process of a wrapper's tree. */
static void test_program_key(void)
{
	char k[256];
	CHECK(stp_program_key("/usr/bin/python3.11", "python3 -u -X dev /home/a/train.py --steps 10", k, sizeof k) == 0);
	CHECK_STR(k, "/usr/bin/python3.11\ntrain.py");
	CHECK(stp_program_key("/usr/bin/python3.11", "python3 -m torch.distributed.run --nproc 2 t.py", k, sizeof k) == 0);
	CHECK_STR(k, "/usr/bin/python3.11\n-m torch.distributed.run");
	CHECK(stp_program_key("/usr/bin/python3.11", "python3 -c import torch", k, sizeof k) == 0);
	CHECK_STR(k, "/usr/bin/python3.11\n-c import torch");
	/* -c: the code's first statement's head (a spawned worker, not a tracker) */
	CHECK(stp_program_key("/usr/bin/python3.11",
	                      "python3 -B -c from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=4, "
	                      "pipe_handle=6) --multiprocessing-fork",
	                      k, sizeof k) == 0);
	CHECK_STR(k, "/usr/bin/python3.11\n-c from multiprocessing.spawn import spawn_main");
	CHECK(!stp_program_same(k, "/usr/bin/python3.11\n-c from multiprocessing.resource_tracker import main"));
	CHECK(stp_program_same(k, "/venv/bin/python3\n-c from multiprocessing.spawn import spawn_main"));
	CHECK(stp_program_same("/usr/bin/python3.11\n-c", k)); /* an older plan's key: any -c */
	CHECK(!stp_program_same("/usr/bin/python3.11\n-c", "/usr/bin/python3.11\n-m x"));
	CHECK(stp_program_key("/usr/bin/python3.11", "python3 -c", k, sizeof k) == 0);
	CHECK_STR(k, "/usr/bin/python3.11\n-c");
	CHECK(stp_program_runs_code(k) && stp_program_runs_code("/usr/bin/python3.11\n-c import torch"));
	CHECK(!stp_program_runs_code("/usr/bin/python3.11\n-cfg.py") && !stp_program_runs_code("/opt/app/train\n"));
	CHECK(stp_program_key("/usr/bin/bash", "/bin/sh ./run.sh", k, sizeof k) == 0);
	CHECK_STR(k, "/usr/bin/bash\nrun.sh");
	CHECK(stp_program_key("/opt/app/train", "./train --fast", k, sizeof k) == 0);
	CHECK_STR(k, "/opt/app/train\n");
	CHECK(stp_program_key("/usr/bin/python3.11", "python3", k, sizeof k) == 0); /* the REPL */
	CHECK_STR(k, "/usr/bin/python3.11\n");
	CHECK(stp_program_key("/usr/bin/python3.11", "python3 train.py", k, 8) < 0 && !k[0]); /* does not fit */
	/* the same script under another interpreter, other arguments: the same program */
	CHECK(stp_program_same("/usr/bin/python3.11\ntrain.py", "/venv/bin/python3.12\ntrain.py"));
	CHECK(!stp_program_same("/usr/bin/python3.11\ntrain.py", "/usr/bin/python3.11\n-c"));
	CHECK(!stp_program_same("/usr/bin/python3.11\ntrain.py", "/usr/bin/bash\nrun.sh"));
	CHECK(stp_program_same("/opt/app/train\n", "/other/train\n"));
	CHECK(!stp_program_same("/opt/app/train\n", "/opt/app/trainer\n"));
	CHECK(!stp_program_same("/opt/app/train\n", "/usr/bin/python3.11\ntrain"));
	CHECK(!stp_program_same("", "/opt/app/train\n"));
}

int main(void)
{
	test_program_key();
	test_lower_bound();
	test_homosize_optimal();
	test_phases();
	test_fusion();
	test_guillotine();
	test_cyclic();
	test_generator();
	test_plan_file();
	test_plan_file_placed();
	test_verify_placed();
	test_csv();
	return check_done();
}
