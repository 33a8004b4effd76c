/*
 * report_fmt.h - number formatting shared by the report writers: bytes in
 * binary units, durations, counts with thousands separators, escaping for
 * JSON and HTML.  Each formatter writes into the caller's buffer.
 */
#ifndef STP_REPORT_FMT_H
#define STP_REPORT_FMT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "stprof/detector.h"

const char *rf_bytes(uint64_t b, char *buf, size_t len);   /* "1.50 MiB" */
const char *rf_ns(uint64_t ns, char *buf, size_t len);     /* "1.23 s", "45.6 ms" */
const char *rf_count(uint64_t n, char *buf, size_t len);   /* "1,234,567" */
const char *rf_byte_time(double bns, char *buf, size_t len); /* "1.2 GiB*s" */
/* A byte axis for about `ticks` ticks: a step that is round in binary units
 * (1, 2, 4, 8, 16, 32, 64, 128, 256 or 512 KiB, MiB, ...) so that every tick
 * label is exact; *top (>= ymax plus a little headroom for labels) is a
 * multiple of it, so the top of the axis carries a label.  Returns the step. */
uint64_t rf_axis_bytes(uint64_t ymax, int ticks, uint64_t *top);
/* The y ticks of an SVG byte plot: a grid line and a label every ystep
 * from 0 up to ymax (exact binary labels, the top one too), y pixels =
 * bottom - y * sy, from x = left to right.  Stops before y would pass ymax
 * or wrap, whatever the values (sizes near 2^64 in a hostile trace). */
void rf_svg_yticks(FILE *f, uint64_t ymax, uint64_t ystep, double sy, int left, int right, int bottom);
void rf_json_str(FILE *f, const char *s);                  /* "..." with escapes */
/* "rank":R,"local_rank":L,"world_size":W, each null when unknown */
void rf_json_rank(FILE *f, const stp_det_result *r);
void rf_html(FILE *f, const char *s);                      /* text with &<>"' escaped */
/* "exited with status 0", "killed by signal 9 (Killed)", ... or the
 * incomplete note when the trace has no end record. */
const char *rf_end(const stp_det_result *r, char *buf, size_t len);
/* "host", "device 0", "managed 1", "pinned" */
const char *rf_space(const stp_det_space *s, char *buf, size_t len);
/* "iteration 4 (index 3), phase backward mb 0" or "" */
const char *rf_peak_where(const stp_det_result *r, char *buf, size_t len);
#endif
