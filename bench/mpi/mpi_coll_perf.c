// SPDX-License-Identifier: Apache-2.0
/* mpi_coll_perf: Open MPI reference numbers for bench/compare. One collective and one data type
 * per run, over the sizes given with -s; rank 0 prints one JSON line per size.
 *
 * Conventions match the smddp perf tools so the rows line up: a row's size is the whole buffer
 * (for all_gather and gather the whole receive buffer, for reduce_scatter, all_to_all and
 * scatter the whole send buffer: count per rank = size / (n * elemsize)); all_reduce,
 * broadcast and reduce run in place (as torch.distributed does), rooted ones at rank 0 (only the
 * root's output of reduce and gather is checked); sendrecv sends buf to rank + 1 and
 * receives out from rank - 1 (MPI_Sendrecv); the time is the max over ranks of the
 * mean of `iters` barrier-aligned calls, cpu_us the CPU time (user + system, getrusage: every
 * thread of the rank) per timed call, the mean over ranks; the check is a separate call on
 * closed-form data (value(rank, i) = (rank + i) % 8 + 1, exact in bfloat16 for sums of up to
 * 32 ranks).
 * bfloat16 is a 2-byte contiguous type with a user-defined SUM (Open MPI 4.1 has no bf16 type).
 * Invariant: prints only JSON lines on stdout, exits non-zero on a usage error. */
#define _POSIX_C_SOURCE 200809L /* getrusage under -std=c11 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define MAX_SIZES 64

typedef struct {
  const char* coll;
  int bf16;
  size_t sizes[MAX_SIZES];
  int nsizes;
  int iters, warmup;
} Args;

