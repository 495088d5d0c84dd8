#pragma once
// The MPI processes a command runs among when mpirun (or srun) started it, or one
// process alone. MPI is initialised only under a launcher, so a collsim built with
// MPI still runs as a plain program; one built without it refuses to run as one of
// several MPI processes rather than have each do the whole job.
#include <string>
#include <vector>

namespace collsim {

class MpiWorld {
 public:
  MpiWorld();
  ~MpiWorld();
  MpiWorld(const MpiWorld&) = delete;
  MpiWorld& operator=(const MpiWorld&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  // Rank 0 gets every rank's text, in rank order; the other ranks get nothing.
  std::vector<std::string> gather(const std::string& text) const;
  // Every rank gets rank 0's value.
  int broadcast(int value) const;

  // Whether this collsim was built with MPI.
  static bool available();

 private:
  bool initialised_ = false;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace collsim
