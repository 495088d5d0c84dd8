#pragma once
// workload_sweep.html: a workload sweep's step time and memory per GPU by point, bars
// side by side; points that fit, points that do not and refused ones told apart, the
// best (fastest that fits) marked.
#include <iosfwd>

#include "sweep/workload_sweep.h"

namespace collsim {

void write_workload_sweep_html(std::ostream& out, const WorkloadSweep& sweep);

}  // namespace collsim
