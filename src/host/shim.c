/* Link-time values of MPI constants that mpi.h defines as macros the Rust
 * bindings cannot see (they differ between Open MPI and MPICH). */
#include <limits.h>
#include <stdint.h>
#include <mpi.h>
#include <string.h>

/* The standard ABI has no Fortran INTEGER in C; mpi-sys is built with MPI_Fint defined as int
 * for it (Makefile, lib-abi), and so is this file when the same flags reach it. */
#if defined(MPI_ABI_VERSION) && !defined(MPI_Fint)
typedef int MPI_Fint;
#endif

const MPI_Datatype MPICAST_C_BYTE = MPI_BYTE;
const MPI_Datatype MPICAST_C_DATATYPE_NULL = MPI_DATATYPE_NULL;
void *const MPICAST_C_IN_PLACE = MPI_IN_PLACE;
const MPI_Comm MPICAST_C_COMM_WORLD = MPI_COMM_WORLD;
const MPI_Comm MPICAST_C_COMM_SELF = MPI_COMM_SELF;
const MPI_Comm MPICAST_C_COMM_NULL = MPI_COMM_NULL;
const MPI_Info MPICAST_C_INFO_NULL = MPI_INFO_NULL;
const MPI_Op MPICAST_C_SUM = MPI_SUM;
const MPI_Datatype MPICAST_C_UINT64 = MPI_UINT64_T;
const int MPICAST_C_KEYVAL_INVALID = MPI_KEYVAL_INVALID;
const int MPICAST_C_ANY_SOURCE = MPI_ANY_SOURCE;
const int MPICAST_C_MAX_INFO_VAL = MPI_MAX_INFO_VAL;
const int MPICAST_C_UNDEFINED = MPI_UNDEFINED;
MPI_Status *const MPICAST_C_STATUS_IGNORE = MPI_STATUS_IGNORE;

/* Which MPI this object was compiled against: 1 = Open MPI, 2 = MPICH, 3 = the MPI-5 standard
 * ABI (mpi_abi.h: any MPI with libmpi_abi.so). */
#if defined(MPI_ABI_VERSION)
const int MPICAST_C_FLAVOUR = 3;
#elif defined(OPEN_MPI)
const int MPICAST_C_FLAVOUR = 1;
#elif defined(MPICH_VERSION) || defined(MPICH)
const int MPICAST_C_FLAVOUR = 2;
#else
const int MPICAST_C_FLAVOUR = 0;
#endif

int mpicast_c_status_source(const MPI_Status *s) { return s->MPI_SOURCE; }

/* Fortran handles to C handles. 1 and *out set when the host knows the handle; 0 when it
 * does not (Open MPI's f2c returns NULL for an unknown index; MPICH's is a cast, and the
 * host checks the handle itself). MPICH defines these as macros, Open MPI as functions:
 * the PMPI name where there is one, since the MPI_ name may be another tool's. */
int mpicast_c_comm_f2c(MPI_Fint f, MPI_Comm *out) {
#if defined(MPI_ABI_VERSION)
  MPI_Comm c = MPI_Comm_fromint(f);
#elif defined(MPI_Comm_f2c)
  MPI_Comm c = MPI_Comm_f2c(f);
#else
  MPI_Comm c = PMPI_Comm_f2c(f);
#endif
#if defined(OPEN_MPI)
  if (c == NULL) return 0;
#endif
  *out = c;
  return 1;
}

/* A C handle as an integer of pointer width (Open MPI's are pointers, MPICH's ints). */
intptr_t mpicast_c_comm_bits(MPI_Comm c) { return (intptr_t)c; }
intptr_t mpicast_c_type_bits(MPI_Datatype t) { return (intptr_t)t; }

int mpicast_c_type_f2c(MPI_Fint f, MPI_Datatype *out) {
#if defined(MPI_ABI_VERSION)
  MPI_Datatype c = MPI_Type_fromint(f);
#elif defined(MPI_Type_f2c)
  MPI_Datatype c = MPI_Type_f2c(f);
#else
  MPI_Datatype c = PMPI_Type_f2c(f);
#endif
#if defined(OPEN_MPI)
  if (c == NULL) return 0;
#endif
  *out = c;
  return 1;
}

/* The predefined datatypes whose sizes mpicast keeps (they are never freed, so a size looked
 * up by handle cannot go stale): writes up to `max` handles to `out`, returns how many. */
