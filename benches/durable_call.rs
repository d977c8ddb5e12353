//! Where a durable call's time goes, and what a store could reach, in one run on one file system.
//!
//! 1. The split: one caller on the SQLite journal and on the log journal (runs of 20 calls, as
//!    `durability.rs`; the log's also against the `fdatasync` rate measured just before and after it), with
//!    each thread's time on the CPU and in the run queue read from `/proc/self/task/*/schedstat`
//!    before and after, per call: the worker threads (the host's path, tokio, handing commands
//!    over), the journal thread where there is one (SQLite's statements, page writes and WAL checksums, the fsync
//!    syscall's own CPU), and the rest of the wall time (blocked in the fsync, or waiting for a
//!    wake-up). The same with the in-memory journal gives the host's path alone.
//! 2. Store floors, each a loop on this thread doing what one durable call must write: the raw
//!    fsync rates, SQLite with one row per call (`synchronous` FULL, NORMAL, and NORMAL with an
//!    `fdatasync` of the WAL after each commit, the journal's way), an append-only
//!    log of checksummed records with `fdatasync` (appended, and into a preallocated region), and
//!    the same log written by a second thread behind a channel (the hand-off's cost).
//! 3. Many callers: 32 concurrent callers on the SQLite journal, the log journal and the in-memory one, with the
//!    cores' time a call and how busy the cores were (bound by the CPU or by the disk).
//!
//! `cargo bench --bench durable_call` (see BENCHMARKS.md). `WOP_BENCH_SECS`: each figure's length
//! (default 2). Prints figures; asserts nothing about time.

use wop_sdk_test_support::bench as common;

use common::{Caller, Instant};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant as Clock};
use wop_sdk_host::journal::{Journal, LogJournal, MemoryJournal, SqliteJournal};
use wop_sdk_host::local::LocalHost;

const CALLS_PER_RUN: u32 = 20;
/// Callers of the many-caller run (as `benches/durability.rs`).
const MANY: usize = 32;

fn secs() -> Duration {
    let s = std::env::var("WOP_BENCH_SECS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or(2.0);
    Duration::from_secs_f64(s)
}

/// Nanoseconds on the CPU and waiting in the run queue, and voluntary switches (the thread
/// blocked: a wait for a command, an answer or the disk), summed per thread kind.
#[derive(Clone, Copy, Default, Debug)]
struct Times {
    cpu: u64,
    queued: u64,
    blocks: u64,
    /// Clock ticks in the kernel (`/proc/self/task/*/stat`, field 15).
    sys_ticks: u64,
}

fn kind_of(comm: &str) -> usize {
    if comm.starts_with("wop-journal") {
        1
    } else if comm.starts_with("tokio") {
        0
    } else {
        2
    }
}

/// [workers, journal thread, others].
fn threads() -> [Times; 3] {
    let mut out = [Times::default(); 3];
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return out;
    };
    for task in tasks.flatten() {
        let p = task.path();
        let comm = std::fs::read_to_string(p.join("comm")).unwrap_or_default();
        let stat = std::fs::read_to_string(p.join("schedstat")).unwrap_or_default();
        let status = std::fs::read_to_string(p.join("status")).unwrap_or_default();
        let mut f = stat
            .split_whitespace()
            .map(|v| v.parse::<u64>().unwrap_or(0));
        let t = &mut out[kind_of(comm.trim())];
        let stat_line = std::fs::read_to_string(p.join("stat")).unwrap_or_default();
        t.sys_ticks += stat_line
            .rsplit_once(") ")
            .and_then(|(_, rest)| rest.split_whitespace().nth(12))
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
        t.cpu += f.next().unwrap_or(0);
        t.queued += f.next().unwrap_or(0);
        t.blocks += status
            .lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0);
    }
    out
}

/// One caller, runs of `CALLS_PER_RUN` calls on `journal`: calls, wall time, thread times spent.
fn one_caller(journal: Arc<dyn Journal>, d: Duration) -> (u64, Duration, [Times; 3]) {
    callers(journal, 1, d)
}

