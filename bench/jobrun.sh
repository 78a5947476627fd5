# Sourced by bench/cluster.sh and bench/switched.sh: how an MPI job is launched across the
# namespaces of an emulated network, and how it is run, bounded and cleaned up. Each script
# keeps what differs (its addresses, its hosts, its agent, its names) and calls these.
#
#   jobrun_launcher MPI PPN NP HOSTFILE AGENT PMIX_SUBNET BTL_SUBNET OOB_SUBNET HYDRA_IFACE UCX_DEV
#       fills the array LAUNCH with the launcher's command line for NP ranks, PPN per host, on
#       the hosts of HOSTFILE (one address per line, as `jobrun_hostfile` writes it); the
#       environment variables LD_PRELOAD, MPICAST_*, MPIR_CVAR_* and STARPU_* go to every rank, and
#       RANK_PRELOAD, when set, goes to the ranks only, as their LD_PRELOAD (for an MPI whose
#       libraries are not on the system's path, such as the wheels': a library preloaded
#       into the launcher too would not load there).
#   jobrun_hostfile MPI PPN < ADDRESSES > HOSTFILE
#       the host file of that launcher: "ADDR slots=PPN" (Open MPI) or "ADDR:PPN" (MPICH).
#   jobrun_job NAME TIMEOUT OUT MARKER GRACE CLEANUP -- CMD...
#       runs CMD in the background (so that an interrupt or a TERM reaches us at once: the
#       trap ends the job and calls CLEANUP), its stdout into OUT when not empty, for at most
#       TIMEOUT seconds. With MARKER, a job whose output holds a line starting with MARKER
#       (the program's last words before MPI_Finalize) and that has not exited GRACE seconds
#       later is ended and counts as completed, with a warning: MPICH's ch4:ucx over
#       UCX_TLS=tcp,self sometimes never returns from MPI_Finalize (UCX 1.13 flushing its TCP
#       endpoints after progress stopped, openucx/ucx#8738; seen here in about half of the runs,
#       with or without mpicast); CLEANUP runs then too. Returns the job's exit status. NAME
#       prefixes the messages.
#
# Open MPI: the "remote shell" is AGENT (`ip netns exec`), btl tcp,self on BTL_SUBNET, the
# daemons' out-of-band TCP and PMIx on OOB_SUBNET / PMIX_SUBNET; yield_when_idle because the
# ranks of all hosts share this machine's cores (Open MPI yields by itself only when it knows a
# node is oversubscribed); leave_session_attached so that a daemon that dies is reported
# instead of hanging mpirun; rtc ^hwloc: no per-node topology in shared memory (binding is off).
# MPICH (hydra): -launcher ssh -launcher-exec AGENT; MPIR_CVAR_NOLOCAL=1 and UCX_TLS=tcp,self,
# or ch4:ucx would take shared memory (every namespace has the same host name) and never touch
# the links; UCX_NET_DEVICES=UCX_DEV.
# The wheels' MPIs (scripts/wheel-mpis.sh, build/mpis/<name>), through their wrappers:
# openmpi5 is Open MPI 5 under PRRTE: the agent and tree spawn are PRRTE's settings
# (PRTE_MCA_plm_ssh_*), and the collectives are tuned's (coll self,basic,libnbc,tuned): with
# the same host name in every namespace, Open MPI 5 takes all ranks for one node and its
# shared-memory collectives (han's) never complete; mpich5 launches as MPICH does; impi (Intel
# MPI) runs the mpich5 library and programs (the same ABI) under its own hydra.

JOBRUN_MPIS=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/build/mpis

jobrun_hostfile() {
  local mpi=$1 ppn=$2 a
  while read -r a; do
    [ -n "$a" ] || continue
    case $mpi in
      openmpi | openmpi5) echo "$a slots=$ppn" ;;
      *) echo "$a:$ppn" ;;
    esac
  done
}

