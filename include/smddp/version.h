// SPDX-License-Identifier: Apache-2.0
// Library version, as printed by SMDDP_DEBUG=INFO: CMakeLists.txt's project VERSION (the configure
// refuses a mismatch), the Python package's and the CHANGELOG's newest section.
#pragma once

#define SMDDP_VERSION_MAJOR 0
#define SMDDP_VERSION_MINOR 5
#define SMDDP_VERSION_PATCH 0

namespace smddp {
const char* versionString();
}
