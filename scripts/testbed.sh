#!/usr/bin/env bash
# A cluster on one machine, from the kernel's own parts (docs/testbed.md): nodes are network, mount
# and UTS namespaces on a bridge through tc-shaped veth links; each node has its own NVMe (a
# file-backed loop device with ext4, its rates capped by the blkio cgroup) and its own /dev/shm;
# one shared remote tier (another capped loop device) is visible from every node with one cap for
# all of them together. Open MPI launches ranks on the nodes through a launch agent that enters a
# node's namespaces and cgroup (no sshd).
#
#   scripts/testbed.sh check                      what this machine lacks (exit 3 and the reasons)
#   scripts/testbed.sh up [OPTIONS]               build it (refuses when one of that name is up)
#   scripts/testbed.sh down                       tear it down (also what a failed `up` left)
#   scripts/testbed.sh status [--counters]        what is up, leftovers, bytes per link and tier
#   scripts/testbed.sh exec NODE CMD...           run CMD on a node (n1, n2, ...)
#   scripts/testbed.sh mpirun MPIRUN_ARGS...      mpirun from n1 with the testbed's agent and networks
#   scripts/testbed.sh link RATE                  change every link's rate between runs
#   scripts/testbed.sh hostfile                   print the Open MPI hostfile (n1 slots=..., ...)
#
# Options of `up` (rates in bytes/s with K, M, G = 10^3, 10^6, 10^9; sizes with K, M, G = 2^10...):
#   --nodes N            nodes n1..nN (default 2)
#   --link RATE[:DELAY]  each node's link to the switch, tc syntax (default 1gbit); a delay needs
#                        the kernel's sch_netem, and is refused by name where it is missing
#   --nvme READ:WRITE    each node's NVMe caps (default 400M:300M)
#   --nvme-size SIZE     each node's NVMe (default 4G, a sparse file)
#   --remote READ:WRITE  the shared tier's caps, all nodes together (default 300M:200M)
#   --remote-size SIZE   the shared tier (default 8G)
#   --shm-size SIZE      each node's /dev/shm (default 2G)
#   --slots N            MPI slots per node in the hostfile (default 2)
#   --cpus-per-node N    give each node N CPUs of its own (a cpuset: n1 the first N, n2 the next N,
#                        ...; needs nodes x N <= the machine's CPUs); 0 = every node shares all
#                        CPUs (default 0)
#   --dir DIR            where the loop devices' backing files go (default /var/tmp)
# Every command takes --name NAME first (default tb), so several testbeds (CI's) can coexist.
#
# Paths on a node: /mnt/mlpo-NAME/nvme (its own NVMe), /mnt/mlpo-NAME/remote (the shared tier),
# /dev/shm (its own tmpfs). Addresses 10.213.0.I/24 exist only inside the testbed's namespaces;
# nothing is sent anywhere else. I/O must be O_DIRECT to be capped (the v1 blkio controller does
# not throttle buffered writeback): MLPO's I/O engine uses O_DIRECT by default.
set -eEuo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
self="$here/testbed.sh"

name=tb
if [ "${1:-}" = --name ]; then
  name="${2:?--name NAME}"
  shift 2
fi
[[ "$name" =~ ^[a-z0-9]{1,6}$ ]] || { echo "testbed: --name '$name': use 1-6 lowercase letters or digits" >&2; exit 2; }
prefix="mlpo-$name"
state="/run/$prefix"
mnt="/mnt/$prefix"
cgroup="/sys/fs/cgroup/blkio/$prefix"
cpusets="/sys/fs/cgroup/cpuset/$prefix"  # one child per node when nodes have CPUs of their own
subnet="10.213.0"

die() { echo "testbed: $*" >&2; exit 2; }
say() { echo "testbed($name): $*"; }

