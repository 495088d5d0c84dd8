#include "mpi_world.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "core/error.h"

#ifdef COLLSIM_HAVE_MPI
#include <mpi.h>
#endif

namespace collsim {

namespace {

// How many processes a launcher started, from its environment (Open MPI's mpirun,
// or PMI as Slurm's srun and MPICH set it); 0 when none did.
int launched_processes() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const char* v = std::getenv(name)) return std::max(1, std::atoi(v));
  return std::getenv("PMIX_RANK") ? 1 : 0;
}

}  // namespace

bool MpiWorld::available() {
#ifdef COLLSIM_HAVE_MPI
  return true;
#else
  return false;
#endif
}

#ifdef COLLSIM_HAVE_MPI

MpiWorld::MpiWorld() {
  if (launched_processes() == 0) return;
  int provided = 0;
  // Funneled: worker threads simulate, only the main thread calls MPI.
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  initialised_ = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiWorld::~MpiWorld() {
  if (initialised_) MPI_Finalize();
}

std::vector<std::string> MpiWorld::gather(const std::string& text) const {
  if (size_ == 1) return {text};
  const int length = static_cast<int>(text.size());
  std::vector<int> lengths(rank_ == 0 ? size_ : 0), offsets(lengths.size());
  MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::string all;
  if (rank_ == 0) {
    for (int r = 1; r < size_; ++r) offsets[r] = offsets[r - 1] + lengths[r - 1];
    all.resize(static_cast<std::size_t>(offsets.back() + lengths.back()));
  }
  MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR,
              0, MPI_COMM_WORLD);
  std::vector<std::string> out;
  for (int r = 0; r < static_cast<int>(lengths.size()); ++r)
    out.push_back(
        all.substr(static_cast<std::size_t>(offsets[r]), static_cast<std::size_t>(lengths[r])));
  return out;
}

int MpiWorld::broadcast(int value) const {
  if (size_ > 1) MPI_Bcast(&value, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return value;
}

#else

MpiWorld::MpiWorld() {
  if (const int n = launched_processes(); n > 1)
    throw InputError("mpirun", fmt::format("started as one of {} MPI processes, but this collsim "
                                           "was built without MPI: install libopenmpi-dev "
                                           "(tools/setup.sh) and build again",
                                           n));
}

MpiWorld::~MpiWorld() = default;

std::vector<std::string> MpiWorld::gather(const std::string& text) const {
  return {text};
}

int MpiWorld::broadcast(int value) const {
  return value;
}

#endif

}  // namespace collsim
