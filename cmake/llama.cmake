# The pinned llama.cpp, built once per (commit, flavour) by scripts/llama.sh into a cache outside the
# clone, imported here as static libraries (or shared ones, for the GGML_BACKEND_DL flavours).
# RUSTYCAGE_LLAMA_BUILD may name a finished build dir directly; RUSTYCAGE_LLAMA_FLAVOUR picks a
# flavour of scripts/llama.sh other than the backend's default (release-cpu for the CPU artifact).
set(rc_llama_backend cpu)
if(RUSTYCAGE_CUDA)
  set(rc_llama_backend cuda)
elseif(RUSTYCAGE_VULKAN)
  set(rc_llama_backend vulkan)
elseif(RUSTYCAGE_METAL)
  set(rc_llama_backend metal)
endif()
set(RUSTYCAGE_LLAMA_FLAVOUR "" CACHE STRING "scripts/llama.sh flavour (default: the backend's)")
set(rc_llama_flavour ${rc_llama_backend})
if(RUSTYCAGE_LLAMA_FLAVOUR)
  set(rc_llama_flavour ${RUSTYCAGE_LLAMA_FLAVOUR})
endif()
# CUDA goes through scripts/build-cuda.sh, which picks the architectures for the nvcc it finds.
set(rc_llama_script ${PROJECT_SOURCE_DIR}/scripts/llama.sh build ${rc_llama_flavour})
if(rc_llama_flavour STREQUAL "cuda")
  set(rc_llama_script ${PROJECT_SOURCE_DIR}/scripts/build-cuda.sh llama)
endif()