int mpicast_c_predefined(MPI_Datatype *out, int max) {
  const MPI_Datatype all[] = {
      MPI_CHAR, MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR, MPI_BYTE, MPI_WCHAR, MPI_SHORT,
      MPI_UNSIGNED_SHORT, MPI_INT, MPI_UNSIGNED, MPI_LONG, MPI_UNSIGNED_LONG, MPI_LONG_LONG,
      MPI_UNSIGNED_LONG_LONG, MPI_FLOAT, MPI_DOUBLE, MPI_LONG_DOUBLE, MPI_C_BOOL, MPI_INT8_T,
      MPI_INT16_T, MPI_INT32_T, MPI_INT64_T, MPI_UINT8_T, MPI_UINT16_T, MPI_UINT32_T,
      MPI_UINT64_T, MPI_AINT, MPI_OFFSET, MPI_COUNT, MPI_C_FLOAT_COMPLEX,
      MPI_C_DOUBLE_COMPLEX, MPI_PACKED, MPI_INTEGER, MPI_REAL, MPI_DOUBLE_PRECISION,
      MPI_CHARACTER, MPI_LOGICAL, MPI_COMPLEX, MPI_DOUBLE_COMPLEX, MPI_FLOAT_INT,
      MPI_DOUBLE_INT, MPI_LONG_INT, MPI_2INT, MPI_SHORT_INT, MPI_LONG_DOUBLE_INT};
  int n = 0, total = (int)(sizeof all / sizeof all[0]);
  for (int i = 0; i < total && n < max; i++)
    if (all[i] != MPI_DATATYPE_NULL)
      out[n++] = all[i];
  return n;
}

/* How a datatype was built, as mpicast's own combiner codes (host::datatype::Combiner): the
 * host's values differ between MPIs. *ni, *na, *nd are the lengths of get_contents' arrays.
 * 0 for what mpicast does not decode (darray, the Fortran parameterised types, the removed
 * *_INTEGER combiners, and any type built with MPI-4 large counts, whose contents the int
 * form of get_contents cannot return), and when the host reports an error. */
int mpicast_c_type_envelope(MPI_Datatype t, int *ni, int *na, int *nd) {
  int combiner = 0;
#if MPI_VERSION >= 4
  MPI_Count cni = 0, cna = 0, cnc = 0, cnd = 0;
  if (PMPI_Type_get_envelope_c(t, &cni, &cna, &cnc, &cnd, &combiner) != MPI_SUCCESS) return 0;
  if (cnc != 0 || cni > INT_MAX || cna > INT_MAX || cnd > INT_MAX) return 0;
  *ni = (int)cni;
  *na = (int)cna;
  *nd = (int)cnd;
#else
  if (PMPI_Type_get_envelope(t, ni, na, nd, &combiner) != MPI_SUCCESS) return 0;
#endif
  switch (combiner) {
    case MPI_COMBINER_NAMED: return 1;
    case MPI_COMBINER_DUP: return 2;
    case MPI_COMBINER_CONTIGUOUS: return 3;
    case MPI_COMBINER_VECTOR: return 4;
    case MPI_COMBINER_HVECTOR: return 5;
    case MPI_COMBINER_INDEXED: return 6;
    case MPI_COMBINER_HINDEXED: return 7;
    case MPI_COMBINER_INDEXED_BLOCK: return 8;
    case MPI_COMBINER_HINDEXED_BLOCK: return 9;
    case MPI_COMBINER_STRUCT: return 10;
    case MPI_COMBINER_SUBARRAY: return 11;
    case MPI_COMBINER_RESIZED: return 12;
    default: return 0;
  }
}

const int MPICAST_C_ORDER_FORTRAN = MPI_ORDER_FORTRAN;

const MPI_Errhandler MPICAST_C_ERRORS_RETURN = MPI_ERRORS_RETURN;

/* Whether a handle names a live object, asked without touching a freed one where possible.
 * Under Open MPI a handle is a pointer; a live object is in the host's Fortran table under
 * the index it keeps, so c2f then f2c gives the same pointer back (a freed one's slot is
 * empty). Returns 1 live, 0 not; -1 under MPICH, whose handles are numbers the host checks
 * itself (host::valid asks it with errors returned). */
int mpicast_c_comm_live(MPI_Comm comm) {
  if (comm == MPI_COMM_NULL) return 0;
#if defined(OPEN_MPI)
  return PMPI_Comm_f2c(PMPI_Comm_c2f(comm)) == comm;
#else
  return -1;
#endif
}

int mpicast_c_type_live(MPI_Datatype t) {
  if (t == MPI_DATATYPE_NULL) return 0;
#if defined(OPEN_MPI)
  return PMPI_Type_f2c(PMPI_Type_c2f(t)) == t;
#else
  return -1;
#endif
}

/* 1 when the error handler of `comm` ends the job (MPI_ERRORS_ARE_FATAL, or MPI_ERRORS_ABORT
 * where the host has it), 0 otherwise or when it cannot be read. */
int mpicast_c_errhandler_fatal(MPI_Comm comm) {
  MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
  if (PMPI_Comm_get_errhandler(comm, &eh) != MPI_SUCCESS) return 0;
  int fatal = eh == MPI_ERRORS_ARE_FATAL;
#ifdef MPI_ERRORS_ABORT
  fatal = fatal || eh == MPI_ERRORS_ABORT;
#endif
  if (eh != MPI_ERRHANDLER_NULL) PMPI_Errhandler_free(&eh);
  return fatal;
}
const int MPICAST_C_MAX_PORT_NAME = MPI_MAX_PORT_NAME;