# ---- parsing helpers ---------------------------------------------------------------------
rate_bytes() {  # 600M -> 600000000 (decimal units, bytes/s)
  local v="$1" n unit
  [[ "$v" =~ ^([0-9]+)([KMG]?)$ ]] || die "rate '$v': use a number of bytes/s with K, M or G (e.g. 400M)"
  n="${BASH_REMATCH[1]}"
  unit="${BASH_REMATCH[2]}"
  case "$unit" in K) echo $((n * 1000)) ;; M) echo $((n * 1000000)) ;; G) echo $((n * 1000000000)) ;; *) echo "$n" ;; esac
}
size_check() {
  [[ "$1" =~ ^[0-9]+[KMG]$ ]] || die "size '$1': use a number with K, M or G (e.g. 4G)"
}
pair() {  # READ:WRITE -> "read write" in bytes/s
  [[ "$1" == *:* ]] || die "'$1': give READ:WRITE (e.g. 400M:300M)"
  echo "$(rate_bytes "${1%%:*}") $(rate_bytes "${1##*:}")"
}
tc_rate_bytes() {  # 1gbit -> bytes/s
  [[ "$1" =~ ^([0-9]+)(bit|kbit|mbit|gbit)$ ]] || die "rate '$1': a tc rate (e.g. 1gbit, 500mbit)"
  local n="${BASH_REMATCH[1]}"
  case "${BASH_REMATCH[2]}" in bit) echo $((n / 8)) ;; kbit) echo $((n * 125)) ;; mbit) echo $((n * 125000)) ;; gbit) echo $((n * 125000000)) ;; esac
}
burst_for() {  # a token bucket's burst: 10 ms of the rate, at least two 64 KiB GSO frames
  local rb
  rb=$(tc_rate_bytes "$1")
  echo $((rb / 100 > 131072 ? rb / 100 : 131072))
}

