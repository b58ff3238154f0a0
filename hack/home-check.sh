#!/usr/bin/env bash
# home-check.sh holds the tests to leaving the user's home alone: `snapshot FILE` lists what is under $HOME but for
# the build caches that the tests fill on purpose; `compare FILE` fails naming every path added since the snapshot.
# `make unit` runs the unit suite between the two (the e2e suite's teardown snapshot compares $HOME itself).
set -euo pipefail

entries() {
  local caches=("$HOME/.cache/go-build" "$HOME/go" "$HOME/.config/go" "$HOME/.cache/gleaner" "$HOME/.cache/golangci-lint")
  local v
  for v in GOCACHE GOMODCACHE GOPATH GLEANER_CACHE; do [[ -n ${!v:-} ]] && caches+=("${!v}"); done
  local prune=() c
  for c in "${caches[@]}"; do prune+=(-path "$c" -prune -o); done
  # Four levels reach a client cache (~/.kube/cache/discovery/HOST) without walking whole toolchains.
  find "$HOME" -mindepth 1 -maxdepth 4 "${prune[@]}" -print 2>/dev/null | sort
}

case ${1:-} in
  snapshot) entries >"$2" ;;
  compare)
    added=$(comm -13 "$2" <(entries))
    if [[ -n $added ]]; then
      printf 'home-check: the tests wrote into the user'"'"'s home (%s); every client must keep its caches in the test'"'"'s own directories:\n%s\n' "$HOME" "$added" >&2
      exit 1
    fi ;;
  *) echo "usage: hack/home-check.sh snapshot|compare FILE" >&2; exit 2 ;;
esac