MPI_Status *const MPICAST_C_STATUSES_IGNORE = MPI_STATUSES_IGNORE;
const int MPICAST_C_PROC_NULL = MPI_PROC_NULL;

/* The status of a completed mpicast receive: its source, tag and error fields (public in
 * both MPIs, at different places), and its length in bytes, which MPI_Get_count and
 * MPI_Get_elements turn into elements of the receive's datatype. */
int mpicast_c_status_fill(MPI_Status *s, int source, int tag, int error, MPI_Count bytes) {
  s->MPI_SOURCE = source;
  s->MPI_TAG = tag;
  s->MPI_ERROR = error;
  return PMPI_Status_set_elements_x(s, MPI_BYTE, bytes);
}

/* PMPI_Improbe for any source with `tag` on `comm`: 1 and the message, its source and its
 * length in bytes when one is waiting, 0 when none. */
int mpicast_c_improbe(MPI_Comm comm, int tag, MPI_Message *msg, int *source, int *bytes) {
  int flag = 0;
  MPI_Status st;
  if (PMPI_Improbe(MPI_ANY_SOURCE, tag, comm, &flag, msg, &st) != MPI_SUCCESS || !flag) return 0;
  *source = st.MPI_SOURCE;
  if (PMPI_Get_count(&st, MPI_BYTE, bytes) != MPI_SUCCESS) return 0;
  return 1;
}

/* A message handle the host never gives out, for a dynamic broadcast that MPI_Improbe or
 * MPI_Mprobe found (mpicast's MPI_Mrecv/MPI_Imrecv take it back): under Open MPI an odd
 * address (its objects are aligned), under MPICH a handle whose kind bits say "invalid". */
MPI_Message mpicast_c_fake_message(unsigned id) {
#if defined(OPEN_MPI) || defined(MPI_ABI_VERSION)
  return (MPI_Message)(((uintptr_t)id << 4) | 1u);
#else
  return (MPI_Message)(0x01000000 | (int)(id & 0x00ffffffu));
#endif
}

/* Fortran requests and statuses, for the Fortran entry points of the receive and completion
 * calls (ffi::fortran_p2p). MPICH defines the f2c/c2f conversions as macros, Open MPI as
 * functions: the PMPI name where there is one, as above. */
MPI_Request mpicast_c_request_f2c(MPI_Fint f) {
#if defined(MPI_ABI_VERSION)
  return MPI_Request_fromint(f);
#elif defined(MPI_Request_f2c)
  return MPI_Request_f2c(f);
#else
  return PMPI_Request_f2c(f);
#endif
}

MPI_Fint mpicast_c_request_c2f(MPI_Request r) {
#if defined(MPI_ABI_VERSION)
  return MPI_Request_toint(r);
#elif defined(MPI_Request_c2f)
  return MPI_Request_c2f(r);
#else
  return PMPI_Request_c2f(r);
#endif
}

/* A C status into a Fortran one (mpif.h / `use mpi` INTEGER(MPI_STATUS_SIZE), and
 * mpi_f08's TYPE(MPI_Status), which both MPIs lay out as the same integers). */
#if defined(MPI_ABI_VERSION)
/* No Fortran entry points are built for the standard ABI: never called; its status is ints. */
int mpicast_c_status_c2f(const MPI_Status *c, MPI_Fint *f) {
  memcpy(f, c, sizeof *c);
  return MPI_SUCCESS;
}
#else
int mpicast_c_status_c2f(const MPI_Status *c, MPI_Fint *f) { return PMPI_Status_c2f(c, f); }
#endif

/* MPI_STATUS_SIZE: the Fortran INTEGERs of one status (the stride of a status array). */
#ifdef MPI_F_STATUS_SIZE
const int MPICAST_C_F_STATUS_SIZE = MPI_F_STATUS_SIZE;
#else
const int MPICAST_C_F_STATUS_SIZE = (int)(sizeof(MPI_Status) / sizeof(MPI_Fint));
#endif

/* 1 when `p` is the host's Fortran MPI_STATUS_IGNORE (statuses: MPI_STATUSES_IGNORE) as the
 * C side names it: MPI_F_STATUS_IGNORE, and MPICH's mpi_f08 one (Open MPI's mpi_f08 uses the
 * mpif.h common block, which ffi::fortran_p2p also looks up by name). */
int mpicast_c_is_f_status_ignore(const void *p, int many) {
#if defined(MPI_ABI_VERSION)
  (void)p;
  (void)many;
  return 0;
#else
  if (p == (const void *)(many ? MPI_F_STATUSES_IGNORE : MPI_F_STATUS_IGNORE)) return 1;
#if defined(MPICH) || defined(MPICH_VERSION)
  if (p == (const void *)(many ? MPI_F08_STATUSES_IGNORE : MPI_F08_STATUS_IGNORE)) return 1;
#endif
  return 0;
#endif
}
