// SPDX-License-Identifier: Apache-2.0
// Library version, as printed by SMDDP_DEBUG=INFO.
#pragma once

#define SMDDP_VERSION_MAJOR 0
#define SMDDP_VERSION_MINOR 1
#define SMDDP_VERSION_PATCH 0

namespace smddp {
const char* versionString();
}
