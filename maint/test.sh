#!/usr/bin/env bash
# The project's test command (README): everything runs against build/install.
#   1. unit tests (the project's MPICH-independent pieces, "make check" in build/project)
#   2. checks of the installed MPICH from the outside (device, singleton, faults, the heap)
#   3. the project's MPI tests (test/mpi) through MPICH's runtests; those of 2 ranks again
#      under valgrind's memcheck
#   4. a CI-sized subset of MPICH's own test/mpi
#   5. 3 and 4 again on simulated nodes (maint/nodes): ranks in blocks and round-robin,
#      over sockets, and 3 over libfabric too
# Ends with "N passed, N failed" and exits non-zero on any failure.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/maint/config.sh"

prefix="$BUILD_DIR/install"
bin="$prefix/bin"
log="$BUILD_DIR/results/checks"
mkdir -p "$log"
passed=0
failed=0

check() {   # name command...: one pass/fail line per check, output kept in $log/name.log
    local name=$1; shift
    if "$@" > "$log/$name.log" 2>&1; then
        passed=$((passed + 1)); echo "ok - $name"
    else
        failed=$((failed + 1)); echo "not ok - $name (see $log/$name.log)"
        tail -5 "$log/$name.log" | sed 's/^/    /'
    fi
}

add_counts() {  # fold a sub-run's "N passed, N failed" line into ours
    local line
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$1" | tail -1)
    if [ -z "$line" ]; then failed=$((failed + 1)); echo "not ok - $1 printed no totals"; return; fi
    passed=$((passed + $(echo "$line" | cut -d' ' -f1)))
    failed=$((failed + $(echo "$line" | cut -d' ' -f3)))
}

[ -x "$bin/mpiexec" ] || { echo "no build in $prefix: run maint/setup.sh first" >&2; echo "0 passed, 1 failed"; exit 1; }

echo "== 1. unit tests"
(cd "$BUILD_DIR/project" && make -s check > "$log/unit.log" 2>&1)
grep -E '^(PASS|FAIL|XFAIL|ERROR):' "$log/unit.log"
units=$(grep -c -E '^(PASS|FAIL|ERROR):' "$log/unit.log")
if [ "$units" -eq 0 ]; then
    failed=$((failed + 1)); echo "not ok - unit tests did not run (see $log/unit.log)"
fi
passed=$((passed + $(grep -c '^PASS:' "$log/unit.log")))
failed=$((failed + $(grep -c -E '^(FAIL|ERROR):' "$log/unit.log")))

echo "== 2. checks of the installed MPICH"
work="$BUILD_DIR/tests/checks"
mkdir -p "$work"
"$bin/mpicc" -o "$work/ring" "$top/test/mpi/pt2pt/ring.c" || failed=$((failed + 1))

