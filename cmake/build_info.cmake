# Writes the build facts `rustycage version` prints into OUT, a C++ source made from TEMPLATE.
# Run at every build (cmake -P) by the rc_build_info target; OUT is rewritten only when a fact
# changes, so a new commit recompiles one file and a plain rebuild nothing.
# Inputs (-D): SOURCE_DIR TEMPLATE OUT VERSION LLAMA_COMMIT BACKEND BACKEND_LOADING COMPILER BUILD_TYPE;
# the environment's RUSTYCAGE_COMMIT ("<sha>[-dirty]") overrides what git says.
set(RC_COMMIT "unknown")
set(RC_DIRTY "false")
find_package(Git QUIET)
if(DEFINED ENV{RUSTYCAGE_COMMIT} AND NOT "$ENV{RUSTYCAGE_COMMIT}" STREQUAL "")
  # Handed in by scripts/release-build.sh (a chroot cannot read a worktree's git metadata).
  string(REGEX REPLACE "-dirty$" "" RC_COMMIT "$ENV{RUSTYCAGE_COMMIT}")
  if(NOT RC_COMMIT STREQUAL "$ENV{RUSTYCAGE_COMMIT}")
    set(RC_DIRTY "true")
  endif()
elseif(GIT_FOUND AND EXISTS ${SOURCE_DIR}/.git)
  execute_process(COMMAND ${GIT_EXECUTABLE} -C ${SOURCE_DIR} rev-parse HEAD
                  OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc ERROR_QUIET)
  if(rc EQUAL 0)
    set(RC_COMMIT ${commit})
    # Tracked files only: a build dir or an editor's swap file does not make a build "dirty".
    execute_process(COMMAND ${GIT_EXECUTABLE} -C ${SOURCE_DIR} status --porcelain --untracked-files=no
                    OUTPUT_VARIABLE status OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(NOT status STREQUAL "")
      set(RC_DIRTY "true")
    endif()
  endif()
endif()
# The day, in UTC; SOURCE_DATE_EPOCH (reproducible builds, scripts/release.sh) overrides the clock.
string(TIMESTAMP RC_BUILD_DATE "%Y-%m-%d" UTC)
set(RC_VERSION ${VERSION})
set(RC_LLAMA_COMMIT ${LLAMA_COMMIT})
set(RC_BACKEND ${BACKEND})
set(RC_BACKEND_LOADING ${BACKEND_LOADING})
set(RC_COMPILER ${COMPILER})
set(RC_BUILD_TYPE ${BUILD_TYPE})
configure_file(${TEMPLATE} ${OUT}.tmp @ONLY)
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different ${OUT}.tmp ${OUT})
file(REMOVE ${OUT}.tmp)
