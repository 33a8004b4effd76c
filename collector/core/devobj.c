/*
 * devobj.c - the table of live GPU-visible objects (see face.h): one
 * array sorted by start address, binary-searched, grown by doubling with
 * memory from mmap.  Insertions and removals move the tail (memmove); with
 * the tens of thousands of objects of a large PyTorch run that is a few
 * microseconds, far below the cost of the cudaMalloc it follows, and it
 * keeps lookups and snapshots (what runs per kernel launch) a plain binary
 * search and a memcpy.
 */
#include <pthread.h>
#include <string.h>

#include "internal.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static stc_devobj *tab;
static size_t n, cap;
static uint64_t next_id = 1, generation, stale, dropped;

/* Index of the first entry whose start is >= a. */
static size_t lower_bound(uint64_t a)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (tab[mid].addr < a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static uint64_t end_of(const stc_devobj *o)
{
	uint64_t e = o->addr + o->size;
	return e < o->addr ? UINT64_MAX : e; /* saturate: a range never wraps */
}

uint64_t stc_devobj_add(uint64_t addr, uint64_t size, int32_t device, uint8_t kind, uint8_t segment, uint32_t stack)
{
	if (!size)
		return 0;
	stc_devobj o = {.addr = addr, .size = size, .device = device, .kind = kind, .segment = segment, .stack = stack};
	uint64_t e = end_of(&o);
	pthread_mutex_lock(&lock);
	/* the entries that overlap [addr, e): possibly the one before i, then
	 * every one that starts below e */
	size_t i = lower_bound(addr);
	if (i > 0 && end_of(&tab[i - 1]) > addr)
		i--;
	size_t j = i;
	while (j < n && tab[j].addr < e)
		j++;
	if (j > i) {
		stale += j - i;
		memmove(tab + i, tab + j, (n - j) * sizeof *tab);
		n -= j - i;
	}
	stc_devobj *grown = n == cap ? stc_mem_grow(tab, &cap, n, sizeof *tab, 1024) : tab;
	if (!grown) {
		dropped++;
		generation++;
		pthread_mutex_unlock(&lock);
		return 0;
	}
	tab = grown;
	memmove(tab + i + 1, tab + i, (n - i) * sizeof *tab);
	o.id = next_id++;
	tab[i] = o;
	n++;
	generation++;
	pthread_mutex_unlock(&lock);
	return o.id;
}

int stc_devobj_remove(uint64_t addr, stc_devobj *out)
{
	pthread_mutex_lock(&lock);
	size_t i = lower_bound(addr);
	int found = i < n && tab[i].addr == addr;
	if (found) {
		if (out)
			*out = tab[i];
		memmove(tab + i, tab + i + 1, (n - i - 1) * sizeof *tab);
		n--;
		generation++;
	}
	pthread_mutex_unlock(&lock);
	return found;
}

int stc_devobj_find(uint64_t p, stc_devobj *out)
{
	pthread_mutex_lock(&lock);
	/* the last entry that starts at or below p */
	size_t i = lower_bound(p);
	if (i < n && tab[i].addr == p)
		i++;
	int found = i > 0 && p < end_of(&tab[i - 1]);
	if (found && out)
		*out = tab[i - 1];
	pthread_mutex_unlock(&lock);
	return found;
}

size_t stc_devobj_snapshot(int32_t dev, uint64_t *starts, uint64_t *ends, uint64_t *ids, size_t max, uint64_t *gen)
{
	size_t k = 0;
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < n; i++) {
		if (dev >= 0 && tab[i].device >= 0 && tab[i].device != dev)
			continue;
		if (k < max) {
			starts[k] = tab[i].addr;
			ends[k] = end_of(&tab[i]);
			if (ids)
				ids[k] = tab[i].id;
		}
		k++;
	}
	if (gen)
		*gen = generation;
	pthread_mutex_unlock(&lock);
	return k;
}

uint64_t stc_devobj_generation(void)
{
	pthread_mutex_lock(&lock);
	uint64_t g = generation;
	pthread_mutex_unlock(&lock);
	return g;
}

size_t stc_devobj_count(void)
{
	pthread_mutex_lock(&lock);
	size_t c = n;
	pthread_mutex_unlock(&lock);
	return c;
}

void stc_devobj_stats(uint64_t *s, uint64_t *d)
{
	pthread_mutex_lock(&lock);
	if (s)
		*s = stale;
	if (d)
		*d = dropped;
	pthread_mutex_unlock(&lock);
}

void stc_devobj_reset(void)
{
	pthread_mutex_lock(&lock);
	if (tab)
		stc_mem_free(tab, cap * sizeof *tab);
	tab = NULL;
	n = cap = 0;
	stale = dropped = 0;
	generation++;
	pthread_mutex_unlock(&lock);
}

void stc_devobj_atfork_child(void) { pthread_mutex_init(&lock, NULL); }