# ---- check: what the machine must give ---------------------------------------------------
missing() {
  local why=()
  [ "$(id -u)" = 0 ] || why+=("not root (namespaces, loop devices and cgroups need root)")
  for tool in ip tc losetup mkfs.ext4 nsenter unshare mount mpirun lsblk setsid; do
    command -v "$tool" >/dev/null 2>&1 || why+=("no $tool")
  done
  [ -e /dev/loop-control ] || why+=("no loop devices (/dev/loop-control)")
  [ -w /sys/fs/cgroup/blkio ] && [ -e /sys/fs/cgroup/blkio/blkio.throttle.read_bps_device ] ||
    why+=("no cgroup-v1 blkio controller with throttling at /sys/fs/cgroup/blkio")
  if [ "$(id -u)" = 0 ] && command -v ip >/dev/null 2>&1; then
    local probe="mlpo-check-$$"
    if ip netns add "$probe" 2>/dev/null; then
      ip netns del "$probe"
    else
      why+=("network namespaces unavailable (ip netns add failed)")
    fi
  fi
  [ ${#why[@]} = 0 ] || printf '%s\n' "${why[@]}"
}

# ---- traces ----------------------------------------------------------------------------------
holders() {  # the PIDs of this testbed's namespace holders, by the variable they carry
  pgrep -x sleep 2>/dev/null | while read -r pid; do
    { tr '\0' '\n' < "/proc/$pid/environ"; } 2>/dev/null | grep -qx "MLPO_TESTBED=$name" && echo "$pid"
  done
  return 0
}

leftovers() {  # every trace of a testbed of this name
  ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$prefix-" | sed 's/^/netns /' || true
  losetup -nO NAME,BACK-FILE 2>/dev/null | grep -E "/$prefix/img/" | sed 's/^/loop /' || true
  awk -v p="/$prefix" 'index($2 "/", p "/") {print "mount " $2}' /proc/mounts
  [ -d "$cgroup" ] && echo "cgroup $cgroup"
  [ -d "$cpusets" ] && echo "cgroup $cpusets"
  [ -d "$state" ] && echo "state $state"
  holders | sed 's/^/holder /'
  return 0
}

load_state() {
  [ -f "$state/env" ] || die "no testbed '$name' is up (scripts/testbed.sh --name $name up)"
  # shellcheck disable=SC1091
  . "$state/env"
}

node_list() { seq 1 "$NODES" | sed 's/^/n/'; }

dead_nodes() {  # the nodes whose namespace holder is gone (killed, or the machine restarted)
  local node
  for node in $(node_list); do
    kill -0 "$(cat "$state/$node.pid" 2>/dev/null || echo 0)" 2>/dev/null || echo "$node"
  done
  return 0
}

# ---- entering a node -------------------------------------------------------------------------
enter() {  # enter NODE CMD...: CMD in the node's namespaces and the testbed's cgroup
  local node="$1"
  shift
  [ -f "$state/$node.pid" ] || die "no node '$node' (the nodes are $(node_list | xargs))"
  kill -0 "$(cat "$state/$node.pid")" 2>/dev/null ||
    die "node $node's namespace holder is gone (killed, or the machine restarted): scripts/testbed.sh --name $name down, then up"
  # Through the holder's /proc entries, which every mount namespace sees (the agent, called from
  # inside n1, enters n2 the same way).
  local cpus=":"  # and the node's cpuset, when it has CPUs of its own
  [ "${CPUS_PER_NODE:-0}" -gt 0 ] && cpus="echo \$\$ > $cpusets/$node/cgroup.procs"
  exec nsenter -t "$(cat "$state/$node.pid")" --net --mount --uts -- \
    sh -c "echo \$\$ > $cgroup/cgroup.procs && $cpus && exec \"\$@\"" sh "$@"
}

wait_for_node() {  # until the holder has its hostname and mounts
  local pid
  pid="$(cat "$state/$1.pid")"
  for _ in $(seq 1 100); do
    [ "$(nsenter -t "$pid" --uts hostname 2>/dev/null)" = "$1" ] &&
      nsenter -t "$pid" --mount grep -q " $mnt/nvme " /proc/self/mounts 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || die "node $1's namespaces did not come up"
    sleep 0.05
  done
  die "node $1's namespaces did not come up within 5 s"
}

# ---- up --------------------------------------------------------------------------------------
make_disk() {  # make_disk LABEL SIZE MOUNTPOINT READ WRITE: a capped loop device with ext4
  # Without a journal: jbd2's commit every 5 s goes through the same capped device and stalled
  # both directions for 1-2 s of every 5 (fio, a reader and a writer: 0.84 / 0.87 of the caps
  # with it, 0.98 / 1.00 without; docs/benchmarks.md, "The update against its bound").
  local img="$BASE/img/$1.img" dev majmin
  truncate -s "$2" "$img"
  dev="$(losetup --find --show --direct-io=on "$img")"
  mkfs.ext4 -q -F -O ^has_journal -E lazy_itable_init=0 -L "$prefix-$1" "$dev"
  mkdir -p "$3"
  mount -o noatime "$dev" "$3"
  majmin="$(lsblk -dno MAJ:MIN "$dev" | tr -d ' ')"
  echo "$majmin $4" > "$cgroup/blkio.throttle.read_bps_device"
  echo "$majmin $5" > "$cgroup/blkio.throttle.write_bps_device"
  echo "$1 $dev $majmin" >> "$state/devices"
}

make_node() {  # make_node I: namespaces, link, NVMe and holder of node nI
  local i="$1" node="n$1" ns="$prefix-n$1" sw="$prefix-sw" burst
  burst=$(burst_for "$LINK")
  make_disk "$node" "$NVME_SIZE" "$BASE/mnt/$node" "$NVME_READ" "$NVME_WRITE"
  chmod 1777 "$BASE/mnt/$node"
  ip netns add "$ns"
  ip link add "${name}${node}a" type veth peer name "${name}${node}b"
  ip link set "${name}${node}a" netns "$ns"
  ip link set "${name}${node}b" netns "$sw"
  ip -n "$ns" link set "${name}${node}a" name eth0
  ip -n "$ns" addr add "$subnet.$i/24" dev eth0
  ip -n "$ns" link set lo up
  ip -n "$ns" link set eth0 up
  ip -n "$sw" link set "${name}${node}b" master br0
  ip -n "$sw" link set "${name}${node}b" up
  # The link, shaped both ways: the node's egress, and the switch's egress towards the node.
  ip netns exec "$ns" tc qdisc add dev eth0 root tbf rate "$LINK" burst "$burst" latency 100ms
  ip netns exec "$sw" tc qdisc add dev "${name}${node}b" root tbf rate "$LINK" burst "$burst" latency 100ms
  # Its own mount namespace (NVMe at the common path, /dev/shm, /etc/hosts) and hostname, held by
  # a sleeping process whose /proc/PID/ns entries `enter` joins.
  MLPO_TESTBED=$name setsid nsenter --net="/run/netns/$ns" unshare --mount --uts --propagation slave sh -c "
    hostname $node &&
    mount --bind '$BASE/mnt/$node' '$mnt/nvme' &&
    mount -t tmpfs -o size=$SHM_SIZE,mode=1777 tmpfs /dev/shm &&
    mount --bind '$state/hosts' /etc/hosts &&
    exec sleep infinity" < /dev/null > /dev/null 2>&1 &
  echo $! > "$state/$node.pid"
  wait_for_node "$node"
}

up() {
  local nodes=2 link=1gbit nvme=400M:300M nvme_size=4G remote=300M:200M remote_size=8G shm_size=2G slots=2
  local cpus_per_node=0
  local dir=/var/tmp
  while [ $# -gt 0 ]; do
    [ $# -ge 2 ] || die "up: '$1' needs a value"
    case "$1" in
      --nodes) nodes="$2" ;;
      --link) link="$2" ;;
      --nvme) nvme="$2" ;;
      --nvme-size) nvme_size="$2" ;;
      --remote) remote="$2" ;;
      --remote-size) remote_size="$2" ;;
      --shm-size) shm_size="$2" ;;
      --slots) slots="$2" ;;
      --cpus-per-node) cpus_per_node="$2" ;;
      --dir) dir="$2" ;;
      *) die "up: unknown option '$1' (see the header of scripts/testbed.sh)" ;;
    esac
    shift 2
  done
  [[ "$nodes" =~ ^[0-9]+$ ]] && [ "$nodes" -ge 1 ] && [ "$nodes" -le 16 ] || die "--nodes $nodes: 1 to 16"
  [[ "$slots" =~ ^[0-9]+$ ]] && [ "$slots" -ge 1 ] || die "--slots $slots: at least 1"
  [[ "$cpus_per_node" =~ ^[0-9]+$ ]] || die "--cpus-per-node $cpus_per_node: a whole number (0 = share all CPUs)"
  [ $((nodes * cpus_per_node)) -le "$(nproc --all)" ] ||
    die "--cpus-per-node $cpus_per_node: $nodes nodes x $cpus_per_node CPUs > the machine's $(nproc --all); give fewer (0 = share all)"
  [ "$cpus_per_node" = 0 ] || [ -e /sys/fs/cgroup/cpuset/cpuset.cpus ] ||
    die "--cpus-per-node: no cgroup-v1 cpuset controller at /sys/fs/cgroup/cpuset; leave it out (nodes share the CPUs)"
  size_check "$nvme_size"
  size_check "$remote_size"
  size_check "$shm_size"
  local rates nvme_read nvme_write remote_read remote_write
  rates="$(pair "$nvme")" || exit 2
  read -r nvme_read nvme_write <<< "$rates"
  rates="$(pair "$remote")" || exit 2
  read -r remote_read remote_write <<< "$rates"
  local link_rate="${link%%:*}" link_delay=""
  [[ "$link" == *:* ]] && link_delay="${link#*:}"
  tc_rate_bytes "$link_rate" > /dev/null || exit 2
  if [ -n "$link_delay" ] && ! zcat /proc/config.gz 2>/dev/null | grep -q '^CONFIG_NET_SCH_NETEM=[ym]'; then
    die "--link $link: a delay needs the kernel's sch_netem (CONFIG_NET_SCH_NETEM), which this kernel lacks; give the rate alone"
  fi
  [ -z "$link_delay" ] || die "--link $link: delays are not implemented yet; give the rate alone"
  local why
  why="$(missing)"
  [ -z "$why" ] || { echo "testbed: cannot build a testbed here:" >&2; echo "$why" | sed 's/^/  /' >&2; exit 3; }
  [ -z "$(leftovers)" ] ||
    die "testbed '$name' is up or left traces ($(leftovers | head -3 | xargs)); run: scripts/testbed.sh --name $name down"

  # From here on, any failure or signal tears down what was made.
  trap 'rc=$?; trap - EXIT; [ $rc = 0 ] || { echo "testbed: up failed or was interrupted; tearing down" >&2; down > /dev/null 2>&1; }; exit $rc' EXIT
  trap 'exit 130' INT TERM
  mkdir -p "$state" "$mnt/nvme" "$mnt/remote"
  cat > "$state/env" <<EOF
