#pragma once
// Facts about this build, fixed when it was compiled: what `rustycage version` prints. Generated into
// the build dir from build_info.cpp.in by cmake/build_info.cmake.

#include <string>

namespace rc::cli {

struct build_info {
    const char * version;          // VERSION at the root of the tree ("0.1.0", "0.2.0-rc.1")
    const char * commit;           // full git commit of the tree, or "unknown"
    bool dirty;                    // tracked files differed from that commit
    const char * llama_commit;     // the pinned llama.cpp commit
    const char * backend;          // cpu, cuda, vulkan, metal
    const char * backend_loading;  // "static" (linked in) or "dynamic" (GGML_BACKEND_DL modules in lib/)
    const char * compiler;         // "GNU 12.2.0"
    const char * build_type;       // CMAKE_BUILD_TYPE
    const char * build_date;       // YYYY-MM-DD, UTC (SOURCE_DATE_EPOCH when set)
};

const build_info & this_build();

// The version this binary runs as: the first line of the VERSION file of the release tree it sits
// in (bin/../VERSION, written by scripts/release-package.sh, which may pack a build as another
// version), else the version it was compiled as. What `version`, /v1/metadata and the agent report.
std::string running_version();

}  // namespace rc::cli
