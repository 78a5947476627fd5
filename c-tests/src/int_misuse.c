/* Misuse of the extension calls, as a user makes it: every wrong argument of every call is
 * answered by its status code and a message naming the call and the argument
 * (MPICAST_Last_error), nothing is sent, and the next correct call works; a mistake on one
 * rank of a collective call (MPICAST_Mmcast) is an error on every rank. Calls before MPI_Init
 * and after MPI_Finalize, freed and null communicators, null datatypes, uninitialised and
 * stale requests are errors, not crashes.
 *
 *   int_misuse                  the whole matrix (4 ranks or more)
 *   int_misuse --settings       only extension calls, for scripts/misuse.sh: with a bad
 *                               MPICAST_* setting the program must stop at its first call
 *   int_misuse --unreceived K   rank 0 multicasts (K = imcast or dbcast) 160000 bytes that no
 *                               rank receives, then every rank finalizes: it must finish */
#include <mpi.h>
#include <mpicast.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "api.h"

#define Mcast_enable API(MPICAST_Mcast_enable)
#define Dbcast_enable API(MPICAST_Dbcast_enable)
#define Imcast API(MPICAST_Imcast)
#define Mcast_irecv API(MPICAST_Mcast_irecv)
#define Mcast_iprobe API(MPICAST_Mcast_iprobe)
#define Wait API(MPICAST_Wait)
#define Test API(MPICAST_Test)
#define Waitall API(MPICAST_Waitall)
#define Testany API(MPICAST_Testany)
#define Testsome API(MPICAST_Testsome)
#define Request_free API(MPICAST_Request_free)
#define Dbcast API(MPICAST_Dbcast)
#define Send_defer API(MPICAST_Send_defer)
#define Send_release API(MPICAST_Send_release)
#define Mmcast API(MPICAST_Mmcast)
#define Goal_create API(MPICAST_Goal_create)
#define Goal_free API(MPICAST_Goal_free)
#define Last_error API(MPICAST_Last_error)
#define Status_string API(MPICAST_Status_string)

static int rank, size;
static int checks;

/* `rc` must be `want`, and the last error must contain `say` (when not NULL). */
static void expect(int rc, int want, const char *say, const char *what, int line) {
  checks++;
  if (rc != want)
    tc_fail("line %d: %s returned %d (%s), expected %d (%s); last error: %s", line, what, rc,
            Status_string(rc), want, Status_string(want), Last_error());
  if (say && !strstr(Last_error(), say))
    tc_fail("line %d: %s: the message \"%s\" does not say \"%s\"", line, what, Last_error(), say);
}
#define EXPECT(call, want, say) expect((call), (want), (say), #call, __LINE__)

/* A correct multicast from rank 0 to every other rank of `comm` (Imcast or, on a
 * dynamic-broadcast communicator, Dbcast received by MPI_Recv): the data arrives whole. */
static void good_imcast(MPI_Comm comm, int dyn, int round) {
  int n = 1000 + round, buf[1100];
  if (rank == 0) {
    int dests[64], k = 0;
    for (int r = 1; r < size && k < 64; r++)
      dests[k++] = r;
    for (int i = 0; i < n; i++)
      buf[i] = round * 7919 + i;
    MPICAST_Request *req = NULL;
    EXPECT(dyn ? Dbcast(buf, n, MPI_INT, dests, NULL, k, 5, comm, &req)
               : Imcast(buf, n, MPI_INT, dests, k, 5, comm, &req),
           MPICAST_OK, NULL);
    EXPECT(Wait(&req, MPI_STATUS_IGNORE), MPICAST_OK, NULL);
    if (req)
      tc_fail("the request was not set to NULL");
  } else {
    memset(buf, 0, sizeof buf);
    MPI_Status st;
    if (dyn) {
      MPI_Recv(buf, n, MPI_INT, 0, 5, comm, &st);
    } else {
      MPICAST_Request *req = NULL;
      EXPECT(Mcast_irecv(buf, n, MPI_INT, 0, 5, comm, &req), MPICAST_OK, NULL);
      EXPECT(Wait(&req, &st), MPICAST_OK, NULL);
    }
    int got = -1;
    MPI_Get_count(&st, MPI_INT, &got);
    if (got != n)
      tc_fail("round %d: got %d ints, not %d", round, got, n);
    for (int i = 0; i < n; i++)
      if (buf[i] != round * 7919 + i)
        tc_fail("round %d: wrong data at %d", round, i);
  }
}

