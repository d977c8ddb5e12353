//! Durability against the disk's limit: in one run, on one file system (the same temp dir), the
//! raw rate of fsynced appends, and the SQLite journal's calls per second with one caller and with
//! 32 concurrent callers, with the commits each call cost.
//!
//! `cargo bench --bench durability` (see BENCHMARKS.md). `WOP_BENCH_SECS` sets each
//! measurement's length (default 3). Prints figures; asserts nothing about time.

use wop_sdk_test_support::bench as common;

use common::{Caller, Instant};
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant as Clock};
use wop_sdk_host::journal::SqliteJournal;
use wop_sdk_host::local::LocalHost;

/// Calls per run: the run's own writes (its record, `node.started`, `node.completed`) are shared
/// by this many calls.
const CALLS_PER_RUN: u32 = 20;
const CALLERS: usize = 32;

fn secs() -> Duration {
    let s = std::env::var("WOP_BENCH_SECS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or(3.0);
    Duration::from_secs_f64(s)
}

/// Writes of `size` bytes, each followed by `sync_data`: fsyncs per second. `append` grows the file
/// (each fsync also commits the new length); otherwise the writes go round a preallocated 4 MiB
/// region, as SQLite's WAL does once it has grown. `full`: `sync_all` (fsync, which also flushes
/// the changed mtime: what the bundled SQLite calls) rather than `sync_data` (fdatasync).
fn fsync_rate(dir: &std::path::Path, append: bool, size: usize, full: bool, d: Duration) -> f64 {
    use std::os::unix::fs::FileExt;
    const REGION: u64 = 4 << 20;
    let path = dir.join("raw.log");
    let _ = std::fs::remove_file(&path);
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(&path)
        .expect("raw file");
    if !append {
        f.write_all(&vec![0u8; REGION as usize])
            .expect("preallocate");
        f.sync_all().expect("fsync");
    }
    let line = vec![b'x'; size];
    let start = Clock::now();
    let mut n = 0u64;
    while start.elapsed() < d {
        if append {
            f.write_all(&line).expect("write");
        } else {
            f.write_all_at(&line, (n * size as u64) % REGION)
                .expect("write");
        }
        if full {
            f.sync_all().expect("fsync");
        } else {
            f.sync_data().expect("fdatasync");
        }
        n += 1;
    }
    let rate = n as f64 / start.elapsed().as_secs_f64();
    drop(f);
    let _ = std::fs::remove_file(&path);
    rate
}

/// SQLite alone, in WAL mode: one small insert per transaction, in a loop on this thread.
/// Commits per second: SQLite's own share of the cost of a journal commit, without the journal's
/// queue, the host or the runtime. `own_sync`: the journal's way (`synchronous=NORMAL`, then an
/// `fdatasync` of the WAL after each commit); otherwise `synchronous=FULL` (SQLite's `fsync`).
fn sqlite_rate(dir: &std::path::Path, own_sync: bool, d: Duration) -> f64 {
    let path = dir.join("raw.sqlite");
    let conn = rusqlite::Connection::open(&path).expect("open");
    conn.execute_batch(if own_sync {
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;"
    } else {
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;"
    })
    .expect("pragmas");
    conn.execute_batch(
        "CREATE TABLE t (run TEXT NOT NULL, n INTEGER NOT NULL, v TEXT NOT NULL, PRIMARY KEY (run, n));",
    )
    .expect("schema");
    let wal = std::fs::OpenOptions::new()
        .write(true)
        .open(dir.join("raw.sqlite-wal"))
        .expect("the WAL");
    let start = Clock::now();
    let mut n = 0i64;
    while start.elapsed() < d {
        conn.execute_batch("BEGIN IMMEDIATE").expect("begin");
        conn.execute(
            "INSERT INTO t (run, n, v) VALUES ('run-1', ?1, 'a small outcome row')",
            [n],
        )
        .expect("insert");
        conn.execute_batch("COMMIT").expect("commit");
        if own_sync {
            wal.sync_data().expect("fdatasync");
        }
        n += 1;
    }
    let rate = n as f64 / start.elapsed().as_secs_f64();
    drop(conn);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(dir.join(format!("raw.sqlite{suffix}")));
    }
    rate
}

struct Figure {
    calls_per_sec: f64,
    commits_per_call: f64,
}

