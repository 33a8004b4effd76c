/*
 * fuzz_pickle.c - libFuzzer target for the pickle reader and the snapshot
 * importer.  The first byte picks the mode:
 *   odd:  byte-level: the rest is parsed as a pickle, whole, and imported
 *         (into /dev/null), which reads it shaped;
 *   even: structure-aware: the rest drives a generator of snapshot-shaped
 *         pickles (dicts, lists of segments, blocks, trace entries, frames,
 *         memo sharing and memo loops, odd values in every field; one-item
 *         dicts and lists and lists in batches as Python writes them, short
 *         tuples) written with the pickle writer, then parsed and imported;
 *         a quarter of them also go through the importer's file reader
 *         (a 64 KiB window), behind a dropped string that puts the window's
 *         edge at a byte the fuzz bytes choose, and are cut at another
 *         (issue 26: the importer reads files streamed).
 * Invariants: no crash, no leak, no error message longer than one line; a
 * pickle imports from a file as from memory (the same counts, or the same
 * error at the same offset).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../pickle.h"
#include "../snap_int.h"
#include "stprof/snapshot.h"

typedef struct src {
	const uint8_t *p;
	size_t n, i;
} src;

static unsigned next(src *s) { return s->i < s->n ? s->p[s->i++] : 0; }

static const char *const keys[] = {"segments", "device_traces", "blocks", "frames", "address", "addr", "size",
                                   "total_size", "requested_size", "state", "action", "time_us", "stream",
                                   "device", "history", "real_size", "filename", "line", "name",
                                   "external_annotations", "stage", "device_free", "stprof", "synthetic_segments"};
static const char *const strs[] = {"alloc", "free_requested", "free_completed", "segment_alloc", "segment_free",
                                   "segment_map", "segment_unmap", "oom", "snapshot", "active_allocated",
                                   "active_pending_free", "inactive", "START", "END", "x\x1fy", ""};

static void value(src *s, pk_writer *w, int depth, uint32_t *memo_n)
{
	unsigned c = next(s);
	if (depth > 6)
		c &= 7;
	switch (c % 15) {
	case 0: pkw_int(w, (int64_t)((uint64_t)next(s) << (next(s) % 56))); break;
	case 1: pkw_uint(w, UINT64_MAX - next(s)); break;
	case 2: pkw_str(w, strs[next(s) % (sizeof strs / sizeof *strs)]); break;
	case 3: pkw_float(w, (double)next(s) * 1e6); break;
	case 4: pkw_none(w); break;
	case 5: pkw_bool(w, next(s) & 1); break;
	case 6: pkw_int(w, -(int64_t)next(s)); break;
	case 7: /* a memo reference to anything stored so far (loops included) */
		if (*memo_n)
			pkw_memo_get(w, next(s) % *memo_n);
		else
			pkw_none(w);
		break;
	case 8: case 9: { /* a dict with known keys */
		unsigned n = next(s) % 6;
		pkw_dict_begin(w);
		for (unsigned i = 0; i < n; i++) {
			pkw_str(w, keys[next(s) % (sizeof keys / sizeof *keys)]);
			value(s, w, depth + 1, memo_n);
		}
		pkw_dict_end(w);
		break;
	}
	case 12: { /* a one-item dict, as Python writes it: } k v SETITEM */
		FILE *f = pkw_stream(w);
		fputc('}', f);
		pkw_str(w, keys[next(s) % (sizeof keys / sizeof *keys)]);
		value(s, w, depth + 1, memo_n);
		fputc('s', f);
		break;
	}
	case 13: { /* a list in batches of APPENDS, or a one-item list: ] v APPEND */
		FILE *f = pkw_stream(w);
		unsigned batches = next(s) % 4;
		fputc(']', f);
		if (!batches) {
			value(s, w, depth + 1, memo_n);
			fputc('a', f);
		}
		for (unsigned b = 0; b < batches; b++) {
			fputc('(', f);
			for (unsigned i = 0, n = next(s) % 4; i < n; i++)
				value(s, w, depth + 1, memo_n);
			fputc('e', f);
		}
		break;
	}
	case 14: { /* a short tuple: TUPLE1..3 */
		FILE *f = pkw_stream(w);
		unsigned n = 1 + next(s) % 3;
		for (unsigned i = 0; i < n; i++)
			value(s, w, depth + 1, memo_n);
		fputc(0x84 + (int)n, f);
		break;
	}
	default: { /* a list */
		unsigned n = next(s) % 5;
		pkw_list_begin(w);
		for (unsigned i = 0; i < n; i++)
			value(s, w, depth + 1, memo_n);
		pkw_list_end(w);
		break;
	}
	}
	if (next(s) % 3 == 0) {
		pkw_memo_put(w);
		(*memo_n)++;
	}
}

