// The generator's results are the project's own (util/result.h): a value or an rc::error, which
// main() prints. Named here so the tool's files read as before.
#pragma once

#include "util/result.h"

namespace rc::mkmodel {

using rc::errc;
using rc::error;
using rc::make_error;
using rc::result;
using rc::status;

}  // namespace rc::mkmodel
