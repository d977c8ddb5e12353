#!/usr/bin/env bash
# The compile-time cost of `#[wop_node]`: two throwaway crates in one temp workspace, one with N
# nodes written with the macro, one with the same N nodes written by hand against the `Node`
# trait (and a third copy by hand in the exact shape the macro expands to). Builds each (dev profile) clean and after a one-line edit, alternating, and prints the
# ratios; then the macro crate's expansion time from `-Z time-passes` (RUSTC_BOOTSTRAP=1).
#
#   benches/macro_cost/run.sh [N=100] [ROUNDS=3]
#   benches/macro_cost/run.sh 3 1      # the smoke pass of .ci/run: it builds and runs, nothing more
#
# Dependencies are built once first, so "clean" means the crate itself from scratch. Set
# CARGO_TARGET_DIR to the workspace's target/ to reuse its built dependencies.
set -euo pipefail
N=${1:-100}
ROUNDS=${2:-3}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/wop-macro-cost.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$WORK/target}

cat > "$WORK/Cargo.toml" <<TOML
[workspace]
members = ["with_macro", "by_hand", "by_hand_fn"]
resolver = "3"
TOML
cp "$ROOT/Cargo.lock" "$WORK/Cargo.lock"
for c in with_macro by_hand by_hand_fn; do
  mkdir -p "$WORK/$c/src"
  cat > "$WORK/$c/Cargo.toml" <<TOML
[package]
name = "$c"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
wop-sdk = { path = "$ROOT/wop-sdk" }
TOML
done

{
  echo "//! $N nodes written with \`#[wop_node]\`."
  for i in $(seq 1 "$N"); do
    cat <<RS
/// Node $i.
#[wop_sdk::wop_node(type_id = "community.gen.node-$i", version = "1.0.0", max_calls = 3)]
pub async fn node_$i(ctx: &wop_sdk::NodeCtx<'_>, input: String) -> Result<String, wop_sdk::NodeError> {
    let c = ctx
        .call_ai(wop_sdk::AiRequest::<wop_sdk::Text>::prompt(format!("$i: {input}")))
        .await?;
    Ok(c.into_output().map(|t| t.0).unwrap_or_default())
}
RS
  done
} > "$WORK/with_macro/src/lib.rs"

{
  echo "//! The same $N nodes written by hand against the \`Node\` trait."
  echo "use wop_sdk::host::BoxFuture;"
  echo "use wop_sdk::{AiRequest, Category, Node, NodeCtx, NodeError, NodeSpec, RetryPolicy, Role, Text};"
  for i in $(seq 1 "$N"); do
    cat <<RS
/// Node $i.
#[derive(Clone, Copy, Debug, Default)]
pub struct Node$i;
impl Node for Node$i {
    type Input = String;
    type Output = String;
    const SPEC: NodeSpec = NodeSpec {
        type_id: "community.gen.node-$i",
        version: "1.0.0",
        category: Category::Chat,
        role: Role::SideEffect,
        label: None,
        description: Some("Node $i."),
        max_calls: Some(3),
        retry: RetryPolicy::HOST_DEFAULT,
        requires: &[],
    };
    fn run<'a, 'run>(&'a self, ctx: &'a NodeCtx<'run>, input: String) -> BoxFuture<'a, Result<String, NodeError<'run>>> {
        Box::pin(async move {
            let c = ctx.call_ai(AiRequest::<Text>::prompt(format!("$i: {input}"))).await?;
            Ok(c.into_output().map(|t| t.0).unwrap_or_default())
        })
    }
}
RS
  done
} > "$WORK/by_hand/src/lib.rs"