NODES=$nodes
SLOTS=$slots
CPUS_PER_NODE=$cpus_per_node
LINK=$link_rate
NVME_READ=$nvme_read
NVME_WRITE=$nvme_write
NVME_SIZE=$nvme_size
REMOTE_READ=$remote_read
REMOTE_WRITE=$remote_write
SHM_SIZE=$shm_size
BASE=$dir/$prefix
EOF
  load_state
  mkdir -p "$BASE/img" "$BASE/mnt"

  # The capped devices: one cgroup for every testbed process, a rule per device. Each node's
  # processes touch only their own NVMe, so its rule is that node's cap; the remote device's
  # rule is one token bucket shared by all of them (the v1 controller is not hierarchical, so a
  # parent's cap would not bind its children: one cgroup is what makes the cap aggregate).
  mkdir -p "$cgroup"
  if [ "$cpus_per_node" -gt 0 ]; then  # node i: CPUs (i-1)*N .. i*N-1, all memory nodes
    mkdir -p "$cpusets"
    cat /sys/fs/cgroup/cpuset/cpuset.mems > "$cpusets/cpuset.mems"
    echo "0-$((nodes * cpus_per_node - 1))" > "$cpusets/cpuset.cpus"
    for i in $(seq 1 "$nodes"); do
      mkdir -p "$cpusets/n$i"
      cat "$cpusets/cpuset.mems" > "$cpusets/n$i/cpuset.mems"
      echo "$(((i - 1) * cpus_per_node))-$((i * cpus_per_node - 1))" > "$cpusets/n$i/cpuset.cpus"
    done
  fi
  make_disk remote "$remote_size" "$mnt/remote" "$remote_read" "$remote_write"
  chmod 1777 "$mnt/remote"

  # The switch: a bridge in a namespace of its own (nothing is added to this machine's network).
  ip netns add "$prefix-sw"
  ip -n "$prefix-sw" link add br0 type bridge
  ip -n "$prefix-sw" link set br0 up
  { echo "127.0.0.1 localhost"; for i in $(seq 1 "$nodes"); do echo "$subnet.$i n$i"; done; } > "$state/hosts"
  for i in $(seq 1 "$nodes"); do make_node "$i"; done

  # The launch agent Open MPI calls like ssh: agent HOST COMMAND...
  cat > "$state/agent" <<EOF