/* One Mmcast round over a ring (each rank to the next, from the previous): `bad` is the rank
 * that makes `mistake` (or -1), and every rank must get `want`. After an error nothing may
 * have been written; after success the data must be this round's. */
enum { M_NONE, M_SENDCOUNT, M_RECVCOUNT, M_NULL_DESTS, M_NULL_TYPE, M_BAD_DEST, M_SELF, M_HUGE };
static void mmcast_round(int round, int bad, int mistake, int want, const char *say) {
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  int send[64], got[64], count = 64, rcount = 64, displ = 0;
  for (int i = 0; i < 64; i++) {
    send[i] = rank * 100000 + round * 100 + i;
    got[i] = -7;
  }
  int sendcount = count, *dests = &next, ndests = 1;
  MPI_Datatype rtype = MPI_INT;
  int dest = next;
  if (rank == bad) {
    switch (mistake) {
    case M_SENDCOUNT: sendcount = -8; break;
    case M_RECVCOUNT: rcount = -3; break;
    case M_NULL_DESTS: dests = NULL; break;
    case M_NULL_TYPE: rtype = MPI_DATATYPE_NULL; break;
    case M_BAD_DEST: dest = size + 2; dests = &dest; break;
    case M_SELF: dest = rank; dests = &dest; break;
    case M_HUGE: ndests = 1 << 30; break;
    }
  }
  int rc = Mmcast(send, sendcount, MPI_INT, dests, ndests, got, &rcount, &displ, rtype, &prev, 1,
                  MPI_COMM_WORLD);
  expect(rc, want, rank == bad ? say : NULL, "MPICAST_Mmcast", __LINE__);
  for (int i = 0; i < 64; i++) {
    int expect_v = want == MPICAST_OK ? prev * 100000 + round * 100 + i : -7;
    if (got[i] != expect_v)
      tc_fail("Mmcast round %d: got[%d] = %d, expected %d", round, i, got[i], expect_v);
  }
}

static void before_init(void) {
  int x = 0;
  MPICAST_Request *req = NULL;
  int one = 1;
  EXPECT(Imcast(&x, 1, MPI_INT, &one, 1, 0, MPI_COMM_WORLD, &req), MPICAST_ERR_NO_MPI,
         "MPICAST_Imcast: MPI is not initialised");
  EXPECT(Mcast_enable(MPI_COMM_WORLD), MPICAST_ERR_NO_MPI, "MPICAST_Mcast_enable");
  EXPECT(Dbcast_enable(MPI_COMM_WORLD), MPICAST_ERR_NO_MPI, "MPICAST_Dbcast_enable");
  EXPECT(Mcast_irecv(&x, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, &req), MPICAST_ERR_NO_MPI, NULL);
  MPICAST_Goal *g = NULL;
  EXPECT(Goal_create(MPI_COMM_WORLD, &g), MPICAST_ERR_NO_MPI, "MPICAST_Goal_create");
  EXPECT(Mmcast(&x, 1, MPI_INT, &one, 1, &x, &one, NULL, MPI_INT, &one, 1, MPI_COMM_WORLD),
         MPICAST_ERR_NO_MPI, "MPICAST_Mmcast");
  EXPECT(Wait(&req, MPI_STATUS_IGNORE), MPICAST_OK, NULL);
}

