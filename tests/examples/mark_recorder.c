/*
 * mark_recorder.c - a stand-in for the collector's marker entry point, so
 * the examples' marking can be checked without the collector: preloaded
 * (LD_PRELOAD), it defines stprof_mark_v1 and appends one line per call,
 * "KIND NAME VALUE" (NAME "-" when null), to the file named by
 * $STPROF_MARK_LOG.  Calls from several threads are serialised.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

void stprof_mark_v1(int kind, const char *name, int64_t value);

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *out;

void stprof_mark_v1(int kind, const char *name, int64_t value)
{
	pthread_mutex_lock(&lock);
	if (!out) {
		const char *path = getenv("STPROF_MARK_LOG");
		out = fopen(path && *path ? path : "/dev/null", "a");
	}
	if (out) {
		fprintf(out, "%d %s %lld\n", kind, name ? name : "-", (long long)value);
		fflush(out);
	}
	pthread_mutex_unlock(&lock);
}
