#!/usr/bin/env bash
# wop-sdk against rig, side by side (BENCHMARKS.md §10). Builds the standalone crate next to this
# script (release, its own target dir, never the workspace's), then prints one table:
# instructions per call from callgrind ((I(2N) - I(N)) / N, start-up excluded) and the median
# wall time per call of interleaved batches, with ratios.
#
#   benches/rig_compare/run.sh [N] [ROUNDS] [BATCH]      # defaults: 200 41 100
#
# CARGO_TARGET_DIR defaults to /work/target-rig. Needs valgrind.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
n=${1:-200}
rounds=${2:-41}
batch=${3:-100}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/work/target-rig}
export CARGO_PROFILE_DEV_DEBUG=0

# rig 0.46 declares rust-version 1.97.1; it builds and runs on the toolchain here (see README.md).
cargo build --release --locked --ignore-rust-version --manifest-path "$here/Cargo.toml" >&2
bin=$CARGO_TARGET_DIR/release/rig-compare

commit=$(git -C "$here" rev-parse --short HEAD)
git -C "$here/../.." diff --quiet HEAD -- wop-sdk benches/common || commit="$commit+uncommitted"
rig=$(awk '/^name = "rig-core"$/ { getline; gsub(/[^0-9.]/, ""); print }' "$here/Cargo.lock")

collected() { # kind runs -> instructions of the whole process
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" count "$1" "$2" 2>&1 |
        sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}

declare -A instr
while read -r kind calls; do
    a=$(collected "$kind" "$n")
    b=$(collected "$kind" $((2 * n)))
    instr[$kind]=$(( (b - a) / (n * calls) ))
    echo "callgrind $kind: $a at N=$n, $b at 2N; ${instr[$kind]} per call" >&2
done < <("$bin" kinds)

declare -A ns
while IFS=$'\t' read -r kind median _; do
    [[ $kind == kind ]] && continue
    ns[$kind]=$median
done < <("$bin" time "$rounds" "$batch")

echo "wop-sdk $commit, rig-core/rig-agent $rig; callgrind N=$n and 2N; time: median of $rounds rounds of $batch executions, kinds interleaved"
echo
echo "| per call | instructions | / baseline | / rig | time | / baseline | / rig |"
echo "|---|---|---|---|---|---|---|"
while read -r kind _; do
    awk -v k="$kind" -v i="${instr[$kind]}" -v ib="${instr[baseline]}" -v ir="${instr[rig]}" \
        -v t="${ns[$kind]}" -v tb="${ns[baseline]}" -v tr="${ns[rig]}" 'BEGIN {
        printf "| `%s` | %d | %.1fx | %.2fx | %.2f µs | %.1fx | %.2fx |\n",
            k, i, i / ib, i / ir, t / 1000, t / tb, t / tr }'
done < <("$bin" kinds)
echo
awk -v w="${instr[wop]}" -v r="${instr[rig]}" -v tw="${ns[wop]}" -v tr="${ns[rig]}" 'BEGIN {
    printf "rig / wop-sdk (one structured call): %.2fx the instructions, %.2fx the time\n", r / w, tr / tw }'
awk -v w="${instr[wop_x16]}" -v r="${instr[rig_x16]}" -v tw="${ns[wop_x16]}" -v tr="${ns[rig_x16]}" 'BEGIN {
    printf "rig / wop-sdk (16 calls, per call):  %.2fx the instructions, %.2fx the time\n", r / w, tr / tw }'
