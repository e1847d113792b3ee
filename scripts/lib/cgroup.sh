# A process tree's cgroups of its own, in every hierarchy of the machine (sourced; bash):
# what scripts/rkt-host and tests/lib/systemd-env give the systemd they start.

# Every v1 and v2 hierarchy of the machine.
rkl_cgroup_hierarchies() {
        local h
        for h in /sys/fs/cgroup /sys/fs/cgroup/*; do
                [ -f "$h/cgroup.procs" ] && echo "$h"
        done
}

# Moves the calling shell ($BASHPID) into NAME under each hierarchy, made if need be. A new
# cpuset cgroup has no CPUs and no memory nodes and takes no process until it has: without
# its parent's, the process would stay in the machine's root cpuset, and every private host
# would share that one tree (where two kubelets remove each other's pod cgroups).
rkl_cgroup_move_self() {
        local h f
        for h in $(rkl_cgroup_hierarchies); do
                mkdir -p "$h/$1" 2>/dev/null || continue
                for f in cpuset.cpus cpuset.mems; do
                        if [ -f "$h/$f" ] && [ -z "$(cat "$h/$1/$f" 2>/dev/null)" ]; then
                                cat "$h/$f" >"$h/$1/$f" 2>/dev/null || true
                        fi
                done
                echo "$BASHPID" >"$h/$1/cgroup.procs" 2>/dev/null || true
        done
}
