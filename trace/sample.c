/*
 * sample.c - the weight of a sampled host-heap event (trace.h): what an
 * allocation recorded under host-heap sampling stands for.  The collector
 * records an allocation of s bytes below the interval R with probability
 * p = 1 - exp(-s / R) (collector/core/sample.c), one of R bytes or more
 * always; weighing each recorded one by 1/p makes sums of sizes and counts
 * unbiased estimates of the program's (Horvitz-Thompson).
 */
#include <math.h>

#include "stprof/trace.h"

double stp_heap_weight(uint64_t size, uint64_t interval)
{
	if (!interval || size >= interval)
		return 1.0;
	if (!size)
		return (double)interval; /* p -> size/R: one point per R bytes */
	return 1.0 / -expm1(-(double)size / (double)interval);
}
