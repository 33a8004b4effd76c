/*
 * libfakedevthread.so: a stand-in for the thread PyTorch's autograd runs a
 * GPU backward on, a thread with no Python.  fake_device_thread_alloc calls
 * an allocator's alloc (stprof_torch_cuda_alloc, passed in) from a new
 * pthread and waits for it; fake_device_thread_hook_alloc first calls hook
 * there (a Python function through ctypes, as autograd calls a node's
 * Python pre-hook on that thread with the GIL taken for it, and no Python
 * frame left once it returns) (tests/python/fake_cuda_lines.py, run by
 * test_torch_cuda_lines.sh).  A library of its own, apart from the stand-in
 * libcudart, so that the traces compared with goldens (test_golden.sh) load
 * the same libcudart as before.
 */
#include <pthread.h>
#include <stddef.h>
#include <sys/types.h>

typedef void *(*alloc_fn)(ssize_t, int, void *);
typedef void (*hook_fn)(void);
void *fake_device_thread_alloc(alloc_fn alloc, ssize_t size, int device, void *stream);
void *fake_device_thread_hook_alloc(hook_fn hook, alloc_fn alloc, ssize_t size, int device, void *stream);

struct call {
	hook_fn hook;
	alloc_fn alloc;
	ssize_t size;
	int device;
	void *stream, *result;
};

static void *device_thread(void *arg)
{
	struct call *c = arg;
	if (c->hook)
		c->hook();
	c->result = c->alloc(c->size, c->device, c->stream);
	return NULL;
}

void *fake_device_thread_hook_alloc(hook_fn hook, alloc_fn alloc, ssize_t size, int device, void *stream)
{
	struct call c = {hook, alloc, size, device, stream, NULL};
	pthread_t t;
	if (pthread_create(&t, NULL, device_thread, &c))
		return NULL;
	pthread_join(t, NULL);
	return c.result;
}

void *fake_device_thread_alloc(alloc_fn alloc, ssize_t size, int device, void *stream)
{
	return fake_device_thread_hook_alloc(NULL, alloc, size, device, stream);
}
