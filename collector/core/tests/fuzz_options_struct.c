/*
 * fuzz_options_struct.c - structure-aware libFuzzer target for the
 * collector's option parser (STPROF_* values): values are composed from the
 * pieces real ones are made of, at their extremes: signs, spaces, digit runs
 * up to 25 long (past 2^64), every size suffix and case, hex and octal
 * prefixes, path-sized strings, embedded junk.  A value is accepted or
 * refused, never a crash; refused leaves the option as it was; accepted
 * keeps every option in its documented range.
 */
#include <stdint.h>
#include <string.h>

#include "../internal.h"
#include "wf_src.h" /* tests/hardening/ */

static const char *const pieces[] = {"",  " ",  "-",  "+",  "0x", "0",  "k",  "K",  "m",   "M",  "g",   "G",
                                     "t", "T",  "p",  "e",  "E",  "b",  "kb", "KiB", "MB", "iB", "\t", ".",
                                     "5", "1e3", "fast", "libunwind", "check", "/", "nan", "inf"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *names[] = {"OUTPUT", "MIN_SIZE", "DEPTH", "FLUSH_MS", "UNWIND", "ACCESSES", "SAMPLE_LAUNCHES", "HOST_DEPTH", "SKIP_EXEC", "BOGUS"};
	wf_src s = {data, size};
	char v[8192];
	size_t n = 0;
	uint8_t parts = wf_u8(&s) & 15;
	for (uint8_t i = 0; i < parts; i++) {
		uint8_t k = wf_u8(&s);
		if (k & 0x80) { /* a run of digits, up to 25 */
			for (int d = (k & 31) % 26; d > 0 && n + 1 < sizeof v; d--)
				v[n++] = (char)('0' + wf_u8(&s) % 10);
		} else if (k == 0x7f) { /* a long run (paths) */
			size_t len = (size_t)wf_u8(&s) * 32;
			for (; len && n + 1 < sizeof v; len--)
				v[n++] = 'a';
		} else {
			const char *p = pieces[k % (sizeof pieces / sizeof pieces[0])];
			size_t len = strlen(p);
			if (n + len + 1 < sizeof v) {
				memcpy(v + n, p, len);
				n += len;
			}
		}
	}
	v[n] = 0;
	stc_config c, before;
	stc_config_defaults(&c);
	before = c;
	const char *name = names[wf_u8(&s) % (sizeof names / sizeof names[0])];
	if (stc_config_set(&c, name, v) != 0 && memcmp(&c, &before, sizeof c))
		__builtin_trap(); /* refused, yet changed */
	if (c.depth > STC_DEPTH_MAX || c.flush_ms < 1 || c.flush_ms > 100 || c.unwind > STC_UNWIND_CHECK ||
	    c.accesses > STC_ACCESSES_EXACT || c.sample_launches > 1000000)
		__builtin_trap();
	return 0;
}