static void run(const uint8_t *p, size_t n)
{
	char err[1024];
	/* whole, then shaped (the importer's way) */
	pk_doc *d = pk_parse(p, n, "fuzz.pickle", err, sizeof err);
	if (!d && strchr(err, '\n'))
		abort();
	pk_free(d);
	stp_snapshot_import_stats st;
	if (snap_import_mem(p, n, "fuzz.pickle", "/dev/null", &st, err, sizeof err) < 0 && strchr(err, '\n'))
		abort();
}

#define WINDOW_EDGE (1u << 16) /* pickle_read.c's WINDOW */

/* p[0..n) (a pickle from pkw_open: PROTO 2 first) behind a dropped string
 * (X len bytes POP) so that its byte `edge` lies at the window's edge, and
 * most often cut at its byte `keep`; imported from memory and from a file
 * (both named by the file), which must agree. */
static void through_window(const uint8_t *p, size_t n, size_t edge, size_t keep)
{
	if (n < 3 || n > WINDOW_EDGE / 2)
		return;
	edge = 2 + edge % (n - 2);
	size_t pad = WINDOW_EDGE - 8 - (edge - 2), len = 8 + pad + (n - 2);
	uint8_t *b = malloc(len);
	if (!b)
		return;
	b[0] = 0x80, b[1] = 2, b[2] = 'X';
	for (int i = 0; i < 4; i++)
		b[3 + i] = (uint8_t)(pad >> (8 * i));
	memset(b + 7, 'p', pad);
	b[7 + pad] = '0';
	memcpy(b + 8 + pad, p + 2, n - 2);
	if (keep % 4) /* three quarters cut inside the pickle's own bytes */
		len = 8 + pad + keep % (n - 2);
	char path[64], merr[1024], ferr[1024];
	snprintf(path, sizeof path, "/tmp/fuzz-pickle-%d.pickle", (int)getpid());
	FILE *f = fopen(path, "wb");
	if (f && fwrite(b, 1, len, f) == len && fclose(f) == 0) {
		stp_snapshot_import_stats ms, fs;
		int mrc = snap_import_mem(b, len, path, "/dev/null", &ms, merr, sizeof merr);
		int frc = stp_snapshot_import(path, "/dev/null", &fs, ferr, sizeof ferr);
		if (mrc != frc || (mrc == 0 && memcmp(&ms, &fs, sizeof ms)) ||
		    (mrc < 0 && strcmp(merr, ferr)) || (frc < 0 && strchr(ferr, '\n')))
			abort();
	} else if (f) {
		fclose(f);
	}
	unlink(path);
	free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 1) {
		run(data + 1, size - 1);
		return 0;
	}
	src s = {data + 1, size - 1, 0};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return 0;
	pk_writer *w = pkw_open(f);
	uint32_t memo_n = 0;
	/* the top level: a snapshot dict or a 1.13 list most of the time */
	if (next(&s) & 1) {
		pkw_dict_begin(w);
		pkw_str(w, "segments");
		value(&s, w, 1, &memo_n);
		pkw_str(w, "device_traces");
		value(&s, w, 1, &memo_n);
		pkw_dict_end(w);
	} else {
		value(&s, w, 0, &memo_n);
	}
	pkw_close(w);
	fclose(f);
	run((const uint8_t *)buf, len);
	unsigned how = next(&s);
	if (!(how & 3)) {
		size_t edge = next(&s) | (size_t)next(&s) << 8, keep = next(&s) | (size_t)next(&s) << 8;
		through_window((const uint8_t *)buf, len, edge, keep + (how >> 2));
	}
	free(buf);
	return 0;
}
