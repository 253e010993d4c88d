// SPDX-License-Identifier: Apache-2.0
// Umbrella header of the smddp C++ API.
#pragma once

#include "smddp/communicator.h"
#include "smddp/error.h"
#include "smddp/request.h"
#include "smddp/store.h"
#include "smddp/straggler.h"
#include "smddp/types.h"
#include "smddp/version.h"
#include "smddp/window.h"
