#!/usr/bin/env bash
# stages.sh runs make targets as the stages of one run (`make test`) and says what each cost: a line as each stage
# ends, and a table at the end, also when a stage fails. A run that takes longer than GLEANER_STAGES_WARN gets a
# warning in its log (not a failure): CI stops a run at 90 minutes, and the warning shows creeping growth before it
# costs a submission. docs/development.md has the measured tables and what each stage does.
#
# Usage: hack/stages.sh STAGE...
#   TARGET           a make target, run in the foreground, in order
#   &T1,T2,...       make targets run one after the other in the background, at the lowest CPU priority (nice 19),
#                    beside the foreground stages that follow: they use the CPU those stages leave idle (a test suite
#                    waiting on its API server or its pods) and take almost none from them. Their output goes to
#                    GLEANER_STAGES_DIR/T.log and is printed at the next `wait`.
#   wait             waits for the background targets, prints their output, and fails if one failed. A foreground
#                    stage that measures the node's CPU (the e2e suites) must come after a wait.
#
# Environment:
#   GLEANER_STAGES_WARN  seconds after which the summary warns (default 4200: 70 minutes)
#   GLEANER_STAGES_DIR   where the background logs and the summary (summary.txt) go (default bin/stages)
#   MAKE                 the make to run (default make)
set -euo pipefail
cd "$(dirname "$0")/.."

WARN=${GLEANER_STAGES_WARN:-4200}
DIR=${GLEANER_STAGES_DIR:-bin/stages}
MAKE=${MAKE:-make}
mkdir -p "$DIR"
rm -f "$DIR"/*.log "$DIR/summary.txt" "$DIR/background.times"

start=$(date +%s)
rows=()     # "name|start|wall|result" per stage, in the order they ended
bg_pid=""   # the background chain's process (its own process group)
bg_names="" # its targets, for the table when it is killed

now() { echo $(($(date +%s) - start)); }
# dur SECONDS prints 1h02m03s, 2m03s or 3s.
dur() {
  local s=$1
  if [[ -z $s ]]; then printf -- '-'
  elif ((s >= 3600)); then printf '%dh%02dm%02ds' $((s / 3600)) $((s % 3600 / 60)) $((s % 60))
  elif ((s >= 60)); then printf '%dm%02ds' $((s / 60)) $((s % 60))
  else printf '%ds' "$s"; fi
}

summary() {
  local rc=$? total r name at wall result
  total=$(now)
  if [[ -n $bg_pid ]] && kill -0 "$bg_pid" 2>/dev/null; then
    # A foreground stage failed before the wait: the background chain is ended with the run.
    kill -- "-$bg_pid" 2>/dev/null || true
    wait "$bg_pid" 2>/dev/null || true
    collect_background "ended with the run"
  fi
  {
    printf '\nstages: %s, %s CPUs, CI=%s, commit %s\n' "$(uname -n)" "$(nproc)" "${CI:-}" \
      "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    printf '  %-30s %9s %9s  %s\n' stage start wall result
    for r in "${rows[@]}"; do
      IFS='|' read -r name at wall result <<<"$r"
      printf '  %-30s %9s %9s  %s\n' "$name" "$(dur "$at")" "$(dur "$wall")" "$result"
    done
    printf '  %-30s %9s %9s  %s\n' total "" "$(dur "$total")" "$([[ $rc == 0 ]] && echo passed || echo "failed (exit $rc)")"
    if ((total > WARN)); then
      printf 'stages: WARNING: this run took %s, more than the %s aimed at; CI stops a run at 1h30m00s: see which stage grew (docs/development.md has the last measured table)\n' \
        "$(dur "$total")" "$(dur "$WARN")"
    fi
  } | tee "$DIR/summary.txt"
  exit "$rc"
}
trap summary EXIT

# collect_background adds the background targets' rows (from the times file their chain wrote) and prints their
# logs; a target that never ended is marked with $1.
collect_background() {
  local why=$1 name at wall rc seen=" "
  if [[ -f $DIR/background.times ]]; then
    while read -r name at wall rc; do
      rows+=("&$name|$at|$wall|$([[ $rc == 0 ]] && echo ok || echo "FAILED (exit $rc)")")
      seen+="$name "
    done <"$DIR/background.times"
  fi
  for name in $bg_names; do
    if [[ $seen != *" $name "* ]]; then rows+=("&$name|||$why"); fi
    if [[ -s $DIR/$name.log ]]; then
      printf '\n----- background stage %s: its output -----\n' "$name"
      cat "$DIR/$name.log"
      printf -- '----- end of %s -----\n' "$name"
    fi
  done
  rm -f "$DIR/background.times"
  bg_pid="" bg_names=""
}

for stage in "$@"; do
  case $stage in
    '&'*)
      [[ -z $bg_pid ]] || { echo "stages: one background chain at a time: wait before $stage" >&2; exit 2; }
      IFS=',' read -ra targets <<<"${stage#&}"
      bg_names="${targets[*]}"
      echo "stages: starting in the background at the lowest CPU priority: ${targets[*]} (logs in $DIR)"
      # set -m gives the chain a process group of its own, so that a failed run can end all of it.
      set -m
      (
        for t in "${targets[@]}"; do
          t0=$(now)
          rc=0
          nice -n 19 "$MAKE" --no-print-directory "$t" >"$DIR/$t.log" 2>&1 </dev/null || rc=$?
          echo "$t $t0 $(($(now) - t0)) $rc" >>"$DIR/background.times"
          [[ $rc == 0 ]] || exit "$rc"
        done
      ) &
      bg_pid=$!
      set +m
      ;;
    wait)
      [[ -n $bg_pid ]] || continue
      t0=$(now)
      echo "stages: waiting for the background stages: $bg_names"
      rc=0
      wait "$bg_pid" || rc=$?
      names=$bg_names
      collect_background "not reached"
      rows+=("(waited for $names)|$t0|$(($(now) - t0))|$([[ $rc == 0 ]] && echo ok || echo FAILED)")
      if [[ $rc != 0 ]]; then
        echo "stages: a background stage failed (exit $rc); its output is above" >&2
        exit "$rc"
      fi
      ;;
    *)
      t0=$(now)
      echo "stages: $stage (at $(dur "$t0"))"
      rc=0
      "$MAKE" --no-print-directory "$stage" || rc=$?
      rows+=("$stage|$t0|$(($(now) - t0))|$([[ $rc == 0 ]] && echo ok || echo "FAILED (exit $rc)")")
      echo "stages: $stage took $(dur $(($(now) - t0))) (at $(dur "$(now)"))"
      [[ $rc == 0 ]] || exit "$rc"
      ;;
  esac
done
if [[ -n $bg_pid ]]; then
  echo "stages: a background chain was started and never waited for" >&2
  exit 2
fi
