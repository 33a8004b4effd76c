/*
 * stprof/srcframe.h - call-path frames known by name rather than address.
 *
 * A trace's call paths are lists of instruction pointers, resolved through
 * the MODULE events.  Frames that come with a name instead (the Python and
 * C++ frames of an imported PyTorch memory snapshot) get a synthetic
 * address: each distinct (function, file, line) is one MODULE event whose
 * path is
 *
 *     "srcframe:" FUNCTION "\x1f" FILE "\x1f" LINE
 *
 * mapped at base STP_SRCFRAME_BASE + k * STP_SRCFRAME_STRIDE (k = 0, 1, ...)
 * with size STP_SRCFRAME_STRIDE and bias == base, no build-id.  A stack
 * frame with an ip in [base, base + size) is that source frame.  Readers
 * that know the convention (the detector's frame resolver, the snapshot
 * exporter) show the function, file and line; others see a module that is
 * not a file on disk, which the symbolizer is never asked about.
 * docs/trace-format.md ("Source frames") describes it.
 */
#ifndef STPROF_SRCFRAME_H
#define STPROF_SRCFRAME_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define STP_SRCFRAME_PREFIX "srcframe:"
#define STP_SRCFRAME_BASE 0xfff0000000000000ull
#define STP_SRCFRAME_STRIDE 16ull

/* 1 when a MODULE path is a source frame. */
static inline int stp_srcframe_is(const char *path)
{
	return path && !strncmp(path, STP_SRCFRAME_PREFIX, sizeof STP_SRCFRAME_PREFIX - 1);
}

/*
 * Splits a source frame's path in place-free fashion: *function and *file
 * point into `copy` (a malloc'd copy of the path the caller frees).
 * Returns 0, or -1 when path is not a well-formed source frame.
 */
static inline int stp_srcframe_parse(const char *path, char **copy, const char **function, const char **file,
                                     uint32_t *line)
{
	if (!stp_srcframe_is(path))
		return -1;
	char *c = strdup(path + sizeof STP_SRCFRAME_PREFIX - 1);
	if (!c)
		return -1;
	char *a = strchr(c, '\x1f');
	char *b = a ? strrchr(a + 1, '\x1f') : NULL;
	if (!a || !b) {
		free(c);
		return -1;
	}
	*a = 0;
	*b = 0;
	*copy = c;
	*function = c;
	*file = a + 1;
	*line = (uint32_t)strtoul(b + 1, NULL, 10);
	return 0;
}
#endif
