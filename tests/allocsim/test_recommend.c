/*
 * test_recommend.c - the recommender on logs where the answer is known: the
 * batch N -> N+1 pattern of PyTorch's expandable-segments note (expandable
 * segments remove the slivers: 496 -> 320 MiB), a log where nothing can
 * beat the base (every tensor fits its segment exactly), and OOM counts
 * ranking first when a capacity is set.  Also allocsim_run_explained and
 * early aborts.
 */
#include "check.h"
#include "stprof/allocsim.h"

#define MiB (1024ull * 1024ull)

static allocsim_events *note_log(int iterations)
{
	allocsim_events *e = allocsim_events_new();
	uint64_t id = 1, t = 0;
	for (int it = 0; it < iterations; it++) {
		uint64_t n = 4 + (uint64_t)(it % 2);
		uint64_t first = id;
		for (int l = 0; l < 4; l++) {
			allocsim_events_alloc(e, id++, n * 4 * MiB, 0, ++t, 1 + (uint32_t)l);
			allocsim_events_alloc(e, id++, n * 12 * MiB, 0, ++t, 10 + (uint32_t)l);
		}
		for (uint64_t k = first; k < id; k++)
			allocsim_events_free(e, k, ++t);
	}
	return e;
}

int main(void)
{
	allocsim_config base;
	allocsim_config_default(&base, ALLOCSIM_PYTORCH);
	allocsim_result r;
	allocsim_recommendation rec[3];

	allocsim_events *e = note_log(2);
	CHECK(allocsim_run(e, &base, NULL, &r, NULL, 0) == 0);
	CHECK_EQ_U(r.peak_reserved, 496 * MiB);
	size_t n = allocsim_recommend(e, &base, &r, rec, 3);
	CHECK(n >= 1);
	CHECK_STR(rec[0].settings, "expandable_segments:True");
	CHECK_EQ_U(rec[0].peak_reserved, 320 * MiB);
	CHECK_EQ_I(rec[0].reserved_delta, -176 * (int64_t)MiB);
	CHECK_NEAR(rec[0].efficiency, 1.0, 1e-9);
	CHECK_NEAR(rec[0].efficiency_delta, 1.0 - 320.0 / 496.0, 1e-9);
	for (size_t i = 1; i < n; i++)
		CHECK(rec[i].peak_reserved >= rec[i - 1].peak_reserved && rec[i].reserved_delta < 0);
	/* the worst moment, captured in the run, is the last 60 MiB tensor of
	 * N = 5: free then are the four 16 MiB segments, two untouched 48 MiB
	 * ones and two 8 MiB slivers (= 496 - 320 MiB) */
	allocsim_snapshot s;
	allocsim_result r2;
	CHECK(allocsim_run_explained(e, &base, NULL, &r2, &s, NULL, 0) == 0);
	CHECK_EQ_U(s.reserved, 496 * MiB);
	CHECK_EQ_U(s.request_size, 60 * MiB);
	CHECK_EQ_U(s.request_stack, 13);
	CHECK_EQ_U(s.free_bytes, 4 * 16 * MiB + 2 * 48 * MiB + 2 * 8 * MiB);
	CHECK_EQ_U(s.free_bytes, s.reserved - s.allocated);
	CHECK_EQ_U(s.free_blocks, 8);
	allocsim_snapshot_clear(&s);
	allocsim_result_clear(&r2);
	/* early abort: a run bounded below its peak stops and says so */
	allocsim_run_opts o = {.abort_above = 300 * MiB};
	CHECK(allocsim_run(e, &base, &o, &r2, NULL, 0) == 0);
	CHECK_EQ_I(r2.aborted, 1);
	CHECK(r2.events < allocsim_events_count(e));
	allocsim_result_clear(&r2);
	allocsim_result_clear(&r);
	allocsim_events_destroy(e);

	/* nothing to gain: one tensor size, exact segments */
	e = allocsim_events_new();
	for (uint64_t k = 1; k <= 100; k++) {
		allocsim_events_alloc(e, k, 64 * MiB, 0, k, 1);
		if (k % 2 == 0) {
			allocsim_events_free(e, k - 1, k);
			allocsim_events_free(e, k, k);
		}
	}
	CHECK(allocsim_run(e, &base, NULL, &r, NULL, 0) == 0);
	CHECK_EQ_U(allocsim_recommend(e, &base, &r, rec, 3), 0);
	allocsim_result_clear(&r);
	allocsim_events_destroy(e);

	/* with a capacity the base OOMs; fewer OOMs rank first */
	e = note_log(4);
	allocsim_config capped = base;
	capped.capacity = 400 * MiB;
	CHECK(allocsim_run(e, &capped, NULL, &r, NULL, 0) == 0);
	CHECK(r.ooms > 0 || r.alloc_retries > 0);
	n = allocsim_recommend(e, &capped, &r, rec, 3);
	CHECK(n >= 1);
	CHECK(rec[0].ooms <= r.ooms);
	CHECK(strstr(rec[0].settings, "expandable_segments:True") != NULL);
	CHECK(strstr(rec[0].settings, "capacity") == NULL); /* a PYTORCH_ALLOC_CONF value */
	allocsim_result_clear(&r);
	allocsim_events_destroy(e);
	return check_done();
}