#!/bin/sh
node="\$1"; shift
exec "$self" --name "$name" agent "\$node" "\$@"
EOF
  chmod +x "$state/agent"
  for i in $(seq 1 "$nodes"); do echo "n$i slots=$slots"; done > "$state/hostfile"
  trap - EXIT INT TERM
  local cpus="all CPUs shared"
  [ "$cpus_per_node" -gt 0 ] && cpus="$cpus_per_node CPU(s) per node"
  say "up: $nodes nodes on $subnet.0/24, links $link_rate, NVMe $nvme per node at $mnt/nvme, remote $remote for all at $mnt/remote, /dev/shm $shm_size per node, $cpus"
}

# ---- down ------------------------------------------------------------------------------------
down() {
  local -  # the options below end with the function
  set +eE  # every step runs, whatever the ones before it found
  local errors=0 base=""
  # Processes still in the testbed's cgroup (ranks, agents) end first, then the holders.
  if [ -f "$cgroup/cgroup.procs" ]; then
    xargs -r kill -TERM < "$cgroup/cgroup.procs" 2>/dev/null
    sleep 0.5
    xargs -r kill -KILL < "$cgroup/cgroup.procs" 2>/dev/null
  fi
  holders | xargs -r kill -KILL 2>/dev/null
  ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$prefix-" | while read -r ns; do ip netns del "$ns"; done
  awk -v p="/$prefix" 'index($2 "/", p "/") {print $2}' /proc/mounts | sort -r | while read -r m; do
    umount "$m" 2>/dev/null || umount -l "$m"
  done
  losetup -nO NAME,BACK-FILE 2>/dev/null | grep -E "/$prefix/img/" | awk '{print $1}' | while read -r dev; do
    losetup -d "$dev"
  done
  if [ -d "$cgroup" ]; then
    rmdir "$cgroup" 2>/dev/null || { sleep 1; rmdir "$cgroup"; } || errors=1
  fi
  if [ -d "$cpusets" ]; then
    for c in "$cpusets"/n*/; do [ -d "$c" ] && { rmdir "$c" 2>/dev/null || { sleep 1; rmdir "$c"; } || errors=1; }; done
    rmdir "$cpusets" 2>/dev/null || errors=1
  fi
  [ -f "$state/env" ] && base="$(sed -n 's/^BASE=//p' "$state/env")"
  [ -n "$base" ] && [ -d "$base" ] && rm -rf "$base"
  rm -rf "$state"
  rmdir "$mnt/nvme" "$mnt/remote" "$mnt" 2>/dev/null
  local left
  left="$(leftovers)"
  if [ -n "$left" ] || [ $errors = 1 ]; then
    echo "testbed: down left traces:" >&2
    echo "$left" | sed 's/^/  /' >&2
    exit 1
  fi
  say "down: nothing left"
}

