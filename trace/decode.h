/*
 * decode.h - the record decoder (decode.c), whose interface is public in
 * stprof/trace_codec.h (the collector's folding decodes its own buffers).
 * Internal to trace/.
 */
#ifndef STPROF_TRACE_DECODE_H
#define STPROF_TRACE_DECODE_H
#include "stprof/trace_codec.h"
#endif