static void imcast_matrix(MPI_Comm stale, MPI_Comm inter) {
  int buf[16] = {0}, one = 1 % size, dests[3];
  MPICAST_Request *req = NULL;
  MPI_Comm w = MPI_COMM_WORLD;
  if (rank == 0) {
    EXPECT(Imcast(buf, 1, MPI_INT, &one, 1, 0, w, NULL), MPICAST_ERR_NULL_ARG, "request_out is NULL");
    EXPECT(Imcast(NULL, 4, MPI_INT, &one, 1, 0, w, &req), MPICAST_ERR_NULL_ARG, "buf is NULL");
    EXPECT(Imcast(buf, -1, MPI_INT, &one, 1, 0, w, &req), MPICAST_ERR_ARG, "count is -1");
    EXPECT(Imcast(buf, 1, MPI_DATATYPE_NULL, &one, 1, 0, w, &req), MPICAST_ERR_ARG,
           "datatype is MPI_DATATYPE_NULL");
    EXPECT(Imcast(buf, 1, MPI_INT, &one, 1, -1, w, &req), MPICAST_ERR_ARG, "tag is -1");
    EXPECT(Imcast(buf, 1, MPI_INT, &one, 1, 32768, w, &req), MPICAST_ERR_ARG, "tag is 32768");
    EXPECT(Imcast(buf, 1, MPI_INT, &one, 0, 0, w, &req), MPICAST_ERR_ARG, "ndests is 0");
    EXPECT(Imcast(buf, 1, MPI_INT, &one, -2, 0, w, &req), MPICAST_ERR_ARG, "ndests is -2");
    EXPECT(Imcast(buf, 1, MPI_INT, &one, 1 << 30, 0, w, &req), MPICAST_ERR_ARG,
           "ndests is 1073741824");
    EXPECT(Imcast(buf, 1, MPI_INT, NULL, 1, 0, w, &req), MPICAST_ERR_NULL_ARG, "dests is NULL");
    dests[0] = size;
    EXPECT(Imcast(buf, 1, MPI_INT, dests, 1, 0, w, &req), MPICAST_ERR_ARG, "dests[0] is");
    dests[0] = 1; dests[1] = 1;
    EXPECT(Imcast(buf, 1, MPI_INT, dests, 2, 0, w, &req), MPICAST_ERR_ARG, "dests[1] is 1, named twice");
    dests[0] = 0;
    EXPECT(Imcast(buf, 1, MPI_INT, dests, 1, 0, w, &req), MPICAST_ERR_ARG, "this rank");
    dests[0] = -5;
    EXPECT(Imcast(buf, 1, MPI_INT, dests, 1, 0, w, &req), MPICAST_ERR_ARG, "dests[0] is -5");
    EXPECT(Imcast(buf, 1, MPI_INT, &one, 1, 0, MPI_COMM_NULL, &req), MPICAST_ERR_ARG,
           "comm is MPI_COMM_NULL");
    EXPECT(Imcast(buf, 1, MPI_INT, &one, 1, 0, stale, &req), MPICAST_ERR_ARG,
           "not a live communicator");
    EXPECT(Imcast(buf, 1, MPI_INT, &one, 1, 0, inter, &req), MPICAST_ERR_ARG, "intercommunicator");
    if (req)
      tc_fail("a refused Imcast wrote a request");
  }
  /* Receives, on every rank. */
  EXPECT(Mcast_irecv(buf, 1, MPI_INT, 0, 0, w, NULL), MPICAST_ERR_NULL_ARG, "request_out");
  EXPECT(Mcast_irecv(buf, -1, MPI_INT, 0, 0, w, &req), MPICAST_ERR_ARG, "count is -1");
  EXPECT(Mcast_irecv(NULL, 2, MPI_INT, 0, 0, w, &req), MPICAST_ERR_NULL_ARG, "buf is NULL");
  EXPECT(Mcast_irecv(buf, 1, MPI_DATATYPE_NULL, 0, 0, w, &req), MPICAST_ERR_ARG, "MPI_DATATYPE_NULL");
  EXPECT(Mcast_irecv(buf, 1, MPI_INT, size, 0, w, &req), MPICAST_ERR_ARG, "source is");
  EXPECT(Mcast_irecv(buf, 1, MPI_INT, rank, 0, w, &req), MPICAST_ERR_ARG, "could never match");
  EXPECT(Mcast_irecv(buf, 1, MPI_INT, (rank + 1) % size, 40000, w, &req), MPICAST_ERR_ARG,
         "tag is 40000");
  EXPECT(Mcast_irecv(buf, 1, MPI_INT, 0, 0, stale, &req), MPICAST_ERR_ARG, "not a live communicator");
  int flag = 0;
  EXPECT(Mcast_iprobe(0, 0, w, NULL, MPI_STATUS_IGNORE), MPICAST_ERR_NULL_ARG, "flag_out");
  EXPECT(Mcast_iprobe(size + 1, 0, w, &flag, MPI_STATUS_IGNORE), MPICAST_ERR_ARG, "source is");
  if (req)
    tc_fail("a refused Mcast_irecv wrote a request");
}

