# Sourced by the c-tests scripts that launch MPI jobs: loopback only (MPICAST_IFACE=lo,
# MPICAST_TTL=0 unless the caller set them, and a refusal of anything else), and Open MPI's
# permission to run as root when we are root.
export MPICAST_IFACE=${MPICAST_IFACE:-lo} MPICAST_TTL=${MPICAST_TTL:-0}
case "$MPICAST_IFACE:$MPICAST_TTL" in
  lo:0) ;;
  *) echo "refusing to run: MPICAST_IFACE=lo and MPICAST_TTL=0 are required" >&2; exit 1 ;;
esac
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
