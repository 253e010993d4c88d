// SPDX-License-Identifier: Apache-2.0
/* line_rtt: the cache-line round trip between two cores, the floor of any shared-memory protocol
 * in which one rank must hear back from another before it returns (bench/compare quotes it next
 * to the small-message latencies). Two threads, bound to the first two cores this process may
 * use, bounce one counter between two cache lines -n times; the best of -r repetitions is
 * printed in nanoseconds per round trip.
 * Invariant: prints exactly one JSON object on stdout; fewer than two usable cores is an error. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static _Alignas(64) atomic_long ping;
static _Alignas(64) atomic_long pong;
static long rounds = 1000000;
static int cores[2];

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void bindTo(int core) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void* echo(void* arg) {
  (void)arg;
  bindTo(cores[1]);
  for (long i = 1; i <= rounds; ++i) {
    while (atomic_load_explicit(&ping, memory_order_acquire) != i) {
    }
    atomic_store_explicit(&pong, i, memory_order_release);
  }
  return NULL;
}

int main(int argc, char** argv) {
  int reps = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "-n")) rounds = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "-r")) reps = atoi(argv[i + 1]);
  }
  cpu_set_t allowed;
  if (rounds <= 0 || reps <= 0 || sched_getaffinity(0, sizeof(allowed), &allowed) != 0) {
    fprintf(stderr, "usage: line_rtt [-n round trips] [-r repetitions]\n");
    return 2;
  }
  int found = 0;
  for (int c = 0; c < CPU_SETSIZE && found < 2; ++c) {
    if (CPU_ISSET(c, &allowed)) cores[found++] = c;
  }
  if (found < 2) {
    fprintf(stderr, "line_rtt: needs two usable cores\n");
    return 1;
  }
  double best = 1e30;
  bindTo(cores[0]);
  for (int r = 0; r < reps; ++r) {
    atomic_store(&ping, 0);
    atomic_store(&pong, 0);
    pthread_t t;
    if (pthread_create(&t, NULL, echo, NULL) != 0) return 1;
    const double t0 = now();
    for (long i = 1; i <= rounds; ++i) {
      atomic_store_explicit(&ping, i, memory_order_release);
      while (atomic_load_explicit(&pong, memory_order_acquire) != i) {
      }
    }
    const double ns = (now() - t0) * 1e9 / (double)rounds;
    pthread_join(t, NULL);
    if (ns < best) best = ns;
  }
  printf("{\"line_rtt_ns\": %.1f, \"cores\": [%d, %d], \"round_trips\": %ld, "
         "\"repetitions\": %d}\n",
         best, cores[0], cores[1], rounds, reps);
  return 0;
}
