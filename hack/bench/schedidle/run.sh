#!/usr/bin/env bash
# How a service's wake-up and request latency fare beside CPU-bound best-effort work, under each way the agent can
# make that work yield (docs/benchmarks.md, "CPU idle: the group's or the tasks'"). On cgroup v1 (this project's
# machines), as root. Each setting runs DURATION seconds, ROUNDS times, the settings interleaved so that a change
# in the machine's load spreads over all of them:
#
#   alone      the service with nothing beside it
#   shares     BURNERS spinning processes in two pod cgroups under a "besteffort" cgroup with cpu.shares 2, the
#              kubelet's value, and nothing else (Gleaner's cpuQOS off)
#   groupidle  the same with cpu.idle 1 on the besteffort cgroup (Gleaner's default today)
#   taskidle   cpu.shares 2 and cpu.idle 0 on the besteffort cgroup, every burner task SCHED_IDLE (chrt --idle)
#
# The service (service.c) sits in a sibling cgroup with cpu.shares 1024, wakes every PERIOD_US microseconds and
# does WORK_US of CPU work; it reports its wake-up delay and the time from its due time to the end of its work.
#
#   sudo hack/bench/schedidle/run.sh            # DURATION=20 ROUNDS=3 BURNERS=4 PERIOD_US=1000 WORK_US=100
set -euo pipefail
cd "$(dirname "$0")"
DURATION=${DURATION:-20}
ROUNDS=${ROUNDS:-3}
BURNERS=${BURNERS:-4}
PERIOD_US=${PERIOD_US:-1000}
WORK_US=${WORK_US:-100}
[[ $(id -u) == 0 ]] || { echo "schedidle: needs root (it makes cgroups)" >&2; exit 1; }
CPU=/sys/fs/cgroup/cpu
[[ -f $CPU/cpu.shares ]] || { echo "schedidle: needs the cgroup v1 cpu controller at $CPU" >&2; exit 1; }
[[ -f $CPU/cpu.idle ]] || { echo "schedidle: this kernel has no cpu.idle (Linux 5.15 or later)" >&2; exit 1; }

work=$(mktemp -d)
root=$CPU/gleaner-schedidle
burners=()
cleanup() {
  for p in "${burners[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for d in "$root"/be/pod0 "$root"/be/pod1 "$root"/be "$root"/svc "$root"; do rmdir "$d" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
gcc -O2 -Wall -o "$work/service" service.c
printf 'int main(void) { for (;;) ; }\n' >"$work/spin.c"
gcc -O0 -o "$work/spin" "$work/spin.c"
mkdir -p "$root/svc" "$root/be/pod0" "$root/be/pod1"
echo 1024 >"$root/svc/cpu.shares"

start_burners() {
  for ((i = 0; i < BURNERS; i++)); do
    "$work/spin" &
    local pid=$!
    burners+=("$pid")
    echo "$pid" >"$root/be/pod$((i % 2))/cgroup.procs"
  done
}

stop_burners() {
  for p in "${burners[@]}"; do kill "$p" 2>/dev/null || true; done
  wait "${burners[@]}" 2>/dev/null || true
  burners=()
}

run() { # setting
  local setting=$1
  echo 0 >"$root/be/cpu.idle"
  echo 2 >"$root/be/cpu.shares"
  case $setting in
    alone) ;;
    shares) start_burners ;;
    groupidle) start_burners; echo 1 >"$root/be/cpu.idle" ;;
    taskidle) start_burners; for p in "${burners[@]}"; do chrt --idle -p 0 "$p"; done ;;
  esac
  sleep 1
  local out
  out=$(bash -c 'echo $$ >"$1/svc/cgroup.procs" && exec "$2" "$3" "$4" "$5"' _ "$root" "$work/service" "$DURATION" "$PERIOD_US" "$WORK_US")
  stop_burners
  echo 0 >"$root/be/cpu.idle"
  printf '%-10s %s load=%s\n' "$setting" "$out" "$(cut -d' ' -f1 /proc/loadavg)"
}

echo "schedidle: $(uname -r), $(nproc) CPUs, $BURNERS burners, ${DURATION}s x $ROUNDS rounds, period ${PERIOD_US}us, work ${WORK_US}us"
for ((r = 1; r <= ROUNDS; r++)); do
  for s in alone shares groupidle taskidle; do
    run "$s"
  done
done
