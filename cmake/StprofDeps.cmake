# Outside libraries.  Required ones stop the configure with a message naming
# the Debian package; optional ones (CUDA) set STPROF_HAVE_* and are skipped.
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)

pkg_check_modules(LIBUNWIND REQUIRED IMPORTED_TARGET libunwind)
pkg_check_modules(LIBELF REQUIRED IMPORTED_TARGET libelf)
pkg_check_modules(LIBDWARF IMPORTED_TARGET libdwarf)
pkg_check_modules(PROTOBUFC IMPORTED_TARGET libprotobuf-c)
find_program(PROTOC_C protoc-c)
find_program(PROTOC protoc)

set(STPROF_CUDA_ROOT /usr/local/cuda CACHE PATH "CUDA toolkit root (optional)")
if(EXISTS ${STPROF_CUDA_ROOT}/include/cuda_runtime_api.h)
  set(STPROF_HAVE_CUDA ON)
  message(STATUS "stprof: CUDA toolkit at ${STPROF_CUDA_ROOT}")
else()
  set(STPROF_HAVE_CUDA OFF)
  message(STATUS "stprof: no CUDA toolkit; CUDA parts are skipped")
endif()
