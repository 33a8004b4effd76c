/*
 * check.h - the unit-test harness: CHECK macros that report file:line and
 * keep going, and a main() epilogue that turns failures into an exit code.
 *
 *     #include "check.h"
 *     int main(void) { CHECK(1 + 1 == 2); CHECK_EQ_U(x, 3); return check_done(); }
 */
#ifndef STPROF_TEST_CHECK_H
#define STPROF_TEST_CHECK_H
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int check_failures_;
static int check_count_;

#define CHECK(cond) do { check_count_++; if (!(cond)) { check_failures_++; \
	fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } } while (0)
#define CHECK_EQ_U(a, b) do { unsigned long long a_ = (a), b_ = (b); check_count_++; \
	if (a_ != b_) { check_failures_++; fprintf(stderr, "%s:%d: %s == %s failed: %llu != %llu\n", \
	__FILE__, __LINE__, #a, #b, a_, b_); } } while (0)
#define CHECK_EQ_I(a, b) do { long long a_ = (a), b_ = (b); check_count_++; \
	if (a_ != b_) { check_failures_++; fprintf(stderr, "%s:%d: %s == %s failed: %lld != %lld\n", \
	__FILE__, __LINE__, #a, #b, a_, b_); } } while (0)
#define CHECK_STR(a, b) do { const char *a_ = (a), *b_ = (b); check_count_++; \
	if (!a_ || !b_ || strcmp(a_, b_)) { check_failures_++; fprintf(stderr, \
	"%s:%d: %s == %s failed: \"%s\" != \"%s\"\n", __FILE__, __LINE__, #a, #b, \
	a_ ? a_ : "(null)", b_ ? b_ : "(null)"); } } while (0)
#define CHECK_NEAR(a, b, eps) do { double a_ = (a), b_ = (b); check_count_++; \
	if (a_ - b_ > (eps) || b_ - a_ > (eps)) { check_failures_++; fprintf(stderr, \
	"%s:%d: %s ~= %s failed: %g != %g\n", __FILE__, __LINE__, #a, #b, a_, b_); } } while (0)

static inline int check_done(void)
{
	if (check_failures_) {
		fprintf(stderr, "%d of %d checks failed\n", check_failures_, check_count_);
		return 1;
	}
	printf("%d checks passed\n", check_count_);
	return 0;
}

/* Scratch paths of this process, for the cleanup below. */
static char check_tmp_paths_[64][256];
static int check_tmp_n_;

/* At exit: the NAME.old files that a second write of a scratch output left
 * (outputs keep the earlier one, stprof/outfile.h). */
static inline void check_tmp_clean_(void)
{
	char old[264];
	for (int i = 0; i < check_tmp_n_; i++) {
		size_t n = strlen(check_tmp_paths_[i]);
		memcpy(old, check_tmp_paths_[i], n);
		memcpy(old + n, ".old", 5);
		remove(old);
	}
}

/* A scratch path under $TMPDIR unique to this process. */
static inline const char *check_tmp(const char *tag)
{
	static char buf[8][256];
	static int n;
	char *b = buf[n++ & 7];
	const char *d = getenv("TMPDIR");
	snprintf(b, 256, "%s/stprof-test-%d-%s", d && *d ? d : "/tmp", (int)getpid(), tag);
	int known = 0;
	for (int i = 0; i < check_tmp_n_ && !known; i++)
		known = !strcmp(check_tmp_paths_[i], b);
	if (!known && check_tmp_n_ < 64) {
		if (!check_tmp_n_)
			atexit(check_tmp_clean_);
		snprintf(check_tmp_paths_[check_tmp_n_++], 256, "%s", b);
	}
	return b;
}
#endif
