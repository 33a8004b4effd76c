/*
 * test_pyframe.c - Python frames (detector/pyframe.c): "FILE:LINE in
 * FUNCTION" parsed into its parts, and which files are the user's own code
 * (the rows of a report lead with them) against the interpreter's library,
 * installed packages, the profiler's shim and the modules torch.compile
 * generates (Inductor's cache).
 */
#include <stdlib.h>

#include "check.h"
#include "../frames.h"
#include "stprof/trace.h"

static int user(const char *file)
{
	stp_det_frame fr = {.ip = STP_PYFRAME_TAG | 1, .file = file};
	return det_frame_is_user_python(&fr);
}

int main(void)
{
	char *file, *func;
	uint32_t line;
	CHECK(det_pyframe_parse("/home/u/train.py:22 in <module>", &file, &line, &func) == 0);
	CHECK_STR(file, "/home/u/train.py");
	CHECK_EQ_U(line, 22);
	CHECK_STR(func, "<module>");
	free(file);
	free(func);
	CHECK(det_pyframe_parse("no line here", &file, &line, &func) == -1);

	CHECK(user("/home/u/train.py"));
	CHECK(user("train.py"));
	CHECK(!user("/usr/lib/python3/dist-packages/torch/nn/modules/module.py"));
	CHECK(!user("/venv/lib/python3.11/site-packages/torch/optim/adam.py"));
	CHECK(!user("/usr/lib/python3.11/functools.py"));
	CHECK(!user("<frozen importlib._bootstrap>"));
	CHECK(!user("/opt/stprof/lib/stprof-python/stprof/torch_markers.py"));
	CHECK(!user("/tmp/torchinductor_root/t5/ct5dpve3rg3sgkfd7yoxxa2yvyzcu4v45wvrx63qggstwcypnny5.py"));
	/* TORCHINDUCTOR_CACHE_DIR elsewhere: the cache's layout tells */
	CHECK(!user("/scratch/ind/zf/czfolaa7zcskam46lrwh66fbjf4lbzcg2rg7tqncvu6nld3qw3we.py"));
	CHECK(!user("zf/czfolaa7zcskam46lrwh66fbjf4lbzcg2rg7tqncvu6nld3qw3we.py"));
	CHECK(user("/home/u/ab/czfolaa7zcskam46lrwh66fbjf4lbzcg2rg7tqncvu6nld3qw3we.py"));
	CHECK(user("/home/u/zf/czfolaa7zcskam46lrwh66fbjf4lbzcg2rg7tqncvu6nld3qwXwe.py"));
	CHECK(user("/home/u/zf/czf.py"));
	CHECK(user("/home/u/zf/config.py"));
	CHECK(user("/home/u/cz/czfolaa7zcskam46lrwh66fbjf4lbzcg2rg7tqncvu6nld3qw3we.py"));
	CHECK(!user("/home/u/model.cpp"));
	return check_done();
}
