#pragma once
// How to read a Chakra trace (workload/chakra.h): what the trace itself does not say.
// Apart from chakra.h so that a workload's description can hold it cheaply.
#include <map>
#include <string>
#include <vector>

#include "schedule/collective.h"

namespace collsim {

struct ChakraOptions {
  // Ranks expected; 0 counts the files NAME.0.et, NAME.1.et, ... present.
  int ranks = 0;
  // Algorithm of every collective task ("" leaves the choice to whoever simulates
  // the graph). Point-to-point transfers always use "direct".
  std::string algorithm;
  // Compute nodes that carry FLOPs ("num_ops") but no duration take
  // num_ops / (peak_flops * mfu) seconds; without a peak such a node is an error.
  double peak_flops = 0;  // per GPU, FLOP/s
  double mfu = 1;         // model FLOPs utilisation, in (0, 1]
  // Memory load/store nodes take tensor_size / memory_bandwidth seconds on their rank;
  // 0 leaves them out (they then only pass their dependencies on).
  double memory_bandwidth = 0;  // bytes/s
  // Chain each rank's compute nodes one after another (ASTRA-sim runs one compute
  // node at a time per NPU); off, only the trace's dependencies order them.
  bool serialize_compute = false;
  // Process group name -> its ranks, in the algorithm's order (ASTRA-sim's
  // communicator-group file). A "pg_name" not listed here is the ranks whose traces
  // use it, ascending; a collective without "pg_name" spans every rank.
  std::map<std::string, std::vector<int>> process_groups;
  // Element type of the collectives: Chakra sizes are bytes with no type. Every
  // comm_size must be a whole number of elements.
  DType dtype = DType::U8;
};

}  // namespace collsim
