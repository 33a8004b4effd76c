/*
 * torch_backend.c - the PyTorch backend's hooks (face.h).  Its interposers
 * (c10's CPU allocator, the caching allocator's reports) and entry points
 * (the pluggable allocator, the shim's mode setter) need no start: they
 * record whenever PyTorch calls them.  A fork child renews the caching
 * path's lock and the table of mapped storages (torch_shm.c), which a
 * thread that is gone may have held.
 */
#include "torch.h"
#include "torch_cuda.h"

static void fork_child(void)
{
	stc_torch_cuda_atfork_child();
	stc_torch_shm_atfork_child();
}

STC_BACKEND(torch) = {
	.name = "torch",
	.fork_child = fork_child,
};
