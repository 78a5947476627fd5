// A C++ program that knows nothing of mpicast (no header, no dlsym, nothing from the
// other tests): std::vector, std::string and a struct broadcast from every root over
// MPI_COMM_WORLD and a split communicator, barriers in between, every element checked.
// scripts/cxx_program.sh runs it with libmpicast preloaded and MPICAST_STATS=1 and
// proves from the outside that the multicast path was taken. Rank 0 ends with
//   int_cxx: bcasts=<its MPI_Bcast calls> barriers=<its MPI_Barrier calls> ok
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

int bcasts = 0;
int barriers = 0;

[[noreturn]] void fail(const std::string &what) {
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::fprintf(stderr, "[rank %d] FAIL: %s\n", rank, what.c_str());
  MPI_Abort(MPI_COMM_WORLD, 2);
  std::abort();
}

double value(int root, std::size_t i) { return static_cast<double>(root * 1000003 + i) * 0.5; }

void vectors(MPI_Comm comm, std::size_t n) {
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  for (int root = 0; root < size; root++) {
    std::vector<double> v(n, -1.0);
    if (rank == root)
      for (std::size_t i = 0; i < n; i++) v[i] = value(root, i);
    if (MPI_Bcast(v.data(), static_cast<int>(n), MPI_DOUBLE, root, comm) != MPI_SUCCESS)
      fail("MPI_Bcast of a vector failed");
    bcasts++;
    for (std::size_t i = 0; i < n; i++)
      if (v[i] != value(root, i)) fail("vector element " + std::to_string(i) + " is wrong");
  }
}

// A string of unknown length: the length first, then the characters.
void strings(MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::string s;
  if (rank == 0)
    for (int i = 0; i < 5000; i++) s += static_cast<char>('a' + i % 26);
  unsigned long len = s.size();
  MPI_Bcast(&len, 1, MPI_UNSIGNED_LONG, 0, comm);
  s.resize(len);
  MPI_Bcast(&s[0], static_cast<int>(len), MPI_CHAR, 0, comm);
  bcasts += 2;
  for (std::size_t i = 0; i < s.size(); i++)
    if (s[i] != static_cast<char>('a' + i % 26)) fail("string character is wrong");
  if (len != 5000) fail("string length is wrong");
}

struct Sample {
  std::int64_t id;
  double xyz[3];
  char label[12];
};

void structs(MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Datatype t;
  MPI_Type_contiguous(sizeof(Sample), MPI_BYTE, &t);
  MPI_Type_commit(&t);
  std::vector<Sample> v(300);
  for (std::size_t i = 0; i < v.size(); i++) {
    Sample s{};
    if (rank == 0) {
      s.id = static_cast<std::int64_t>(i) * 7;
      s.xyz[0] = value(1, i);
      s.xyz[2] = -value(2, i);
      std::snprintf(s.label, sizeof s.label, "s%u", static_cast<unsigned>(i % 100000));
    }
    v[i] = s;
  }
  MPI_Bcast(v.data(), static_cast<int>(v.size()), t, 0, comm);
  bcasts++;
  for (std::size_t i = 0; i < v.size(); i++) {
    char want[12];
    std::snprintf(want, sizeof want, "s%u", static_cast<unsigned>(i % 100000));
    if (v[i].id != static_cast<std::int64_t>(i) * 7 || v[i].xyz[0] != value(1, i) ||
        v[i].xyz[2] != -value(2, i) || std::string(v[i].label) != want)
      fail("struct element is wrong");
  }
  MPI_Type_free(&t);
}

void barrier(MPI_Comm comm) {
  if (MPI_Barrier(comm) != MPI_SUCCESS) fail("MPI_Barrier failed");
  barriers++;
}

}  // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (std::size_t n : {1000u, 20000u, 300000u}) {
    vectors(MPI_COMM_WORLD, n);
    barrier(MPI_COMM_WORLD);
  }
  strings(MPI_COMM_WORLD);
  structs(MPI_COMM_WORLD);
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
  vectors(half, 50000);
  barrier(half);
  MPI_Comm_free(&half);
  barrier(MPI_COMM_WORLD);
  if (rank == 0) std::printf("int_cxx: bcasts=%d barriers=%d ok\n", bcasts, barriers);
  MPI_Finalize();
  return 0;
}
