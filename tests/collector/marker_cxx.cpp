// marker_cxx.cpp - the marker API from C++ (-Wall -Wextra -Werror): it
// compiles, links without stprof and records under it.
#include <cstdio>
#include <string>
#include <vector>

#include "stprof/stprof.h"

int main()
{
	std::vector<std::string> layers = {"layers.0", "layers.1"};
	stprof_iteration_begin(0);
	for (const auto &l : layers) {
		stprof_module_enter(l.c_str());
		std::vector<float> act(1000);
		stprof_module_exit(l.c_str());
	}
	stprof_iteration_end(0);
	std::printf("%s\n", stprof_active() ? "active" : "inactive");
	return 0;
}
