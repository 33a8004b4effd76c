/*
 * fake_xla_plugin.c - a stand-in for JAX's CUDA plugin as far as the CUPTI
 * backend cares: a module named xla_cuda_plugin.so (what
 * jax_plugins/xla_cuda13/ ships) whose own code asks the driver for device
 * memory, as XLA's BFC allocator does for its region (StreamExecutor calls
 * cuMemAlloc from inside the plugin).  Built against the fake driver.
 */
#include <cuda.h>

__attribute__((visibility("default"), noinline)) CUdeviceptr xla_region_alloc(size_t n);
__attribute__((visibility("default"), noinline)) int xla_region_free(CUdeviceptr p);

CUdeviceptr xla_region_alloc(size_t n)
{
	CUdeviceptr p = 0;
	CUresult r = cuMemAlloc_v2(&p, n);
	return r == CUDA_SUCCESS ? p : 0; /* not a tail call: this frame is the caller */
}

int xla_region_free(CUdeviceptr p)
{
	return cuMemFree_v2(p) == CUDA_SUCCESS ? 0 : -1;
}
