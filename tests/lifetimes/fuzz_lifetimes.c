/* fuzz_lifetimes.c - libFuzzer target: any bytes given to the lifetime
 * model parser are rejected with a message or accepted; an accepted model
 * predicts (every entry's key looked up).  Never a crash or an overrun. */
#include <stdint.h>
#include <stdio.h>

#include "stprof/lifetimes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	stp_lt_model m;
	char err[512];
	if (stp_lt_parse(data, size, "fuzz", &m, err, sizeof err) == 0) {
		uint64_t pre[STP_LT_DEPTH_MAX];
		for (uint32_t i = 0; i < STP_LT_DEPTH_MAX; i++)
			pre[i] = i < m.n ? m.e[i].key : i;
		(void)stp_lt_predict(&m, pre, STP_LT_DEPTH_MAX, NULL);
		for (uint64_t i = 0; i < m.n; i++)
			(void)stp_lt_find(&m, m.e[i].key);
		stp_lt_model_free(&m);
	}
	return 0;
}
