/*
 * test_xla.c - the allocator report of a JAX device (allocsim_xla.c) on a
 * sequence worked out by hand: XLA's BFC preallocating half of a 100 MiB
 * device, buffers of 10, 20 and 5 MiB, XLA's statistics sampled after the
 * last one; the as-run model must match them exactly, and the advice must
 * find the smallest fraction without an OOM (.3), the one below it with
 * its OOM, growth instead of preallocation, and the platform allocator.
 * Then the same buffers without statistics (a CPU run: no limit known, no
 * advice without a capacity), the key names, and a PyTorch device next to
 * it staying PyTorch's.
 */
#include "check.h"
#include "stprof/allocsim.h"
#include "stprof/trace.h"

#define MiB (1024ull * 1024ull)

static uint64_t t;

static void feed(allocsim_collector *c, int type, int32_t dev, uint32_t pool, uint64_t addr, uint64_t size)
{
	stp_event ev = {.type = (uint8_t)type, .seq = 0, .time_ns = t += 1000, .tid = 1};
	if (type == STP_EV_ALLOC)
		ev.u.alloc = (stp_alloc_info){.addr = addr, .size = size, .requested = size, .stack = 1,
		                              .kind = STP_MEM_DEVICE, .device = dev, .pool = pool};
	else
		ev.u.free = (stp_free_info){.addr = addr, .kind = STP_MEM_DEVICE, .device = dev, .pool = pool};
	allocsim_collector_event(c, &ev);
}

static const allocsim_recommendation *rec(const allocsim_device_report *dr, const char *settings)
{
	for (size_t i = 0; i < dr->nrecs; i++)
		if (!strcmp(dr->recs[i].settings, settings))
			return &dr->recs[i];
	return NULL;
}

static void test_as_run_and_advice(void)
{
	allocsim_collector *c = allocsim_collector_new();
	CHECK(c != NULL);
	/* settings as run: preallocate, fraction .5 */
	allocsim_xla_settings s;
	allocsim_xla_settings_default(&s);
	s.known = 1;
	s.mem_fraction = 0.5;
	feed(c, STP_EV_ALLOC, 0, STP_POOL_JAX, 0x1000, 10 * MiB);
	feed(c, STP_EV_ALLOC, 0, STP_POOL_JAX, 0x2000, 20 * MiB);
	feed(c, STP_EV_FREE, 0, STP_POOL_JAX, 0x1000, 0);
	feed(c, STP_EV_ALLOC, 0, STP_POOL_JAX, 0x3000, 5 * MiB);
	/* XLA's figures after it: 25 MiB in use, 50 MiB pool, the free 20 MiB
	 * tail of the region the largest free chunk, 30 MiB at the peak */
	allocsim_collector_xla_stat(c, 0, t, ALLOCSIM_XLA_BYTES_IN_USE, 25 * MiB);
	allocsim_collector_xla_stat(c, 0, t, ALLOCSIM_XLA_PEAK_BYTES_IN_USE, 30 * MiB);
	allocsim_collector_xla_stat(c, 0, t, ALLOCSIM_XLA_POOL_BYTES, 50 * MiB);
	allocsim_collector_xla_stat(c, 0, t, ALLOCSIM_XLA_LARGEST_FREE_BLOCK, 20 * MiB);
	allocsim_collector_xla_stat(c, 0, t, ALLOCSIM_XLA_BYTES_LIMIT, 50 * MiB);
	allocsim_collector_xla_stat(c, 0, t, -1, 1); /* ignored */
	/* a second device with PyTorch's tensors stays a PyTorch device */
	feed(c, STP_EV_ALLOC, 1, STP_POOL_TENSORS, 0x9000, 3 * MiB);

	allocsim_replay_opts o = {.xla = &s};
	allocsim_report r;
	char err[256];
	CHECK(allocsim_collector_finish(c, &o, &r, err, sizeof err) == 0);
	allocsim_collector_destroy(c);
	CHECK_EQ_U(r.ndevices, 2);
	const allocsim_device_report *dr = &r.devices[0];
	CHECK(dr->xla);
	CHECK(!r.devices[1].xla);
	CHECK_EQ_I(dr->device, 0);
	CHECK_EQ_U(dr->xla_capacity, 100 * MiB);
	CHECK(dr->nresults >= 3);
	CHECK_STR(dr->results[0].label, "bfc preallocate .5 (as run)");
	CHECK_EQ_U(dr->results[0].peak_reserved, 50 * MiB);
	CHECK_EQ_U(dr->results[0].peak_allocated, 30 * MiB);
	CHECK_EQ_U(dr->nprobes, 1);
	CHECK_EQ_U(dr->probes[0].model_in_use, 25 * MiB);
	CHECK_EQ_U(dr->probes[0].model_pool, 50 * MiB);
	CHECK_EQ_U(dr->probes[0].model_largest_free, 20 * MiB);
	const allocsim_actual *ac = &dr->actual;
	CHECK(ac->present && ac->xla);
	CHECK_EQ_U(ac->peak_allocated, 30 * MiB);
	CHECK_EQ_U(ac->peak_reserved, 50 * MiB);
	CHECK_NEAR(ac->allocated_error, 0, 1e-9);
	CHECK_NEAR(ac->reserved_error, 0, 1e-9);
	CHECK_EQ_U(ac->in_use_samples, 1);
	CHECK_NEAR(ac->in_use_error, 0, 1e-9);
	CHECK(ac->has_largest_free);
	CHECK_EQ_U(ac->largest_free, 20 * MiB);
	CHECK_EQ_U(ac->model_largest_free, 20 * MiB);

	/* advice: .3 holds the 30 MiB peak exactly; .25 fails the 20 MiB one */
	CHECK(dr->recommend_tried);
	const allocsim_recommendation *a = rec(dr, "XLA_PYTHON_CLIENT_MEM_FRACTION=.3");
	CHECK(a != NULL);
	if (a) {
		CHECK_EQ_U(a->ooms, 0);
		CHECK_EQ_U(a->peak_reserved, 30 * MiB);
		CHECK_EQ_I(a->reserved_delta, -(int64_t)(20 * MiB));
	}
	a = rec(dr, "XLA_PYTHON_CLIENT_MEM_FRACTION=.25");
	CHECK(a != NULL);
	if (a)
		CHECK_EQ_U(a->ooms, 1);
	/* growth: a 16 MiB region (2 MiB doubled to cover 10), then 32 MiB
	 * (within the 34 MiB left of the limit): 48 MiB, no OOM */
	a = rec(dr, "XLA_PYTHON_CLIENT_PREALLOCATE=false");
	CHECK(a != NULL);
	if (a) {
		CHECK_EQ_U(a->peak_reserved, 48 * MiB);
		CHECK_EQ_U(a->ooms, 0);
	}
	a = rec(dr, "XLA_PYTHON_CLIENT_ALLOCATOR=platform");
	CHECK(a != NULL);
	if (a) {
		CHECK_EQ_U(a->peak_reserved, 30 * MiB);
		CHECK_EQ_U(a->ooms, 0);
	}
	/* the printed report says it the XLA way */
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	allocsim_report_print(f, &r, NULL, NULL);
	fclose(f);
	CHECK(strstr(buf, "Fragmentation (JAX buffers, device 0, 3 allocations):") != NULL);
	CHECK(strstr(buf, "actual (XLA's statistics, 1 samples)") != NULL);
	CHECK(strstr(buf, "model error vs actual: M_a +0.0%, M_r +0.0% (bfc preallocate .5 (as run))") != NULL);
	CHECK(strstr(buf, "largest free chunk at the last sample: model 20.0 MiB, XLA 20.0 MiB") != NULL);
	CHECK(strstr(buf, "XLA_PYTHON_CLIENT_* settings (simulated on these buffers, 100 MiB of device memory):") != NULL);
	CHECK(strstr(buf, "XLA_PYTHON_CLIENT_MEM_FRACTION=.25\n      peak reserved 25.0 MiB (-25.0 MiB vs as run), OOM: 1 "
	                  "request would fail") != NULL);
	CHECK(strstr(buf, "PYTORCH_ALLOC_CONF") == NULL || strstr(buf, "device 1") != NULL);
	fputs(buf, stdout);
	free(buf);
	allocsim_report_clear(&r);
}