# ---- status ----------------------------------------------------------------------------------
counters() {  # bytes sent on each link (both directions) and read/written per tier device
  for node in $(node_list); do
    local out in
    out=$(ip netns exec "$prefix-$node" tc -s qdisc show dev eth0 | awk '/Sent/ {print $2; exit}')
    in=$(ip netns exec "$prefix-sw" tc -s qdisc show dev "${name}${node}b" | awk '/Sent/ {print $2; exit}')
    echo "link $node sent $out received $in"
  done
  while read -r label dev majmin; do
    local read write
    read=$(awk -v d="$majmin" '$1 == d && $2 == "Read" {print $3}' "$cgroup/blkio.throttle.io_service_bytes")
    write=$(awk -v d="$majmin" '$1 == d && $2 == "Write" {print $3}' "$cgroup/blkio.throttle.io_service_bytes")
    echo "tier $label ($dev) read ${read:-0} written ${write:-0}"
  done < "$state/devices"
}

status() {
  if [ ! -f "$state/env" ]; then
    local left
    left="$(leftovers)"
    [ -z "$left" ] && { say "not up, nothing left behind"; return 0; }
    say "not up, but these traces remain (scripts/testbed.sh --name $name down removes them):"
    echo "$left" | sed 's/^/  /'
    return 1
  fi
  load_state
  local dead
  dead="$(dead_nodes | xargs)"
  if [ -n "$dead" ]; then
    say "broken: the namespace holders of $dead are gone (killed, or the machine restarted); scripts/testbed.sh --name $name down removes what remains, then up"
    return 1
  fi
  local cpus="all CPUs shared"
  [ "${CPUS_PER_NODE:-0}" -gt 0 ] && cpus="$CPUS_PER_NODE CPU(s) per node"
  say "up: $NODES nodes, links $LINK, NVMe read $NVME_READ write $NVME_WRITE B/s per node, remote read $REMOTE_READ write $REMOTE_WRITE B/s in all, $cpus"
  [ "${1:-}" = --counters ] && counters
  return 0
}

# ---- main ------------------------------------------------------------------------------------
cmd="${1:-}"
[ $# -gt 0 ] && shift
case "$cmd" in
  check)
    why="$(missing)"
    [ -z "$why" ] && { say "this machine can build a testbed"; exit 0; }
    echo "$why"
    exit 3
    ;;
  up) up "$@" ;;
  down) down ;;
  status) status "$@" ;;
  exec)
    load_state
    [ $# -ge 2 ] || die "exec NODE CMD..."
    enter "$@"
    ;;
  agent)  # called by Open MPI through $state/agent: HOST COMMAND... (one string or several words)
    load_state
    node="$1"
    shift
    enter "$node" sh -c "$*"
    ;;
  mpirun)
    load_state
    # A node with fewer CPUs than MPI slots is oversubscribed, but Open MPI only sees the
    # slots: without this its ranks busy-poll while they wait in a collective and take the
    # node's CPU from the ranks still computing (as mpirun does by itself when it knows).
    yield=()
    [ "${CPUS_PER_NODE:-0}" -gt 0 ] && [ "${CPUS_PER_NODE}" -lt "${SLOTS:-1}" ] && yield=(--mca mpi_yield_when_idle 1)
    enter n1 mpirun --allow-run-as-root --hostfile "$state/hostfile" \
      --mca plm_rsh_agent "$state/agent" --mca plm_rsh_no_tree_spawn 1 \
      --mca oob_tcp_if_include "$subnet.0/24" --mca btl_tcp_if_include "$subnet.0/24" \
      --mca btl self,vader,tcp "${yield[@]}" "$@"
    ;;
  link)
    load_state
    rate="${1:?link RATE}"
    tc_rate_bytes "$rate" > /dev/null || exit 2
    burst=$(burst_for "$rate")
    for node in $(node_list); do
      ip netns exec "$prefix-$node" tc qdisc change dev eth0 root tbf rate "$rate" burst "$burst" latency 100ms
      ip netns exec "$prefix-sw" tc qdisc change dev "${name}${node}b" root tbf rate "$rate" burst "$burst" latency 100ms
    done
    sed -i "s/^LINK=.*/LINK=$rate/" "$state/env"
    say "links now $rate"
    ;;
  hostfile)
    load_state
    cat "$state/hostfile"
    ;;
  *) die "unknown command '$cmd'; use check, up, down, status, exec, mpirun, link or hostfile" ;;
esac
