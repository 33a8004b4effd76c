/* fuzz_allocconf.c - libFuzzer target: any bytes given to the allocator
 * config parser are accepted or refused with a one-line message, never a
 * crash or an overrun; an accepted config that passes the checks formats
 * to a string that parses back to the same config. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stprof/allocsim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = 0;
	allocsim_config c, d;
	char err[256], buf[1024], label[128];
	allocsim_config_default(&c, ALLOCSIM_PYTORCH);
	if (allocsim_config_parse(&c, s, err, sizeof err)) {
		if (!strstr(err, "offset ") || strchr(err, '\n'))
			abort();
	} else if (!allocsim_config_check(&c, err, sizeof err)) {
		allocsim_config_format(&c, buf, sizeof buf);
		allocsim_config_label(&c, label, sizeof label);
		allocsim_config_default(&d, c.model);
		if (allocsim_config_parse(&d, buf, err, sizeof err))
			abort();
		memset(c.name, 0, sizeof c.name);
		memset(d.name, 0, sizeof d.name);
		if (memcmp(&c, &d, sizeof c))
			abort();
	}
	free(s);
	return 0;
}
