/*
 * frametext.c - the text of a source frame's MODULE path (snap_int.h), the
 * one form both importers (PyTorch snapshots, pprof profiles) give frames.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snap_int.h"
#include "stprof/srcframe.h"

char *snap_frame_text(const char *name, size_t nlen, const char *file, size_t flen, int64_t line)
{
	size_t pre = sizeof STP_SRCFRAME_PREFIX - 1, len = pre + nlen + 1 + flen + 1 + 24;
	char *t = malloc(len);
	if (!t)
		return NULL;
	memcpy(t, STP_SRCFRAME_PREFIX, pre);
	char *q = t + pre;
	for (size_t i = 0; i < nlen; i++)
		*q++ = name[i] == '\x1f' || !name[i] ? ' ' : name[i];
	*q++ = '\x1f';
	for (size_t i = 0; i < flen; i++)
		*q++ = file[i] == '\x1f' || !file[i] ? ' ' : file[i];
	*q++ = '\x1f';
	snprintf(q, 24, "%" PRId64, line < 0 ? 0 : line);
	return t;
}