static void request_matrix(void) {
  MPICAST_Request *never = (MPICAST_Request *)(uintptr_t)0x5a5a5a5a5a50;
  int flag = 0, index = 0, outcount = 0, indices[2];
  EXPECT(Wait(&never, MPI_STATUS_IGNORE), MPICAST_ERR_ARG, "not a live mpicast request");
  EXPECT(Test(&never, &flag, MPI_STATUS_IGNORE), MPICAST_ERR_ARG, "not a live mpicast request");
  EXPECT(Request_free(&never), MPICAST_ERR_ARG, "not a live mpicast request");
  MPICAST_Request *two[2] = {NULL, never};
  EXPECT(Waitall(2, two, MPI_STATUSES_IGNORE), MPICAST_ERR_ARG, "requests[1]");
  EXPECT(Waitall(-1, two, MPI_STATUSES_IGNORE), MPICAST_ERR_ARG, "count is -1");
  EXPECT(Testany(-3, two, &index, &flag, MPI_STATUS_IGNORE), MPICAST_ERR_ARG, "count is -3");
  EXPECT(Testsome(-1, two, &outcount, indices, MPI_STATUSES_IGNORE), MPICAST_ERR_ARG, "count is -1");
  EXPECT(Wait(NULL, MPI_STATUS_IGNORE), MPICAST_ERR_NULL_ARG, "request is NULL");
  /* A stale copy of a completed request. */
  int x = 42, y = 0;
  MPICAST_Request *req = NULL, *copy;
  if (rank == 0) {
    int dest = 1;
    EXPECT(Imcast(&x, 1, MPI_INT, &dest, 1, 9, MPI_COMM_WORLD, &req), MPICAST_OK, NULL);
  } else if (rank == 1) {
    EXPECT(Mcast_irecv(&y, 1, MPI_INT, 0, 9, MPI_COMM_WORLD, &req), MPICAST_OK, NULL);
  }
  if (rank <= 1) {
    copy = req;
    EXPECT(Wait(&req, MPI_STATUS_IGNORE), MPICAST_OK, NULL);
    EXPECT(Wait(&copy, MPI_STATUS_IGNORE), MPICAST_ERR_ARG, "not a live mpicast request");
    copy = NULL;
    EXPECT(Wait(&copy, MPI_STATUS_IGNORE), MPICAST_OK, NULL); /* NULL: complete at once */
    if (rank == 1 && y != 42)
      tc_fail("the multicast after the misuse carried %d, not 42", y);
  }
}

