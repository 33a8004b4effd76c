/*
 * check_heap.c - replays a trace's allocations in seq order and checks that
 * the heap it describes is consistent: no address allocated twice while
 * live, no free of an address allocated and already freed.  (A free of an
 * address never seen is allowed: it was allocated before the collector
 * started.)  Prints "allocs=N frees=N live=N peak=BYTES" and, with a size
 * filter, "sized=N" (allocations of that exact size).
 *   check_heap TRACE [SIZE_LO SIZE_HI]
 * Exit 0 when consistent and the trace reads without error.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "stprof/trace.h"

typedef struct slot { uint64_t addr, size; uint8_t state; } slot; /* 1 live, 2 freed */
static slot *tab;
static size_t cap = 1u << 20, used;

static slot *find(uint64_t a)
{
	size_t i = (size_t)((a * 0x9E3779B97F4A7C15ull) >> 40) & (cap - 1);
	while (tab[i].state && tab[i].addr != a)
		i = (i + 1) & (cap - 1);
	return &tab[i];
}

static void grow(void)
{
	slot *old = tab;
	size_t oc = cap;
	cap *= 2;
	tab = calloc(cap, sizeof *tab);
	for (size_t i = 0; i < oc; i++)
		if (old[i].state)
			*find(old[i].addr) = old[i];
	free(old);
}

int main(int argc, char **argv)
{
	if (argc != 2 && argc != 4) {
		fprintf(stderr, "usage: check_heap TRACE [SIZE_LO SIZE_HI]\n");
		return 2;
	}
	uint64_t lo = argc == 4 ? strtoull(argv[2], 0, 10) : 1, hi = argc == 4 ? strtoull(argv[3], 0, 10) : 0;
	char err[512];
	stp_reader *r = stp_reader_open(argv[1], err, sizeof err);
	if (!r) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	tab = calloc(cap, sizeof *tab);
	stp_event ev;
	uint64_t allocs = 0, frees = 0, live = 0, bytes = 0, peak = 0, sized = 0, bad = 0;
	int rc;
	while ((rc = stp_reader_next(r, &ev)) > 0) {
		if (ev.type == STP_EV_ALLOC) {
			if ((used + 1) * 2 > cap)
				grow();
			slot *s = find(ev.u.alloc.addr);
			if (s->state == 1) {
				if (bad++ < 5)
					fprintf(stderr, "seq %" PRIu64 ": 0x%" PRIx64 " allocated while live\n", ev.seq, ev.u.alloc.addr);
			}
			if (!s->state)
				used++;
			*s = (slot){ev.u.alloc.addr, ev.u.alloc.size, 1};
			allocs++;
			live++;
			bytes += ev.u.alloc.size;
			if (bytes > peak)
				peak = bytes;
			if (ev.u.alloc.size >= lo && ev.u.alloc.size <= hi)
				sized++;
		} else if (ev.type == STP_EV_FREE) {
			slot *s = find(ev.u.free.addr);
			frees++;
			if (s->state == 1) {
				s->state = 2;
				live--;
				bytes -= s->size;
			} else if (s->state == 2) {
				if (bad++ < 5)
					fprintf(stderr, "seq %" PRIu64 ": 0x%" PRIx64 " freed twice\n", ev.seq, ev.u.free.addr);
			}
		}
	}
	if (rc < 0)
		fprintf(stderr, "%s\n", stp_reader_error(r));
	printf("allocs=%" PRIu64 " frees=%" PRIu64 " live=%" PRIu64 " peak=%" PRIu64 " lost=%" PRIu64, allocs, frees,
	       live, peak, stp_reader_stats(r)->lost_events);
	if (argc == 4)
		printf(" sized=%" PRIu64, sized);
	printf(" bad=%" PRIu64 "\n", bad);
	stp_reader_close(r);
	return rc < 0 || bad ? 1 : 0;
}
