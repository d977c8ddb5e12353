#!/usr/bin/env bash
# wop-sdk against rig, side by side (BENCHMARKS.md §10). Builds the standalone crate next to this
# script (release, its own target dir, never the workspace's), then prints one table:
# instructions per call from callgrind ((I(2N) - I(N)) / N, start-up excluded) and the medians
# per call of the wall time and of the thread's CPU time over interleaved batches, with ratios.
#
#   benches/rig_compare/run.sh [N] [ROUNDS] [BATCH]      # defaults: 200 201 20
#
# CARGO_TARGET_DIR defaults to /work/target-rig. Needs valgrind.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
n=${1:-200}
rounds=${2:-201}
batch=${3:-20}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/work/target-rig}
export CARGO_PROFILE_DEV_DEBUG=0

# rig 0.46 declares rust-version 1.97.1; it builds and runs on the toolchain here (see README.md).
# Not `--locked`: when wop-sdk gains a dependency cargo adds it to this crate's Cargo.lock (rig's
# versions are pinned with `=` in Cargo.toml); commit the lock with the figures.
cargo build --release --ignore-rust-version --manifest-path "$here/Cargo.toml" >&2
bin=$CARGO_TARGET_DIR/release/rig-compare

# The wop-sdk measured: this checkout's commit (WOP_COMMIT names it for a tree outside git).
if [[ -n ${WOP_COMMIT:-} ]]; then
    commit=$WOP_COMMIT
elif commit=$(git -C "$here" rev-parse --short HEAD 2>/dev/null); then
    git -C "$here/../.." diff --quiet HEAD -- wop-sdk wop-sdk-host tests/support || commit="$commit+uncommitted"
else
    commit=unknown
fi
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

declare -A wall cpu
while IFS=$'\t' read -r kind w _ c _; do
    [[ $kind == kind ]] && continue
    wall[$kind]=$w
    cpu[$kind]=$c
done < <("$bin" time "$rounds" "$batch")

echo "wop-sdk $commit, rig-core/rig-agent $rig; callgrind N=$n and 2N; times: medians of $rounds rounds of about $batch calls per kind, kinds interleaved"
echo
echo "| per call | instructions | / baseline | / rig | wall time | / rig | CPU time | / baseline | / rig |"
echo "|---|---|---|---|---|---|---|---|---|"
while read -r kind _; do
    awk -v k="$kind" -v i="${instr[$kind]}" -v ib="${instr[baseline]}" -v ir="${instr[rig]}" \
        -v w="${wall[$kind]}" -v wr="${wall[rig]}" \
        -v c="${cpu[$kind]}" -v cb="${cpu[baseline]}" -v cr="${cpu[rig]}" 'BEGIN {
        printf "| `%s` | %d | %.1fx | %.2fx | %.2f µs | %.2fx | %.2f µs | %.1fx | %.2fx |\n",
            k, i, i / ib, i / ir, w / 1000, w / wr, c / 1000, c / cb, c / cr }'
done < <("$bin" kinds)
echo
for pair in "wop rig one structured call" "wop_x16 rig_x16 16 calls, per call" \
    "wop_min rig least-work host, one call" "wop_min_x16 rig_x16 least-work host, 16 calls"; do
    read -r w r what <<< "$pair"
    awk -v what="$what" -v iw="${instr[$w]}" -v ir="${instr[$r]}" -v ww="${wall[$w]}" \
        -v wr="${wall[$r]}" -v cw="${cpu[$w]}" -v cr="${cpu[$r]}" 'BEGIN {
        printf "rig / wop-sdk (%s): %.2fx the instructions, %.2fx the wall time, %.2fx the CPU time\n",
            what, ir / iw, wr / ww, cr / cw }'
done
