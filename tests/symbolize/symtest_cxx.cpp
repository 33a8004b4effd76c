// symtest_cxx.cpp - C++ part of the symbolizer's test library: a function
// template and a method in a namespace, whose demangled names the tests
// check (see symtest.h).
#include "symtest.h"

namespace stp_symtest {

template <typename T> __attribute__((noinline)) T twice(T x)
{
	symtest_record(SYMTEST_TEMPLATE, __LINE__, 0);
	__asm__ volatile("" ::: "memory");
	return x * 2;
}

struct Widget {
	int n = 0;
	__attribute__((noinline)) void poke();
};

void Widget::poke()
{
	symtest_record(SYMTEST_METHOD, __LINE__, 0);
	__asm__ volatile("" ::: "memory");
	n++;
}

} // namespace stp_symtest

extern "C" int symtest_run_cxx(void)
{
	stp_symtest::Widget w;
	w.poke();
	return stp_symtest::twice<int>(w.n);
}
