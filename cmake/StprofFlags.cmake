# Compiler flags shared by every target.
#   stprof_target(<tgt> [PRELOAD])  applies warnings and sanitizers; PRELOAD
#   marks code that runs inside a profiled process (UBSan only, see top file).
add_compile_definitions(_GNU_SOURCE)
set(STPROF_WARN -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
    -Wno-unused-parameter -Wformat=2 -Wvla)
if(STPROF_WERROR)
  list(APPEND STPROF_WARN -Werror)
endif()

set(STPROF_SAN_FULL -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
set(STPROF_SAN_PRELOAD -fsanitize=undefined -fno-sanitize-recover=all)

function(stprof_target tgt)
  cmake_parse_arguments(ARG "PRELOAD" "" "" ${ARGN})
  get_target_property(lang_cxx ${tgt} LINKER_LANGUAGE)
  target_compile_options(${tgt} PRIVATE $<$<COMPILE_LANGUAGE:C>:${STPROF_WARN}>)
  target_compile_options(${tgt} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter $<$<BOOL:${STPROF_WERROR}>:-Werror>>)
  target_include_directories(${tgt} PRIVATE ${STPROF_INCLUDE})
  if(STPROF_SANITIZE)
    if(ARG_PRELOAD)
      target_compile_options(${tgt} PRIVATE ${STPROF_SAN_PRELOAD})
      target_link_options(${tgt} PRIVATE ${STPROF_SAN_PRELOAD})
    else()
      target_compile_options(${tgt} PRIVATE ${STPROF_SAN_FULL})
      target_link_options(${tgt} PRIVATE ${STPROF_SAN_FULL})
    endif()
  endif()
endfunction()

# A static library whose objects may also be linked into the preloaded
# collector: built twice when sanitizing (full for tools, UBSan for preload).
function(stprof_dual_library name)
  add_library(${name} STATIC ${ARGN})
  stprof_target(${name})
  target_include_directories(${name} PUBLIC ${STPROF_INCLUDE})
  if(STPROF_SANITIZE)
    add_library(${name}_preload STATIC ${ARGN})
    stprof_target(${name}_preload PRELOAD)
    target_include_directories(${name}_preload PUBLIC ${STPROF_INCLUDE})
  else()
    add_library(${name}_preload ALIAS ${name})
  endif()
endfunction()
