"""A Python program through mpi4py that knows nothing of mpicast: buffer broadcasts
(Comm.Bcast) of several sizes from every root, pickled objects (Comm.bcast), a split
communicator, barriers, every byte checked. scripts/mpi4py.sh runs it with libmpicast
preloaded and MPICAST_STATS=1 and proves from the outside that the multicast path was
taken. Rank 0 ends with
  int_mpi4py: bcasts=<its MPI broadcast calls> barriers=<its MPI_Barrier calls> ok
(a pickled Comm.bcast counts as one: mpi4py makes at least one MPI broadcast of it).
"""

import sys

from mpi4py import MPI


def pattern(root, size):
    return bytes((i * 131 + root * 7 + size) & 0xFF for i in range(size))


def fail(what):
    sys.stderr.write(f"[rank {MPI.COMM_WORLD.Get_rank()}] FAIL: {what}\n")
    sys.stderr.flush()
    MPI.COMM_WORLD.Abort(2)


def main():
    world = MPI.COMM_WORLD
    rank = world.Get_rank()
    counts = {"bcasts": 0, "barriers": 0}

    def buffers(comm, sizes):
        for size in sizes:
            for root in range(comm.Get_size()):
                want = pattern(root, size)
                buf = bytearray(want) if comm.Get_rank() == root else bytearray(size)
                comm.Bcast([buf, MPI.BYTE], root=root)
                counts["bcasts"] += 1
                if bytes(buf) != want:
                    fail(f"Bcast of {size} bytes from root {root}: wrong data")

    def barrier(comm):
        comm.Barrier()
        counts["barriers"] += 1

    buffers(world, [1, 1500, 70000, 1 << 20])
    barrier(world)
    obj = {"name": "mpicast", "values": list(range(2000)), "nested": [1.5, "x" * 3000]}
    got = world.bcast(obj if rank == 0 else None, root=0)
    counts["bcasts"] += 1
    if got != obj:
        fail("bcast of a pickled object: wrong object")
    half = world.Split(rank % 2, rank)
    buffers(half, [4096, 300000])
    barrier(half)
    half.Free()
    barrier(world)
    if rank == 0:
        print(f"int_mpi4py: bcasts={counts['bcasts']} barriers={counts['barriers']} ok",
              flush=True)


main()
