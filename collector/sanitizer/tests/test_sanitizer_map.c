/*
 * test_sanitizer_map.c - the Compute Sanitizer backend's host logic and the
 * patch's own search (collector/sanitizer/sanitizer_map.c, sanitizer_hits.h), on
 * buffers laid out as the GPU leaves them: a map of 2,000 live objects
 * (past DrGPUM's 1024) from the real live-object table, accesses recorded
 * by the same code the patch runs, read-back blocks decoded into the API
 * event's ranges.  Checks: a read-only object, a written-never-read one,
 * an untouched one, an atomic (read and write), an access one past an
 * object's end and one in a gap (no hit), a prefetch (no access), objects
 * past index 1024, maps that stay valid after the table changes, launch
 * sampling, and copy/set ranges.
 */
#include <string.h>

#include "../../core/face.h"
#include "../sanitizer_map.h"
#include "check.h"

#define NOBJ 2000

/* a recorded block: header then words, as sanitizerMemcpyDeviceToHost
 * brings it back */
static uint64_t blockbuf[(sizeof(stc_sz_block) + NOBJ) / 8 + 64];

static uint32_t *words_of(void *block) { return (uint32_t *)((stc_sz_block *)block + 1); }

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

	/* the block as the host writes it before the launch */
	CHECK_EQ_U(stc_sz_block_bytes(NOBJ), 32 + 504);
	CHECK(stc_sz_block_bytes(m->n) <= sizeof blockbuf);
	m->dev_starts = 0x1000;
	m->dev_ends = 0x2000;
	stc_sz_block *b = (stc_sz_block *)blockbuf;
	stc_szmap_block_header(m, 42, b);
	CHECK(b->n == m->n && b->launch == 42 && b->starts == 0x1000 && b->ends == 0x2000);
	uint32_t *w = words_of(b);
	memset(w, 0, stc_sz_words(m->n) * 4);

	/* the kernel's accesses, through the patch's code */
	uint64_t ro = base + 3 * 4096, wo = base + 1500 * 4096, un = base + 7 * 4096, at = base + 1999 * 4096;
	uint64_t rw = base + 1024 * 4096, at2 = base + 1025 * 4096, aw = base + 1026 * 4096;
	for (uint64_t off = 0; off < 4096 - 256; off += 4) /* read-only, every word incl. the last */
		stc_sz_record(m->starts, m->ends, m->n, w, ro + off, STC_SZ_FLAG_READ);
	stc_sz_record(m->starts, m->ends, m->n, w, wo, STC_SZ_FLAG_WRITE);             /* written, never read */
	stc_sz_record(m->starts, m->ends, m->n, w, wo + 100, STC_SZ_FLAG_WRITE);
	stc_sz_record(m->starts, m->ends, m->n, w, un + 4096 - 256, STC_SZ_FLAG_READ);  /* one past un's end */
	stc_sz_record(m->starts, m->ends, m->n, w, un + 4096 - 1, STC_SZ_FLAG_WRITE);   /* in the gap after it */
	stc_sz_record(m->starts, m->ends, m->n, w, un - 1, STC_SZ_FLAG_WRITE);          /* in the gap before it */
	stc_sz_record(m->starts, m->ends, m->n, w, un, STC_SZ_FLAG_PREFETCH);           /* a prefetch: no access */
	stc_sz_record(m->starts, m->ends, m->n, w, at + 8, STC_SZ_FLAG_READ | STC_SZ_FLAG_WRITE); /* atomicAdd */
	stc_sz_record(m->starts, m->ends, m->n, w, at2, STC_SZ_FLAG_ATOMSYS);           /* system-scope atomic */
	/* atomicAdd with its result unused: a RED, flagged write-only, still
	 * depends on the old value (an earlier write is not dead) */
	stc_sz_record(m->starts, m->ends, m->n, w, aw, STC_SZ_FLAG_ATOMIC_WRITE_ONLY | STC_SZ_FLAG_WRITE);
	stc_sz_record(m->starts, m->ends, m->n, w, rw, STC_SZ_FLAG_READ);               /* read, then written */
	stc_sz_record(m->starts, m->ends, m->n, w, rw + 8, STC_SZ_FLAG_WRITE);
	stc_sz_record(m->starts, m->ends, m->n, w, pinned + 0xffff, STC_SZ_FLAG_READ);  /* pinned host, last byte */
	stc_sz_record(m->starts, m->ends, m->n, w, pinned + 0x10000, STC_SZ_FLAG_READ); /* one past it */
	stc_sz_record(m->starts, m->ends, m->n, w, base + NOBJ * 4096, STC_SZ_FLAG_READ); /* past every object */
	stc_sz_record(m->starts, m->ends, m->n, w, 0, STC_SZ_FLAG_READ);

	/* the table changes after the launch: the map the launch used stays */
	stc_devobj_remove(ro, NULL);
	stc_devobj_add(ro, 64, 0, 1, 0, 0);

	stp_range r[16];
	uint64_t ids[16];
	size_t k = stc_sz_decode(m->starts, m->ends, m->ids, b->n, w, r, ids, 16);
	CHECK_EQ_U(k, 7);
	for (size_t i = 1; i < k && i < 16; i++)
		CHECK(r[i - 1].addr < r[i].addr);
	const stp_range *x;
	CHECK((x = find_range(r, k, ro)) && x->mode == STP_ACCESS_READ && x->size == 4096 - 256);
	CHECK((x = find_range(r, k, wo)) && x->mode == STP_ACCESS_WRITE);
	CHECK((x = find_range(r, k, at)) && x->mode == (STP_ACCESS_READ | STP_ACCESS_WRITE));
	CHECK((x = find_range(r, k, at2)) && x->mode == (STP_ACCESS_READ | STP_ACCESS_WRITE));
	CHECK((x = find_range(r, k, aw)) && x->mode == (STP_ACCESS_READ | STP_ACCESS_WRITE));
	CHECK((x = find_range(r, k, rw)) && x->mode == (STP_ACCESS_READ | STP_ACCESS_WRITE));
	CHECK((x = find_range(r, k, pinned)) && x->mode == STP_ACCESS_READ && x->size == 0x10000);
	CHECK(find_range(r, k, un) == NULL);
	CHECK(find_range(r, k, un + 4096) == NULL);
	/* ids name the objects as they were at the launch */
	for (size_t i = 0; i < k; i++) {
		stc_devobj o;
		if (r[i].addr != ro && stc_devobj_find(r[i].addr, &o))
			CHECK(o.id == ids[i]);
	}
	/* fewer slots than hits: the count still says how many */
	CHECK_EQ_U(stc_sz_decode(m->starts, m->ends, m->ids, b->n, w, r, NULL, 2), 7);
	/* stray bits past the map (not written by the patch) are ignored */
	uint32_t tail[2] = {0, 0xffffffffu};
	CHECK_EQ_U(stc_sz_decode(m->starts, m->ends, NULL, 17, tail, r, NULL, 16), 1);
	CHECK(r[0].addr == m->starts[16]);

	/* every object of the 2,000, each hit once with alternating modes */
	memset(w, 0, stc_sz_words(m->n) * 4);
	for (uint64_t i = 0; i < m->n; i++)
		stc_sz_record(m->starts, m->ends, m->n, w, m->ends[i] - 1, i % 2 ? STC_SZ_FLAG_WRITE : STC_SZ_FLAG_READ);
	static stp_range all[NOBJ + 8];
	CHECK_EQ_U(stc_sz_decode(m->starts, m->ends, m->ids, m->n, w, all, NULL, NOBJ + 8), m->n);
	int modes_ok = 1;
	for (uint64_t i = 0; i < m->n; i++)
		modes_ok &= all[i].addr == m->starts[i] && all[i].mode == (i % 2 ? STP_ACCESS_WRITE : STP_ACCESS_READ);
	CHECK(modes_ok);
	stc_szmap_free(m);

	/* an empty table: no object, no hit */
	stc_devobj_reset();
	m = stc_szmap_build(0);
	CHECK(m && m->n == 0);
	uint32_t none = 0;
	if (m)
		stc_sz_record(m->starts, m->ends, m->n, &none, 0x1000, STC_SZ_FLAG_READ);
	CHECK(none == 0);
	stc_szmap_free(m);

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
