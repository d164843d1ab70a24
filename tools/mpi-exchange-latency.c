// SPDX-License-Identifier: BSD-3-Clause
// mpi-exchange-latency: the latency of a small exchange between the ranks of one node (160 bytes
// from every rank to every rank, about what dist::sum's host exchange moves), by three means:
// MPI_Allgather, MPI_Iallgather polled with MPI_Test (as Skein waits, so that it can time out),
// and MPI_Isend/MPI_Irecv to every other rank. Each in four settings: the ranks leaving a barrier
// together; the same with a second thread in MPI (MPI_THREAD_MULTIPLE, as Skein's watchdog);
// and twice with rank r arriving r * 10 us late, timed from the last arrival. Prints the mean
// and the best of 2000 exchanges, the slowest rank's time of each. Not part of the build:
//
//   mpicc -O2 -o mpi-exchange-latency tools/mpi-exchange-latency.c -lpthread
//   mpirun -np 4 ./mpi-exchange-latency
//
// (docs/performance.md, "Distributed sums on 4 x H200", used it to tell MPI's own latency from
// the time dist::sum's ranks wait for each other.)
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

enum { kBytes = 160, kMaxRanks = 64, kCalls = 2000 };

static atomic_int stop_flag;
static MPI_Comm other;

// The second thread: in MPI every millisecond, as a watchdog would be.
static void* prober(void* arg) {
  (void)arg;
  while (!atomic_load(&stop_flag)) {
    int flag;
    MPI_Iprobe(MPI_ANY_SOURCE, 99, other, &flag, MPI_STATUS_IGNORE);
    usleep(1000);
  }
  return NULL;
}

static double now_us(void) { return MPI_Wtime() * 1e6; }

int main(int argc, char** argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size > kMaxRanks) {
    if (rank == 0) fprintf(stderr, "at most %d ranks\n", kMaxRanks);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Comm c;
  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  MPI_Comm_dup(MPI_COMM_WORLD, &other);
  static char mine[kBytes], all[kBytes * kMaxRanks];
  memset(mine, rank, sizeof mine);
  const char* settings[] = {"together", "2nd thread", "skewed", "skewed again"};
  const char* means[] = {"MPI_Allgather", "MPI_Iallgather + MPI_Test", "MPI_Isend/MPI_Irecv"};
  for (int setting = 0; setting < 4; ++setting) {
    const double late = setting >= 2 ? 10.0 * rank : 0.0;  // this rank's delay, us
    pthread_t thread;
    atomic_store(&stop_flag, 0);
    if (setting == 1) pthread_create(&thread, NULL, prober, NULL);
    for (int mean = 0; mean < 3; ++mean) {
      double best = 1e30, total = 0;
      for (int i = 0; i < kCalls; ++i) {
        MPI_Barrier(c);
        double t0 = now_us();
        while (now_us() - t0 < late) {
        }
        // Skewed: timed from the last rank's arrival.
        if (setting >= 2) t0 += 10.0 * (size - 1);
        if (mean == 0) {
          MPI_Allgather(mine, kBytes, MPI_BYTE, all, kBytes, MPI_BYTE, c);
        } else if (mean == 1) {
          MPI_Request r;
          MPI_Iallgather(mine, kBytes, MPI_BYTE, all, kBytes, MPI_BYTE, c, &r);
          int done = 0;
          while (!done) {
            MPI_Test(&r, &done, MPI_STATUS_IGNORE);
            if (!done) sched_yield();
          }
        } else {
          MPI_Request rs[2 * kMaxRanks];
          int k = 0;
          for (int p = 0; p < size; ++p) {
            if (p != rank) MPI_Irecv(all + kBytes * p, kBytes, MPI_BYTE, p, 7, c, &rs[k++]);
          }
          for (int p = 0; p < size; ++p) {
            if (p != rank) MPI_Isend(mine, kBytes, MPI_BYTE, p, 7, c, &rs[k++]);
          }
          int done = 0;
          while (!done) {
            MPI_Testall(k, rs, &done, MPI_STATUSES_IGNORE);
            if (!done) sched_yield();
          }
        }
        double dt = now_us() - t0, slowest;
        MPI_Allreduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, c);
        total += slowest;
        if (slowest < best) best = slowest;
      }
      if (rank == 0) {
        printf("%-26s %-13s mean %6.2f us, best %6.2f us (%d ranks)\n", means[mean],
               settings[setting], total / kCalls, best, size);
      }
    }
    if (setting == 1) {
      atomic_store(&stop_flag, 1);
      pthread_join(thread, NULL);
    }
  }
  MPI_Comm_free(&other);
  MPI_Comm_free(&c);
  MPI_Finalize();
  return 0;
}
