#define _GNU_SOURCE
#include <mpi.h>
#include <dlfcn.h>
#include <time.h>
static double now(void){struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec+1e-9*t.tv_nsec;}
double probe_first_isend, probe_first_wait, probe_last_wait, probe_first_irecv;
void probe_reset(void){probe_first_isend=probe_first_wait=probe_last_wait=probe_first_irecv=0;}
typedef int (*isend_t)(const void*,int,MPI_Datatype,int,int,MPI_Comm,MPI_Request*);
typedef int (*irecv_t)(void*,int,MPI_Datatype,int,int,MPI_Comm,MPI_Request*);
typedef int (*wait_t)(MPI_Request*,MPI_Status*);
typedef int (*waitall_t)(int,MPI_Request*,MPI_Status*);
typedef int (*waitsome_t)(int,MPI_Request*,int*,int*,MPI_Status*);
static isend_t r_isend; static irecv_t r_irecv; static wait_t r_wait; static waitall_t r_waitall; static waitsome_t r_waitsome;
int PMPI_Isend(const void*b,int c,MPI_Datatype d,int p,int t,MPI_Comm m,MPI_Request*q){ if(!probe_first_isend) probe_first_isend=now(); if(!r_isend) r_isend=(isend_t)dlsym(RTLD_NEXT,"PMPI_Isend"); return r_isend(b,c,d,p,t,m,q);}
int PMPI_Irecv(void*b,int c,MPI_Datatype d,int p,int t,MPI_Comm m,MPI_Request*q){ if(!probe_first_irecv) probe_first_irecv=now(); if(!r_irecv) r_irecv=(irecv_t)dlsym(RTLD_NEXT,"PMPI_Irecv"); return r_irecv(b,c,d,p,t,m,q);}
static void wexit(void){double t=now(); if(!probe_first_wait) probe_first_wait=t; probe_last_wait=t;}
int PMPI_Wait(MPI_Request*q,MPI_Status*s){ if(!r_wait) r_wait=(wait_t)dlsym(RTLD_NEXT,"PMPI_Wait"); int rc=r_wait(q,s); wexit(); return rc;}
int PMPI_Waitall(int n,MPI_Request*q,MPI_Status*s){ if(!r_waitall) r_waitall=(waitall_t)dlsym(RTLD_NEXT,"PMPI_Waitall"); int rc=r_waitall(n,q,s); wexit(); return rc;}
int PMPI_Waitsome(int n,MPI_Request*q,int*o,int*i,MPI_Status*s){ if(!r_waitsome) r_waitsome=(waitsome_t)dlsym(RTLD_NEXT,"PMPI_Waitsome"); int rc=r_waitsome(n,q,o,i,s); wexit(); return rc;}
