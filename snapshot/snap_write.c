/*
 * snap_write.c - how the pprof importer (JAX's profiles) writes a trace's
 * beginning (snap_int.h): a source frame's MODULE path, and the beginning
 * of the trace of a snapshot (its process, its one thread, a MODULE per
 * source frame, all at the snapshot's first time).  The PyTorch importer
 * (snap_import.c, streamed since issue 26) numbers its frames by use and
 * writes the same beginning itself: one writer for both is left to do.
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

int64_t snap_frames_add(snap_frames *f, char *t)
{
	if (!t)
		return -2;
	if (f->n == f->cap) {
		size_t nc = f->cap ? f->cap * 2 : 256;
		char **n = realloc(f->text, nc * sizeof *n);
		if (!n) {
			free(t);
			return -2;
		}
		f->text = n;
		f->cap = nc;
	}
	f->text[f->n] = t;
	return (int64_t)f->n++;
}

void snap_frames_free(snap_frames *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->text[i]);
	free(f->text);
	memset(f, 0, sizeof *f);
}

stp_writer *snap_trace_begin(const char *out, const char *cmdline, const char *exe, const char *thread, uint64_t t0,
                             char *const *ftext, size_t nf, char *err, size_t errlen)
{
	stp_writer *w = stp_writer_open(out, err, errlen);
	if (!w)
		return NULL;
	stp_event ev = {.type = STP_EV_PROCESS, .tid = 1, .seq = STP_SEQ_AUTO, .time_ns = t0};
	ev.u.process = (stp_process_info){.rank = -1, .local_rank = -1, .world_size = -1,
	                                  .cmdline = stp_writer_string(w, cmdline), .exe = stp_writer_string(w, exe)};
	int bad = stp_writer_event(w, &ev) < 0;
	ev = (stp_event){.type = STP_EV_THREAD, .tid = 1, .seq = STP_SEQ_AUTO, .time_ns = t0};
	ev.u.thread = (stp_thread_info){.tid = 1, .name = stp_writer_string(w, thread)};
	bad |= stp_writer_event(w, &ev) < 0;
	for (size_t i = 0; i < nf && !bad; i++) {
		ev = (stp_event){.type = STP_EV_MODULE, .tid = 1, .seq = STP_SEQ_AUTO, .time_ns = t0};
		uint64_t base = STP_SRCFRAME_BASE + i * STP_SRCFRAME_STRIDE;
		ev.u.module = (stp_module_info){.path = stp_writer_string(w, ftext[i]), .base = base,
		                                .size = STP_SRCFRAME_STRIDE, .bias = base};
		bad |= stp_writer_event(w, &ev) < 0;
	}
	if (bad) {
		snprintf(err, errlen, "%s: cannot write the trace", out);
		stp_writer_abandon(w);
		return NULL;
	}
	return w;
}
