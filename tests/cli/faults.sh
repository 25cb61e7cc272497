#!/bin/sh
# The tool under faults from outside, each made to land mid-run without timing guesses (run by
# special_files.cmake; CLI, WORK and F32 in the environment):
#   faults.sh input_shrinks   a regular input cut short (truncate) while it is read: exit 1 and
#                             "FILE: the input shrank while it was read", not death by SIGBUS;
#   faults.sh signal SIG      SIG (TERM, HUP) while -o replaces an existing file: the tool dies of
#                             SIG, the old file is untouched and no temporary file is left;
#   faults.sh ignored_hup     SIGHUP ignored from the start (nohup) stays ignored: the tool finishes.
# Prints what the check needs to stderr and exits with the tool's exit status (128 + N: signal N).
set -u
cd "$WORK" || exit 90

# A float32 .npy of N elements (a 128-byte header), sparse: its data reads as zeros.
sparse_npy() {
  printf '\223NUMPY\001\000v\000' > "$1"
  printf "%-117s\n" "{'descr': '<f4', 'fortran_order': False, 'shape': ($2,), }" >> "$1"
  truncate -s $((128 + 4 * $2)) "$1"
}

# Waits (up to 10 s) until process $1 holds an output file open in this directory: a named
# temporary ".NAME.tmp-PID-N" or an unnamed one (O_TMPFILE: "DIR/#INODE (deleted)").
wait_for_output() {
  i=0
  here=$(pwd -P)  # as the kernel names it
  while [ $i -lt 1000 ]; do
    if ls -l "/proc/$1/fd" 2>/dev/null | grep -F -e "$here/.out.npy.tmp-" -e "$here/#" > /dev/null; then return 0; fi
    sleep 0.01
    i=$((i + 1))
  done
  echo "faults.sh: the tool never opened its output" >&2
  return 1
}

case $1 in
input_shrinks)
  # 64 Mi elements: four 64 MiB pieces. The outputs go to a FIFO (sliding windows of 1: one output
  # per element, written as each piece is done); once the tool blocks writing the first piece's
  # outputs, the input is cut to 1 MB, then the FIFO drained: the second piece is past the cut.
  sparse_npy big.npy 67108864
  mkfifo out
  "$CLI" reduce big.npy --op max --window 1 --backend cpu -o out 2> err &
  pid=$!
  exec 3< out
  head -c 100000 <&3 > /dev/null
  truncate -s 1000000 big.npy
  cat <&3 > /dev/null
  wait $pid
  rc=$?
  cat err >&2
  exit $rc
  ;;
signal | ignored_hup)
  # The input comes through a FIFO: the header and part of the data, then the tool waits for the
  # rest with its output open -- mid-write, for as long as it takes.
  if [ "$1" = signal ]; then sig=$2; else sig=HUP; fi
  printf 'old' > out.npy
  mkfifo in
  if [ "$1" = ignored_hup ]; then trap '' HUP; fi
  "$CLI" reduce in --op sum --backend cpu -o out.npy 2> err &
  pid=$!
  trap - HUP
  exec 3> in
  head -c 200 "$F32" >&3
  wait_for_output $pid || { kill -KILL $pid; exit 91; }
  kill -s "$sig" $pid
  if [ "$1" = ignored_hup ]; then
    sleep 0.2
    tail -c +201 "$F32" >&3  # the rest: the tool finishes
  fi
  exec 3>&-
  wait $pid
  rc=$?
  cat err >&2
  echo "left in the directory: $(ls -A | tr '\n' ' ')" >&2
  exit $rc
  ;;
esac
echo "faults.sh: unknown case $1" >&2
exit 92
