#!/usr/bin/env bash
# Fuzz smoke run: builds every cargo-fuzz target in fuzz/ and runs each for a short time from
# seeds generated out of tests/fixtures/. Fails (exit 1) on any crash, leak, timeout or build
# failure, printing the crashing input's path and the command that reproduces it. The last
# line is a summary. The long release run is documented in fuzz/README.md.
#
# Needs: a Rust toolchain (stable is fine: RUSTC_BOOTSTRAP=1 unlocks what libFuzzer needs), a C++
# compiler (libfuzzer-sys builds libFuzzer), python3. cargo-fuzz is installed into
# .cache/cargo-fuzz/ on first use unless it is already on PATH.
#
# Environment knobs (all optional):
#   BERNSTEIN_FUZZ_SECONDS   seconds per target (default 15)
#   BERNSTEIN_FUZZ_TARGETS   comma-separated subset of targets (default: all of them)
#   BERNSTEIN_FUZZ_JOBS      targets fuzzed at the same time (default: number of CPUs, at most 4)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FUZZ="$ROOT/fuzz"
CACHE="$ROOT/.cache"
SECONDS_PER_TARGET="${BERNSTEIN_FUZZ_SECONDS:-15}"
CARGO_FUZZ_VERSION="0.13.2"
START=$(date +%s)
export RUSTC_BOOTSTRAP=1
# The fuzz crate has its own target dir (fuzz/target); a CARGO_TARGET_DIR meant for the
# workspace must not redirect it.
unset CARGO_TARGET_DIR

if command -v cargo-fuzz >/dev/null 2>&1; then
  CARGO_FUZZ=(cargo fuzz)
else
  if [ ! -x "$CACHE/cargo-fuzz/bin/cargo-fuzz" ]; then
    echo "==> installing cargo-fuzz $CARGO_FUZZ_VERSION into .cache/cargo-fuzz"
    cargo install --quiet --locked --root "$CACHE/cargo-fuzz" cargo-fuzz --version "$CARGO_FUZZ_VERSION"
  fi
  CARGO_FUZZ=("$CACHE/cargo-fuzz/bin/cargo-fuzz" fuzz)
fi

mapfile -t ALL_TARGETS < <(cd "$FUZZ" && "${CARGO_FUZZ[@]}" list)
if [ -n "${BERNSTEIN_FUZZ_TARGETS:-}" ]; then
  IFS=, read -r -a TARGETS <<<"$BERNSTEIN_FUZZ_TARGETS"
else
  TARGETS=("${ALL_TARGETS[@]}")
fi
JOBS="${BERNSTEIN_FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}"
[ "$JOBS" -gt 4 ] && JOBS=4

echo "==> seed corpora from tests/fixtures"
python3 "$FUZZ/seeds.py" "$FUZZ/corpus"

# fuzz/Cargo.lock is committed and must be current: resolve it with --locked first (cargo fuzz
# build has no such flag), so a stale lock is an error naming the fix, never a silent rewrite
# that leaves the tree dirty.
echo "==> fuzz/Cargo.lock is current (cargo metadata --locked)"
if ! (cd "$FUZZ" && cargo metadata --locked --format-version 1 >/dev/null); then
  echo "fuzz-smoke: fuzz/Cargo.lock is stale: run (cd fuzz && cargo update --workspace) and commit it" >&2
  echo "fuzz smoke: ${#TARGETS[@]} targets, ${#TARGETS[@]} failed; fuzz/Cargo.lock is stale"
  exit 1
fi

echo "==> cargo fuzz build (${#TARGETS[@]} targets)"
(cd "$FUZZ" && "${CARGO_FUZZ[@]}" build)
BUILT=$(date +%s)
BIN_DIR="$FUZZ/target/$(rustc -vV | sed -n 's/^host: //p')/release"

SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/bernstein-fuzz-smoke.XXXXXX")"
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
  # torn_tail writes a ledger per input: keep that in memory.
  export BERNSTEIN_FUZZ_TMP="$(mktemp -d /dev/shm/bernstein-fuzz-smoke.XXXXXX)"
else
  export BERNSTEIN_FUZZ_TMP="$SCRATCH/tmp"
  mkdir -p "$BERNSTEIN_FUZZ_TMP"
fi
trap 'rm -rf "$SCRATCH" "$BERNSTEIN_FUZZ_TMP"' EXIT

# fuzz_one TARGET: runs one target; its log goes to $SCRATCH/TARGET.log, its status to .rc.
fuzz_one() {
  local t=$1 rc
  mkdir -p "$FUZZ/corpus/$t" "$FUZZ/artifacts/$t"
  set +e
  # The binary `cargo fuzz run` would start, started directly: `cargo fuzz run` re-checks the
  # build first, which costs seconds per target and contends for the build lock.
  (cd "$FUZZ" && "$BIN_DIR/$t" "corpus/$t" -artifact_prefix="artifacts/$t/" \
    -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    >"$SCRATCH/$t.log" 2>&1)
  rc=$?
  set -e
  echo "$rc" >"$SCRATCH/$t.rc"
}

echo "==> fuzzing each target for ${SECONDS_PER_TARGET}s, $JOBS at a time"
running=0
for t in "${TARGETS[@]}"; do
  fuzz_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$JOBS" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait || true

FAILED=0
for t in "${TARGETS[@]}"; do
  rc=$(cat "$SCRATCH/$t.rc" 2>/dev/null || echo 99)
  runs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$SCRATCH/$t.log" | grep -Eo '[0-9]+$' || echo '?')
  if [ "$rc" -eq 0 ]; then
    printf '  %-16s ok     %s runs\n' "$t" "$runs"
  else
    FAILED=$((FAILED + 1))
    printf '  %-16s FAIL   exit %s\n' "$t" "$rc"
    grep -E "panicked at|ERROR: libFuzzer|SUMMARY|Test unit written to" "$SCRATCH/$t.log" | head -8 | sed 's/^/      /' || true
    tail -n 40 "$SCRATCH/$t.log" | sed 's/^/      | /' || true
    for a in "$FUZZ/artifacts/$t"/*; do
      [ -f "$a" ] || continue
      echo "      reproduce: (cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run $t ${a#"$FUZZ"/})"
    done
  fi
done

END=$(date +%s)
echo "fuzz smoke: ${#TARGETS[@]} targets, $FAILED failed; build $((BUILT - START))s, total $((END - START))s"
[ "$FAILED" -eq 0 ]
