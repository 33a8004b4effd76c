/*
 * test_replay.c - from a .stp trace to the fragmentation report, end to end:
 * a trace written with stp_writer where a PyTorch-like allocator's segment
 * events are known by hand (so the actual E and the model's error are
 * known), a second device, host allocations that must be left out when
 * device ones exist, a host-only trace (the what-if fallback), a bad file,
 * and the printed report.
 */
#include "check.h"
#include "stprof/allocsim.h"
#include "stprof/trace.h"

#define MiB (1024ull * 1024ull)

static stp_writer *w;
static uint64_t t;

static void ev_alloc(int kind, int32_t device, uint64_t addr, uint64_t size, uint64_t req, uint32_t stack)
{
	stp_event ev = {.type = STP_EV_ALLOC, .seq = STP_SEQ_AUTO, .time_ns = t += 1000, .tid = 1};
	ev.u.alloc = (stp_alloc_info){.addr = addr, .size = size, .requested = req, .stack = stack,
	                              .kind = (uint8_t)kind, .device = device, .stream = 0x1234};
	CHECK(stp_writer_event(w, &ev) == 0);
}

static void ev_free(int kind, int32_t device, uint64_t addr)
{
	stp_event ev = {.type = STP_EV_FREE, .seq = STP_SEQ_AUTO, .time_ns = t += 1000, .tid = 1};
	ev.u.free = (stp_free_info){.addr = addr, .kind = (uint8_t)kind, .device = device, .stream = 0x1234};
	CHECK(stp_writer_event(w, &ev) == 0);
}

static void ev_seg(int type, int32_t device, uint64_t addr, uint64_t size)
{
	stp_event ev = {.type = (uint8_t)type, .seq = STP_SEQ_AUTO, .time_ns = t += 1000, .tid = 1};
	ev.u.segment = (stp_segment_info){.addr = addr, .size = size, .requested = size, .kind = STP_MEM_DEVICE,
	                                  .device = device, .stream = 0x1234};
	CHECK(stp_writer_event(w, &ev) == 0);
}

static const char *namer(void *ctx, uint32_t stack, char *buf, size_t len)
{
	(void)ctx;
	snprintf(buf, len, "site%u", stack);
	return buf;
}

