/*
 * through_paths.c - two allocations of one line of main that part inside
 * a framework (functions the report counts as framework by their names,
 * a CUDA entry point's shape): one dispatcher calls an operator's "meta"
 * function for one and its kernel for the other, as PyTorch's
 * wrap_kernel_functor_unboxed_ calls structured_mm::meta for an mm's
 * output and structured_mm_out_cpu::impl for its scratch buffer.  For
 * test_framework_wrapper.sh: the report tells the two sites apart by the
 * functions (cuFakeMeta, cuFakeKernel), not by the dispatcher's two
 * call lines (offsets, in a library without line tables).
 */
#include <stdlib.h>

void *cuFakeMeta(size_t n);
void *cuFakeKernel(size_t n);
void *cuFakeDispatch(int kernel);

__attribute__((noinline)) void *cuFakeMeta(size_t n)
{
	char *p = malloc(n);
	if (p)
		p[0] = 1;
	return p;
}

__attribute__((noinline)) void *cuFakeKernel(size_t n)
{
	char *p = malloc(n);
	if (p)
		p[0] = 1;
	return p;
}

/* (not a tail call: the dispatcher's frame stays on both paths) */
__attribute__((noinline)) void *cuFakeDispatch(int kernel)
{
	char *p;
	if (kernel)
		p = cuFakeKernel(3 << 20);
	else
		p = cuFakeMeta(2 << 20);
	if (p)
		p[1] = 1;
	return p;
}

int main(void)
{
	char *p[2];
	for (int i = 0; i < 2; i++)
		p[i] = cuFakeDispatch(i); /* line 51: both */
	int ok = p[0] && p[1] && p[0][1] == 1 && p[1][1] == 1;
	free(p[0]);
	free(p[1]);
	return ok ? 0 : 1;
}
