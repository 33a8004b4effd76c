/*
 * test_sanitizer_map.c - the Compute Sanitizer backend's host logic and the
 * patch's own search (collector/sanitizer/sanitizer_map.c, sanitizer_hits.h), on
 * buffers laid out as the GPU leaves them: a map of 2,000 live objects
 * (past DrGPUM's 1024) from the real live-object table, a header and
 * launch areas as the backend makes them, accesses recorded by the same
 * code the patch runs (through the launch's userdata), read-back areas
 * decoded into the API event's ranges.  Checks: a read-only object, a
 * written-never-read one, an untouched one, an atomic (read and write), an
 * access one past an object's end and one in a gap (no hit), a prefetch
 * (no access), objects past index 1024, maps that stay valid after the
 * table changes, two launches of one header kept apart, the parts of an
 * object touched (32nds, as ranges), a bulk copy over two objects, a TMA
 * tensor map (placed, and not), block times, launch sampling, and copy/set
 * ranges.
 */
#include <string.h>

#include "../../core/face.h"
#include "../sanitizer_map.h"
#include "check.h"

#define NOBJ 2000

/* a header, its chunk masks and two launch areas, as
 * sanitizerMemcpyDeviceToHost brings them back */
static stc_sz_hdr hdr;
static uint32_t chunks[NOBJ + 8];
static uint64_t areas[2][(sizeof(stc_sz_area) + NOBJ) / 8 + 64];

static uint32_t *words_of(int slot) { return (uint32_t *)((stc_sz_area *)areas[slot] + 1); }

static const stp_range *find_range(const stp_range *r, size_t n, uint64_t addr)
{
	for (size_t i = 0; i < n; i++)
		if (r[i].addr == addr)
			return &r[i];
	return NULL;
}

