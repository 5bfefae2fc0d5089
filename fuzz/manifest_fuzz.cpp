// parse_manifest on arbitrary bytes: never crashes; whatever it accepts re-serializes to text that
// parses to the same manifest, and check_writable() decides without crashing.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "store/manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    auto m = rc::store::parse_manifest(std::string_view(reinterpret_cast<const char *>(data), size));
    if (!m) return 0;
    const std::string text = rc::store::serialize(*m);
    auto back = rc::store::parse_manifest(text);
    if (!back) std::abort();                               // what we read, we can write and read again
    if (rc::store::serialize(*back) != text) std::abort();  // and the second trip changes nothing
    (void) rc::store::check_writable(*m);
    (void) m->total_size();
    return 0;
}