{
  echo "//! The same $N nodes by hand, in the shape the macro expands to: the user's \`async fn\` kept"
  echo "//! as an item and a \`Node\` impl whose \`run\` boxes its future (isolates the macro's own cost)."
  echo "use wop_sdk::host::BoxFuture;"
  echo "use wop_sdk::{AiRequest, Category, Node, NodeCtx, NodeError, NodeSpec, RetryPolicy, Role, Text};"
  for i in $(seq 1 "$N"); do
    cat <<RS
/// Node $i.
pub async fn node_$i<'run>(ctx: &NodeCtx<'run>, input: String) -> Result<String, NodeError<'run>> {
    let c = ctx.call_ai(AiRequest::<Text>::prompt(format!("$i: {input}"))).await?;
    Ok(c.into_output().map(|t| t.0).unwrap_or_default())
}
/// Node $i.
#[derive(Clone, Copy, Debug, Default)]
pub struct Node$i;
impl Node for Node$i {
    type Input = String;
    type Output = String;
    const SPEC: NodeSpec = NodeSpec {
        type_id: "community.gen.node-$i",
        version: "1.0.0",
        category: Category::Chat,
        role: Role::SideEffect,
        label: None,
        description: Some("Node $i."),
        max_calls: Some(3),
        retry: RetryPolicy::HOST_DEFAULT,
        requires: &[],
    };
    fn run<'a, 'run>(&'a self, ctx: &'a NodeCtx<'run>, input: String) -> BoxFuture<'a, Result<String, NodeError<'run>>> {
        Box::pin(node_$i(ctx, input))
    }
}
RS
  done
} > "$WORK/by_hand_fn/src/lib.rs"

cd "$WORK"
echo "building dependencies once..." >&2
cargo build -q -p with_macro -p by_hand -p by_hand_fn

now() { date +%s.%N; }
# Arithmetic in awk (always there; bc may not be).
calc() { awk "BEGIN { printf \"%.3f\", $1 }"; }
elapsed() { local s; s=$(now); "$@" >/dev/null 2>&1; calc "$(now) - $s"; }

declare -A clean incr
for c in with_macro by_hand by_hand_fn; do clean[$c]=0; incr[$c]=0; done
for r in $(seq 1 "$ROUNDS"); do
  for c in with_macro by_hand by_hand_fn; do
    cargo clean -q -p "$c"
    t=$(elapsed cargo build -q -p "$c"); clean[$c]=$(calc "${clean[$c]} + $t")
    # One-line edit in the middle of the file: the crate is rebuilt incrementally.
    sed -i "s/\"$((N / 2)): {input}\"/\"$((N / 2)) r$r: {input}\"/" "$c/src/lib.rs"
    t=$(elapsed cargo build -q -p "$c"); incr[$c]=$(calc "${incr[$c]} + $t")
  done
done
printf 'macro_cost: %s nodes, %s rounds, dev profile (mean seconds)\n' "$N" "$ROUNDS"
for kind in clean incr; do
  declare -n m=$kind
  a=$(calc "${m[with_macro]} / $ROUNDS")
  b=$(calc "${m[by_hand]} / $ROUNDS")
  f=$(calc "${m[by_hand_fn]} / $ROUNDS")
  printf '  %-6s with macro %6.2fs | by hand %6.2fs: %.2fx | by hand, expansion shape %6.2fs: %.2fx\n' \
    "$kind" "$a" "$b" "$(calc "$a / $b")" "$f" "$(calc "$a / $f")"
done

# Expansion time of the macro crate, from rustc's own pass timings.
cargo clean -q -p with_macro
RUSTC_BOOTSTRAP=1 cargo rustc -q -p with_macro --lib -- -Z time-passes 2>&1 \
  | grep -E '(macro_expand_crate|total)\s*$' | sed 's/^/  with_macro /' || true
for c in by_hand by_hand_fn; do
  cargo clean -q -p "$c"
  RUSTC_BOOTSTRAP=1 cargo rustc -q -p "$c" --lib -- -Z time-passes 2>&1 \
    | grep -E '(macro_expand_crate|total)\s*$' | sed "s/^/  $c /" || true
done