static void test_no_statistics(void)
{
	/* JAX's CPU buffers replayed as a what-if: no limit, no advice */
	allocsim_collector *c = allocsim_collector_new();
	stp_event ev = {.type = STP_EV_ALLOC, .time_ns = 1};
	ev.u.alloc = (stp_alloc_info){.addr = 0x100, .size = 4 * MiB, .kind = STP_MEM_HOST, .device = -1,
	                              .pool = STP_POOL_JAX};
	allocsim_collector_event(c, &ev);
	allocsim_report r;
	char err[256];
	CHECK(allocsim_collector_finish(c, NULL, &r, err, sizeof err) == 0);
	allocsim_collector_destroy(c);
	CHECK_EQ_U(r.ndevices, 1);
	CHECK(r.devices[0].xla && r.devices[0].host_fallback);
	CHECK(!r.devices[0].actual.present);
	CHECK(!r.devices[0].recommend_tried);
	CHECK_EQ_U(r.devices[0].xla_capacity, 0);
	CHECK_STR(r.devices[0].results[0].label, "bfc allow_growth (as run; no limit known)");
	allocsim_report_clear(&r);
}

static void test_keys(void)
{
	CHECK_STR(allocsim_xla_key_name(ALLOCSIM_XLA_LARGEST_FREE_BLOCK), "largest_free_block_bytes");
	CHECK(allocsim_xla_key_name(ALLOCSIM_XLA_NKEYS) == NULL);
	CHECK_EQ_I(allocsim_xla_key_of("pool_bytes", 10), ALLOCSIM_XLA_POOL_BYTES);
	CHECK_EQ_I(allocsim_xla_key_of("pool_bytes:0", 10), ALLOCSIM_XLA_POOL_BYTES);
	CHECK_EQ_I(allocsim_xla_key_of("pool", 4), -1);
}

int main(void)
{
	test_as_run_and_advice();
	test_no_statistics();
	test_keys();
	return check_done();
}
