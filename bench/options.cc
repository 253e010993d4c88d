// SPDX-License-Identifier: Apache-2.0
// Flag parsing for the perf tools. Flags take their value as the next argument ("-b 8") or after
// '=' for the long spelling ("--minbytes=8"). Every rejection names the flag and the value.
#include "options.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <limits>

#include "common/config.h"
#include "smddp/error.h"

namespace smddp::bench {
namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

int64_t parseInteger(const std::string& flag, const std::string& text, int64_t lo, int64_t hi) {
  size_t pos = 0;
  long long v = 0;
  try {
    v = std::stoll(text, &pos, 10);
  } catch (const std::exception&) {
    pos = 0;
  }
  if (pos == 0 || pos != text.size() || v < lo || v > hi) {
    throw ArgError("bad value '" + text + "' for " + flag + ": expected an integer in [" +
                   std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return v;
}

struct Flag {
  const char* shortName;
  const char* longName;
  std::function<void(BenchOptions&, const std::string&)> apply;
};

const std::vector<Flag>& flags() {
  constexpr int64_t kIntMax = std::numeric_limits<int>::max();
  static const std::vector<Flag> table = {
      {"-b", "--minbytes",
       [](BenchOptions& o, const std::string& v) { o.minBytes = parseSize("-b", v); }},
      {"-e", "--maxbytes",
       [](BenchOptions& o, const std::string& v) { o.maxBytes = parseSize("-e", v); }},
      {"-f", "--stepfactor",
       [](BenchOptions& o, const std::string& v) {
         o.stepFactor = parseInteger("-f", v, 2, 1 << 20);
       }},
      {"-i", "--stepbytes",
       [](BenchOptions& o, const std::string& v) { o.stepBytes = parseSize("-i", v); }},
      {"-n", "--iters",
       [](BenchOptions& o, const std::string& v) { o.iters = parseInteger("-n", v, 1, kIntMax); }},
      {"-w", "--warmup_iters",
       [](BenchOptions& o, const std::string& v) {
         o.warmupIters = parseInteger("-w", v, 0, kIntMax);
       }},
      {"-z", "--blocking",
       [](BenchOptions& o, const std::string& v) {
         o.blocking = static_cast<int>(parseInteger("-z", v, 0, 2));
       }},
      {"-c", "--check",
       [](BenchOptions& o, const std::string& v) { o.check = parseInteger("-c", v, 0, 1) == 1; }},
      {"-d", "--datatype",
       [](BenchOptions& o, const std::string& v) { o.dtypes = parseDataTypes(v); }},
      {"-o", "--op", [](BenchOptions& o, const std::string& v) { o.ops = parseReduceOps(v); }},
      {"-r", "--root",
       [](BenchOptions& o, const std::string& v) { o.root = parseInteger("-r", v, -1, kIntMax); }},
      {"-np", "--nranks",
       [](BenchOptions& o, const std::string& v) {
         o.localRanks = parseInteger("-np", v, 1, 1024);
       }},
      {"-P", "--provider",
       [](BenchOptions& o, const std::string& v) {
         const std::string p = lower(v);
         if (p != "shm" && p != "tcp" && p != "efa" && p != "net" && p != "auto") {
           throw ArgError("bad value '" + v + "' for -P: expected shm, tcp, net, efa or auto");
         }
         o.provider = p;
       }},
      {"-B", "--bind",
       [](BenchOptions& o, const std::string& v) {
         o.bind = static_cast<int>(parseInteger("-B", v, 0, 2));
       }},
      {"-g", "--gpu",
       [](BenchOptions& o, const std::string& v) {
         o.gpu = static_cast<int>(parseInteger("-g", v, 0, 1));
       }},
      {"-J", "--json", [](BenchOptions& o, const std::string& v) { o.jsonPath = v; }},
      {"-T", "--timeout_ms",
       [](BenchOptions& o, const std::string& v) {
         o.timeoutMs = parseInteger("-T", v, 1, INT64_MAX);
       }},
      {"-L", "--launch_timeout",
       [](BenchOptions& o, const std::string& v) {
         o.launchTimeoutSec = parseInteger("-L", v, 1, kIntMax);
       }},
  };
  return table;
}

void validate(const BenchOptions& o, bool factorGiven) {
  if (o.minBytes > o.maxBytes) {
    throw ArgError("-b " + std::to_string(o.minBytes) + " is larger than -e " +
                   std::to_string(o.maxBytes));
  }
  if (factorGiven && o.stepBytes > 0)
    throw ArgError("give either -f (factor) or -i (step), not both");
  // Builds the sweep once so a too-long one is rejected before any rank starts.
  sizeSweep(o.minBytes, o.maxBytes, o.stepFactor, o.stepBytes);
}

}  // namespace

size_t parseSize(const std::string& flag, const std::string& text) {
  try {
    const int64_t v = parseBytes(flag, text);
    if (v < 0) throw ArgError("");
    return static_cast<size_t>(v);
  } catch (const std::exception&) {
    throw ArgError("bad value '" + text + "' for " + flag +
                   ": expected a byte count such as 8, 64K, 4M or 1G");
  }
}

std::vector<DataType> parseDataTypes(const std::string& text) {
  const std::string t = lower(text);
  if (t == "all") {
    return {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16, DataType::kBFloat16,
            DataType::kInt8,    DataType::kUInt8,   DataType::kInt32,   DataType::kInt64};
  }
  if (t == "float" || t == "float32") return {DataType::kFloat32};
  if (t == "double" || t == "float64") return {DataType::kFloat64};
  if (t == "half" || t == "float16") return {DataType::kFloat16};
  if (t == "bfloat16" || t == "bf16") return {DataType::kBFloat16};
  if (t == "int8" || t == "char") return {DataType::kInt8};
  if (t == "uint8") return {DataType::kUInt8};
  if (t == "int32" || t == "int") return {DataType::kInt32};
  if (t == "int64") return {DataType::kInt64};
  throw ArgError("bad value '" + text + "' for -d: expected float|float32|double|float64|half|" +
                 "float16|bfloat16|int8|uint8|int32|int64|all");
}

std::vector<ReduceOp> parseReduceOps(const std::string& text) {
  const std::string t = lower(text);
  if (t == "all") {
    return {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kAvg};
  }
  if (t == "sum") return {ReduceOp::kSum};
  if (t == "prod") return {ReduceOp::kProd};
  if (t == "min") return {ReduceOp::kMin};
  if (t == "max") return {ReduceOp::kMax};
  if (t == "avg") return {ReduceOp::kAvg};
  throw ArgError("bad value '" + text + "' for -o: expected sum|prod|min|max|avg|all");
}

BenchOptions parseArgs(const std::vector<std::string>& args) {
  BenchOptions o;
  bool factorGiven = false;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string name = args[i];
    std::optional<std::string> value;
    if (name == "-h" || name == "--help") {
      o.help = true;
      continue;
    }
    if (name.rfind("--", 0) == 0 && name.find('=') != std::string::npos) {
      value = name.substr(name.find('=') + 1);
      name = name.substr(0, name.find('='));
    }
    auto it = std::find_if(flags().begin(), flags().end(), [&](const Flag& f) {
      return name == f.shortName || name == f.longName;
    });
    if (it == flags().end()) {
      throw ArgError("unknown flag '" + args[i] + "' (run with -h for the list of flags)");
    }
    if (!value) {
      if (i + 1 >= args.size()) throw ArgError("flag " + name + " needs a value");
      value = args[++i];
    }
    it->apply(o, *value);
    if (std::string(it->shortName) == "-f") factorGiven = true;
  }
  validate(o, factorGiven);
  return o;
}

std::vector<size_t> sizeSweep(size_t minBytes, size_t maxBytes, size_t stepFactor,
                              size_t stepBytes) {
  if (stepBytes == 0 && stepFactor < 2) throw ArgError("-f must be at least 2");
  std::vector<size_t> sizes;
  for (size_t s = minBytes; s <= maxBytes;) {
    if (sizes.size() == kMaxSweepRows) {
      throw ArgError("the size sweep has more than " + std::to_string(kMaxSweepRows) +
                     " rows; raise -f or -i");
    }
    sizes.push_back(s);
    const size_t next = stepBytes > 0 ? s + stepBytes : (s == 0 ? 1 : s * stepFactor);
    // Stops on overflow instead of wrapping around to a small size.
    if (next <= s || (stepBytes == 0 && s != 0 && next / stepFactor != s)) break;
    s = next;
  }
  return sizes;
}

std::string usageText(const std::string& program) {
  return "usage: " + program +
         " [flags]\n"
         "  -b, --minbytes <size>       smallest message (K/M/G suffixes), default 32M\n"
         "  -e, --maxbytes <size>       largest message, default 32M\n"
         "  -f, --stepfactor <n>        multiply the size by n each row, default 2\n"
         "  -i, --stepbytes <size>      add size each row instead of -f\n"
         "  -n, --iters <n>             timed iterations per row, default 20\n"
         "  -w, --warmup_iters <n>      untimed iterations before each row, default 5\n"
         "  -c, --check <0|1>           verify every element of a separate run, default 1\n"
         "  -z, --blocking <0|1|2>      0: post every iteration, then wait; 1: the blocking\n"
         "                              calls (as MPI's; the synchronous path of a training\n"
         "                              loop); 2: post one and wait for it before the next;\n"
         "                              default 0\n"
         "  -d, --datatype <type>       float|float32|double|float64|half|float16|bfloat16|\n"
         "                              int8|uint8|int32|int64|all, default float\n"
         "  -o, --op <op>               sum|prod|min|max|avg|all, default sum\n"
         "  -r, --root <rank>           broadcast root, -1 for every root in turn, default 0\n"
         "  -np, --nranks <n>           fork n ranks on this host (file store in a fresh temp "
         "dir)\n"
         "  -P, --provider <name>       shm|tcp|net|efa|auto (default: SMDDP_PROVIDER)\n"
         "  -B, --bind <0|1|2>          -np ranks: 1: bind rank r to the r-th allowed core when\n"
         "                              there are enough (as mpirun does for 2); 2: also with\n"
         "                              more ranks than CPUs, rank r to CPU r mod CPUs (as\n"
         "                              mpirun --use-hwthread-cpus --map-by\n"
         "                              hwthread:OVERSUBSCRIBE --bind-to hwthread);\n"
         "                              0: no binding; default 1\n"
         "  -g, --gpu <0|1>             1: buffers in device memory (CUDA, or the fake device\n"
         "                              under SMDDP_DEVICE=fake), rank r on device r mod the\n"
         "                              devices visible; default 0 (host memory)\n"
         "  -J, --json <file>           also write the results as JSON\n"
         "  -T, --timeout_ms <ms>       communicator timeout (default: SMDDP_TIMEOUT_MS)\n"
         "  -L, --launch_timeout <s>    bound on the whole -np run, default 3600\n"
         "  -h, --help                  this text\n"
         "Without -np, rank and size come from SMDDP_RANK/SMDDP_WORLD_SIZE (or mpirun's\n"
         "OMPI_COMM_WORLD_RANK/SIZE) and the rendezvous from "
         "SMDDP_STORE=file:/dir|tcp:host:port.\n";
}

}  // namespace smddp::bench