/// `n` concurrent callers (tasks), each running runs of `CALLS_PER_RUN` calls on `journal`:
/// calls, wall time, thread times spent.
fn callers(journal: Arc<dyn Journal>, n: usize, d: Duration) -> (u64, Duration, [Times; 3]) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let host = LocalHost::rfc0248()
        .provider(Instant::default())
        .journal(journal)
        .max_concurrent_generations(n.max(8))
        .build();
    let node = Caller {
        calls: CALLS_PER_RUN,
        plain: false,
    };
    rt.block_on(async {
        // Warm up (statements prepared, WAL grown), then measure.
        let _ = host.run(&node, common::input()).await;
        let before = threads();
        let start = Clock::now();
        let tasks: Vec<_> = (0..n)
            .map(|_| {
                let h = host.clone();
                tokio::spawn(async move {
                    let mut calls = 0u64;
                    while start.elapsed() < d {
                        let out = h.run(&node, common::input()).await;
                        assert!(out.result.is_ok(), "{:?}", out.result);
                        calls += u64::from(CALLS_PER_RUN);
                    }
                    calls
                })
            })
            .collect();
        let mut calls = 0u64;
        for t in tasks {
            calls += t.await.expect("caller");
        }
        let elapsed = start.elapsed();
        let after = threads();
        let mut spent = [Times::default(); 3];
        for i in 0..3 {
            spent[i] = Times {
                cpu: after[i].cpu - before[i].cpu,
                queued: after[i].queued - before[i].queued,
                blocks: after[i].blocks - before[i].blocks,
                sys_ticks: after[i].sys_ticks - before[i].sys_ticks,
            };
        }
        (calls, elapsed, spent)
    })
}

fn us(ns: u64, calls: u64) -> f64 {
    ns as f64 / calls as f64 / 1000.0
}

/// `size`-byte writes each followed by `fdatasync` (or `fsync` when `full`), into a preallocated
/// 4 MiB region (`append` false) or appended: per second.
fn fsync_rate(dir: &Path, append: bool, size: usize, full: bool, d: Duration) -> f64 {
    const REGION: u64 = 4 << 20;
    let path = dir.join("raw.log");
    let _ = std::fs::remove_file(&path);
    let mut f = std::fs::File::create(&path).expect("raw file");
    if !append {
        f.write_all(&vec![0u8; REGION as usize]).expect("prealloc");
        f.sync_all().expect("fsync");
    }
    let line = vec![b'x'; size];
    let (start, mut n) = (Clock::now(), 0u64);
    while start.elapsed() < d {
        if append {
            f.write_all(&line).expect("write");
        } else {
            f.write_all_at(&line, (n * size as u64) % REGION)
                .expect("write");
        }
        if full { f.sync_all() } else { f.sync_data() }.expect("sync");
        n += 1;
    }
    let rate = n as f64 / start.elapsed().as_secs_f64();
    let _ = std::fs::remove_file(&path);
    rate
}

/// SQLite, one row per call: each commit inserts the call (identity, fingerprint, first request,
/// lease) and writes the previous call's outcome and charge into its row, clearing its lease.
/// `synchronous` is the pragma's value, or `"NORMAL+fdatasync"`: `NORMAL`, then an `fdatasync` of
/// the WAL after each commit (the journal's way).
fn sqlite_one_row(dir: &Path, synchronous: &str, d: Duration) -> f64 {
    let (synchronous, own_sync) = match synchronous.split_once('+') {
        Some((level, _)) => (level, true),
        None => (synchronous, false),
    };
    let name = format!("row-{synchronous}-{own_sync}.sqlite");
    let path = dir.join(&name);
    let conn = rusqlite::Connection::open(&path).expect("open");
    conn.execute_batch(&format!(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = {synchronous}; \
         CREATE TABLE calls (run TEXT, node TEXT, idx INTEGER, attempt TEXT NOT NULL, \
         fp BLOB NOT NULL, requests INTEGER NOT NULL, lease TEXT, outcome TEXT, charge TEXT, \
         PRIMARY KEY (run, node, idx)) WITHOUT ROWID;"
    ))
    .expect("schema");
    let wal = std::fs::OpenOptions::new()
        .write(true)
        .open(dir.join(format!("{name}-wal")))
        .expect("the WAL");
    let lease = r#"{"holder":"h-1","pid":4242,"boot":"0b6c","heartbeatMs":1764860000000}"#;
    let outcome = r#"{"kind":"completed","result":"{\"line\":\"the quick brown fox\",\"n\":7}"}"#;
    let (start, mut n) = (Clock::now(), 0i64);
    while start.elapsed() < d {
        conn.execute_batch("BEGIN IMMEDIATE").expect("begin");
        if n > 0 {
            conn.prepare_cached(
                "UPDATE calls SET outcome = ?2, charge = '[\"ana\"],1,5', lease = NULL \
                 WHERE run = 'run-000001' AND node = 'main' AND idx = ?1",
            )
            .and_then(|mut s| s.execute(rusqlite::params![n - 1, outcome]))
            .expect("outcome");
        }
        conn.prepare_cached(
            "INSERT INTO calls (run, node, idx, attempt, fp, requests, lease) \
             VALUES ('run-000001', 'main', ?1, 'att-0000000001', ?2, 1, ?3)",
        )
        .and_then(|mut s| s.execute(rusqlite::params![n, [7u8; 32], lease]))
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
        let _ = std::fs::remove_file(dir.join(format!("{name}{suffix}")));
    }
    rate
}

