#!/usr/bin/env bash
# Builds the fuzz targets and runs each one: first on the inputs of every
# crash fixed so far (fuzz/regressions/<target>/), then fuzzing from its
# seeds for a while. Fails on a crash, a failed assertion, a timeout or
# running out of memory (and a leak, with FUZZ_SANITIZER=address); prints
# how many executions each did.
#
#   fuzz/run.sh                      # every target, 20 s each (CI: FUZZ_TIME=10)
#   FUZZ_TIME=600 fuzz/run.sh wire   # one target, 10 minutes
#   FUZZ_RUNS=1000000 fuzz/run.sh    # a number of executions instead of a time
#   FUZZ_SANITIZER=address fuzz/run.sh   # with AddressSanitizer (leaks too)
#
# Needs cargo-fuzz (`cargo install cargo-fuzz --locked`). Only stable Rust is
# installed: RUSTC_BOOTSTRAP=1 lets it take the -Z flags that cargo-fuzz
# passes for the sanitizer and coverage instrumentation.
set -euo pipefail
cd "$(dirname "$0")/.."
export RUSTC_BOOTSTRAP=1

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(scenario trace wire external)
time_s=${FUZZ_TIME:-20}
limit=(-max_total_time="$time_s")
[ -z "${FUZZ_RUNS:-}" ] || limit=(-runs="$FUZZ_RUNS")
# -a: debug assertions and overflow checks, so arithmetic bugs are crashes.
# -s: no sanitizer by default. The code under test is safe Rust, whose
# bounds and overflow checks already crash; AddressSanitizer adds leak
# detection at 1.4x the build time (398 s against 284 s on 2 cores), so CI
# runs without it and a long run can ask for it: FUZZ_SANITIZER=address.
flags=(-a -s "${FUZZ_SANITIZER:-none}")

seeds() {
  case "$1" in
    scenario) echo scenarios fuzz/seeds/scenario ;;
    *) echo "fuzz/seeds/$1" ;;
  esac
}

for t in "${targets[@]}"; do
  cargo fuzz build "${flags[@]}" "$t" 2>&1 | sed -E '/^\s*(Compiling|Downloaded|Downloading)/d'
done

for t in "${targets[@]}"; do
  echo "-- fuzz target $t"
  if compgen -G "fuzz/regressions/$t/*" >/dev/null; then
    cargo fuzz run "${flags[@]}" "$t" fuzz/regressions/"$t"/* -- -runs=1 2>&1 |
      sed -n -E '/^Running:|^Executed|ERROR|panicked/p' ||
      { echo "fuzz target $t: a fixed crash is back (fuzz/regressions/$t)"; exit 1; }
  fi
  mkdir -p "fuzz/corpus/$t"
  log=$(mktemp)
  dict=()
  [ ! -f "fuzz/dicts/$t.dict" ] || dict=(-dict="fuzz/dicts/$t.dict")
  # shellcheck disable=SC2046
  if ! cargo fuzz run "${flags[@]}" "$t" "fuzz/corpus/$t" $(seeds "$t") -- \
    "${limit[@]}" "${dict[@]}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 >"$log" 2>&1; then
    grep -v -E '^#[0-9]+\s+(NEW|REDUCE|pulse)' "$log" | tail -60
    rm -f "$log"
    echo "fuzz target $t FAILED: the input is in fuzz/artifacts/$t/"
    exit 1
  fi
  grep -E 'INITED|DONE|^Done|stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' "$log"
  rm -f "$log"
done