static void dbcast_matrix(MPI_Comm d, MPI_Comm stale) {
  int buf[8] = {0}, list[3];
  MPICAST_Request *req = NULL;
  if (rank == 0) {
    list[0] = 1;
    EXPECT(Dbcast(buf, 1, MPI_INT, list, NULL, 1, 0, MPI_COMM_WORLD, &req), MPICAST_ERR_NOT_ENABLED,
           "MPICAST_Dbcast_enable");
    EXPECT(Dbcast(NULL, 3, MPI_INT, list, NULL, 1, 0, d, &req), MPICAST_ERR_NULL_ARG, "buf is NULL");
    EXPECT(Dbcast(buf, -4, MPI_INT, list, NULL, 1, 0, d, &req), MPICAST_ERR_ARG, "count is -4");
    EXPECT(Dbcast(buf, 1, MPI_DATATYPE_NULL, list, NULL, 1, 0, d, &req), MPICAST_ERR_ARG,
           "MPI_DATATYPE_NULL");
    EXPECT(Dbcast(buf, 1, MPI_INT, list, NULL, 1, 99999, d, &req), MPICAST_ERR_ARG, "tag is 99999");
    EXPECT(Dbcast(buf, 1, MPI_INT, list, NULL, 0, 0, d, &req), MPICAST_ERR_ARG, "recipients");
    EXPECT(Dbcast(buf, 1, MPI_INT, list, NULL, size, 0, d, &req), MPICAST_ERR_ARG,
           "at most");
    list[0] = 0;
    EXPECT(Dbcast(buf, 1, MPI_INT, list, NULL, 1, 0, d, &req), MPICAST_ERR_ARG,
           "recipients[0] is 0, this rank");
    list[0] = 1; list[1] = 1;
    EXPECT(Dbcast(buf, 1, MPI_INT, list, NULL, 2, 0, d, &req), MPICAST_ERR_ARG, "named twice");
    EXPECT(Dbcast(buf, 1, MPI_INT, list, NULL, 1, 0, stale, &req), MPICAST_ERR_ARG,
           "not a live communicator");
    EXPECT(Send_defer(77, 0, 1, 0, d), MPICAST_ERR_ARG, "dest is 0, this rank");
    EXPECT(Send_defer(77, size, 1, 0, d), MPICAST_ERR_ARG, "dest is");
    EXPECT(Send_defer(77, 1, -1, 0, d), MPICAST_ERR_ARG, "tag is -1");
    EXPECT(Send_defer(77, 1, 1, 0, MPI_COMM_WORLD), MPICAST_ERR_NOT_ENABLED, NULL);
    EXPECT(Send_release(1234, buf, 1, MPI_INT, &req), MPICAST_ERR_UNKNOWN_KEY, "key 1234");
    /* A release with a bad count keeps the key; the correct one then sends. */
    EXPECT(Send_defer(78, 1, 3, 0, d), MPICAST_OK, NULL);
    EXPECT(Send_release(78, buf, -1, MPI_INT, &req), MPICAST_ERR_ARG, "count is -1");
    buf[0] = 4242;
    EXPECT(Send_release(78, buf, 1, MPI_INT, &req), MPICAST_OK, NULL);
    EXPECT(Wait(&req, MPI_STATUS_IGNORE), MPICAST_OK, NULL);
  } else if (rank == 1) {
    MPI_Recv(buf, 1, MPI_INT, 0, 3, d, MPI_STATUS_IGNORE);
    if (buf[0] != 4242)
      tc_fail("the released send carried %d, not 4242", buf[0]);
  }
}

static void mode_settings(void) {
  /* docs/imcast.md's example, reduced: with a bad setting the first call stops the job. */
  MPI_Init(NULL, NULL);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int rc = Mcast_enable(MPI_COMM_WORLD);
  for (int i = 0; i < 1000; i++) {
    int x = i, dest = 1;
    MPICAST_Request *req = NULL;
    if (rank == 0)
      rc = Imcast(&x, 1, MPI_INT, &dest, 1, 0, MPI_COMM_WORLD, &req);
    else
      rc = Mcast_irecv(&x, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, &req);
    printf("misuse settings: rank %d call %d returned %d\n", rank, i, rc);
  }
  MPI_Finalize();
  printf("misuse settings: rank %d finished\n", rank);
}