static float bf16ToFloat(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static uint16_t floatToBf16(float f) { /* round to nearest even; inputs here are finite */
  uint32_t u;
  memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

static void bf16Sum(void* in, void* inout, int* len, MPI_Datatype* type) {
  (void)type;
  uint16_t* a = (uint16_t*)in;
  uint16_t* b = (uint16_t*)inout;
  for (int i = 0; i < *len; ++i) b[i] = floatToBf16(bf16ToFloat(a[i]) + bf16ToFloat(b[i]));
}

static double value(int rank, size_t i) { return (double)((rank + i) % 8 + 1); }

static void put(void* buf, int bf16, size_t i, double v) {
  if (bf16) ((uint16_t*)buf)[i] = floatToBf16((float)v);
  else ((float*)buf)[i] = (float)v;
}

static double get(const void* buf, int bf16, size_t i) {
  return bf16 ? bf16ToFloat(((const uint16_t*)buf)[i]) : ((const float*)buf)[i];
}

typedef struct {
  MPI_Datatype type;
  MPI_Op sum;
  int rank, n;
  size_t elem;
} Ctx;

/* One call of the collective on (buf, count) in place, or into out for all_gather (count per
 * rank), reduce_scatter and all_to_all (buf holds n blocks of count). */
static void runOnce(const Ctx* c, const char* coll, void* buf, void* out, int count) {
  if (!strcmp(coll, "all_reduce")) {
    MPI_Allreduce(MPI_IN_PLACE, buf, count, c->type, c->sum, MPI_COMM_WORLD);
  } else if (!strcmp(coll, "broadcast")) {
    MPI_Bcast(buf, count, c->type, 0, MPI_COMM_WORLD);
  } else if (!strcmp(coll, "all_gather")) {
    MPI_Allgather(buf, count, c->type, out, count, c->type, MPI_COMM_WORLD);
  } else if (!strcmp(coll, "reduce_scatter")) {
    MPI_Reduce_scatter_block(buf, out, count, c->type, c->sum, MPI_COMM_WORLD);
  } else if (!strcmp(coll, "all_to_all")) {
    MPI_Alltoall(buf, count, c->type, out, count, c->type, MPI_COMM_WORLD);
  } else if (!strcmp(coll, "reduce")) { /* to rank 0, in place there */
    MPI_Reduce(c->rank == 0 ? MPI_IN_PLACE : buf, buf, count, c->type, c->sum, 0, MPI_COMM_WORLD);
  } else if (!strcmp(coll, "gather")) {
    MPI_Gather(buf, count, c->type, out, count, c->type, 0, MPI_COMM_WORLD);
  } else if (!strcmp(coll, "scatter")) {
    MPI_Scatter(buf, count, c->type, out, count, c->type, 0, MPI_COMM_WORLD);
  } else if (!strcmp(coll, "sendrecv")) { /* to rank + 1, from rank - 1 */
    MPI_Sendrecv(buf, count, c->type, (c->rank + 1) % c->n, 0, out, count, c->type,
                 (c->rank + c->n - 1) % c->n, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else {
    MPI_Barrier(MPI_COMM_WORLD);
  }
}

/* Fills closed-form inputs, runs once, returns how many elements differ from the expected. */
static long long check(const Ctx* c, const char* coll, void* buf, void* out, size_t count, int bf16) {
  if (!strcmp(coll, "barrier")) return 0;
  const int scatter = !strcmp(coll, "reduce_scatter");
  const int alltoall = !strcmp(coll, "all_to_all");
  const int rooted = !strcmp(coll, "reduce") || !strcmp(coll, "gather");
  const size_t inputs =
      scatter || alltoall || !strcmp(coll, "scatter") ? count * (size_t)c->n : count;
  for (size_t i = 0; i < inputs; ++i) {
    const int broadcastReceiver = !strcmp(coll, "broadcast") && c->rank != 0;
    put(buf, bf16, i, broadcastReceiver ? -1.0 : value(c->rank, i));
  }
  runOnce(c, coll, buf, out, (int)count);
  long long wrong = 0;
  if (rooted && c->rank != 0) return 0; /* only the root's output is defined */
  if (!strcmp(coll, "gather")) {
    for (size_t i = 0; i < count * (size_t)c->n; ++i)
      wrong += get(out, bf16, i) != value((int)(i / count), i % count);
  } else if (!strcmp(coll, "scatter")) {
    for (size_t i = 0; i < count; ++i)
      wrong += get(out, bf16, i) != value(0, (size_t)c->rank * count + i);
  } else if (!strcmp(coll, "all_gather")) {
    for (size_t i = 0; i < count * (size_t)c->n; ++i)
      wrong += get(out, bf16, i) != value((int)(i / count), i % count);
  } else if (!strcmp(coll, "sendrecv")) {
    for (size_t i = 0; i < count; ++i)
      wrong += get(out, bf16, i) != value((c->rank + c->n - 1) % c->n, i);
  } else if (alltoall) { /* block s of out is block `rank` of rank s's buf */
    for (size_t i = 0; i < count * (size_t)c->n; ++i)
      wrong += get(out, bf16, i) != value((int)(i / count), (size_t)c->rank * count + i % count);
  } else if (scatter) {
    for (size_t i = 0; i < count; ++i) {
      double want = 0;
      for (int r = 0; r < c->n; ++r) want += value(r, (size_t)c->rank * count + i);
      wrong += get(out, bf16, i) != want;
    }
  } else {
    for (size_t i = 0; i < count; ++i) {
      double want = 0;
      if (!strcmp(coll, "broadcast")) want = value(0, i);
      else for (int r = 0; r < c->n; ++r) want += value(r, i);
      wrong += get(buf, bf16, i) != want;
    }
  }
  return wrong;
}

/* CPU time (user + system) this process has used so far, in microseconds. */
static double cpuMicros(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (double)u.ru_utime.tv_sec * 1e6 + (double)u.ru_utime.tv_usec +
         (double)u.ru_stime.tv_sec * 1e6 + (double)u.ru_stime.tv_usec;
}

static void measure(const Ctx* c, const Args* a, size_t size, void* buf, void* out) {
  const int perRank = !strcmp(a->coll, "all_gather") || !strcmp(a->coll, "reduce_scatter") ||
                      !strcmp(a->coll, "all_to_all") || !strcmp(a->coll, "gather") ||
                      !strcmp(a->coll, "scatter");
  const size_t count = size / (c->elem * (perRank ? (size_t)c->n : 1));
  memset(buf, 0, size); /* reductions time on zeros: repeated sums never overflow */
  for (int i = 0; i < a->warmup; ++i) runOnce(c, a->coll, buf, out, (int)count);
  MPI_Barrier(MPI_COMM_WORLD);
  const double cpu0 = cpuMicros();
  const double t0 = MPI_Wtime();
  for (int i = 0; i < a->iters; ++i) runOnce(c, a->coll, buf, out, (int)count);
  double us = (MPI_Wtime() - t0) * 1e6 / a->iters, maxUs = 0;
  double cpuUs = (cpuMicros() - cpu0) / a->iters, sumCpuUs = 0;
  long long wrong = check(c, a->coll, buf, out, count, a->bf16), totalWrong = 0;
  MPI_Reduce(&us, &maxUs, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  MPI_Reduce(&cpuUs, &sumCpuUs, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(&wrong, &totalWrong, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (c->rank == 0) {
    printf("{\"size\": %zu, \"count\": %zu, \"time_us\": %.4f, \"cpu_us\": %.4f, "
           "\"wrong\": %lld}\n",
           size, count, maxUs, sumCpuUs / c->n, totalWrong);
    fflush(stdout);
  }
}

static int parseArgs(int argc, char** argv, Args* a) {
  memset(a, 0, sizeof *a);
  a->coll = "all_reduce";
  a->iters = 20;
  a->warmup = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "-c")) a->coll = argv[i + 1];
    else if (!strcmp(argv[i], "-d")) a->bf16 = !strcmp(argv[i + 1], "bfloat16");
    else if (!strcmp(argv[i], "-n")) a->iters = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-w")) a->warmup = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-s")) {
      for (char* t = strtok(argv[i + 1], ","); t && a->nsizes < MAX_SIZES; t = strtok(NULL, ","))
        a->sizes[a->nsizes++] = (size_t)strtoull(t, NULL, 10);
    } else return -1;
  }
  const char* known[] = {"all_reduce", "broadcast", "all_gather", "reduce_scatter", "all_to_all",
                         "sendrecv",   "reduce",    "gather",     "scatter",        "barrier"};
  for (int k = 0; k < 10; ++k)
    if (!strcmp(a->coll, known[k])) return a->iters > 0 && a->nsizes > 0 ? 0 : -1;
  return -1;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  Args a;
  Ctx c;
  MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &c.n);
  if (parseArgs(argc, argv, &a) != 0) {
    if (c.rank == 0)
      fprintf(stderr,
              "usage: mpi_coll_perf -c "
              "all_reduce|broadcast|all_gather|reduce_scatter|all_to_all|sendrecv|reduce|gather|"
              "scatter|barrier "
              "-d float32|bfloat16 -s size,size,... [-n iters] [-w warmup]\n");
    MPI_Finalize();
    return 2;
  }
  c.elem = a.bf16 ? 2 : 4;
  if (a.bf16) {
    MPI_Type_contiguous(2, MPI_BYTE, &c.type);
    MPI_Type_commit(&c.type);
    MPI_Op_create(bf16Sum, 1, &c.sum);
  } else {
    c.type = MPI_FLOAT;
    c.sum = MPI_SUM;
  }
  size_t maxSize = 0;
  for (int i = 0; i < a.nsizes; ++i) maxSize = a.sizes[i] > maxSize ? a.sizes[i] : maxSize;
  char* buf = malloc(maxSize + 64);
  char* out = malloc(maxSize + 64);
  for (int i = 0; i < a.nsizes; ++i) measure(&c, &a, a.sizes[i], buf, out);
  free(buf);
  free(out);
  if (a.bf16) {
    MPI_Op_free(&c.sum);
    MPI_Type_free(&c.type);
  }
  MPI_Finalize();
  return 0;
}