device_is_smheap() { "$bin/mpichversion" | grep 'MPICH Device:.*ch3:smheap'; }
singleton_without_mpiexec() { timeout 60 "$work/ring" | grep 'No Errors'; }
remote_rank_killed() {
    # A rank on another (simulated) node killed with SIGKILL while its peer receives from
    # it: the survivor's receive returns an error naming the lost rank (MPI_ERRORS_RETURN),
    # and the job ends.  Hydra is told not to clean up after the dead rank itself, so a
    # channel that did not notice would hang here until the timeout.  Rank 0 writes what
    # MPI returned to a file too: Hydra sometimes drops its last line of output.  Hydra then
    # sends the survivor SIGUSR1 (its notice of the death): the channel must take it, else
    # the survivor dies of it before it could report (every round on an Intel Xeon 2-vCPU
    # machine before net/smheap_net.c handled it; mpiexec then named signal 9, 11 or 1).
    # Over libfabric's rxm over TCP only Hydra's notice tells the survivor (rxm retries a
    # dead peer's connection without an error): MPICH patch 0015 makes it come every time.
    # $1, $2: MPIR_CVAR_CH3_SMHEAP_NET and FI_PROVIDER (the path between the two nodes).
    local path="$1${2:+-${2%%;*}}" t pid rc
    local out="$log/lost-$path.out" said="$log/lost-$path.rank0"
    rm -f "$said"
    MPIR_CVAR_CH3_SMHEAP_NET=$1 FI_PROVIDER=$2 \
    MPIEXEC="$bin/mpiexec" timeout 60 "$top/maint/nodes/mpiexec-nodes" \
        -disable-auto-cleanup -hosts 127.0.0.2:1,127.0.0.3:1 -n 2 "$work/lost" "$said" \
        > "$out" 2>&1 &
    for t in $(seq 200); do grep -q running "$out" && break; sleep 0.1; done
    for pid in $(pgrep -f "^$work/lost "); do
        tr '\0' '\n' < "/proc/$pid/environ" 2> /dev/null | grep -qx PMI_RANK=1 &&
            kill -KILL "$pid"
    done
    wait $!; rc=$?
    echo "mpiexec exited with $rc"
    cat "$out" "$said" 2> /dev/null
    [ "$rc" != 124 ] || return 1        # the survivor never noticed
    grep -q '^rank 0: ' "$said" && grep -q 'rank 1, on another node, was lost' "$said"
}
cat > "$work/lost.c" <<'LOST'
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv)
{   /* rank 0 receives from rank 1 until rank 1 is killed, then says what MPI returned */
    int rank, x = 0, err = MPI_SUCCESS, len;
    char msg[MPI_MAX_ERROR_STRING];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (rank == 0) {    /* once connected: a peer lost before any socket is not seen */
        err = MPI_Recv(&x, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        printf("running\n");
        fflush(stdout);
    }
    while (err == MPI_SUCCESS) {
        if (rank == 0)
            err = MPI_Recv(&x, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        else
            err = MPI_Send(&x, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
        usleep(1000);
    }
    MPI_Error_string(err, msg, &len);
    printf("rank %d: %s\n", rank, msg);
    if (argc > 1 && rank == 0) {        /* Hydra may drop what it has not forwarded yet */
        FILE *f = fopen(argv[1], "w");
        if (f) {
            fprintf(f, "rank %d: %s\n", rank, msg);
            fclose(f);
        }
    }
    return 1;
}
LOST
"$bin/mpicc" -o "$work/lost" "$work/lost.c" || failed=$((failed + 1))

ofi_bad_provider() {
    # MPIR_CVAR_CH3_SMHEAP_NET=ofi with a provider libfabric does not have: MPI_Init fails,
    # naming the provider and the fix, instead of falling back quietly.
    # Two nodes started by fork (as nodes-without-namespaces): the ranks' own error output
    # reaches mpiexec's.
    local out
    out=$(MPIR_CVAR_CH3_SMHEAP_NET=ofi FI_PROVIDER=no_such_provider timeout 60 \
        "$bin/mpiexec" -launcher fork -hosts nodeA,nodeB -n 2 "$work/ring" 2>&1)
    echo "$out"
    ! echo "$out" | grep -q 'No Errors' &&
        echo "$out" | grep -q 'no libfabric provider.*(FI_PROVIDER=no_such_provider)' &&
        echo "$out" | grep -q 'MPIR_CVAR_CH3_SMHEAP_NET=sock'
}
ofi_auto_skips_emulations() {
    # auto takes libfabric only with a provider that is not an emulation over the kernel's
    # sockets (tcp, udp, sockets).  On a node without RDMA devices it does not even load
    # libfabric, and says so; on one with a device (here a mount namespace shows one under
    # /sys/class/infiniband) it asks libfabric, which has only those emulations here, so
    # the job goes over TCP sockets and says why; with FI_PROVIDER naming one, auto takes it.
    local out device named
    run_on_two() {
        MPIR_CVAR_CH3_SMHEAP_NET_VERBOSE=1 MPIEXEC="$bin/mpiexec" LD_DEBUG=files \
            timeout 60 "$top/maint/nodes/mpiexec-nodes" -hosts 127.0.0.2:1,127.0.0.3:1 -n 2 \
            "$work/ring" 2>&1
    }
    out=$(run_on_two)
    device=$(unshare -m sh -c 'mount -t tmpfs devices /sys/class &&
        mkdir -p /sys/class/infiniband/simulated_0 && "$@"' sh \
        env MPIR_CVAR_CH3_SMHEAP_NET_VERBOSE=1 MPIEXEC="$bin/mpiexec" timeout 60 \
        "$top/maint/nodes/mpiexec-nodes" -hosts 127.0.0.2:1,127.0.0.3:1 -n 2 "$work/ring" 2>&1)
    named=$(FI_PROVIDER=sockets run_on_two)
    grep -v '^ *[0-9]*:' <<< "$out"; echo "$device"; grep -v '^ *[0-9]*:' <<< "$named"
    if ls -A /sys/class/infiniband /sys/class/cxi 2> /dev/null | grep -q .; then
        grep -q 'No Errors' <<< "$out" || return 1    # a real device: as the simulated one
    else
        grep -q 'No Errors' <<< "$out" &&
            grep -q 'over TCP sockets: no RDMA device' <<< "$out" &&
            ! grep -q 'file=libfabric' <<< "$out" || return 1
    fi
    grep -q 'No Errors' <<< "$device" &&
        grep -q 'over TCP sockets: libfabric has only emulations' <<< "$device" &&
        grep -q 'No Errors' <<< "$named" &&
        grep -q 'over libfabric .*provider sockets' <<< "$named"
}
ofi_library_missing() {
    # A libfabric that cannot be loaded (here an empty file found first by that name):
    # with MPIR_CVAR_CH3_SMHEAP_NET=ofi, MPI_Init fails naming the library and the fixes;
    # with auto (and a provider named, so that it tries on a node without RDMA devices)
    # the job goes over sockets, and the verbose line says why.
    # Hydra tears the job down at the first rank's failure, and may drop both ranks' last
    # lines as it does (1 run in 20 here): up to three tries to see one.
    local out auto try
    mkdir -p "$work/no-libfabric"
    : > "$work/no-libfabric/libfabric.so.1"
    for try in 1 2 3; do
        out=$(LD_LIBRARY_PATH="$work/no-libfabric" MPIR_CVAR_CH3_SMHEAP_NET=ofi timeout 60 \
            "$bin/mpiexec" -launcher fork -hosts nodeA,nodeB -n 2 "$work/ring" 2>&1)
        grep -q 'cannot load' <<< "$out" && break
        echo "try $try: no line from either rank"
    done
    auto=$(LD_LIBRARY_PATH="$work/no-libfabric" FI_PROVIDER=tcp \
        MPIR_CVAR_CH3_SMHEAP_NET_VERBOSE=1 timeout 60 \
        "$bin/mpiexec" -launcher fork -hosts nodeA,nodeB -n 2 "$work/ring" 2>&1)
    echo "$out"; echo "$auto"
    ! echo "$out" | grep -q 'No Errors' &&
        echo "$out" | grep -q 'cannot load libfabric.so.1 (.*); install libfabric (Debian: libfabric1), or set MPIR_CVAR_CH3_SMHEAP_NET=sock' &&
        echo "$auto" | grep -q 'No Errors' &&
        echo "$auto" | grep -q 'between nodes over TCP sockets: cannot load libfabric.so.1'
}
libfabric_only_off_node() {
    # libmpi does not link libfabric (its providers' libraries sleep in their constructors,
    # net/smheap_ofi_lib.c): a job on one node never loads it; a job that spans nodes over
    # libfabric loads it at MPI_Init, and works.
    local needed one two
    needed=$(readelf -d "$prefix/lib/libmpi.so.12" | grep NEEDED)
    one=$(LD_DEBUG=files timeout 60 "$bin/mpiexec" -n 2 "$work/ring" 2>&1)
    two=$(LD_DEBUG=files MPIR_CVAR_CH3_SMHEAP_NET=ofi FI_PROVIDER=sockets \
        MPIEXEC="$bin/mpiexec" timeout 60 "$top/maint/nodes/mpiexec-nodes" \
        -hosts 127.0.0.2:1,127.0.0.3:1 -n 2 "$work/ring" 2>&1)
    echo "$needed"
    echo "one node: $(grep -c 'file=libfabric' <<< "$one") loads of libfabric"
    grep 'file=libfabric' <<< "$two"
    ! echo "$needed" | grep -q libfabric && grep -q 'No Errors' <<< "$one" &&
        ! grep -q 'file=libfabric' <<< "$one" && grep -q 'No Errors' <<< "$two" &&
        [ "$(grep -c 'file=libfabric\.so.*dynamically loaded by .*libmpi' <<< "$two")" = 2 ]
}
nodes_without_namespaces() {
    # Two "hosts" started by fork, sharing this machine's /dev/shm and host name: MPICH's
    # node map (from the launcher) still makes them two nodes, so the ranks talk over
    # sockets, and the job must work and leave nothing in /dev/shm.
    local out before after
    before=$(ls /dev/shm | wc -l)
    out=$(timeout 60 "$bin/mpiexec" -launcher fork -hosts nodeA,nodeB -n 2 "$work/ring" 2>&1)
    after=$(ls /dev/shm | wc -l)
    echo "$out"
    echo "$out" | grep -q 'No Errors' && [ "$after" -le "$before" ]
}
no_shm_leftovers_after_kill() {
    # Jobs killed with SIGKILL mid-run (every rank past MPI_Init, exchanging messages and
    # holding heap memory) leave nothing in /dev/shm.
    # A job is killed only once it runs (MPICH's own start-up segment has a name in /dev/shm
    # until every rank has mapped it); a job that does not start within 60 s fails the check.
    # Each job has an output file of its own, emptied before it starts: the shell truncates a
    # background job's redirection only once it has forked, so a shared file could still show
    # the previous job's "running" and get this one killed inside MPI_Init.
    local before after i t out never=0
    before=$(ls /dev/shm | wc -l)
    for i in $(seq 20); do
        out="$log/spin-$i.out"
        : > "$out"
        "$bin/mpiexec" -n 4 "$work/spin" > "$out" 2>&1 &
        for t in $(seq 1200); do grep -q running "$out" && break; sleep 0.05; done
        grep -q running "$out" ||
            { echo "job $i never ran"; cat "$out"; never=$((never + 1)); }
        sleep "0.0$((i % 10))"
        pkill -KILL -f "$work/spin"
        kill -KILL $! 2> /dev/null
        wait $! 2> /dev/null
    done
    sleep 1
    after=$(ls /dev/shm | wc -l)
    echo "/dev/shm entries: $before before, $after after"; ls /dev/shm
    [ "$never" = 0 ] && [ "$after" -le "$before" ]
}
fault_ends_job() {
    # One rank of four killed with SIGKILL, or calling MPI_Abort, while the others are inside
    # a shared-heap collective or a single-copy transfer (WHERE): 20 rounds each; every job
    # ends within 15 s of the fault, with Hydra's report of a killed rank (it names the first
    # PID it reaped, not always the victim's) or MPI_Abort's exit code, and leaves nothing
    # new in /dev/shm and no process of it running.
    local where=$1 how i t out job victim rc ms slowest=0 bad=0 before after left
    before=$(ls /dev/shm | sort)
    for how in kill abort; do
        for i in $(seq 20); do
            out="$log/fault-$where-$how.out"
            "$bin/mpiexec" -n 4 "$work/faults" "$where" "$how" $((i % 4)) > "$out" 2>&1 &
            job=$!
            for t in $(seq 1200); do
                grep -q '^running' "$out" && { [ "$how" = abort ] || grep -q '^victim' "$out"; } &&
                    break
                kill -0 "$job" 2> /dev/null || break
                sleep 0.05
            done
            if [ "$how" = kill ]; then
                victim=$(sed -n 's/^victim //p' "$out")
                sleep "0.0$((i % 10))"
                [ -n "$victim" ] && kill -KILL "$victim"
            fi
            ms=$(($(date +%s%3N)))
            for t in $(seq 300); do kill -0 "$job" 2> /dev/null || break; sleep 0.05; done
            ms=$(($(date +%s%3N) - ms))
            [ "$ms" -gt "$slowest" ] && slowest=$ms
            if kill -0 "$job" 2> /dev/null; then
                echo "round $i ($how): the job still ran 15 s after the fault"; cat "$out"
                bad=$((bad + 1))
                pkill -KILL -f "$work/faults"; kill -KILL "$job"
            fi
            wait "$job"; rc=$?
            # Hydra may drop MPI_Abort's own line as it tears the job down, never its exit code
            if ! grep -q '^running' "$out" || { [ "$how" = kill ] && [ "$rc" = 0 ]; } ||
                { [ "$how" = kill ] && ! grep -q "BAD TERMINATION" "$out"; } ||
                { [ "$how" = abort ] && [ "$rc" != 3 ]; }; then
                echo "round $i ($how): mpiexec exited with $rc"; cat "$out"; bad=$((bad + 1))
            fi
            grep -q 'stayed 0' "$out" && { cat "$out"; bad=$((bad + 1)); }
        done
        echo "$how, mid-$where: $bad bad rounds of 20 so far"; cat "$out"
    done
    wait
    sleep 1
    after=$(ls /dev/shm | sort)
    left=$(pgrep -a -f "$work/faults $where")     # a zombie's command line is empty
    echo "slowest end after the fault: $slowest ms"
    echo "new in /dev/shm: $(comm -13 <(echo "$before") <(echo "$after") | tr '\n' ' ')"
    echo "processes left running: ${left:-none}"
    [ "$bad" = 0 ] && [ -z "$(comm -13 <(echo "$before") <(echo "$after"))" ] && [ -z "$left" ]
}
cat > "$work/spin.c" <<'SPIN'
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv)
{   /* initialized ranks that exchange messages until killed */
    int rank, size, x = 0;
    char *block;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    block = malloc(64 << 20);
    memset(block, rank, 64 << 20);
    MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("running\n");
        fflush(stdout);
    }
    for (;;)
        MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
}
SPIN
"$bin/mpicc" -o "$work/spin" "$work/spin.c" || failed=$((failed + 1))

# The shared heap from the outside.  These checks are about the heap itself, so they turn
# it on whatever the caller's environment says (the rest of the command also passes with
# MPIR_CVAR_CH3_SMHEAP_ENABLE=0).
heap_on=(env -u MPICH_CH3_SMHEAP_ENABLE -u MPIR_PARAM_CH3_SMHEAP_ENABLE
         MPIR_CVAR_CH3_SMHEAP_ENABLE=1)
heap_off_line='ch3:smheap: the shared heap is off, so large messages are copied'
shm_too_small() {
    # A job on a node whose /dev/shm cannot hold the heap runs on the private heap and says
    # why, once.  A private mount namespace gives it a real 16 MiB /dev/shm.
    local out
    out=$(unshare -m sh -c "mount -t tmpfs -o size=16m tmpfs /dev/shm &&
          timeout 120 ${heap_on[*]} '$bin/mpiexec' -n 4 '$work/ring'" 2>&1)
    echo "$out"
    echo "$out" | grep -q 'No Errors' &&
        [ "$(echo "$out" | grep -c "$heap_off_line: /dev/shm holds 16 MiB, too small")" = 1 ]
}
tmpfs_full_later() {
    # A 64 MiB /dev/shm holds the 48 MiB heap, but another file already uses 40 MiB of it:
    # the heap runs out of tmpfs pages while the program allocates, and allocations go on
    # from glibc, counted, with one message; no SIGBUS.
    local out
    out=$(unshare -m sh -c "mount -t tmpfs -o size=64m tmpfs /dev/shm &&
          head -c 40M /dev/zero > /dev/shm/filler &&
          ${heap_on[*]} MPIR_CVAR_CH3_SMHEAP_SIZE=48M timeout 120 '$work/fill_heap' 40" 2>&1)
    echo "$out"
    echo "$out" | grep -q 'No Errors' && echo "$out" | grep -q 'glibc_full [1-9]' &&
        [ "$(echo "$out" | grep -c 'smheap: /dev/shm is full')" = 1 ]
}
malformed_setting_stops_job() {
    local out
    out=$(MPIR_CVAR_CH3_SMHEAP_SIZE=12X timeout 60 "$bin/mpiexec" -n 2 "$work/ring" 2>&1)
    [ $? != 0 ] || { echo "$out"; echo "the job did not stop"; return 1; }
    echo "$out"
    echo "$out" | grep -q 'MPIR_CVAR_CH3_SMHEAP_SIZE=12X is not a size' || return 1
    # a choice the CVAR does not have: named, with those it has (patch 0013)
    out=$(MPIR_CVAR_CH3_SMHEAP_NET=infiniband timeout 60 "$bin/mpiexec" -n 2 "$work/ring" 2>&1)
    [ $? != 0 ] || { echo "$out"; echo "the job did not stop"; return 1; }
    echo "$out"
    echo "$out" | grep -q 'Invalid MPIR_CVAR_CH3_SMHEAP_NET value (infiniband): it takes one of auto, ofi, sock'
}
abort_says_why() {
    # What a process writes before it aborts reaches mpiexec's output, every time (patch
    # 0018): without it, 3-4 of 20 runs printed nothing here (AMD EPYC, 2 vCPUs).
    local i out left lost=0
    for i in $(seq 20); do
        out=$(timeout 60 "$bin/mpiexec" -n 2 "$work/abort_says_why" 2>&1)
        [ $? != 0 ] || { echo "$out"; echo "run $i: the job did not fail"; return 1; }
        grep -q 'abort_says_why: rank 0 gives up' <<< "$out" ||
            { lost=$((lost + 1)); echo "run $i lost the line; mpiexec printed:"; echo "$out"; }
    done
    echo "$lost of 20 runs lost the line"
    # and the job ended: no process of it outlives mpiexec (a proxy stuck on an emptied pipe
    # left its processes running)
    sleep 1
    left=$(pgrep -a -f "$work/abort_says_why")     # a zombie's command line is empty
    [ -z "$left" ] || { echo "left running after mpiexec exited:"; echo "$left"; }
    [ "$lost" = 0 ] && [ -z "$left" ]
}
two_jobs_at_once() {
    # Two jobs on the node at the same time each get their own shared heap.
    local a b
    "${heap_on[@]}" timeout 120 "$bin/mpiexec" -n 2 "$work/heapshare" > "$log/job-a.out" 2>&1 &
    a=$!
    "${heap_on[@]}" timeout 120 "$bin/mpiexec" -n 3 "$work/heapshare" > "$log/job-b.out" 2>&1 &
    b=$!
    wait $a; wait $b
    cat "$log/job-a.out" "$log/job-b.out"
    grep -q 'No Errors' "$log/job-a.out" && grep -q 'No Errors' "$log/job-b.out"
}
two_users_at_once() {
    # A job of another user (nobody) runs while one of ours does: it gets a heap of its own,
    # and can open nothing of ours, neither in /dev/shm nor through /proc/<rank>/fd (where
    # our own user can open our heap: the probe works).
    [ "$(id -u)" = 0 ] || { echo "skipped: only root can start another user's job"; return 0; }
    local ours_job theirs_job t p f before heaps=0 ours=0 theirs=0 rc
    before=$(ls /dev/shm)
    "${heap_on[@]}" "$bin/mpiexec" -n 2 "$work/spin" > "$log/spin-ours.out" 2>&1 &
    ours_job=$!
    for t in $(seq 1200); do grep -q running "$log/spin-ours.out" && break; sleep 0.05; done
    runuser -u nobody -- "${heap_on[@]}" timeout 120 "$bin/mpiexec" -n 3 "$work/heapshare" \
        > "$log/job-theirs.out" 2>&1 &
    theirs_job=$!
    for p in $(pgrep -f "^$work/spin$"); do
        for f in /proc/$p/fd/*; do
            case $(readlink "$f") in /dev/shm/smheap-*) heaps=$((heaps + 1)) ;; *) continue ;; esac
            timeout 5 head -c1 "$f" > /dev/null && ours=$((ours + 1))
            runuser -u nobody -- timeout 5 head -c1 "$f" > /dev/null 2>&1 &&
                { echo "nobody read our heap through $f"; theirs=$((theirs + 1)); }
        done
    done
    for f in $(ls /dev/shm); do
        echo "$before" | grep -qx "$f" && continue
        [ "$(stat -c %U "/dev/shm/$f")" != nobody ] &&
            runuser -u nobody -- timeout 5 head -c1 "/dev/shm/$f" > /dev/null 2>&1 &&
            { echo "nobody read /dev/shm/$f"; theirs=$((theirs + 1)); }
    done
    wait "$theirs_job"; rc=$?
    kill -KILL $(pgrep -f "^$work/spin$") 2> /dev/null; wait "$ours_job" 2> /dev/null
    cat "$log/job-theirs.out"
    echo "heap descriptors of our ranks: $heaps, opened by us: $ours, by nobody: $theirs"
    [ "$rc" = 0 ] && grep -q 'No Errors' "$log/job-theirs.out" &&
        ! grep -q 'large messages are copied' "$log/job-theirs.out" &&
        [ "$heaps" -ge 2 ] && [ "$ours" = "$heaps" ] && [ "$theirs" = 0 ]
}
spin_chosen_by_cpus() {
    # Ranks that outnumber the CPUs their affinity allows them do not spin while waiting (the
    # peer they wait for may need that CPU), and yield it while they poll with MPI_Test; ranks
    # with a CPU each spin (for a millisecond) and poll without yielding; the setting
    # overrides.  A rank waiting while another keeps more threads busy than there are CPUs
    # stops spinning too, unless the setting says how long to spin.  Ranks with a CPU each
    # wake each other without a fence where the kernel has membarrier, the others with one.
    local one all set busy busy_set mb
    one=$(timeout 120 taskset -c 0 "$bin/mpiexec" -n 3 "$work/spin_choice" 2>&1)
    all=$(timeout 120 "$bin/mpiexec" -n 1 "$work/spin_choice" 2>&1)
    set=$(MPIR_CVAR_CH3_SMHEAP_SPIN_POLLS=77 timeout 120 taskset -c 0 "$bin/mpiexec" -n 3 \
        "$work/spin_choice" 2>&1)
    busy=$(timeout 120 "$bin/mpiexec" -n 2 "$work/spin_choice" contended 2>&1)
    busy_set=$(MPIR_CVAR_CH3_SMHEAP_SPIN_POLLS=2000 timeout 120 "$bin/mpiexec" -n 2 \
        "$work/spin_choice" contended 2>&1)
    printf '%s\n' "$one" "$all" "$set" "$busy" "$busy_set"
    mb=$(sed -n 's/.*wake_fenceless=[01] membarrier=\([01]\)$/\1/p' <<<"$all")
    echo "$one" | grep -q 'node_cpus=1 spin_polls=0 spin_usec=0$' &&
        echo "$one" | grep -q 'wake_fenceless=0 ' &&
        echo "$all" | grep -q "wake_fenceless=$mb membarrier=$mb$" &&
        echo "$busy" | grep -q "wake_fenceless=$mb membarrier=$mb$" &&
        echo "$one" | grep -q 'No Errors' && echo "$one" | grep -q 'test_yields=[1-9]' &&
        echo "$all" | grep -q "node_cpus=$(nproc) spin_polls=[1-9][0-9]* spin_usec=1000$" &&
        echo "$set" | grep -q 'node_cpus=1 spin_polls=77 spin_usec=0$' &&
        echo "$set" | grep -q 'No Errors' &&
        echo "$set" | grep -q 'test_yields=0$' &&
        echo "$busy" | grep -q 'contended_waits=[1-9]' && echo "$busy" | grep -q 'No Errors' &&
        echo "$busy_set" | grep -q 'contended_waits=0$'
}
wrapper_script_shares_heap() {
    # Ranks started through a shell that does not exec them (a job script's wrapper) are
    # grandchildren of the proxy; they still share one heap.
    local out
    out=$(timeout 120 "${heap_on[@]}" "$bin/mpiexec" -n 3 sh -c "'$work/heapshare'; true" 2>&1)
    echo "$out"
    echo "$out" | grep -q 'No Errors' && ! echo "$out" | grep -q 'large messages are copied'
}
dlopen_libmpi() {
    # libmpi loaded with dlopen, as Python loads mpi4py's module, while the program's
    # threads allocate and free: mpiexec's preload gives it the heap, shared by every rank,
    # and a large message between blocks malloc'd after the load goes with a single copy
    # (MPI_T).  Without the preload, one line says why, and every message is still right.
    local out
    out=$(timeout 120 "${heap_on[@]}" "$bin/mpiexec" -n 3 "$work/dlopen_mpi" 2>&1)
    echo "$out"
    echo "$out" | grep -q 'No Errors' && ! echo "$out" | grep -q "$heap_off_line" || return 1
    out=$(MPIR_CVAR_CH3_SMHEAP_PRELOAD=0 DLOPEN_MODULE_HEAP=off timeout 120 "${heap_on[@]}" \
        "$bin/mpiexec" -n 2 "$work/dlopen_mpi" 2>&1)
    echo "$out"
    echo "$out" | grep -q 'No Errors' &&
        [ "$(echo "$out" | grep -c "$heap_off_line: malloc is not the shared heap's")" = 1 ]
}
heap_through_a_library() {
    # A program that reaches MPI only through a library of its own, and lists libc first
    # (as Debian's ScaLAPACK testers do): the preload gives it the heap, which heapshare
    # checks every rank shares.  Without the preload, the line says why and what to do.
    local out
    readelf -d "$work/through_lib" | grep NEEDED | head -1 | grep -q 'libc\.so' || return 1
    out=$(timeout 120 "${heap_on[@]}" "$bin/mpiexec" -n 3 "$work/through_lib" 2>&1)
    echo "$out"
    echo "$out" | grep -q 'No Errors' && ! echo "$out" | grep -q "$heap_off_line" || return 1
    out=$(timeout 120 "${heap_on[@]}" "$bin/mpiexec" -n 2 \
        -genv MPIR_CVAR_CH3_SMHEAP_PRELOAD 0 "$work/through_lib" 2>&1)
    echo "$out"
    [ "$(echo "$out" | grep -c "$heap_off_line: malloc is not the shared heap's here: glibc's was bound first.*MPIR_CVAR_CH3_SMHEAP_PRELOAD=0")" = 1 ]
}
malformed_preload_stops_launch() {
    local out rc
    out=$(MPIR_CVAR_CH3_SMHEAP_PRELOAD=maybe timeout 60 "$bin/mpiexec" -n 2 "$work/ring" 2>&1)
    rc=$?
    echo "$out"
    echo "exit $rc"
    [ $rc != 0 ] && [ $rc != 124 ] && echo "$out" | grep -q 'MPIR_CVAR_CH3_SMHEAP_PRELOAD=maybe: expected 1'
}
debian_program_runs() {
    # Programs built with Debian's own MPICH 4.0.2 (libmpich-dev: mpicc.mpich, mpifort.mpich)
    # run unmodified under this install's mpiexec, with nothing set: by themselves they load
    # Debian's libmpich.so.12 (and libmpichfort.so.12) from the system's directories, and the
    # processes mpiexec starts look in this install's lib directory first (patch 0014).  The
    # programs' own MPI_T checks prove that the heap and single-copy paths ran (and ring77,
    # which calls only libmpichfort, that the heap serves malloc): under Debian's library
    # they find no smheap counters; library_version names the device.  A user's own
    # LD_LIBRARY_PATH keeps its precedence: Debian's library, named there, runs.
    local p out debian_lib
    debian_lib=$(env -u LD_LIBRARY_PATH ldd "$work/debian_library_version" |
        sed -n 's/.*libmpich.so.12 => \([^ ]*\).*/\1/p')
    echo "by itself: libmpich.so.12 => $debian_lib"
    [[ "$debian_lib" == /*x86_64-linux-gnu/libmpich.so.12 ]] || return 1
    for p in single_copy ring77 alloc90; do
        out=$(env -u LD_LIBRARY_PATH timeout 120 "$bin/mpiexec" -n 2 "$work/debian_$p" 2>&1)
        echo "$out"
        echo "$out" | grep -q 'No Errors' || return 1
    done
    out=$(env -u LD_LIBRARY_PATH timeout 120 "$bin/mpiexec" -n 2 "$work/debian_library_version")
    echo "$out" | grep 'MPICH Device:' | grep -q 'ch3:smheap' || { echo "$out"; return 1; }
    mkdir -p "$work/debian-lib"
    ln -sf "$debian_lib" "$work/debian-lib/libmpich.so.12"
    out=$(LD_LIBRARY_PATH="$work/debian-lib" timeout 120 "$bin/mpiexec" -n 2 \
        "$work/debian_library_version")
    echo "$out" | grep 'MPICH Device:'
    echo "$out" | grep 'MPICH Device:' | grep -vq 'ch3:smheap'
}
# memcheck replaces every malloc it finds unless told --soname-synonyms=somalloc=
# nouserintercepts; both ways must work.
vg_keep_heap=(valgrind --soname-synonyms=somalloc=nouserintercepts)
valgrind_clean() {
    # Correct programs under memcheck report no errors: with the shared heap (a program that
    # reads its peers' heap blocks) and with memcheck's own malloc (one line says so).
    local out
    timeout 300 "${heap_on[@]}" "$bin/mpiexec" -n 2 "${vg_keep_heap[@]}" -q \
        --error-exitcode=1 "$work/heapshare" | grep 'No Errors' || return 1
    out=$(timeout 300 "${heap_on[@]}" "$bin/mpiexec" -n 2 valgrind -q --error-exitcode=1 \
        "$work/ring" 2>&1) || { echo "$out"; return 1; }
    echo "$out"
    echo "$out" | grep -q 'No Errors' &&
        [ "$(echo "$out" | grep -c "$heap_off_line: valgrind replaced malloc")" = 1 ]
}
valgrind_reports() {
    # A use-after-free and a leak of shared-heap blocks are reported (exit 1), as with glibc.
    local out
    out=$(timeout 300 "${heap_on[@]}" "${vg_keep_heap[@]}" --leak-check=full \
        --error-exitcode=1 "$work/use_after_free" 2>&1)
    [ $? = 1 ] || { echo "$out"; echo "valgrind did not exit with 1"; return 1; }
    echo "$out"
    echo "$out" | grep -q 'shared heap: on' &&
        echo "$out" | grep -A1 'Invalid read of size 4' | grep -q 'use_after_free' &&
        echo "$out" | grep -q 'Address 0x2000[0-9a-f]* is' &&
        echo "$out" | grep -q '1,000 bytes in 1 blocks are definitely lost'
}
"$bin/mpicc" -o "$work/use_after_free" "$top/test/checks/use_after_free.c" || failed=$((failed + 1))
"$bin/mpicc" -o "$work/heapshare" "$top/test/mpi/heap/heapshare.c" || failed=$((failed + 1))
"$bin/mpicc" -o "$work/faults" "$top/test/checks/faults.c" || failed=$((failed + 1))
"$bin/mpicc" -o "$work/fill_heap" "$top/test/checks/fill_heap.c" || failed=$((failed + 1))
"$bin/mpicc" -o "$work/spin_choice" "$top/test/checks/spin_choice.c" || failed=$((failed + 1))
"$bin/mpicc" -o "$work/abort_says_why" "$top/test/checks/abort_says_why.c" || failed=$((failed + 1))
build_with_debian_mpich() {
    local p
    mpicc.mpich -o "$work/debian_single_copy" "$top/test/mpi/pt2pt/single_copy.c" &&
        mpicc.mpich -o "$work/debian_library_version" "$top/test/checks/library_version.c" &&
        mpicc.mpich -shared -fPIC -o "$work/libcounters.so" "$top/test/mpi/fortran/counters.c" ||
        return 1
    for p in ring77.f alloc90.f90; do
        mpifort.mpich -o "$work/debian_${p%.*}" "$top/test/mpi/fortran/$p" \
            "$work/libcounters.so" -Wl,-rpath,"$work" || return 1
    done
}
build_with_debian_mpich || failed=$((failed + 1))
# heapshare as a library's code, under a program that lists libc ahead of that library
"$bin/mpicc" -shared -fPIC -Dmain=heapshare_main -o "$work/libheapshare.so" \
    "$top/test/mpi/heap/heapshare.c" &&
    printf 'int heapshare_main(int, char **);\nint main(int c, char **v) { return heapshare_main(c, v); }\n' |
    gcc -o "$work/through_lib" -x c - -x none -Wl,--no-as-needed -lc "$work/libheapshare.so" \
        -Wl,-rpath,"$work" || failed=$((failed + 1))
# a host that does not link libmpi, and the module it loads with dlopen (as Python's)
"$bin/mpicc" -shared -fPIC -I"$top/test/mpi/include" -o "$work/libdlopen_module.so" \
    "$top/test/checks/dlopen_module.c" &&
    gcc -fno-pie -no-pie -DMODULE="\"$work/libdlopen_module.so\"" -o "$work/dlopen_mpi" \
        "$top/test/checks/dlopen_mpi.c" -ldl -lpthread || failed=$((failed + 1))

check device-is-smheap device_is_smheap
check singleton-without-mpiexec singleton_without_mpiexec
check nodes-without-namespaces nodes_without_namespaces
check remote-rank-killed remote_rank_killed sock ""
check remote-rank-killed-libfabric remote_rank_killed ofi sockets
check remote-rank-killed-rxm remote_rank_killed ofi "tcp;ofi_rxm"
check libfabric-bad-provider-named ofi_bad_provider
check libfabric-only-off-node libfabric_only_off_node
check libfabric-missing-named ofi_library_missing
check libfabric-auto-skips-emulations ofi_auto_skips_emulations
check no-shm-leftovers-after-kill no_shm_leftovers_after_kill
check fault-mid-collective-ends-job fault_ends_job coll
check fault-mid-transfer-ends-job fault_ends_job transfer
check two-jobs-at-once two_jobs_at_once
check two-users-at-once two_users_at_once
check wrapper-script-shares-heap wrapper_script_shares_heap
check tmpfs-full-later tmpfs_full_later
check abort-says-why abort_says_why
check malformed-setting-stops-job malformed_setting_stops_job
check shm-too-small shm_too_small
check dlopen-libmpi dlopen_libmpi
check heap-through-a-library heap_through_a_library
check malformed-preload-stops-launch malformed_preload_stops_launch
check debian-built-program-runs debian_program_runs
check deb-package-beside-debian-mpich bash "$top/test/checks/deb_package.sh" "$work"
check spin-chosen-by-cpus spin_chosen_by_cpus
check valgrind-clean valgrind_clean
check valgrind-reports-use-after-free-and-leak valgrind_reports
check readme-leads "$top/test/checks/readme_leads.sh"
check docs-list-every-knob-and-counter "$top/maint/doc-lists.sh" --check --install "$prefix"
check channel-calls-go-down python3 "$top/maint/check-layers.py" --obj "$BUILD_DIR/smheap-obj"
mkdir -p "$work/heap"
check heap-patterns-within-glibc-time "${heap_on[@]}" "$top/test/checks/heap_patterns.sh" "$work/heap" 5

echo "== 3. the project's MPI tests"
"$top/maint/run-suite.sh" --project --install "$prefix" | tee "$log/project.log"
add_counts "$log/project.log"
"$top/maint/run-suite.sh" --project --valgrind --install "$prefix" | tee "$log/project-valgrind.log"
add_counts "$log/project-valgrind.log"

echo "== 4. MPICH's test/mpi, CI subset"
"$top/maint/run-suite.sh" --dirs ci --install "$prefix" \
    --expected "$top/test/mpi/expected-failures-smheap.txt" | tee "$log/mpich.log"
add_counts "$log/mpich.log"

echo "== 5. on simulated nodes (maint/nodes/mpiexec-nodes)"
# Every project test on 2 nodes in blocks of 2 ranks, and on 3 nodes with one rank each
# (round-robin: the path tests then expect sockets between ranks 0 and 1).
for layout in "2 all" "3:1 all"; do
    set -- $layout
    "$top/maint/run-suite.sh" --project --install "$prefix" --nodes "$1" --dirs "$2" \
        --expected "$top/test/mpi/expected-failures-smheap-nodes.txt" |
        tee "$log/project-nodes-$1.log"
    add_counts "$log/project-nodes-$1.log"
done
# Every project test again on 2 nodes over libfabric (tcp;ofi_rxm between the nodes).
MPIR_CVAR_CH3_SMHEAP_NET=ofi FI_PROVIDER=tcp \
    "$top/maint/run-suite.sh" --project --install "$prefix" --nodes 2 --dirs all \
    --expected "$top/test/mpi/expected-failures-smheap-nodes.txt" |
    tee "$log/project-nodes-ofi.log"
add_counts "$log/project-nodes-ofi.log"
# MPICH's CI subset again, on 2 nodes in blocks (spawned jobs land on the second node).
"$top/maint/run-suite.sh" --dirs ci \
    --install "$prefix" --nodes 2 --expected "$top/test/mpi/expected-failures-smheap.txt" |
    tee "$log/mpich-nodes.log"
add_counts "$log/mpich-nodes.log"

echo "== 6. Debian's ScaLAPACK testers (4 ranks; maint/run-scalapack.sh)"
"$top/maint/run-scalapack.sh" --install "$prefix" | tee "$log/scalapack.log"
add_counts "$log/scalapack.log"
"$top/maint/run-scalapack.sh" --install "$prefix" --nodes 2 | tee "$log/scalapack-nodes.log"
add_counts "$log/scalapack-nodes.log"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
