//! The chosen durable store against two embedded stores from crates.io, side by side in one run
//! on one file system (BENCHMARKS.md §16). Each does, per call, the durable write a durable call
//! needs: the call's identity (attempt id, fingerprint, first request's `max_tokens`, lease) made
//! durable, with the previous call's outcome and charge riding on it.
//!
//! - `log`: wop-sdk-host's `LogJournal` itself, through the `Journal` trait (`begin_leased`, then
//!   a deferred `finish`), no host around it;
//! - `redb`: one write transaction a call, `Durability::Immediate` (redb's default), the identity
//!   inserted and the previous call's row rewritten with its outcome; `redb-mw` the same with
//!   `ConcurrencyMode::MultiWriter`, which a journal shared by two processes needs;
//! - `fjall`: one write batch a call, `PersistMode::SyncData` (an `fdatasync` of fjall's journal
//!   at the commit), the same two rows.
//!
//! The reference is the disk's `fdatasync` rate (a 256-byte `pwrite` at one offset, then
//! `fdatasync`), measured before the stores and after them.
//!
//! ```sh
//! cargo run --release --manifest-path benches/store_floors/Cargo.toml -- [SECS]
//! # instructions a call, all threads: run a store for N and 2N calls under callgrind
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     benches/store_floors/target/release/store-floors --count redb 200
//! ```
//!
//! Prints figures; asserts nothing about time.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wop_sdk::host::{AttemptKey, RunId};
use wop_sdk_host::journal::{
    Charge, Fingerprint, Journal, Lease, LogJournal, Outcome, RunMeta, RunRecord,
};

/// A store under test: `call(n)` makes call `n`'s identity durable, with call `n − 1`'s outcome.
trait Store {
    fn call(&mut self, n: u32);
}

/// The lease a call's identity carries (as the journal's rows hold it).
const LEASE: &str = r#"{"holder":"h-1","pid":4242,"boot":"0b6c","heartbeatMs":1764860000000}"#;
/// A call's outcome and charge.
const OUTCOME: &str = r#"{"kind":"completed","result":"{\"line\":\"the quick brown fox\",\"n\":7}","charge":[["ana"],1,5]}"#;

/// A call's key in the key-value stores: run, node, call index (big-endian, so keys sort).
fn kv_key(n: u32) -> Vec<u8> {
    let mut k = b"run-000001\0main\0".to_vec();
    k.extend_from_slice(&n.to_be_bytes());
    k
}

/// A call's row before its outcome: attempt id, fingerprint, requests, max_tokens, lease.
fn identity_row(n: u32) -> Vec<u8> {
    format!(
        r#"{{"attempt":"att-{n:010}","fp":"{}","requests":1,"maxTokens":1000,"lease":{LEASE}}}"#,
        "07".repeat(32)
    )
    .into_bytes()
}

/// The same row once the call has ended: its outcome and charge, the lease given up.
fn ended_row(n: u32) -> Vec<u8> {
    format!(
        r#"{{"attempt":"att-{n:010}","fp":"{}","requests":1,"maxTokens":1000,"outcome":{OUTCOME}}}"#,
        "07".repeat(32)
    )
    .into_bytes()
}

struct Log {
    journal: LogJournal,
    rt: tokio::runtime::Runtime,
    run: RunId,
    node: Arc<str>,
    lease: Lease,
    fingerprint: Fingerprint,
}

impl Log {
    fn open(path: &Path) -> Self {
        let journal = LogJournal::open(path).expect("open the log journal");
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        let run = RunId::new("run-000001");
        let record = RunRecord {
            run_id: run.clone(),
            owner: "ana".into(),
            replay_of: None,
            meta: RunMeta::default(),
        };
        rt.block_on(journal.begin_run(record)).expect("the run");
        let lease = Lease::now("h-1");
        Self {
            journal,
            rt,
            run,
            node: "main".into(),
            lease,
            fingerprint: Fingerprint([7; 32]),
        }
    }

    fn key(&self, n: u32) -> AttemptKey {
        AttemptKey {
            run_id: self.run.clone(),
            node_id: self.node.clone(),
            call_index: n,
        }
    }
}