int main(void)
{
	/* 2,000 objects of device 0, 4 KiB apart with 256-byte gaps, added in
	 * scrambled order; 10 of device 1 (not in device 0's map); one pinned
	 * host buffer (device -1: in every device's map) */
	uint64_t base = 0x7f0000000000ull;
	for (uint64_t k = 0; k < NOBJ; k++) {
		uint64_t i = (k * 7919) % NOBJ;
		CHECK(stc_devobj_add(base + i * 4096, 4096 - 256, 0, 1, 0, 0) != 0);
	}
	for (uint64_t i = 0; i < 10; i++)
		CHECK(stc_devobj_add(0x100000000ull + i * 0x1000, 0x800, 1, 1, 0, 0) != 0);
	uint64_t pinned = 0x200000000ull;
	CHECK(stc_devobj_add(pinned, 0x10000, -1, 3, 0, 0) != 0);

	stc_szmap *m = stc_szmap_build(0);
	CHECK(m != NULL);
	if (!m)
		return check_done();
	CHECK_EQ_U(m->n, NOBJ + 1);
	CHECK(m->gen == stc_devobj_generation());
	for (uint64_t i = 1; i < m->n; i++)
		CHECK(m->starts[i - 1] < m->starts[i] && m->ends[i - 1] <= m->starts[i]);
	CHECK(m->starts[0] == pinned);
	stc_szmap *m1 = stc_szmap_build(1);
	CHECK(m1 && m1->n == 11);
	stc_szmap_free(m1);

	/* the header as the backend makes it before the launches */
	CHECK_EQ_U(stc_sz_area_bytes(NOBJ), 32 + 504);
	CHECK(stc_sz_area_bytes(m->n) <= sizeof areas[0]);
	hdr = (stc_sz_hdr){.starts = (uint64_t)(uintptr_t)m->starts, .ends = (uint64_t)(uintptr_t)m->ends, .n = m->n,
	                   .chunks = (uint64_t)(uintptr_t)chunks, .areas = (uint64_t)(uintptr_t)areas,
	                   .area_bytes = sizeof areas[0]};
	uint64_t ud = stc_sz_ud((uint64_t)(uintptr_t)&hdr, 0), ud1 = stc_sz_ud((uint64_t)(uintptr_t)&hdr, 1);
	CHECK(stc_sz_ud_hdr(ud1) == &hdr && (uint64_t *)stc_sz_ud_area(&hdr, ud1) == areas[1]);
	uint32_t *w = words_of(0);

	/* the kernel's accesses, through the patch's code */
	uint64_t ro = base + 3 * 4096, wo = base + 1500 * 4096, un = base + 7 * 4096, at = base + 1999 * 4096;
	uint64_t rw = base + 1024 * 4096, at2 = base + 1025 * 4096, aw = base + 1026 * 4096;
	for (uint64_t off = 0; off < 4096 - 256; off += 4) /* read-only, every word incl. the last */
		stc_sz_access(ud, ro + off, 4, STC_SZ_FLAG_READ);
	stc_sz_access(ud, wo, 4, STC_SZ_FLAG_WRITE);             /* written, never read: its first 32nd */
	stc_sz_access(ud, wo + 100, 4, STC_SZ_FLAG_WRITE);
	stc_sz_access(ud, un + 4096 - 256, 4, STC_SZ_FLAG_READ);  /* one past un's end */
	stc_sz_access(ud, un + 4096 - 4, 4, STC_SZ_FLAG_WRITE);   /* in the gap after it */
	stc_sz_access(ud, un - 1, 1, STC_SZ_FLAG_WRITE);          /* in the gap before it */
	stc_sz_access(ud, un, 4, STC_SZ_FLAG_PREFETCH);           /* a prefetch: no access */
	stc_sz_access(ud, at + 8, 4, STC_SZ_FLAG_READ | STC_SZ_FLAG_WRITE); /* atomicAdd */
	stc_sz_access(ud, at2, 4, STC_SZ_FLAG_ATOMSYS);           /* system-scope atomic */
	/* atomicAdd with its result unused: a RED, flagged write-only, still
	 * depends on the old value (an earlier write is not dead) */
	stc_sz_access(ud, aw, 4, STC_SZ_FLAG_ATOMIC_WRITE_ONLY | STC_SZ_FLAG_WRITE);
	stc_sz_access(ud, rw, 4, STC_SZ_FLAG_READ);               /* read, then written */
	stc_sz_access(ud, rw + 8, 4, STC_SZ_FLAG_WRITE);
	stc_sz_access(ud, pinned + 0xffff, 1, STC_SZ_FLAG_READ);  /* pinned host, last byte */
	stc_sz_access(ud, pinned + 0x10000, 4, STC_SZ_FLAG_READ); /* one past it */
	stc_sz_access(ud, base + NOBJ * 4096, 4, STC_SZ_FLAG_READ); /* past every object */
	stc_sz_access(ud, 0, 4, STC_SZ_FLAG_READ);
	stc_sz_access(0, ro, 4, STC_SZ_FLAG_WRITE);               /* a launch not sampled: nothing */
	/* the second launch of the header: its own bits, the header's parts */
	stc_sz_access(ud1, un + 8, 8, STC_SZ_FLAG_WRITE);
	/* block times: the earliest entry and the latest exit */
	stc_sz_block_time(ud, 500, 0);
	stc_sz_block_time(ud, 400, 0);
	stc_sz_block_time(ud, 900, 1);
	stc_sz_block_time(ud, 700, 1);
	const stc_sz_area *a0 = (const stc_sz_area *)areas[0];
	CHECK(a0->t_begin == UINT64_MAX - 400 && a0->t_end == 900);

	/* the table changes after the launch: the map the launch used stays */
	stc_devobj_remove(ro, NULL);
	stc_devobj_add(ro, 64, 0, 1, 0, 0);

	stp_range r[16];
	uint64_t ids[16];
	size_t k = stc_sz_decode(m->starts, m->ends, m->ids, m->n, w, chunks, r, ids, 16);
	CHECK_EQ_U(k, 7);
	for (size_t i = 1; i < k && i < 16; i++)
		CHECK(r[i - 1].addr < r[i].addr);
	const stp_range *x;
	CHECK((x = find_range(r, k, ro)) && x->mode == STP_ACCESS_READ && x->size == 4096 - 256);
	/* wo: bytes 0..103 of 3840, its first 32nd (120 bytes) */
	CHECK((x = find_range(r, k, wo)) && x->mode == STP_ACCESS_WRITE && x->size == 120);
	CHECK((x = find_range(r, k, at)) && x->mode == (STP_ACCESS_READ | STP_ACCESS_WRITE));
	CHECK((x = find_range(r, k, at2)) && x->mode == (STP_ACCESS_READ | STP_ACCESS_WRITE));
	CHECK((x = find_range(r, k, aw)) && x->mode == (STP_ACCESS_READ | STP_ACCESS_WRITE));
	CHECK((x = find_range(r, k, rw)) && x->mode == (STP_ACCESS_READ | STP_ACCESS_WRITE));
	/* the pinned buffer's last byte: its last 32nd */
	CHECK((x = find_range(r, k, pinned + 0x10000 - 0x800)) && x->mode == STP_ACCESS_READ && x->size == 0x800);
	CHECK(find_range(r, k, un) == NULL);
	CHECK(find_range(r, k, un + 4096) == NULL);
	/* ids name the objects as they were at the launch */
	for (size_t i = 0; i < k; i++) {
		stc_devobj o;
		if (r[i].addr != ro && stc_devobj_find(r[i].addr, &o))
			CHECK(o.id == ids[i]);
	}
	/* whole objects without chunk masks */
	k = stc_sz_decode(m->starts, m->ends, m->ids, m->n, w, NULL, r, NULL, 16);
	CHECK((x = find_range(r, k, wo)) && x->size == 4096 - 256);
	/* fewer slots than hits: the count still says how many */
	CHECK_EQ_U(stc_sz_decode(m->starts, m->ends, m->ids, m->n, w, chunks, r, NULL, 2), 7);
	/* the second launch: un alone, written */
	k = stc_sz_decode(m->starts, m->ends, m->ids, m->n, words_of(1), chunks, r, NULL, 16);
	CHECK(k == 1 && r[0].addr == un && r[0].mode == STP_ACCESS_WRITE && r[0].size == 120);
	/* stray bits past the map (not written by the patch) are ignored */
	uint32_t tail[2] = {0, 0xffffffffu};
	CHECK_EQ_U(stc_sz_decode(m->starts, m->ends, NULL, 17, tail, NULL, r, NULL, 16), 1);
	CHECK(r[0].addr == m->starts[16]);

	/* parts: runs of touched 32nds become ranges; an object of 100 bytes
	 * has 32nds of 3 or 4 bytes */
	CHECK_EQ_U(stc_sz_chunk_start(100, 0), 0);
	CHECK_EQ_U(stc_sz_chunk_start(100, 1), 4);
	CHECK_EQ_U(stc_sz_chunk_start(100, 32), 100);
	for (uint64_t off = 0; off < 100; off++) /* every byte in the chunk its start says */
		CHECK(stc_sz_chunk(0, 100, off) < 32 && stc_sz_chunk_start(100, stc_sz_chunk(0, 100, off)) <= off &&
		      off < stc_sz_chunk_start(100, stc_sz_chunk(0, 100, off) + 1));
	CHECK_EQ_U(stc_sz_chunk_bits(1000, 1100, 1000, 1), 1);
	CHECK_EQ_U(stc_sz_chunk_bits(1000, 1100, 1097, 8), 0x80000000u); /* clipped at the end */
	CHECK_EQ_U(stc_sz_chunk_bits(1000, 1100, 1096, 1), 0x40000000u);
	CHECK_EQ_U(stc_sz_chunk_bits(1000, 1100, 1096, 2), 0xc0000000u);
	CHECK_EQ_U(stc_sz_chunk_bits(1000, 1100, 900, 1000), 0xffffffffu);
	CHECK_EQ_U(stc_sz_chunk_bits(1000, 1100, 1100, 4), 0);
	{
		uint64_t s2[1] = {0x10000}, e2[1] = {0x10000 + 3200};
		uint32_t w2[1] = {STC_SZ_HIT_READ}, c2[1] = {0x0000f00fu};
		CHECK_EQ_U(stc_sz_decode(s2, e2, NULL, 1, w2, c2, r, NULL, 16), 2);
		CHECK(r[0].addr == 0x10000 && r[0].size == 400 && r[1].addr == 0x10000 + 1200 && r[1].size == 400);
	}

	/* a bulk copy over the end of one object and the start of the next
	 * (and the gap between), and TMA tensor maps */
	memset(areas, 0, sizeof areas);
	memset(chunks, 0, sizeof chunks);
	uint64_t b2 = base + 20 * 4096;
	stc_sz_range(ud, b2 + 4096 - 512, 1024, STC_SZ_HIT_READ);
	uint64_t tmap[16] = {7, 0x1000, base + 30 * 4096 + 16, 3}, tbad[16] = {1, 2, 3};
	stc_sz_tensor_map(ud, (uint64_t)(uintptr_t)tmap, STC_SZ_HIT_WRITE);
	k = stc_sz_decode(m->starts, m->ends, m->ids, m->n, w, chunks, r, NULL, 16);
	CHECK_EQ_U(k, 3);
	/* bytes 3584.. of object 20 (3840 bytes: 32nds of 120): its 32nds 29-31;
	 * bytes ..511 of object 21: its 32nds 0-4 */
	CHECK((x = find_range(r, k, b2 + 29 * 120)) && x->size == 3 * 120 && x->mode == STP_ACCESS_READ);
	CHECK((x = find_range(r, k, b2 + 4096)) && x->size == 5 * 120 && x->mode == STP_ACCESS_READ);
	CHECK((x = find_range(r, k, base + 30 * 4096)) && x->size == 4096 - 256 && x->mode == STP_ACCESS_WRITE);
	CHECK(!(((stc_sz_area *)areas[0])->flags & STC_SZ_AREA_UNPLACED));
	stc_sz_tensor_map(ud, (uint64_t)(uintptr_t)tbad, STC_SZ_HIT_READ);
	CHECK(((stc_sz_area *)areas[0])->flags & STC_SZ_AREA_UNPLACED);

	/* every object of the 2,000, each hit once with alternating modes */
	memset(areas, 0, sizeof areas);
	memset(chunks, 0, sizeof chunks);
	for (uint64_t i = 0; i < m->n; i++)
		stc_sz_access(ud, m->ends[i] - 1, 1, i % 2 ? STC_SZ_FLAG_WRITE : STC_SZ_FLAG_READ);
	static stp_range all[NOBJ + 8];
	CHECK_EQ_U(stc_sz_decode(m->starts, m->ends, m->ids, m->n, w, NULL, all, NULL, NOBJ + 8), m->n);
	int modes_ok = 1;
	for (uint64_t i = 0; i < m->n; i++)
		modes_ok &= all[i].addr == m->starts[i] && all[i].mode == (i % 2 ? STP_ACCESS_WRITE : STP_ACCESS_READ);
	CHECK(modes_ok);
	stc_szmap_free(m);

	/* an empty table: no object, no hit */
	stc_devobj_reset();
	m = stc_szmap_build(0);
	CHECK(m && m->n == 0);
	if (m) {
		memset(areas, 0, sizeof areas);
		hdr = (stc_sz_hdr){.starts = (uint64_t)(uintptr_t)m->starts, .ends = (uint64_t)(uintptr_t)m->ends,
		                   .chunks = (uint64_t)(uintptr_t)chunks, .areas = (uint64_t)(uintptr_t)areas,
		                   .area_bytes = sizeof areas[0]};
		stc_sz_access(ud, 0x1000, 4, STC_SZ_FLAG_READ);
		stc_sz_range(ud, 0x1000, 1 << 20, STC_SZ_HIT_READ);
	}
	CHECK(words_of(0)[0] == 0);
	stc_szmap_free(m);

	/* per-launch parts (chunks_step): two launches of one header over one
	 * object, each writing its own half, keep their own masks */
	{
		uint64_t s1[1] = {0x40000}, e1[1] = {0x40000 + 3200};
		static uint32_t pc[2][2];
		static uint64_t pa[2][8];
		stc_sz_hdr ph = {.starts = (uint64_t)(uintptr_t)s1, .ends = (uint64_t)(uintptr_t)e1, .n = 1,
		                 .chunks = (uint64_t)(uintptr_t)pc, .areas = (uint64_t)(uintptr_t)pa,
		                 .area_bytes = sizeof pa[0], .chunks_step = sizeof pc[0]};
		uint64_t u0 = stc_sz_ud((uint64_t)(uintptr_t)&ph, 0), u1 = stc_sz_ud((uint64_t)(uintptr_t)&ph, 1);
		CHECK(stc_sz_ud_chunks(&ph, u1) == pc[1]);
		for (uint64_t off = 0; off < 1600; off += 4)
			stc_sz_access(u0, s1[0] + off, 4, STC_SZ_FLAG_WRITE);
		for (uint64_t off = 1600; off < 3200; off += 4)
			stc_sz_access(u1, s1[0] + off, 4, STC_SZ_FLAG_WRITE);
		CHECK(pc[0][0] == 0x0000ffffu && pc[1][0] == 0xffff0000u);
		CHECK_EQ_U(stc_sz_decode(s1, e1, NULL, 1, (const uint32_t *)((stc_sz_area *)pa[1] + 1), pc[1], r, NULL, 16), 1);
		CHECK(r[0].addr == s1[0] + 1600 && r[0].size == 1600 && r[0].mode == STP_ACCESS_WRITE);
	}

	/* sampling */
	CHECK(stc_sz_sampled(0, 3) && !stc_sz_sampled(1, 3) && !stc_sz_sampled(2, 3) && stc_sz_sampled(3, 3));
	CHECK(stc_sz_sampled(5, 0) && stc_sz_sampled(5, 1));

	/* copies and sets */
	stp_range c[2];
	CHECK_EQ_U(stc_sz_copy_ranges(0x1000, 0x9000, 256, 0, 0, 0, 0, 0, c), 2);
	CHECK(c[0].addr == 0x1000 && c[0].size == 256 && c[0].mode == STP_ACCESS_READ);
	CHECK(c[1].addr == 0x9000 && c[1].size == 256 && c[1].mode == STP_ACCESS_WRITE);
	/* 2D: 3 rows of 100 bytes, pitches 128 and 256 */
	CHECK_EQ_U(stc_sz_copy_ranges(0x1000, 0x9000, 300, 100, 3, 1, 128, 256, c), 2);
	CHECK(c[0].size == 2 * 128 + 100 && c[1].size == 2 * 256 + 100);
	CHECK_EQ_U(stc_sz_copy_ranges(0x1000, 0x9000, 0, 0, 0, 0, 0, 0, c), 0);
	CHECK_EQ_U(stc_sz_set_ranges(0x5000, 64, 1, 0, 4, c), 1);
	CHECK(c[0].addr == 0x5000 && c[0].size == 256 && c[0].mode == STP_ACCESS_WRITE);
	CHECK_EQ_U(stc_sz_set_ranges(0x5000, 10, 4, 64, 1, c), 1);
	CHECK(c[0].size == 3 * 64 + 10);
	CHECK_EQ_U(stc_sz_set_ranges(0, 10, 1, 0, 1, c), 0);
	return check_done();
}