static void test_device_trace(void)
{
	const char *path = check_tmp("allocsim-dev.stp");
	char err[256];
	w = stp_writer_open(path, err, sizeof err);
	CHECK(w != NULL);
	uint64_t ips[2] = {0x401000, 0x402000};
	uint32_t st[5];
	for (int i = 0; i < 5; i++) {
		ips[0] = 0x401000 + (uint64_t)i * 16;
		st[i] = stp_writer_stack(w, ips, 2);
	}
	/* what the caching allocator does for these requests, by hand:
	 * three 5,000,000 B tensors (rounded to 5,000,192) in one 20 MiB
	 * segment; the middle one freed; a 12 MiB tensor fits neither hole
	 * (5,000,192 B) nor the rest (5,971,968 B): a new 12 MiB segment */
	const uint64_t S1 = 0x7f1000000000ull, S2 = 0x7f2000000000ull, R = 5000192;
	ev_alloc(STP_MEM_HOST, -1, 0x5000, 100, 100, st[0]); /* host: ignored */
	ev_seg(STP_EV_SEGMENT_RESERVE, 0, S1, 20 * MiB);
	ev_alloc(STP_MEM_DEVICE, 0, S1, R, 5000000, st[0]);
	ev_alloc(STP_MEM_DEVICE, 0, S1 + R, R, 5000000, st[1]);
	ev_alloc(STP_MEM_DEVICE, 0, S1 + 2 * R, R, 5000000, st[2]);
	ev_free(STP_MEM_DEVICE, 0, S1 + R);
	ev_seg(STP_EV_SEGMENT_RESERVE, 0, S2, 12 * MiB);
	ev_alloc(STP_MEM_DEVICE, 0, S2, 12 * MiB, 12 * MiB, st[3]);
	ev_free(STP_MEM_DEVICE, 0, S1);
	ev_free(STP_MEM_DEVICE, 0, S1 + 2 * R);
	ev_free(STP_MEM_DEVICE, 0, S2);
	ev_free(STP_MEM_DEVICE, 0, 0xdead); /* never allocated */
	/* device 1: a few allocations, no segment events */
	ev_alloc(STP_MEM_DEVICE, 1, 0x9000000, MiB, MiB, st[4]);
	ev_alloc(STP_MEM_DEVICE, 1, 0x9100000, 3 * MiB, 3 * MiB, st[4]);
	ev_free(STP_MEM_DEVICE, 1, 0x9000000);
	ev_alloc(STP_MEM_DEVICE, 1, 0x9100000, 2 * MiB, 2 * MiB, st[4]); /* again, no free seen */
	ev_free(STP_MEM_HOST, -1, 0x5000);
	CHECK(stp_writer_close(w, STP_END_EXIT, 0) == 0);

	allocsim_report rep;
	allocsim_replay_opts o = {0};
	CHECK_EQ_I(allocsim_replay_file(path, &o, &rep, err, sizeof err), 0);
	CHECK_EQ_U(rep.ndevices, 2);
	const allocsim_device_report *d = &rep.devices[0];
	CHECK_EQ_I(d->device, 0);
	CHECK_EQ_I(d->host_fallback, 0);
	CHECK_EQ_U(d->allocs, 4);
	CHECK_EQ_U(d->frees, 4);
	CHECK_EQ_U(d->unmatched_frees, 1);
	CHECK(d->nresults >= 4);
	CHECK_STR(d->results[0].label, "pytorch");
	CHECK_STR(d->results[1].label, "pytorch expandable_segments:True");
	CHECK_EQ_U(d->results[0].peak_reserved, 32 * MiB);
	CHECK_EQ_U(d->results[0].peak_allocated, 2 * R + 12 * MiB);
	/* the actual figures from the segment events, and the model matches */
	CHECK_EQ_I(d->actual.present, 1);
	CHECK_EQ_U(d->actual.segment_reserves, 2);
	CHECK_EQ_U(d->actual.peak_reserved, 32 * MiB);
	CHECK_EQ_U(d->actual.peak_allocated, 2 * R + 12 * MiB);
	CHECK_NEAR(d->actual.reserved_error, 0, 1e-12);
	CHECK_NEAR(d->actual.allocated_error, 0, 1e-12);
	/* the worst moment: the 12 MiB request that made the second segment */
	CHECK_EQ_I(d->has_worst, 1);
	CHECK_EQ_U(d->worst.reserved, 32 * MiB);
	CHECK_EQ_U(d->worst.request_size, 12 * MiB);
	CHECK_EQ_U(d->worst.request_stack, st[3]);
	CHECK_EQ_U(d->worst.free_bytes, R + (20 * MiB - 3 * R));
	CHECK_EQ_U(d->worst.free_blocks, 2);
	CHECK(d->worst.nsegments == 2);
	CHECK_EQ_U(d->worst.segments[0].free_bytes, R + (20 * MiB - 3 * R));
	CHECK_EQ_U(d->worst.segments[0].stream, 0x1234);
	/* the rest of the first segment was split off by the third tensor's
	 * site; the hole sits between the first and the third */
	int found_rest = 0, found_hole = 0;
	for (size_t i = 0; i < d->worst.nblocks; i++) {
		const allocsim_block_info *b = &d->worst.blocks[i];
		if (b->state == ALLOCSIM_BLOCK_FREE && b->size == 20 * MiB - 3 * R && b->split_stack == st[2])
			found_rest = 1;
		if (b->state == ALLOCSIM_BLOCK_FREE && b->size == R && b->left_stack == st[0] && b->right_stack == st[2])
			found_hole = 1;
	}
	CHECK(found_rest);
	CHECK(found_hole);
	CHECK(d->worst.nsites >= 1);
	CHECK_EQ_U(d->worst.sites[0].stack, st[2]);
	CHECK_EQ_U(d->worst.sites[0].split_free_bytes, 20 * MiB - 3 * R);
	CHECK_EQ_U(d->worst.sites[0].splits, 1);
	CHECK_EQ_I(d->recommend_tried, 1);
	/* expandable segments would map 20 + 20 MiB pages: no better here */
	CHECK_EQ_U(d->results[1].peak_reserved, 40 * MiB);

	const allocsim_device_report *d1 = &rep.devices[1];
	CHECK_EQ_I(d1->device, 1);
	CHECK_EQ_I(d1->actual.present, 0);
	CHECK_EQ_U(d1->allocs, 3);
	CHECK_EQ_U(d1->frees, 2); /* one implied by the second allocation */
	CHECK_EQ_U(d1->results[0].duplicate_allocs, 1);
	CHECK_EQ_U(d1->results[0].peak_requested, 4 * MiB);

	/* the text report */
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	allocsim_report_print(f, &rep, namer, NULL);
	fclose(f);
	CHECK(strstr(text, "Fragmentation (device 0, 4 allocations)") != NULL);
	CHECK(strstr(text, "Fragmentation (device 1, 3 allocations)") != NULL);
	CHECK(strstr(text, "actual (segment events in the trace)") != NULL);
	CHECK(strstr(text, "model error vs actual: M_a +0.0%, M_r +0.0%") != NULL);
	CHECK(strstr(text, "Worst moment") != NULL);
	CHECK(strstr(text, "request being served: 12.0 MiB from site") != NULL);
	CHECK(strstr(text, "split off by site") != NULL);
	CHECK(strstr(text, "frees of objects not allocated") != NULL);
	CHECK(strstr(text, "what-if") == NULL);
	if (check_failures_)
		fputs(text, stderr);
	free(text);
	allocsim_report_clear(&rep);
	unlink(path);
}

