/* probe_bench: where each rank's time goes in the 8 B binomial broadcast of goal_bench, through
 * the GOAL executor and by hand. Reuses bench/goal_bench.c's helpers (its main renamed away);
 * needs libprobe.so (probe.c) linked and preloaded. Commands in probe.txt. */
#define main goal_bench_main
#include "../../goal_bench.c"
#undef main

extern double probe_first_isend, probe_first_wait, probe_last_wait, probe_first_irecv;
extern void probe_reset(void);
#define NF 6
static void pr(const char*name, double (*v)[NF], int n){
  double med[NF]; double *col=malloc(sizeof(double)*n);
  for(int f=0;f<NF;f++){ for(int i=0;i<n;i++) col[i]=v[i][f]; med[f]=median(col,n);} 
  double all[4*NF]; PMPI_Gather(med,NF,MPI_DOUBLE,all,NF,MPI_DOUBLE,0,MPI_COMM_WORLD);
  if(rank==0){ printf("%s (ns: start->isend, firstwait->isend, lastwait->end, total, t0->irecv, end-rootT0)\n",name); for(int r=0;r<nranks;r++){printf("  rank %d:",r); for(int f=0;f<NF;f++) printf(" %7.0f",all[r*NF+f]*1e9); printf("\n");}}
  free(col);
}
int main(int argc,char**argv){
  MPI_Init(&argc,&argv); MPI_Comm_rank(MPI_COMM_WORLD,&rank); MPI_Comm_size(MPI_COMM_WORLD,&nranks);
  size_t len=argc>1?atoi(argv[1]):8; int n=argc>2?atoi(argv[2]):5000;
  unsigned char*buf=malloc(len+1); MPI_Comm comm; PMPI_Comm_dup(MPI_COMM_WORLD,&comm);
  MPICAST_Goal*g; ok(NULL,MPICAST_Goal_create(MPI_COMM_WORLD,&g),"create");
  binomial_text(nranks,len); ok(g,MPICAST_Goal_load_text(g,text),"load"); ok(g,MPICAST_Goal_bind_buffer(g,"buf",buf,len),"bind");
  double (*vg)[NF]=malloc(sizeof(double)*NF*n),(*vp)[NF]=malloc(sizeof(double)*NF*n);
  for(int r=-100;r<n;r++){
    for(int v=0;v<2;v++){
      PMPI_Barrier(MPI_COMM_WORLD);
      double t0=mono(); probe_reset();
      if(v==0) goal_bcast_once(g); else binomial_p2p(buf,len,comm);
      double t1=mono();
      double root0=t0; PMPI_Bcast(&root0,1,MPI_DOUBLE,0,MPI_COMM_WORLD);
      double x[NF]={probe_first_isend?probe_first_isend-t0:0, probe_first_isend&&probe_first_wait&&probe_first_isend>probe_first_wait?probe_first_isend-probe_first_wait:0, t1-probe_last_wait, t1-t0, probe_first_irecv?probe_first_irecv-t0:0, t1-root0};
      if(r>=0) memcpy(v?vp[r]:vg[r],x,sizeof x);
    }
  }
  pr("goal",vg,n); pr("p2p",vp,n);
  MPICAST_Goal_free(g); MPI_Finalize(); return 0;
}
