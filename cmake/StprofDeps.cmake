# Outside libraries.  Required ones stop the configure with a message naming
# the Debian package; optional ones (CUDA) set STPROF_HAVE_* and are skipped.
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)

pkg_check_modules(LIBUNWIND REQUIRED IMPORTED_TARGET libunwind)
pkg_check_modules(LIBELF REQUIRED IMPORTED_TARGET libelf)
# zlib (zlib1g-dev): gunzip of the pprof profiles JAX writes (snapshot/)
pkg_check_modules(ZLIB REQUIRED IMPORTED_TARGET zlib)
pkg_check_modules(LIBDWARF IMPORTED_TARGET libdwarf)
if(NOT LIBDWARF_FOUND)
  # Debian 12's libdwarf-dev (20210528) ships no pkg-config file: find it by
  # hand and give it the same target name.  Code includes <libdwarf.h>.
  find_path(LIBDWARF_INCLUDE_DIR libdwarf.h PATH_SUFFIXES libdwarf libdwarf-0)
  find_library(LIBDWARF_LIBRARY dwarf)
  if(LIBDWARF_INCLUDE_DIR AND LIBDWARF_LIBRARY)
    add_library(PkgConfig::LIBDWARF INTERFACE IMPORTED)
    set_target_properties(PkgConfig::LIBDWARF PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES ${LIBDWARF_INCLUDE_DIR}
      INTERFACE_LINK_LIBRARIES ${LIBDWARF_LIBRARY})
    set(LIBDWARF_FOUND 1)
  endif()
endif()
if(LIBDWARF_FOUND)
  set_property(TARGET PkgConfig::LIBDWARF APPEND PROPERTY
    INTERFACE_COMPILE_DEFINITIONS STPROF_HAVE_LIBDWARF=1)
  message(STATUS "stprof: libdwarf found (source lines in symbolization)")
else()
  message(STATUS "stprof: no libdwarf; symbolization gives ELF symbol names only")
endif()
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

# CUPTI (the CUDA backend of the collector): headers only at build time;
# libcupti is dlopened at run time.  -DSTPROF_CUPTI=OFF builds without it.
option(STPROF_CUPTI "Build the collector's CUPTI backend when the headers are found" ON)
set(STPROF_HAVE_CUPTI OFF)
if(STPROF_CUPTI AND STPROF_HAVE_CUDA)
  find_path(STPROF_CUPTI_INCLUDE cupti.h
    PATHS ${STPROF_CUDA_ROOT}/include ${STPROF_CUDA_ROOT}/extras/CUPTI/include NO_DEFAULT_PATH)
  if(STPROF_CUPTI_INCLUDE AND EXISTS ${STPROF_CUDA_ROOT}/include/generated_cuda_meta.h)
    set(STPROF_HAVE_CUPTI ON)
    message(STATUS "stprof: CUPTI headers at ${STPROF_CUPTI_INCLUDE}: CUDA backend built")
  endif()
endif()
if(NOT STPROF_HAVE_CUPTI)
  message(STATUS "stprof: no CUPTI headers; the CUDA backend is not built (stprof record --cuda says so)")
endif()
# The Compute Sanitizer API (optional): headers and libsanitizer-public.so
# from a CUDA toolkit's compute-sanitizer/ or from the PyPI wheel
# nvidia-cuda-sanitizer-api, which scripts/deps.sh unpacks into
# ~/.cache/stprof/sanitizer-api.  Without them (or without cuda.h) the
# backend is compiled out and `stprof record --accesses=exact` says so.
set(STPROF_SANITIZER_ROOT "" CACHE PATH "compute-sanitizer directory (include/sanitizer.h, libsanitizer-public.so)")
set(STPROF_HAVE_SANITIZER OFF)
if(STPROF_HAVE_CUDA AND EXISTS ${STPROF_CUDA_ROOT}/include/cuda.h)
  file(GLOB _stprof_wheel_dirs LIST_DIRECTORIES true "$ENV{HOME}/.cache/stprof/sanitizer-api/nvidia/cu*/compute-sanitizer")
  foreach(_d ${STPROF_SANITIZER_ROOT} $ENV{STPROF_SANITIZER_ROOT} ${STPROF_CUDA_ROOT}/compute-sanitizer ${_stprof_wheel_dirs})
    if(_d AND EXISTS ${_d}/include/sanitizer.h AND EXISTS ${_d}/libsanitizer-public.so)
      set(STPROF_SANITIZER_DIR ${_d})
      set(STPROF_HAVE_SANITIZER ON)
      break()
    endif()
  endforeach()
endif()
if(STPROF_HAVE_SANITIZER)
  message(STATUS "stprof: Compute Sanitizer API at ${STPROF_SANITIZER_DIR}")
else()
  message(STATUS "stprof: no Compute Sanitizer API (scripts/deps.sh installs it); --accesses=exact is compiled out")
endif()
find_program(STPROF_NVCC nvcc HINTS ${STPROF_CUDA_ROOT}/bin NO_DEFAULT_PATH)
set(STPROF_SANITIZER_ARCHS "75;80;86;89;90;100;120" CACHE STRING "GPU architectures of the sanitizer patch")