/// One record of an append-only log: length, CRC-32 of the payload, payload (a call's identity,
/// fingerprint, lease and the previous call's outcome and charge: about 300 bytes).
fn record(n: u64, out: &mut Vec<u8>) {
    let payload = format!(
        r#"{{"k":"call","run":"run-000001","node":"main","idx":{n},"attempt":"att-{n:010}","fp":"{}","req":1,"lease":{{"holder":"h-1","pid":4242,"boot":"0b6c","heartbeatMs":1764860000000}},"prev":{{"kind":"completed","result":"{{\"line\":\"the quick brown fox\",\"n\":7}}","charge":[["ana"],1,5]}}}}"#,
        "07".repeat(32)
    );
    out.clear();
    out.extend_from_slice(&u32::try_from(payload.len()).unwrap_or(0).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(payload.as_bytes()).to_le_bytes());
    out.extend_from_slice(payload.as_bytes());
}

/// The log on this thread: appended (`prealloc` false) or written into a region preallocated in
/// 4 MiB steps (the file's length then changes once per step, not per record).
fn log_rate(dir: &Path, prealloc: bool, d: Duration) -> f64 {
    const STEP: u64 = 4 << 20;
    let path = dir.join("log.bin");
    let _ = std::fs::remove_file(&path);
    let f = std::fs::File::create(&path).expect("log");
    let (mut buf, mut at, mut end) = (Vec::new(), 0u64, 0u64);
    let (start, mut n) = (Clock::now(), 0u64);
    while start.elapsed() < d {
        record(n, &mut buf);
        if prealloc && at + buf.len() as u64 > end {
            end += STEP;
            f.set_len(end).expect("grow");
            f.sync_all().expect("fsync");
        }
        f.write_all_at(&buf, at).expect("write");
        at += buf.len() as u64;
        f.sync_data().expect("fdatasync");
        n += 1;
    }
    let rate = n as f64 / start.elapsed().as_secs_f64();
    let _ = std::fs::remove_file(&path);
    rate
}

/// The appended log written by a second thread: each record sent over a channel, answered over
/// another after its `fdatasync` (two thread wake-ups a record, as the journal thread's).
fn log_handoff_rate(dir: &Path, d: Duration) -> f64 {
    let path = dir.join("log-thread.bin");
    let mut f = std::fs::File::create(&path).expect("log");
    let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<Vec<u8>>();
    let writer = std::thread::spawn(move || {
        for buf in rx {
            f.write_all(&buf).expect("write");
            f.sync_data().expect("fdatasync");
            if done_tx.send(buf).is_err() {
                break;
            }
        }
    });
    let (mut buf, start, mut n) = (Vec::new(), Clock::now(), 0u64);
    while start.elapsed() < d {
        record(n, &mut buf);
        tx.send(buf).expect("send");
        buf = done_rx.recv().expect("answer");
        n += 1;
    }
    let rate = n as f64 / start.elapsed().as_secs_f64();
    drop(tx);
    let _ = writer.join();
    let _ = std::fs::remove_file(&path);
    rate
}

