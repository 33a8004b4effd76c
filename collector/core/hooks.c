/*
 * hooks.c - the backends' hooks (face.h): every stc_backend registered with
 * STC_BACKEND sits, as a pointer, in the section "stc_backends", which the
 * linker bounds with __start_stc_backends and __stop_stc_backends; each
 * function here runs one hook of every backend that has it, in link order.
 *
 * So the core never names a backend, a backend needs no code to run before
 * the collector starts (the table is data, there before any constructor),
 * and a program linked without backends (the unit tests) has an empty
 * table (the bounds are weak: both NULL).
 */
#include "internal.h"

extern const stc_backend *const __start_stc_backends[] __attribute__((weak, visibility("hidden")));
extern const stc_backend *const __stop_stc_backends[] __attribute__((weak, visibility("hidden")));

#define EACH(b)                                                                                      \
	for (const stc_backend *const *b##_at = __start_stc_backends, *b;                              \
	     b##_at && b##_at < __stop_stc_backends && (b = *b##_at, 1); b##_at++)

void stc_backends_start(void)
{
	EACH(b) if (b->start) b->start();
}

void stc_backends_finish(void)
{
	EACH(b) if (b->finish) b->finish();
}

void stc_backends_fork_prepare(void)
{
	EACH(b) if (b->fork_prepare) b->fork_prepare();
}

void stc_backends_fork_parent(void)
{
	EACH(b) if (b->fork_parent) b->fork_parent();
}

void stc_backends_fork_child(void)
{
	EACH(b) if (b->fork_child) b->fork_child();
}

void stc_backends_flush(int final)
{
	EACH(b) if (b->flush) b->flush(final);
}

uint64_t stc_backends_mark(uint64_t mark, int try_only)
{
	EACH(b) if (b->mark) mark = b->mark(mark, try_only);
	return mark;
}