impl Store for Log {
    fn call(&mut self, n: u32) {
        let key = self.key(n);
        let attempt = format!("att-{n:010}");
        let j = &self.journal;
        self.rt
            .block_on(async {
                j.begin_leased(&key, &self.fingerprint, &attempt, 1000, &self.lease)
                    .await?;
                let outcome = Outcome::Completed {
                    result: r#"{"line":"the quick brown fox","n":7}"#.to_owned(),
                };
                let charge = Charge {
                    beneficiaries: vec!["ana".to_owned()].into(),
                    generations: 1,
                    output_tokens: 5,
                };
                j.finish(&key, outcome, Some(charge), Vec::new()).await
            })
            .expect("a durable call on the log journal");
    }
}

const REDB_CALLS: redb::TableDefinition<&[u8], &[u8]> = redb::TableDefinition::new("calls");

struct Redb(redb::Database);

/// redb as the journal would need it: any number of processes may open it to write
/// (`ConcurrencyMode::MultiWriter`, one write transaction at a time).
fn redb_multi_writer(path: &Path) -> Result<redb::Database, redb::DatabaseError> {
    redb::Database::builder()
        .set_concurrency_mode(redb::ConcurrencyMode::MultiWriter)
        .create(path)
}

impl Store for Redb {
    fn call(&mut self, n: u32) {
        let txn = self.0.begin_write().expect("redb: begin");
        {
            let mut calls = txn.open_table(REDB_CALLS).expect("redb: table");
            if n > 0 {
                calls
                    .insert(&kv_key(n - 1)[..], &ended_row(n - 1)[..])
                    .expect("redb: outcome");
            }
            calls
                .insert(&kv_key(n)[..], &identity_row(n)[..])
                .expect("redb: identity");
        }
        txn.commit().expect("redb: commit");
    }
}

struct Fjall {
    db: fjall::Database,
    calls: fjall::Keyspace,
}

impl Store for Fjall {
    fn call(&mut self, n: u32) {
        let mut batch = self
            .db
            .batch()
            .durability(Some(fjall::PersistMode::SyncData));
        if n > 0 {
            batch.insert(&self.calls, kv_key(n - 1), ended_row(n - 1));
        }
        batch.insert(&self.calls, kv_key(n), identity_row(n));
        batch.commit().expect("fjall: commit");
    }
}

fn open(kind: &str, dir: &Path) -> Box<dyn Store> {
    match kind {
        "log" => Box::new(Log::open(&dir.join("calls.log"))),
        "redb" => Box::new(Redb(
            redb::Database::create(dir.join("calls.redb")).expect("redb: create"),
        )),
        "redb-mw" => Box::new(Redb(
            redb_multi_writer(&dir.join("calls.redb")).expect("redb: create"),
        )),
        "fjall" => {
            let db = fjall::Database::builder(dir.join("calls.fjall"))
                .open()
                .expect("fjall: open");
            let calls = db
                .keyspace("calls", fjall::KeyspaceCreateOptions::default)
                .expect("fjall: keyspace");
            Box::new(Fjall { db, calls })
        }
        other => panic!("unknown store `{other}`: log, redb, redb-mw or fjall"),
    }
}

/// The CPU time of every thread of this process, in nanoseconds (`/proc/self/task/*/schedstat`:
/// a store's background threads count too).
fn process_cpu_ns() -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// The disk's `fdatasync` rate: a 256-byte `pwrite` at one offset, then `fdatasync`.
fn fdatasync_rate(dir: &Path, d: Duration) -> f64 {
    let path = dir.join("sync.bin");
    let f = File::create(&path).expect("sync file");
    let buf = [7u8; 256];
    f.write_all_at(&buf, 0).expect("write");
    f.sync_all().expect("fsync");
    let (start, mut n) = (Instant::now(), 0u64);
    while start.elapsed() < d {
        f.write_all_at(&buf, 0).expect("write");
        f.sync_data().expect("fdatasync");
        n += 1;
    }
    let _ = std::fs::remove_file(&path);
    n as f64 / start.elapsed().as_secs_f64()
}

