/* fuzz_options.c - libFuzzer target for the collector's option parser
 * (STPROF_* environment values): any name and value is accepted or refused,
 * never a crash, and a refused value leaves the option as it was. */
#include <stdint.h>
#include <string.h>

#include "../internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *names[] = {"OUTPUT", "MIN_SIZE", "DEPTH", "FLUSH_MS", "UNWIND", "ACCESSES", "SAMPLE_LAUNCHES", "HOST_DEPTH", "SKIP_EXEC", "BOGUS"};
	char buf[8192];
	if (size < 1 || size >= sizeof buf)
		return 0;
	memcpy(buf, data + 1, size - 1);
	buf[size - 1] = 0;
	stc_config c, before;
	stc_config_defaults(&c);
	before = c;
	const char *name = names[data[0] % (sizeof names / sizeof names[0])];
	if (stc_config_set(&c, name, buf) != 0 && memcmp(&c, &before, sizeof c))
		__builtin_trap(); /* refused, yet changed */
	stc_config_host_depth(&c, data[0] & 1);
	if (c.depth > STC_DEPTH_MAX || c.host_depth > STC_DEPTH_MAX || (c.host_depth > c.depth && !c.host_depth_set) || c.flush_ms < 1 || c.flush_ms > 100 || c.unwind > STC_UNWIND_CHECK ||
	    c.accesses > STC_ACCESSES_EXACT || c.sample_launches > 1000000)
		__builtin_trap();
	return 0;
}
