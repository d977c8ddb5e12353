//! The folder a single-file pack writes its addon to (`WOP_SDK_ADDON_DIR`/`wop-sdk-addons-<uid>`):
//! a new addon written there prunes what the folder need not keep; an addon found there is marked
//! as used.

use super::{PREFIXES, packs, step};
use serde_json::json;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};
use wop_sdk_test_support::harness::run_with_addon_dir;

/// The addon folder under `root` for this user, as the generated module names it.
fn addon_folder(root: &Path) -> PathBuf {
    std::fs::create_dir_all(root).expect("root");
    let uid = std::fs::metadata(root).expect("root's metadata").uid();
    root.join(format!("wop-sdk-addons-{uid}"))
}

/// A file of `age` in `dir`.
fn aged(dir: &Path, name: &str, age: Duration) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, b"not an addon").expect("written");
    std::fs::File::open(&path)
        .expect("opened")
        .set_modified(SystemTime::now() - age)
        .expect("mtime set");
    path
}

fn review_once(root: &Path) {
    let report = run_with_addon_dir(
        &json!({
            "packsDir": packs().single,
            "prefixes": PREFIXES,
            "steps": [{"nodeId": "review-1", "typeId": "community.demo.bookai.review-chapter",
                       "inputs": {"draft": {"number": 1, "scenes": []}},
                       "script": [{"content": "Fine.", "usage": {"outputTokens": 2}}]}],
        }),
        root,
    );
    let review = step(&report, "review-1");
    assert_eq!(review["outcome"]["status"], "success", "{review:#}");
}

fn names(dir: &Path, suffix: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("the addon folder")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(suffix))
        .collect();
    names.sort();
    names
}

#[test]
fn a_new_addon_prunes_the_folder_to_the_last_day_and_the_sixteen_most_recently_used() {
    let root = std::env::temp_dir().join(format!("wop-addon-dir-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let dir = addon_folder(&root);
    std::fs::create_dir_all(&dir).expect("the addon folder");
    let mut perms = std::fs::metadata(&dir).expect("folder").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o700);
    std::fs::set_permissions(&dir, perms).expect("private");
    let day = Duration::from_secs(24 * 60 * 60);
    // Twenty addons of other packs last used 2..22 days ago, two used an hour ago; a write that
    // never finished two days ago, and one in progress now.
    for i in 0..20u64 {
        aged(&dir, &format!("old{i:02}.node"), day * 2 + day * i as u32);
    }
    aged(&dir, "recent-a.node", Duration::from_secs(3600));
    aged(&dir, "recent-b.node", Duration::from_secs(3600));
    aged(&dir, "abandoned.node.1.tmp", day * 2);
    aged(&dir, "writing.node.2.tmp", Duration::from_secs(1));

    review_once(&root);

    let kept = names(&dir, ".node");
    assert_eq!(kept.len(), 16, "{kept:?}");
    // Its own, the two used within the day, and the 13 most recently used of the old ones.
    assert!(kept.iter().any(|n| n.len() == 64 + 5), "{kept:?}");
    assert!(kept.contains(&"recent-a.node".into()) && kept.contains(&"recent-b.node".into()));
    let old: Vec<_> = kept
        .iter()
        .filter(|n| n.starts_with("old"))
        .cloned()
        .collect();
    assert_eq!(
        old,
        (0..13)
            .map(|i| format!("old{i:02}.node"))
            .collect::<Vec<_>>()
    );
    assert_eq!(names(&dir, ".tmp"), ["writing.node.2.tmp"]);

    // Found again, the pack's addon is marked as used: an old mtime is renewed.
    let own = dir.join(kept.iter().find(|n| n.len() == 64 + 5).expect("its own"));
    // The owner may set a file's times through a read-only handle (the addon is 0500).
    std::fs::File::open(&own)
        .expect("opened")
        .set_modified(SystemTime::now() - day * 30)
        .expect("mtime set");
    review_once(&root);
    let age = SystemTime::now()
        .duration_since(
            std::fs::metadata(&own)
                .expect("own")
                .modified()
                .expect("mtime"),
        )
        .unwrap_or_default();
    assert!(age < day, "the addon's use was not marked: {age:?} old");
    let _ = std::fs::remove_dir_all(&root);
}
