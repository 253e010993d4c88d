// SPDX-License-Identifier: Apache-2.0
/* mem_limits: the single-core memory ceilings that bench/compare quotes busbw against.
 *   memcpy   : bytes copied per second, memcpy(dst, src, N), N = -m MiB (default 256)
 *   add_f32  : bytes of `a` updated per second by a[i] += b[i] (float32), the work a SUM
 *              reduction does per received byte
 * Each is the best of -r repetitions (default 5) after one untimed pass that faults the pages in.
 * A collective moving data through one core's copy loop cannot beat these; busbw counts each byte
 * once, so busbw / memcpy is the fraction of that ceiling a size reaches.
 * Invariant: prints exactly one JSON object on stdout. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Kept out of line so the compiler cannot merge repetitions; -O3 vectorizes the loop. */
__attribute__((noinline)) static void addF32(float* restrict a, const float* restrict b, size_t n) {
  for (size_t i = 0; i < n; ++i) a[i] += b[i];
}

int main(int argc, char** argv) {
  size_t mib = 256;
  int reps = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "-m")) mib = (size_t)atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-r")) reps = atoi(argv[i + 1]);
  }
  if (mib == 0 || reps <= 0) {
    fprintf(stderr, "usage: mem_limits [-m MiB] [-r repetitions]\n");
    return 2;
  }
  const size_t bytes = mib << 20, n = bytes / sizeof(float);
  float* a = malloc(bytes);
  float* b = malloc(bytes);
  if (!a || !b) {
    fprintf(stderr, "mem_limits: cannot allocate 2 x %zu MiB\n", mib);
    return 1;
  }
  for (size_t i = 0; i < n; ++i) {
    a[i] = 0.0f;
    b[i] = (float)(i & 7);
  }
  double bestCopy = 1e30, bestAdd = 1e30;
  memcpy(a, b, bytes);
  for (int r = 0; r < reps; ++r) {
    double t = now();
    memcpy(a, b, bytes);
    t = now() - t;
    bestCopy = t < bestCopy ? t : bestCopy;
  }
  memset(a, 0, bytes);
  for (int r = 0; r < reps; ++r) {
    double t = now();
    addF32(a, b, n);
    t = now() - t;
    bestAdd = t < bestAdd ? t : bestAdd;
  }
  /* Uses the result so the additions cannot be dropped: a[9] = reps * b[9] = reps * 1. */
  const int ok = a[9] == (float)reps;
  printf("{\"buffer_mib\": %zu, \"repetitions\": %d, \"memcpy_gbps\": %.3f, "
         "\"add_f32_gbps\": %.3f, \"add_check\": %s}\n",
         mib, reps, bytes / bestCopy / 1e9, bytes / bestAdd / 1e9, ok ? "true" : "false");
  free(a);
  free(b);
  return ok ? 0 : 1;
}
