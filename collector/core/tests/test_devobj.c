/*
 * test_devobj.c - the live GPU-object table of the CUDA backends
 * (collector/core/devobj.c): lookups check the end of a range, overlapping
 * additions replace stale entries, no fixed limit (the 1024 objects of
 * DrGPUM's map are passed many times over), snapshots are sorted and per
 * device, and every change bumps the generation.
 */
#include "../face.h"
#include "check.h"

int main(void)
{
	stc_devobj o;
	CHECK(stc_devobj_add(0x1000, 0x100, 0, 1, 0, 7) == 1);
	CHECK(stc_devobj_add(0x3000, 0x100, 1, 1, 0, 0) == 2);
	CHECK(stc_devobj_add(0x2000, 0, 0, 1, 0, 0) == 0); /* empty ranges are not objects */
	CHECK(stc_devobj_find(0x1000, &o) && o.addr == 0x1000 && o.stack == 7);
	CHECK(stc_devobj_find(0x10ff, &o) && o.addr == 0x1000);
	CHECK(!stc_devobj_find(0x1100, &o)); /* one past the end */
	CHECK(!stc_devobj_find(0xfff, &o));
	CHECK(!stc_devobj_find(0x2000, &o));

	/* a range over a stale object replaces it */
	uint64_t g = stc_devobj_generation();
	CHECK(stc_devobj_add(0x1080, 0x100, 0, 1, 0, 0) == 3);
	CHECK(stc_devobj_generation() > g);
	CHECK(!stc_devobj_find(0x1000, &o));
	CHECK(stc_devobj_find(0x1100, &o) && o.addr == 0x1080);
	uint64_t stale, dropped;
	stc_devobj_stats(&stale, &dropped);
	CHECK_EQ_U(stale, 1);
	CHECK_EQ_U(dropped, 0);

	/* remove only at the start */
	CHECK(!stc_devobj_remove(0x1081, NULL));
	CHECK(stc_devobj_remove(0x1080, &o) && o.size == 0x100);
	CHECK_EQ_U(stc_devobj_count(), 1);

	/* 5,000 objects on two devices, added in scrambled order */
	stc_devobj_reset();
	for (uint64_t k = 0; k < 5000; k++) {
		uint64_t i = (k * 2654435761u) % 5000;
		CHECK(stc_devobj_add(0x100000 + i * 0x200, 0x100, (int32_t)(i & 1), 1, 0, 0) != 0);
	}
	stc_devobj_add(0x7000000, 64, -1, 3, 0, 0); /* pinned host: seen from every device */
	CHECK_EQ_U(stc_devobj_count(), 5001);
	static uint64_t s[6000], e[6000], id[6000];
	size_t m = stc_devobj_snapshot(1, s, e, id, 10, NULL);
	CHECK_EQ_U(m, 2501); /* the count, though only 10 were written */
	uint64_t gen;
	m = stc_devobj_snapshot(1, s, e, id, 6000, &gen);
	CHECK_EQ_U(m, 2501);
	CHECK_EQ_U(gen, stc_devobj_generation());
	int sorted = 1;
	for (size_t i = 1; i < m; i++)
		sorted &= s[i - 1] < s[i] && e[i - 1] <= s[i];
	CHECK(sorted);
	CHECK_EQ_U(s[0], 0x100200);
	CHECK_EQ_U(e[0], 0x100300);
	CHECK_EQ_U(s[m - 1], 0x7000000);
	CHECK_EQ_U(stc_devobj_snapshot(-1, s, e, NULL, 6000, NULL), 5001);
	for (uint64_t i = 0; i < 5000; i++)
		CHECK(stc_devobj_find(0x100000 + i * 0x200 + 0xff, &o) && o.device == (int32_t)(i & 1));
	CHECK(!stc_devobj_find(0x100000 + 4999 * 0x200 + 0x100, &o));

	/* a range that would wrap saturates instead */
	CHECK(stc_devobj_add(UINT64_MAX - 10, 100, 0, 1, 0, 0) != 0);
	CHECK(stc_devobj_find(UINT64_MAX - 1, &o));
	return check_done();
}
