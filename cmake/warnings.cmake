# Warnings and sanitizers for our own targets only (llama.cpp keeps its own flags).
function(rc_warnings target)
  # (clang spells GCC's -Wshadow=local differently)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic $<IF:$<CXX_COMPILER_ID:GNU>,-Wshadow=local,-Wshadow-uncaptured-local>
                                           -Wnon-virtual-dtor -Wcast-align -Wformat=2)
  if(RUSTYCAGE_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(RUSTYCAGE_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined -fno-omit-frame-pointer)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
  if(RUSTYCAGE_FUZZ)
    target_compile_options(${target} PRIVATE ${RC_FUZZ_FLAGS})
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
endfunction()

# Our code in a fuzz build (fuzz/): coverage for libFuzzer, ASan, and UBSan made fatal so that
# undefined behaviour counts as a crash the fuzzer keeps.
set(RC_FUZZ_FLAGS -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)

# rc_add_module(NAME SOURCES... DEPS ...) — a static library for one src/ folder.
function(rc_add_module name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
  rc_warnings(${name})
endfunction()

function(rc_add_executable name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS})
  rc_warnings(${name})
endfunction()