static void test_host_fallback(void)
{
	const char *path = check_tmp("allocsim-host.stp");
	char err[256];
	w = stp_writer_open(path, err, sizeof err);
	/* a host program: many small mallocs, some freed, growing */
	for (int i = 0; i < 3000; i++) {
		uint64_t addr = 0x10000 + (uint64_t)i * 4096;
		ev_alloc(STP_MEM_HOST, -1, addr, 24 + (uint64_t)(i % 7) * 100, 0, 0);
		if (i % 3 == 2)
			ev_free(STP_MEM_HOST, -1, addr - 4096);
	}
	CHECK(stp_writer_close(w, STP_END_EXIT, 0) == 0);
	allocsim_report rep;
	allocsim_replay_opts o = {.no_recommend = 1, .capacity = 64 * MiB};
	CHECK_EQ_I(allocsim_replay_file(path, &o, &rep, err, sizeof err), 0);
	CHECK_EQ_U(rep.ndevices, 1);
	CHECK_EQ_I(rep.devices[0].device, -1);
	CHECK_EQ_I(rep.devices[0].host_fallback, 1);
	CHECK_EQ_U(rep.devices[0].allocs, 3000);
	CHECK_EQ_I(rep.devices[0].actual.present, 0);
	CHECK_EQ_I(rep.devices[0].recommend_tried, 0);
	/* with a capacity: BFC growing and preallocating, and raw */
	CHECK_EQ_U(rep.devices[0].nresults, 5);
	CHECK_STR(rep.devices[0].results[3].label, "bfc preallocate");
	CHECK_EQ_U(rep.devices[0].results[3].peak_reserved, 64 * MiB);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	allocsim_report_print(f, &rep, NULL, NULL);
	fclose(f);
	CHECK(strstr(text, "what-if") != NULL);
	CHECK(strstr(text, "Fragmentation (host heap, 3000 allocations)") != NULL);
	free(text);
	allocsim_report_clear(&rep);

	/* options: a bad as_run string is an error naming it */
	o.as_run = "max_split_size_mb:5";
	CHECK_EQ_I(allocsim_replay_file(path, &o, &rep, err, sizeof err), -1);
	CHECK(strstr(err, "as_run \"max_split_size_mb:5\": offset 18:") != NULL);
	o.as_run = "expandable_segments:True";
	const char *extra[] = {"model:bfc,allow_growth:False", "max_split_size_mb:20"};
	o.extra = extra;
	o.nextra = 2;
	CHECK_EQ_I(allocsim_replay_file(path, &o, &rep, err, sizeof err), 0);
	CHECK_EQ_U(rep.devices[0].nresults, 7);
	CHECK_STR(rep.devices[0].results[0].label, "pytorch expandable_segments:True");
	CHECK_STR(rep.devices[0].results[1].label, "pytorch");
	allocsim_report_clear(&rep);
	unlink(path);
}

static void test_bad_file(void)
{
	const char *path = check_tmp("allocsim-bad.stp");
	FILE *f = fopen(path, "wb");
	fputs("not a trace at all", f);
	fclose(f);
	char err[256];
	allocsim_report rep;
	CHECK_EQ_I(allocsim_replay_file(path, NULL, &rep, err, sizeof err), -1);
	CHECK(strstr(err, path) != NULL);
	CHECK(!strchr(err, '\n'));
	unlink(path);
	CHECK_EQ_I(allocsim_replay_file("/nonexistent/x.stp", NULL, &rep, err, sizeof err), -1);
	CHECK_EQ_U(rep.ndevices, 0);
}

int main(void)
{
	test_device_trace();
	test_host_fallback();
	test_bad_file();
	return check_done();
}
