/*
 * pylines.c - the names of Python frames: (code object, position) -> the
 * string id of "FILE:LINE in FUNCTION" in the trace, so that a line is named
 * (and interned) once.  Both ways of reading frames use it (pyframes.c with
 * the GIL, pylayout.c without), from many threads at once: one mutex, never
 * held while anything else is called.  An entry keeps two more key words
 * (the code object's file and name objects, for frames read in place):
 * a code object freed and another made at its address, with other names,
 * misses.  Memory from the collector's own allocator (stc_mem_*).
 *
 * In front of the table, each thread keeps a direct-mapped cache of the
 * entries it looked up (TC_SLOTS, its own: no lock), because a call path
 * names every frame and the mutex taken per frame was most of that cost.
 * An entry never changes once put, so a cached one answers as the table
 * would.  The cache is freed at the thread's exit (a pthread key's
 * destructor); a forked child keeps the forking thread's (valid: the
 * table's entries come with it).
 */
#include <pthread.h>

#include "internal.h"

typedef struct { void *code; long pos; uintptr_t k1, k2; uint32_t id; } line_slot;
static line_slot *lines;
static size_t lines_cap, nlines;
static pthread_mutex_t lines_mu = PTHREAD_MUTEX_INITIALIZER;

static size_t slot_of(const void *code, long pos, size_t cap)
{
	return (((uintptr_t)code >> 4) * 31 + (size_t)pos) & (cap - 1);
}

static int grow(void)
{
	if ((nlines + 1) * 2 <= lines_cap)
		return 1;
	size_t nc = lines_cap ? lines_cap * 2 : 4096;
	line_slot *nt = stc_mem_alloc(nc * sizeof *nt);
	if (!nt)
		return 0;
	for (size_t i = 0; i < lines_cap; i++)
		if (lines[i].code) {
			size_t j = slot_of(lines[i].code, lines[i].pos, nc);
			while (nt[j].code)
				j = (j + 1) & (nc - 1);
			nt[j] = lines[i];
		}
	if (lines)
		stc_mem_free(lines, lines_cap * sizeof *lines);
	lines = nt;
	lines_cap = nc;
	return 1;
}

/* The entry of the key, or the empty slot where it goes; NULL when the
 * table cannot grow.  Under lines_mu. */
static line_slot *find(const void *code, long pos, uintptr_t k1, uintptr_t k2)
{
	if (!grow())
		return NULL;
	size_t j = slot_of(code, pos, lines_cap);
	for (; lines[j].code; j = (j + 1) & (lines_cap - 1))
		if (lines[j].code == code && lines[j].pos == pos && lines[j].k1 == k1 && lines[j].k2 == k2)
			break;
	return &lines[j];
}

/* ---------------------------------------------- the thread's own cache */

#define TC_SLOTS 1024 /* 40 KiB a thread that reads Python frames */

static pthread_key_t tc_key;
static pthread_once_t tc_once = PTHREAD_ONCE_INIT;
static int tc_key_ok;
static STC_TLS line_slot *t_cache;

static void tc_free(void *p)
{
	t_cache = NULL; /* a later destructor's lookup makes another one */
	stc_mem_free(p, TC_SLOTS * sizeof(line_slot));
}

static void tc_make_key(void) { tc_key_ok = pthread_key_create(&tc_key, tc_free) == 0; }

/* This thread's slot for the key, or NULL (no cache: the table alone). */
static line_slot *tc_slot(const void *code, long pos)
{
	line_slot *c = t_cache;
	if (STC_UNLIKELY(!c)) {
		pthread_once(&tc_once, tc_make_key);
		if (!tc_key_ok || !(c = stc_mem_alloc(TC_SLOTS * sizeof *c)))
			return NULL;
		pthread_setspecific(tc_key, c);
		t_cache = c;
	}
	return &c[slot_of(code, pos, TC_SLOTS)];
}

uint32_t stc_py_lines_get(const void *code, long pos, uintptr_t k1, uintptr_t k2)
{
	line_slot *c = tc_slot(code, pos);
	if (c && c->code == code && c->pos == pos && c->k1 == k1 && c->k2 == k2)
		return c->id;
	pthread_mutex_lock(&lines_mu);
	line_slot *s = find(code, pos, k1, k2);
	uint32_t id = s && s->code ? s->id : 0;
	pthread_mutex_unlock(&lines_mu);
	if (c && id)
		*c = (line_slot){(void *)code, pos, k1, k2, id};
	return id;
}

uint32_t stc_py_lines_put(const void *code, long pos, uintptr_t k1, uintptr_t k2, uint32_t id)
{
	pthread_mutex_lock(&lines_mu);
	line_slot *s = find(code, pos, k1, k2);
	if (s && !s->code) {
		*s = (line_slot){(void *)code, pos, k1, k2, id};
		nlines++;
	} else if (s)
		id = s->id;
	pthread_mutex_unlock(&lines_mu);
	line_slot *c = tc_slot(code, pos);
	if (c && id)
		*c = (line_slot){(void *)code, pos, k1, k2, id};
	return id;
}

void stc_py_lines_atfork_child(void) { pthread_mutex_init(&lines_mu, NULL); }