/// Runs one store for `d` in a fresh folder: calls a second and CPU µs a call (all threads).
fn measure(kind: &str, root: &Path, d: Duration) -> (f64, f64) {
    let dir = root.join(kind);
    std::fs::create_dir_all(&dir).expect("store folder");
    let mut store = open(kind, &dir);
    // Warm up: files created and grown, caches filled.
    for n in 0..50 {
        store.call(n);
    }
    let (cpu0, start, mut n) = (process_cpu_ns(), Instant::now(), 50u32);
    while start.elapsed() < d {
        store.call(n);
        n += 1;
    }
    let (wall, cpu) = (start.elapsed(), process_cpu_ns() - cpu0);
    let calls = f64::from(n - 50);
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
    (calls / wall.as_secs_f64(), cpu as f64 / 1e3 / calls)
}

/// Whether a second opener (as a second host process would be) can use a store another holds
/// open: the journal's lease needs it (`tests/lease.rs`). `flock` locks belong to an open file,
/// so a second open in this process meets the lock a second process would.
fn second_opener(root: &Path) {
    let dir = root.join("second");
    std::fs::create_dir_all(&dir).expect("folder");
    let log = dir.join("calls.log");
    let first = LogJournal::open(&log).expect("log: first open");
    let second = LogJournal::open(&log).map(|_| "opens").unwrap_or("refused");
    drop(first);
    let path = dir.join("calls.fjall");
    let first = fjall::Database::builder(&path)
        .open()
        .expect("fjall: first open");
    let again = match fjall::Database::builder(&path).open() {
        Ok(_) => "opens".to_owned(),
        Err(e) => format!("refused ({e:?})"),
    };
    drop(first);
    let path = dir.join("calls.redb");
    let first = redb::Database::create(&path).expect("redb: first open");
    let redb = match redb::Database::create(&path) {
        Ok(_) => "opens".to_owned(),
        Err(e) => format!("refused ({e})"),
    };
    drop(first);
    let first = redb_multi_writer(&path).expect("redb: first open");
    let redb_mw = match redb_multi_writer(&path) {
        Ok(_) => "opens".to_owned(),
        Err(e) => format!("refused ({e})"),
    };
    drop(first);
    println!(
        "  a second opener while the first holds it: log {second}; redb {redb}; redb-mw {redb_mw}; fjall {again}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn scratch() -> PathBuf {
    let dir = std::env::var_os("WOP_FLOORS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::current_dir().expect("cwd").join("target"))
        .join(format!("store-floors-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch folder");
    dir
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = scratch();
    if let [flag, kind, n] = &args[..]
        && flag == "--count"
    {
        // For callgrind: `n` calls of one store and nothing else.
        let n: u32 = n.parse().expect("--count STORE N: N calls");
        let mut store = open(kind, &root);
        for i in 0..n {
            store.call(i);
        }
        drop(store);
        let _ = std::fs::remove_dir_all(&root);
        return;
    }
    let secs: f64 = args
        .first()
        .map_or(2.0, |s| s.parse().expect("SECS: seconds a figure"));
    let d = Duration::from_secs_f64(secs);
    println!("store floors, {secs} s each, in {}", root.display());
    let before = fdatasync_rate(&root, d);
    println!("  fdatasync of 256 B, before: {before:>7.0} /s");
    let mut rows = Vec::new();
    for kind in ["log", "redb", "redb-mw", "fjall"] {
        let (rate, cpu) = measure(kind, &root, d);
        rows.push((kind, rate, cpu));
    }
    let after = fdatasync_rate(&root, d);
    println!("  fdatasync of 256 B, after:  {after:>7.0} /s");
    let reference = (before + after) / 2.0;
    for (kind, rate, cpu) in rows {
        println!(
            "  {kind:<7} {rate:>7.0} calls/s  {:>5.1}% of the fdatasync rate  {:>6.1} us a call  CPU {cpu:>6.1} us a call (all threads)",
            100.0 * rate / reference,
            1e6 / rate,
        );
    }
    second_opener(&root);
    let _ = std::fs::remove_dir_all(&root);
}
