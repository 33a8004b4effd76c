/*
 * fuzz_plan_struct.c - structure-aware libFuzzer target for the plan file
 * reader: the fuzz bytes build a request set with extreme but legal values
 * (sizes near 2^64, periods of 1 and of 2^64-1, wrapping lifetimes, every
 * flag), which the planner plans when it accepts it; the plan file written
 * from it is read back, and then read again with a few of its bytes changed
 * (a structure-aware mutation: every section header stays in place, so the
 * reader's checks past the magic are the ones exercised).  Accepted plans are
 * verified and shown; never a crash, an overrun or a leak.  A plan as written
 * reads back; cut at any byte (issue 26) it is refused with a one-line
 * error, never read short.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stprof/plan.h"
#include "wf_src.h"

/* Reads b[0..n) back; 0 when the reader accepted it, else -1 (its error
 * one line). */
static int read_back(const uint8_t *b, size_t n)
{
	stp_reqs r;
	stp_plan p;
	char err[512];
	int rc = stp_plan_parse(b, n, "fuzz", &r, &p, err, sizeof err);
	if (rc != 0 && strchr(err, '\n'))
		abort();
	if (rc == 0) {
		if (r.n < 5000)
			(void)stp_plan_verify(&r, &p, err, sizeof err);
		FILE *f = fopen("/dev/null", "w");
		if (f) {
			stp_plan_show(f, &r, &p, 100);
			fclose(f);
		}
		stp_plan_free(&p);
		stp_reqs_free(&r);
	}
	return rc == 0 ? 0 : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	wf_src s = {data, size};
	stp_reqs r;
	stp_reqs_init(&r);
	r.period = wf_u64(&s);
	r.device = wf_u8(&s) & 1;
	r.iteration = (int64_t)wf_u64(&s);
	r.source = stp_reqs_string(&r, "fuzz.stp");
	uint32_t nph = wf_u8(&s) & 7;
	for (uint32_t i = 0; i < nph; i++)
		stp_reqs_add_phase(&r, i & 1 ? "forward" : "backward", (int64_t)wf_u64(&s), wf_u64(&s), wf_u64(&s));
	uint32_t nreq = wf_u8(&s);
	for (uint32_t i = 0; i < nreq && s.n; i++) {
		stp_req q = {.size = wf_u64(&s), .t_start = wf_u64(&s), .t_end = wf_u64(&s),
		             .phase_start = wf_u32(&s) % (nph + 2), .phase_end = wf_u32(&s) % (nph + 2),
		             .flags = wf_u8(&s) & 3, .ordinal = i, .callsite = wf_u64(&s)};
		if (wf_u8(&s) & 1) { /* keep some inside the period, so plans get built */
			uint64_t per = r.period ? r.period : 1;
			q.t_start %= per;
			q.t_end %= per;
			q.size = 1 + q.size % (1u << 20);
		}
		stp_reqs_add(&r, &q);
	}
	char err[512], path[64];
	snprintf(path, sizeof path, "/tmp/fuzz-pstruct-%d.plan", (int)getpid());
	if (stp_reqs_check(&r, err, sizeof err) == 0) {
		stp_plan_opts po;
		stp_plan_opts_init(&po);
		po.align = 1ull << (wf_u8(&s) % 13);
		stp_plan p;
		if (stp_plan_build(&r, &po, &p, err, sizeof err) == 0) {
			if (stp_plan_write(path, &r, &p, err, sizeof err) == 0) {
				FILE *f = fopen(path, "rb");
				uint8_t *b = f ? malloc(1 << 22) : NULL;
				size_t n = b ? fread(b, 1, 1 << 22, f) : 0;
				if (f)
					fclose(f);
				if (b) {
					if (read_back(b, n) < 0) /* as written */
						abort();
					/* cut at any byte (issue 26): refused, never read short */
					if (n && read_back(b, (size_t)(wf_u64(&s) % n)) == 0)
						abort();
					for (int k = wf_u8(&s) & 7; k > 0 && n; k--) {
						size_t at = (size_t)(wf_u64(&s) % n);
						b[at] = (uint8_t)(b[at] ^ (wf_u8(&s) | 1));
					}
					read_back(b, n); /* changed */
					free(b);
				}
				unlink(path);
			}
			stp_plan_free(&p);
		}
	}
	stp_reqs_free(&r);
	return 0;
}