fn main() {
    let d = if std::env::args().any(|a| a == "--bench") {
        secs()
    } else {
        Duration::from_millis(200)
    };
    let dir = common::temp_dir("durable-call");
    let raw1 = fsync_rate(&dir, false, 256, false, d);
    let full1 = fsync_rate(&dir, false, 5 * 4096, true, d);
    let sq = Arc::new(SqliteJournal::open(dir.join("split.sqlite")).expect("open"));
    let (sq_calls, sq_wall, sq_t) = one_caller(sq.clone(), d);
    let sq_commits = sq.commits();
    drop(sq);
    // The disk's rate drifts over a run: the log's one caller is also set against the
    // `fdatasync` rate measured just before and just after it.
    let lg_raw_before = fsync_rate(&dir, false, 256, false, d / 2);
    let lg = Arc::new(LogJournal::open(dir.join("split.log")).expect("open"));
    let (lg_calls, lg_wall, lg_t) = one_caller(lg.clone(), d);
    let lg_syncs = lg.commits();
    drop(lg);
    let lg_raw_after = fsync_rate(&dir, false, 256, false, d / 2);
    let lg_raw = f64::midpoint(lg_raw_before, lg_raw_after);
    let (mem_calls, mem_wall, mem_t) = one_caller(Arc::new(MemoryJournal::new()), d);
    let many = Arc::new(SqliteJournal::open(dir.join("many.sqlite")).expect("open"));
    let (many_calls, many_wall, many_t) = callers(many.clone(), MANY, d);
    let many_commits = many.commits();
    drop(many);
    let lg_many = Arc::new(LogJournal::open(dir.join("many.log")).expect("open"));
    let (lg_many_calls, lg_many_wall, lg_many_t) = callers(lg_many.clone(), MANY, d);
    let lg_many_syncs = lg_many.commits();
    drop(lg_many);
    let (mem_many_calls, mem_many_wall, mem_many_t) =
        callers(Arc::new(MemoryJournal::new()), MANY, d);
    let row_full = sqlite_one_row(&dir, "FULL", d);
    let row_own = sqlite_one_row(&dir, "NORMAL+fdatasync", d);
    let row_normal = sqlite_one_row(&dir, "NORMAL", d);
    let log_append = log_rate(&dir, false, d);
    let log_prealloc = log_rate(&dir, true, d);
    let log_thread = log_handoff_rate(&dir, d);
    let full2 = fsync_rate(&dir, false, 5 * 4096, true, d);
    let raw2 = fsync_rate(&dir, false, 256, false, d);
    let raw = f64::midpoint(raw1, raw2);
    let full = f64::midpoint(full1, full2);
    println!("durable_call (same file system: {})", dir.display());
    println!(
        "  fdatasync, 256 B overwrites   {raw:>6.0} /s ({raw1:.0}, {raw2:.0}): {:.1} us",
        1e6 / raw
    );
    println!(
        "  fsync, 20 KiB overwrites      {full:>6.0} /s ({full1:.0}, {full2:.0}): {:.1} us (a journal commit's WAL write)",
        1e6 / full
    );
    // Clock ticks are 10 ms: the kernel's share is coarse, over thousands of calls.
    let tick = 10_000_000;
    let wall = sq_wall.as_nanos() as u64;
    let per = |ns| us(ns, sq_calls);
    println!(
        "  SQLite journal, 1 caller: {:.0} calls/s, {:.1} us a call, {:.2} commits a call ({:.0}% of the fdatasync rate)",
        sq_calls as f64 / sq_wall.as_secs_f64(),
        per(wall),
        sq_commits as f64 / (sq_calls + u64::from(CALLS_PER_RUN)) as f64,
        100.0 * sq_calls as f64 / sq_wall.as_secs_f64() / raw
    );
    let [w, j, o] = sq_t;
    println!(
        "    per call: workers on CPU {:.1} us ({:.1} in the kernel), waiting for a core {:.1} us, blocked {:.2} times",
        per(w.cpu),
        per(w.sys_ticks * tick),
        per(w.queued),
        w.blocks as f64 / sq_calls as f64
    );
    println!(
        "              journal thread on CPU {:.1} us ({:.1} in the kernel: write and fsync syscalls), waiting for a core {:.1} us, blocked {:.2} times, off CPU {:.1} us",
        per(j.cpu),
        per(j.sys_ticks * tick),
        per(j.queued),
        j.blocks as f64 / sq_calls as f64,
        per(wall.saturating_sub(j.cpu + j.queued))
    );
    println!(
        "              others on CPU {:.1} us; an fsync of 20 KiB alone (same run) {:.1} us",
        per(o.cpu),
        1e6 / full
    );
    let lw = lg_wall.as_nanos() as u64;
    println!(
        "  log journal, 1 caller: {:.0} calls/s, {:.1} us a call, {:.2} syncs a call ({:.0}% of the fdatasync rate; \
         {:.0}% of the {lg_raw:.0}/s measured just before and after it: {lg_raw_before:.0}, {lg_raw_after:.0})",
        lg_calls as f64 / lg_wall.as_secs_f64(),
        us(lw, lg_calls),
        lg_syncs as f64 / (lg_calls + u64::from(CALLS_PER_RUN)) as f64,
        100.0 * lg_calls as f64 / lg_wall.as_secs_f64() / raw,
        100.0 * lg_calls as f64 / lg_wall.as_secs_f64() / lg_raw
    );
    println!(
        "    per call: workers on CPU {:.1} us ({:.1} in the kernel), others on CPU {:.1} us (the flush thread)",
        us(lg_t[0].cpu, lg_calls),
        us(lg_t[0].sys_ticks * tick, lg_calls),
        us(lg_t[1].cpu + lg_t[2].cpu, lg_calls),
    );
    let mw = mem_wall.as_nanos() as u64;
    println!(
        "  in-memory journal, 1 caller: {:.1} us a call; workers on CPU {:.1} us, others {:.1} us",
        us(mw, mem_calls),
        us(mem_t[0].cpu, mem_calls),
        us(mem_t[2].cpu, mem_calls)
    );
    // Many callers: the cores' time a call, against what two cores give (the machine's limit
    // when the callers are bound by the CPU, not the disk).
    let core_us = |t: &[Times; 3], calls: u64| us(t.iter().map(|t| t.cpu).sum(), calls);
    let rate = |calls: u64, wall: Duration| calls as f64 / wall.as_secs_f64();
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    println!(
        "  SQLite journal, {MANY} callers: {:.0} calls/s ({:.1}x one caller), {:.2} commits a call; \
         on the CPU {:.1} us a call (workers {:.1}, of it {:.1} in the kernel; others {:.1}); \
         the {cores} cores busy {:.0}% of the time; waiting for a core {:.1} us a call",
        rate(many_calls, many_wall),
        rate(many_calls, many_wall) / rate(sq_calls, sq_wall),
        many_commits as f64 / many_calls as f64,
        core_us(&many_t, many_calls),
        us(many_t[0].cpu, many_calls),
        us(many_t[0].sys_ticks * tick, many_calls),
        us(many_t[1].cpu + many_t[2].cpu, many_calls),
        100.0 * many_t.iter().map(|t| t.cpu).sum::<u64>() as f64
            / (cores as f64 * many_wall.as_nanos() as f64),
        us(many_t.iter().map(|t| t.queued).sum(), many_calls),
    );
    println!(
        "  log journal, {MANY} callers: {:.0} calls/s ({:.1}x its one caller), {:.2} syncs a call; \
         on the CPU {:.1} us a call (workers {:.1}, others {:.1}); the {cores} cores busy {:.0}% of the time",
        rate(lg_many_calls, lg_many_wall),
        rate(lg_many_calls, lg_many_wall) / rate(lg_calls, lg_wall),
        lg_many_syncs as f64 / lg_many_calls as f64,
        core_us(&lg_many_t, lg_many_calls),
        us(lg_many_t[0].cpu, lg_many_calls),
        us(lg_many_t[1].cpu + lg_many_t[2].cpu, lg_many_calls),
        100.0 * lg_many_t.iter().map(|t| t.cpu).sum::<u64>() as f64
            / (cores as f64 * lg_many_wall.as_nanos() as f64),
    );
    println!(
        "  in-memory journal, {MANY} callers: {:.0} calls/s ({:.1}x the SQLite journal's one caller); on the CPU {:.1} us a call",
        rate(mem_many_calls, mem_many_wall),
        rate(mem_many_calls, mem_many_wall) / rate(sq_calls, sq_wall),
        core_us(&mem_many_t, mem_many_calls),
    );
    let pct = |r: f64| 100.0 * r / raw;
    println!("  store floors (one durable write a call, this thread, no host):");
    println!(
        "    SQLite one row per call, synchronous=FULL   {row_full:>6.0} /s  {:>5.1}%",
        pct(row_full)
    );
    println!(
        "    SQLite one row per call, NORMAL + fdatasync  {row_own:>6.0} /s  {:>5.1}% (the journal's way)",
        pct(row_own)
    );
    println!(
        "    SQLite one row per call, synchronous=NORMAL {row_normal:>6.0} /s  {:>5.1}% (no sync per commit)",
        pct(row_normal)
    );
    println!(
        "    log, appended, fdatasync                    {log_append:>6.0} /s  {:>5.1}%",
        pct(log_append)
    );
    println!(
        "    log, preallocated 4 MiB steps, fdatasync    {log_prealloc:>6.0} /s  {:>5.1}%",
        pct(log_prealloc)
    );
    println!(
        "    log, appended, by a second thread           {log_thread:>6.0} /s  {:>5.1}% (hand-off {:.1} us a record)",
        pct(log_thread),
        1e6 / log_thread - 1e6 / log_append
    );
    let _ = std::fs::remove_dir_all(&dir);
}