/// `callers` tasks, each running runs of `CALLS_PER_RUN` calls until the time is up.
fn journal_rate(
    dir: &std::path::Path,
    name: &str,
    callers: usize,
    window: Option<Duration>,
    d: Duration,
) -> Figure {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let journal = Arc::new(SqliteJournal::open(dir.join(format!("{name}.sqlite"))).expect("open"));
    if let Some(window) = window {
        journal.set_flush_window(window);
    }
    let host = LocalHost::rfc0248()
        .provider(Instant::default())
        .journal(journal.clone())
        .max_concurrent_generations(callers.max(8))
        .build();
    let calls = Arc::new(AtomicU64::new(0));
    let node = Caller {
        calls: CALLS_PER_RUN,
        plain: false,
    };
    let (elapsed, commits) = rt.block_on(async {
        let before = journal.commits();
        let start = Clock::now();
        let tasks: Vec<_> = (0..callers)
            .map(|_| {
                let (host, calls) = (host.clone(), Arc::clone(&calls));
                tokio::spawn(async move {
                    while start.elapsed() < d {
                        let out = host.run(&node, common::input()).await;
                        assert!(out.result.is_ok(), "{:?}", out.result);
                        calls.fetch_add(u64::from(CALLS_PER_RUN), Ordering::Relaxed);
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.expect("caller");
        }
        (start.elapsed(), journal.commits() - before)
    });
    let calls = calls.load(Ordering::Relaxed) as f64;
    drop(host);
    drop(journal);
    Figure {
        calls_per_sec: calls / elapsed.as_secs_f64(),
        commits_per_call: commits as f64 / calls,
    }
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing: run briefly then.
    let d = if std::env::args().any(|a| a == "--bench") {
        secs()
    } else {
        Duration::from_millis(200)
    };
    let dir = common::temp_dir("durability");
    // Interleaved, so that a neighbour's load falls on every figure alike.
    let a1 = fsync_rate(&dir, true, 256, false, d);
    let o1 = fsync_rate(&dir, false, 256, false, d);
    let p1 = fsync_rate(&dir, false, 5 * 4096, false, d);
    let s1 = fsync_rate(&dir, false, 256, true, d);
    let q1 = sqlite_rate(&dir, false, d);
    let w1 = sqlite_rate(&dir, true, d);
    let one = journal_rate(&dir, "one", 1, None, d);
    // The same, every write committed on its own (no deferred writes): what the deferral saves.
    let one_eager = journal_rate(&dir, "one-eager", 1, Some(Duration::ZERO), d);
    let eight = journal_rate(&dir, "eight", 8, None, d);
    let many = journal_rate(&dir, "many", CALLERS, None, d);
    let many_eager = journal_rate(&dir, "many-eager", CALLERS, Some(Duration::ZERO), d);
    let w2 = sqlite_rate(&dir, true, d);
    let q2 = sqlite_rate(&dir, false, d);
    let s2 = fsync_rate(&dir, false, 256, true, d);
    let p2 = fsync_rate(&dir, false, 5 * 4096, false, d);
    let o2 = fsync_rate(&dir, false, 256, false, d);
    let a2 = fsync_rate(&dir, true, 256, false, d);
    let append = f64::midpoint(a1, a2);
    // The disk's limit is the faster of the two ways to make a write durable.
    let fsync = f64::midpoint(o1, o2).max(append);
    let bound = fsync / one.commits_per_call;
    println!("durability (same file system: {})", dir.display());
    println!("  raw fsynced 256 B appends    {append:>5.0} /s   (runs: {a1:.0}, {a2:.0})");
    println!(
        "  raw fsynced 256 B overwrites {:>5.0} /s   (runs: {o1:.0}, {o2:.0})",
        f64::midpoint(o1, o2)
    );
    println!(
        "  raw fsynced 20 KiB overwrites {:>4.0} /s   (runs: {p1:.0}, {p2:.0}; about the WAL frames of one call's commit)",
        f64::midpoint(p1, p2)
    );
    let full = f64::midpoint(s1, s2);
    println!(
        "  raw 256 B overwrites + fsync (sync_all) {full:.0} /s (runs: {s1:.0}, {s2:.0}; what SQLite calls)"
    );
    let sqlite = f64::midpoint(q1, q2);
    println!(
        "  SQLite alone, one insert per commit, synchronous=FULL {sqlite:.0} commits/s (runs: {q1:.0}, {q2:.0}; {:.0}% of the fsync rate)",
        100.0 * sqlite / fsync
    );
    let own = f64::midpoint(w1, w2);
    println!(
        "  SQLite alone, NORMAL + fdatasync of the WAL (the journal's way) {own:.0} commits/s (runs: {w1:.0}, {w2:.0}; {:.0}% of the fsync rate)",
        100.0 * own / fsync
    );
    println!(
        "  journal, 1 caller        {:>9.0} calls/s, {:.2} commits/call",
        one.calls_per_sec, one.commits_per_call
    );
    println!(
        "    bound (fastest fsync / commits per call) {bound:.0} calls/s; achieved {:.0}% of it",
        100.0 * one.calls_per_sec / bound
    );
    println!(
        "    journal commits/s {:.0} = {:.0}% of SQLite alone (the journal's way)",
        one.calls_per_sec * one.commits_per_call,
        100.0 * one.calls_per_sec * one.commits_per_call / own
    );
    println!(
        "    bound with fsync (sync_all) {:.0} calls/s; achieved {:.0}% of it",
        full / one.commits_per_call,
        100.0 * one.calls_per_sec * one.commits_per_call / full
    );
    println!(
        "  journal, {CALLERS} callers      {:>9.0} calls/s, {:.2} commits/call; {:.1}x one caller",
        many.calls_per_sec,
        many.commits_per_call,
        many.calls_per_sec / one.calls_per_sec
    );
    println!(
        "  every write committed on its own (flush window 0): 1 caller {:.0} calls/s, {:.2} commits/call; {CALLERS} callers {:.0} calls/s, {:.2} commits/call",
        one_eager.calls_per_sec,
        one_eager.commits_per_call,
        many_eager.calls_per_sec,
        many_eager.commits_per_call
    );
    println!(
        "    deferred writes against it: 1 caller {:.2}x the calls/s, {:.2}x fewer commits per call; {CALLERS} callers {:.2}x the calls/s",
        one.calls_per_sec / one_eager.calls_per_sec,
        one_eager.commits_per_call / one.commits_per_call,
        many.calls_per_sec / many_eager.calls_per_sec
    );
    println!(
        "  per caller count: calls/s, commits per call, commits/s as % of the fsync rate ({fsync:.0}/s):"
    );
    for (n, f) in [(1, &one), (8, &eight), (CALLERS, &many)] {
        println!(
            "    {n:>2} caller(s) {:>8.0} calls/s  {:.2} commits/call  {:>5.1}% of the fsync rate  {:.1}x one caller",
            f.calls_per_sec,
            f.commits_per_call,
            100.0 * f.calls_per_sec * f.commits_per_call / fsync,
            f.calls_per_sec / one.calls_per_sec
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
