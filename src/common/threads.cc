// SPDX-License-Identifier: Apache-2.0
// runnableOtherThreads: a walk over /proc/self/task (see threads.h).
#include "common/threads.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>

namespace smddp::common {

char taskState(const std::string& statText) {
  const size_t close = statText.rfind(')');
  if (close == std::string::npos || close + 2 >= statText.size() || statText[close + 1] != ' ') {
    return '?';
  }
  return statText[close + 2];
}

int runnableOtherThreads() {
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return -1;
  const long self = syscall(SYS_gettid);
  int runnable = 0;
  while (const dirent* entry = readdir(dir)) {
    char* end = nullptr;
    const long tid = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || tid == self) continue;
    const std::string path = std::string("/proc/self/task/") + entry->d_name + "/stat";
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;  // the thread exited meanwhile
    char buf[512];
    const ssize_t n = read(fd, buf, sizeof(buf));
    close(fd);
    if (n > 0 && taskState(std::string(buf, static_cast<size_t>(n))) == 'R') ++runnable;
  }
  closedir(dir);
  return runnable;
}

}  // namespace smddp::common