static void mode_unreceived(const char *kind) {
  MPI_Init(NULL, NULL);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int dyn = !strcmp(kind, "dbcast");
  EXPECT(dyn ? Dbcast_enable(MPI_COMM_WORLD) : Mcast_enable(MPI_COMM_WORLD), MPICAST_OK, NULL);
  static int buf[40000];
  if (rank == 0) {
    int dests[64], k = 0;
    for (int r = 1; r < size && k < 64; r++)
      dests[k++] = r;
    MPICAST_Request *req = NULL;
    EXPECT(dyn ? Dbcast(buf, 40000, MPI_INT, dests, NULL, k, 11, MPI_COMM_WORLD, &req)
               : Imcast(buf, 40000, MPI_INT, dests, k, 11, MPI_COMM_WORLD, &req),
           MPICAST_OK, NULL);
    EXPECT(Wait(&req, MPI_STATUS_IGNORE), MPICAST_OK, NULL);
  }
  MPI_Finalize();
  printf("misuse unreceived: rank %d finished\n", rank);
}

/* Rank 0 broadcasts 1 MiB (scouted: it waits in the operation) while the other ranks call MPI_Barrier on the same communicator:
 * an erroneous program that the host MPI leaves hanging. mpicast ends it after
 * MPICAST_TIMEOUT_MS with one message that says where the other ranks wait. */
