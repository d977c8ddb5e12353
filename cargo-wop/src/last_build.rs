//! What the last successful `cargo wop build` of a crate used (`--provider`, `--model`,
//! `--timeout-ms`), kept in `<crate>/target/wop/last-build.json` (the folder `build` writes to by
//! default): `cargo wop dev` takes each of them it is not given from there.
//!
//! ```json
//! {"provider": "mock", "model": "mock-1", "timeoutMs": 300000}
//! ```
//!
//! `provider` and `model` are `null` when the build had none. The file is written whole (a
//! temporary file beside it, then renamed over it); a file that does not read as this is a
//! warning naming it, and `dev` goes on as if there were none.

use crate::progress;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// The file, under the crate's folder.
pub(crate) const FILE: &str = "target/wop/last-build.json";

/// What a build used.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct LastBuild {
    pub(crate) provider: Option<String>,
    pub(crate) model: Option<String>,
    pub(crate) timeout_ms: Option<u64>,
}

/// The file of the crate in `crate_dir`.
pub(crate) fn path(crate_dir: &Path) -> PathBuf {
    crate_dir.join(FILE)
}

/// Records `used` as the crate's last build: written to a temporary file beside the file, then
/// renamed over it, so a reader never sees half of it. A failure is a warning: the build itself
/// succeeded.
pub(crate) fn record(crate_dir: &Path, used: &LastBuild) {
    let file = path(crate_dir);
    let text = format!(
        "{}\n",
        json!({"provider": used.provider, "model": used.model, "timeoutMs": used.timeout_ms})
    );
    let temp = file.with_extension(format!("json.{}.tmp", std::process::id()));
    let written = file
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(&temp, text))
        .and_then(|()| std::fs::rename(&temp, &file));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temp);
        progress(&format!(
            "warning: {}: cannot record this build's --provider, --model and --timeout-ms ({e}): `cargo wop dev` will not find them there",
            file.display()
        ));
    }
}

/// The crate's last build, if one is recorded and reads back; a damaged file is a warning naming
/// it, and answers `None`.
pub(crate) fn read(crate_dir: &Path) -> Option<LastBuild> {
    let file = path(crate_dir);
    let bytes = match std::fs::read(&file) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => {
            warn_damaged(&file, &format!("cannot read it: {e}"));
            return None;
        }
    };
    match parse(&bytes) {
        Ok(last) => Some(last),
        Err(why) => {
            warn_damaged(&file, &why);
            None
        }
    }
}

fn warn_damaged(file: &Path, why: &str) {
    progress(&format!(
        "warning: {}: {why}; ignored, as if no build were recorded (`cargo wop build` writes it again)",
        file.display()
    ));
}

/// The file's JSON: an object with `provider` and `model` (each a non-empty string or `null`) and
/// `timeoutMs` (an integer of at least 1, or `null`); other keys are ignored.
fn parse(bytes: &[u8]) -> Result<LastBuild, String> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
    let Some(object) = value.as_object() else {
        return Err("not a JSON object".to_owned());
    };
    let text = |key: &str| match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if !s.is_empty() => Ok(Some(s.clone())),
        Some(other) => Err(format!(
            "`{key}` must be a non-empty string or null, not {other}"
        )),
    };
    let timeout_ms = match object.get("timeoutMs") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_u64().filter(|n| *n >= 1).ok_or_else(|| {
            format!("`timeoutMs` must be an integer of at least 1 or null, not {v}")
        })?),
    };
    Ok(LastBuild {
        provider: text("provider")?,
        model: text("model")?,
        timeout_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_build_reads_back_and_damage_is_refused_with_the_rule() {
        let dir = std::env::temp_dir().join(format!("cargo-wop-last-build-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(read(&dir), None, "no file: no build, no warning");
        let used = LastBuild {
            provider: Some("mock".into()),
            model: None,
            timeout_ms: Some(9000),
        };
        record(&dir, &used);
        assert_eq!(read(&dir), Some(used));
        let names: Vec<_> = std::fs::read_dir(dir.join("target/wop"))
            .expect("listed")
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names, ["last-build.json"], "no temporary file left");
        for (bytes, says) in [
            (&b"{\"provider\": \"mo"[..], "not JSON"),
            (b"[1]", "not a JSON object"),
            (
                b"{\"provider\": 3}",
                "`provider` must be a non-empty string or null, not 3",
            ),
            (b"{\"model\": \"\"}", "`model` must be a non-empty string"),
            (
                b"{\"timeoutMs\": 0}",
                "`timeoutMs` must be an integer of at least 1",
            ),
            (
                b"{\"timeoutMs\": -5}",
                "`timeoutMs` must be an integer of at least 1",
            ),
            (b"\xff\xfe", "not JSON"),
        ] {
            let e = parse(bytes).expect_err("damaged");
            assert!(e.contains(says), "{e}");
        }
        assert_eq!(
            parse(b"{\"provider\": null, \"extra\": 1}"),
            Ok(LastBuild::default())
        );
        std::fs::write(path(&dir), "{").expect("damage it");
        assert_eq!(read(&dir), None, "a damaged file is as none");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
