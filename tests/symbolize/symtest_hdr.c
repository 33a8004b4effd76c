/* symtest_hdr.c - compiles symtest_hdr.h's function (see there). */
#include "symtest_hdr.h"
