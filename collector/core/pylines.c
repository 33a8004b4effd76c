/*
 * pylines.c - the names of Python frames: (code object, position) -> the
 * string id of "FILE:LINE in FUNCTION" in the trace, so that a line is named
 * (and interned) once.  Both ways of reading frames use it (pyframes.c with
 * the GIL, pylayout.c without), from many threads at once: one mutex, never
 * held while anything else is called.  An entry keeps two more key words
 * (the code object's file and name objects, for frames read in place):
 * a code object freed and another made at its address, with other names,
 * misses.  Memory from the collector's own allocator (stc_mem_*).
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

uint32_t stc_py_lines_get(const void *code, long pos, uintptr_t k1, uintptr_t k2)
{
	pthread_mutex_lock(&lines_mu);
	line_slot *s = find(code, pos, k1, k2);
	uint32_t id = s && s->code ? s->id : 0;
	pthread_mutex_unlock(&lines_mu);
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
	return id;
}

void stc_py_lines_atfork_child(void) { pthread_mutex_init(&lines_mu, NULL); }