static void mode_mismatch(void) {
  MPI_Init(NULL, NULL);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  static char big[1 << 20];
  MPI_Bcast(big, 1, MPI_CHAR, 0, MPI_COMM_WORLD); /* set up the communicator first */
  if (rank == 0)
    MPI_Bcast(big, (int)sizeof big, MPI_CHAR, 0, MPI_COMM_WORLD);
  else
    MPI_Barrier(MPI_COMM_WORLD);
  printf("misuse mismatch: rank %d came out\n", rank);
  MPI_Finalize();
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (tc_flag(argc, argv, "--mismatch")) {
    mode_mismatch();
    return 0;
  }
  if (tc_flag(argc, argv, "--settings")) {
    mode_settings();
    return 0;
  }
  if (tc_arg(argc, argv, "--unreceived")) {
    mode_unreceived(tc_arg(argc, argv, "--unreceived"));
    return 0;
  }
  before_init();
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 4)
    tc_fail("needs 4 ranks or more, has %d", size);

  /* An intercommunicator, a communicator not enabled, the enabled ones; then a freed
   * communicator (a stale copy of its handle), made last: a host may give a freed handle to
   * the next communicator it makes, and then it is a live one again. */
  MPI_Comm half, inter, d, tmp, stale;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
  MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 17, &inter);
  int x = 0, one = 1;
  MPICAST_Request *req = NULL;
  EXPECT(Mcast_enable(MPI_COMM_NULL), MPICAST_ERR_ARG, "comm is MPI_COMM_NULL");
  EXPECT(Mcast_enable(inter), MPICAST_ERR_ARG, "intercommunicator");
  if (rank == 0)
    EXPECT(Imcast(&x, 1, MPI_INT, &one, 1, 0, MPI_COMM_WORLD, &req), MPICAST_ERR_NOT_ENABLED,
           "MPICAST_Mcast_enable");
  EXPECT(Mcast_enable(MPI_COMM_WORLD), MPICAST_OK, NULL);
  MPI_Comm_dup(MPI_COMM_WORLD, &d);
  EXPECT(Dbcast_enable(d), MPICAST_OK, NULL);
  MPI_Comm_dup(MPI_COMM_WORLD, &tmp);
  stale = tmp;
  MPI_Comm_free(&tmp);
  EXPECT(Mcast_enable(stale), MPICAST_ERR_ARG, "not a live communicator");
  EXPECT(Mmcast(&x, 1, MPI_INT, &one, 0, &x, &one, NULL, MPI_INT, &one, 0, stale), MPICAST_ERR_ARG,
         "not a live communicator");
  if (rank == 0 && size > 1) {
    int dest = 1;
    EXPECT(Imcast(&x, 1, MPI_INT, &dest, 1, 0, half, &req), MPICAST_ERR_NOT_ENABLED, NULL);
  }
  good_imcast(MPI_COMM_WORLD, 0, 0);

  imcast_matrix(stale, inter);
  good_imcast(MPI_COMM_WORLD, 0, 1);
  request_matrix();
  good_imcast(MPI_COMM_WORLD, 0, 2);

  dbcast_matrix(d, stale);
  good_imcast(d, 1, 3);

  /* Mmcast: one rank's mistake is every rank's error, and the next call is right. */
  int round = 0;
  mmcast_round(round++, -1, M_NONE, MPICAST_OK, NULL);
  mmcast_round(round++, 0, M_SENDCOUNT, MPICAST_ERR_ARG, "sendcount is -8");
  mmcast_round(round++, -1, M_NONE, MPICAST_OK, NULL);
  mmcast_round(round++, 3, M_RECVCOUNT, MPICAST_ERR_ARG, "recvcounts[0] is -3");
  mmcast_round(round++, -1, M_NONE, MPICAST_OK, NULL);
  mmcast_round(round++, 1, M_NULL_DESTS, MPICAST_ERR_ARG, "dests is NULL");
  mmcast_round(round++, -1, M_NONE, MPICAST_OK, NULL);
  mmcast_round(round++, 2, M_NULL_TYPE, MPICAST_ERR_ARG, "recvtype is MPI_DATATYPE_NULL");
  mmcast_round(round++, -1, M_NONE, MPICAST_OK, NULL);
  mmcast_round(round++, 1, M_BAD_DEST, MPICAST_ERR_ARG, "destination");
  mmcast_round(round++, -1, M_NONE, MPICAST_OK, NULL);
  mmcast_round(round++, 2, M_SELF, MPICAST_ERR_ARG, "its own destinations");
  mmcast_round(round++, -1, M_NONE, MPICAST_OK, NULL);
  mmcast_round(round++, 3, M_HUGE, MPICAST_ERR_ARG, "ndests is 1073741824");
  mmcast_round(round++, -1, M_NONE, MPICAST_OK, NULL);

  /* GOAL handles. */
  MPICAST_Goal *g = NULL;
  EXPECT(Goal_create(MPI_COMM_NULL, &g), MPICAST_ERR_ARG, "comm is MPI_COMM_NULL");
  EXPECT(Goal_create(MPI_COMM_WORLD, NULL), MPICAST_ERR_NULL_ARG, "goal_out");
  EXPECT(Goal_create(MPI_COMM_WORLD, &g), MPICAST_OK, NULL);
  MPICAST_Goal *gcopy = g;
  Goal_free(g);
  Goal_free(gcopy); /* stale: refused, no crash */
  if (!strstr(Last_error(), "not a live GOAL handle"))
    tc_fail("a stale MPICAST_Goal_free said \"%s\"", Last_error());

  good_imcast(MPI_COMM_WORLD, 0, 4);
  MPI_Comm_free(&d);
  MPI_Comm_free(&inter);
  MPI_Comm_free(&half);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();

  /* After MPI_Finalize. */
  EXPECT(Imcast(&x, 1, MPI_INT, &one, 1, 0, MPI_COMM_WORLD, &req), MPICAST_ERR_NO_MPI,
         "finalized already");
  EXPECT(Mcast_enable(MPI_COMM_WORLD), MPICAST_ERR_NO_MPI, NULL);
  printf("int_misuse: rank %d: %d checks passed\n", rank, checks);
  return 0;
}