if(NOT RUSTYCAGE_LLAMA_BUILD)
  # A new pin or patch reconfigures, which runs the script again (it rebuilds what changed).
  file(GLOB rc_llama_patches CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/scripts/llama-patches/*.patch)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/scripts/llama.sh ${rc_llama_patches})
  message(STATUS "llama.cpp: fetching/building the pinned tree (${rc_llama_flavour}); first time takes a while")
  execute_process(COMMAND ${rc_llama_script}
                  OUTPUT_VARIABLE rc_llama_out OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE rc_llama_rc)
  if(NOT rc_llama_rc EQUAL 0)
    message(FATAL_ERROR "${rc_llama_script} failed (${rc_llama_rc})")
  endif()
  set(RUSTYCAGE_LLAMA_BUILD ${rc_llama_out})
endif()
file(READ ${RUSTYCAGE_LLAMA_BUILD}/source-dir RUSTYCAGE_LLAMA_SRC)
string(STRIP "${RUSTYCAGE_LLAMA_SRC}" RUSTYCAGE_LLAMA_SRC)
message(STATUS "llama.cpp: source ${RUSTYCAGE_LLAMA_SRC}, build ${RUSTYCAGE_LLAMA_BUILD}")
# For the node suites (tests/clients), which read real families' chat templates from the tree.
file(WRITE ${CMAKE_BINARY_DIR}/llama-source-dir "${RUSTYCAGE_LLAMA_SRC}\n")

set(B ${RUSTYCAGE_LLAMA_BUILD})
add_library(rc_llama_cpp INTERFACE)
add_library(rc::llama_cpp ALIAS rc_llama_cpp)
target_include_directories(rc_llama_cpp SYSTEM INTERFACE ${RUSTYCAGE_LLAMA_SRC}/include ${RUSTYCAGE_LLAMA_SRC}/ggml/include)
add_library(rc_llama_common INTERFACE)
add_library(rc::llama_common ALIAS rc_llama_common)

# A shared flavour of scripts/llama.sh (release-cpu, vulkan, cuda: GGML_BACKEND_DL) leaves shared
# libraries in <build>/bin; the static ones (cpu, metal) leave archives. The shared layout mirrors a
# release artifact: the libraries and the backend modules are linked into <our build>/lib, and our
# executables in <our build>/bin find them through RUNPATH $ORIGIN/../lib, as they will in the tarball.
if(EXISTS ${B}/bin/libllama.so)
  set(RUSTYCAGE_LLAMA_SHARED ON)
else()
  set(RUSTYCAGE_LLAMA_SHARED OFF)
endif()

if(RUSTYCAGE_LLAMA_SHARED)
  set(rc_lib_dir ${CMAKE_BINARY_DIR}/lib)
  file(MAKE_DIRECTORY ${rc_lib_dir})
  file(GLOB rc_stale_links ${rc_lib_dir}/lib*.so*)
  if(rc_stale_links)
    file(REMOVE ${rc_stale_links})
  endif()
  file(GLOB rc_llama_shared_libs ${B}/bin/lib*.so*)
  foreach(lib IN LISTS rc_llama_shared_libs)
    get_filename_component(name ${lib} NAME)
    file(CREATE_LINK ${lib} ${rc_lib_dir}/${name} SYMBOLIC)
  endforeach()
  set(CMAKE_BUILD_WITH_INSTALL_RPATH ON)
  set(CMAKE_INSTALL_RPATH "\$ORIGIN/../lib")
  # The backends (CPU variants, Vulkan, CUDA) are modules that ggml loads at run time: nothing links them.
  target_link_libraries(rc_llama_cpp INTERFACE ${rc_lib_dir}/libllama.so ${rc_lib_dir}/libggml.so
    ${rc_lib_dir}/libggml-base.so Threads::Threads ${CMAKE_DL_LIBS} m)
  target_link_libraries(rc_llama_common INTERFACE ${rc_lib_dir}/libllama-common.so ${B}/common/libllama-common-base.a
    ${B}/vendor/cpp-httplib/libcpp-httplib.a rc::llama_cpp)
else()
  file(GLOB rc_ggml_backend_libs ${B}/ggml/src/libggml-*.a ${B}/ggml/src/ggml-*/libggml-*.a)
  list(FILTER rc_ggml_backend_libs EXCLUDE REGEX "libggml-base\\.a$")
  find_package(OpenMP)

  target_link_libraries(rc_llama_cpp INTERFACE
    -Wl,--start-group ${B}/src/libllama.a ${B}/ggml/src/libggml.a ${rc_ggml_backend_libs}
    ${B}/ggml/src/libggml-base.a -Wl,--end-group Threads::Threads ${CMAKE_DL_LIBS} m)
  # ggml's CPU code calls the OpenMP runtime of the compiler that built llama.cpp. A clang tree of
  # ours (make sanitize, make fuzz) on a gcc-built llama.cpp must link that same runtime, libgomp:
  # clang's own (libomp) would take the calls over and keep worker pools that
  # llama::release_compute_threads() cannot hand back.
  file(GLOB rc_llama_cc_info ${B}/CMakeFiles/*/CMakeCCompiler.cmake)
  set(rc_llama_cc_id "")
  if(rc_llama_cc_info)
    list(GET rc_llama_cc_info 0 rc_llama_cc_info)
    file(STRINGS ${rc_llama_cc_info} rc_llama_cc_id REGEX "^set\\(CMAKE_C_COMPILER_ID ")
  endif()
  if(rc_llama_cc_id MATCHES "\"GNU\"" AND CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    target_link_options(rc_llama_cpp INTERFACE -fopenmp=libgomp)
  elseif(OpenMP_CXX_FOUND)
    target_link_libraries(rc_llama_cpp INTERFACE OpenMP::OpenMP_CXX)
  endif()
  if(RUSTYCAGE_CUDA)
    find_package(CUDAToolkit REQUIRED)
    target_link_libraries(rc_llama_cpp INTERFACE CUDA::cudart CUDA::cublas CUDA::cublasLt CUDA::cuda_driver)
  endif()
  if(RUSTYCAGE_VULKAN)
    find_package(Vulkan REQUIRED)
    target_link_libraries(rc_llama_cpp INTERFACE Vulkan::Vulkan)
  endif()

  # llama.cpp's common library: chat templates (jinja), tool-call parsing, samplers, JSON-schema grammars.
  target_link_libraries(rc_llama_common INTERFACE ${B}/common/libllama-common.a ${B}/common/libllama-common-base.a
    ${B}/vendor/cpp-httplib/libcpp-httplib.a rc::llama_cpp)
endif()
target_include_directories(rc_llama_common SYSTEM INTERFACE ${RUSTYCAGE_LLAMA_SRC}/common ${RUSTYCAGE_LLAMA_SRC}/vendor)

# The cpp-httplib copy the tree carries (same build, same flags as llama.cpp's own server).
add_library(rc_httplib INTERFACE)
add_library(rc::httplib ALIAS rc_httplib)
target_include_directories(rc_httplib SYSTEM INTERFACE ${RUSTYCAGE_LLAMA_SRC}/vendor)
target_compile_definitions(rc_httplib INTERFACE CPPHTTPLIB_FORM_URL_ENCODED_PAYLOAD_MAX_LENGTH=1048576
  CPPHTTPLIB_LISTEN_BACKLOG=512 CPPHTTPLIB_REQUEST_URI_MAX_LENGTH=32768 CPPHTTPLIB_TCP_NODELAY=1)
target_link_libraries(rc_httplib INTERFACE ${B}/vendor/cpp-httplib/libcpp-httplib.a Threads::Threads)
unset(B)

file(STRINGS ${PROJECT_SOURCE_DIR}/scripts/llama.sh rc_commit_line REGEX "^LLAMA_COMMIT=")
string(REGEX REPLACE "^LLAMA_COMMIT=" "" RUSTYCAGE_LLAMA_COMMIT "${rc_commit_line}")
