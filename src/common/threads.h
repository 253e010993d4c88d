// SPDX-License-Identifier: Apache-2.0
// This process's other threads that want a CPU now (the wait policy's view of in-process
// contention: compute threads beside a communication thread). Linux /proc only.
#pragma once

#include <string>

namespace smddp::common {

// The scheduler state letter of a /proc/<pid>/task/<tid>/stat text ('R': running or runnable,
// 'S': sleeping, ...); '?' when the text does not parse. The command name may hold spaces and
// parentheses: the state follows the last ')'.
char taskState(const std::string& statText);

// How many threads of this process, the calling one left out, are running or runnable; -1 when
// /proc cannot be read. Costs a directory walk and one small read per thread (~5 us each).
int runnableOtherThreads();

}  // namespace smddp::common
