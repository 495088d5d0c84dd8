#pragma once
// Ranks laid out host by host: the same number on every host, each host's consecutive
// (rank h * n .. h * n + n - 1 on host h). NVLS's switch groups are such blocks, and
// CollNet's are their rails (the j-th rank of every block).
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "schedule/algorithms.h"

namespace collsim {

struct HostBlocks {
  int hosts = 1;
  int per_host = 1;
};

// The layout of `hosts` (the host of each rank; empty: one host), or why it is none, in
// words naming `algorithm`.
std::variant<HostBlocks, std::string> host_blocks_of(const std::vector<int>& hosts, int ranks,
                                                     std::string_view algorithm);

// The layout of `hosts` (one host where empty) as a generator takes it: std::invalid_argument
// where it is none, or where `hosts` does not list every one of `ranks`.
HostBlocks host_blocks_or_throw(const std::vector<int>& hosts, int ranks,
                                std::string_view algorithm);

// "hosts": the host of each rank, in consecutive blocks of one size (a JSON error where not).
void parse_host_blocks(const JsonView& object, AlgorithmOptions& o, const OptionContext& ctx,
                       std::string_view algorithm);

// The hosts of `o` (from the topology where not given: ctx has one) and their layout, or
// an InputError at ctx's path.
HostBlocks host_blocks_from(AlgorithmOptions& o, const OptionContext& ctx,
                            std::string_view algorithm);

// Every rail of `layout` (the GPUs at one place of every host) under a network switch with
// "sharp": true, as `algorithm`'s switch ops across hosts need, and few enough hosts for a
// switch op's legs; else an InputError at ctx's path.
void require_rail_switches(const OptionContext& ctx, HostBlocks layout, std::string_view algorithm);

}  // namespace collsim