jobrun_launcher() {
  local mpi=$1 ppn=$2 np=$3 hf=$4 agent=$5 pmix=$6 btl=$7 oob=$8 hydra_if=$9 ucx_dev=${10}
  local v vars=()
  for v in $(compgen -e | grep -E '^(MPICAST_|MPIR_CVAR_|STARPU_|LD_PRELOAD$)' || true); do vars+=("$v"); done
  case $mpi in
    openmpi)
      LAUNCH=(env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
        PMIX_MCA_ptl_tcp_remote_connections=1 "PMIX_MCA_ptl_tcp_if_include=$pmix"
        mpirun.openmpi --hostfile "$hf" -n "$np" --map-by "ppr:$ppn:node" --bind-to none
        --mca plm_rsh_agent "$agent" --mca plm_rsh_no_tree_spawn 1
        --mca btl tcp,self --mca btl_tcp_if_include "$btl" --mca oob_tcp_if_include "$oob"
        --mca pml ob1 --mca mpi_yield_when_idle 1 --mca orte_leave_session_attached 1
        --mca rtc ^hwloc)
      for v in "${vars[@]}"; do LAUNCH+=(-x "$v"); done
      [ -z "${RANK_PRELOAD:-}" ] || LAUNCH+=(-x "LD_PRELOAD=$RANK_PRELOAD")
      ;;
    openmpi5)
      LAUNCH=(env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
        PMIX_MCA_ptl_tcp_remote_connections=1 "PMIX_MCA_ptl_tcp_if_include=$pmix"
        "PRTE_MCA_plm_ssh_agent=$agent" PRTE_MCA_plm_ssh_no_tree_spawn=1
        "$JOBRUN_MPIS/openmpi5/mpicast-mpiexec" --hostfile "$hf" -n "$np"
        --map-by "ppr:$ppn:node" --bind-to none
        --mca btl tcp,self --mca btl_tcp_if_include "$btl" --mca pml ob1
        --mca coll self,basic,libnbc,tuned --mca mpi_yield_when_idle 1)
      for v in "${vars[@]}"; do LAUNCH+=(-x "$v"); done
      [ -z "${RANK_PRELOAD:-}" ] || LAUNCH+=(-x "LD_PRELOAD=$RANK_PRELOAD")
      ;;
    mpich | mpich5)
      local exe=mpiexec.mpich
      [ "$mpi" = mpich5 ] && exe=$JOBRUN_MPIS/mpich5/mpicast-mpiexec
      LAUNCH=("$exe" -launcher ssh -launcher-exec "$agent" -f "$hf" -n "$np"
        -iface "$hydra_if" -genv MPIR_CVAR_NOLOCAL 1 -genv UCX_TLS tcp,self
        -genv UCX_NET_DEVICES "$ucx_dev")
      for v in "${vars[@]}"; do LAUNCH+=(-genv "$v" "${!v}"); done
      [ -z "${RANK_PRELOAD:-}" ] || LAUNCH+=(-genv LD_PRELOAD "$RANK_PRELOAD")
      ;;
    impi)
      # Intel MPI's hydra: its bootstrap is the agent; I_MPI_FABRICS=ofi keeps its shared
      # memory out (every namespace has the same host name), libfabric's tcp provider on the
      # bridge's subnet.
      LAUNCH=("$JOBRUN_MPIS/impi/mpicast-mpiexec" -bootstrap ssh -bootstrap-exec "$agent"
        -f "$hf" -n "$np" -ppn "$ppn" -iface "$hydra_if" -genv I_MPI_FABRICS ofi
        -genv FI_PROVIDER tcp -genv FI_TCP_IFACE "$ucx_dev" -genv I_MPI_PIN 0)
      for v in "${vars[@]}"; do LAUNCH+=(-genv "$v" "${!v}"); done
      [ -z "${RANK_PRELOAD:-}" ] || LAUNCH+=(-genv LD_PRELOAD "$RANK_PRELOAD")
      ;;
    *) return 1 ;;
  esac
}

jobrun_job() {
  local name=$1 tmo=$2 out=$3 marker=$4 grace=$5 cleanup=$6
  shift 6
  [ "${1:-}" = -- ] && shift
  local rc=0 job seen=""
  if [ -n "$out" ]; then
    timeout -k 10 "$tmo" "$@" >"$out" &
  else
    timeout -k 10 "$tmo" "$@" &
  fi
  job=$!
  # shellcheck disable=SC2064
  trap "kill -TERM $job 2>/dev/null; wait $job 2>/dev/null || true; $cleanup; exit 130" INT TERM
  while kill -0 "$job" 2>/dev/null; do
    if [ -n "$marker" ] && [ -z "$seen" ] && grep -q "^$marker" "$out" 2>/dev/null; then seen=$SECONDS; fi
    if [ -n "$seen" ] && [ $((SECONDS - seen)) -ge "$grace" ]; then
      echo "$name: run: the job wrote its last line ($marker) but has not exited ${grace} s later: ending it (finalize hang)" >&2
      kill -TERM "$job" 2>/dev/null || true
      wait "$job" 2>/dev/null || true
      echo "$name: finalize-hang" >&2
      eval "$cleanup"
      job=""
      break
    fi
    sleep 0.2
  done
  [ -z "$job" ] || wait "$job" || rc=$?
  trap - INT TERM
  return $rc
}
