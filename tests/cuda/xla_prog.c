/*
 * xla_prog.c - a program that takes device memory two ways against the fake
 * driver: a 64 MiB region through the stand-in XLA plugin
 * (fake_xla_plugin.c: XLA's BFC region) and 1 MiB with cuMemAlloc of its
 * own; frees both.  Prints the two addresses (the test checks the trace
 * against them).
 */
#include <cuda.h>
#include <stdio.h>

CUdeviceptr xla_region_alloc(size_t n);
int xla_region_free(CUdeviceptr p);

int main(void)
{
	if (cuInit(0) != CUDA_SUCCESS)
		return 1;
	CUdeviceptr region = xla_region_alloc(64u << 20), own = 0;
	if (!region || cuMemAlloc_v2(&own, 1u << 20) != CUDA_SUCCESS)
		return 1;
	printf("region 0x%llx own 0x%llx\n", (unsigned long long)region, (unsigned long long)own);
	int bad = xla_region_free(region) || cuMemFree_v2(own) != CUDA_SUCCESS;
	return bad;
}
