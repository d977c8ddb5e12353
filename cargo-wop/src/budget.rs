//! The budget check `cargo wop build` runs on the built addon: every node whose `max_calls`
//! cannot fit its planned calls on a host without `aiProviders.callAccounting` (openwop-app),
//! for the inputs in the crate's `budget-inputs.json` (`{typeId: input, ...}`; a node's plan
//! depends on its input). The rule is the SDK's (`Pack::budget_warnings`), asked of the addon
//! itself (`wopBudgetCheck`, read by `build.rs` with the packs), so the check sees exactly the
//! nodes the host will run.

use crate::{Failure, progress};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The inputs file `cargo wop new` writes and `cargo wop build` reads by default.
pub(crate) const INPUTS_FILE: &str = "budget-inputs.json";

/// What the check found.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct BudgetCheck {
    /// One line per node that does not fit, naming the node, its budget and the fix.
    pub(crate) warnings: Vec<String>,
    /// `(typeId, why)` of each node that was not checked.
    pub(crate) unchecked: Vec<(String, String)>,
}

/// The inputs file to use: `--budget-inputs`, else the crate's `budget-inputs.json` if present.
pub(crate) fn inputs_file(crate_dir: &Path, given: Option<&PathBuf>) -> Option<PathBuf> {
    match given {
        Some(p) => Some(p.clone()),
        None => Some(crate_dir.join(INPUTS_FILE)).filter(|p| p.is_file()),
    }
}

/// The inputs file's text (`{}` without one): a JSON object whose keys are type ids.
pub(crate) fn read_inputs(file: Option<&Path>) -> Result<String, Failure> {
    let Some(file) = file else {
        return Ok("{}".to_owned());
    };
    let text = std::fs::read_to_string(file)
        .map_err(|e| Failure::usage(format!("{}: cannot read: {e}", file.display())))?;
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(_)) => Ok(text),
        Ok(_) => Err(Failure::usage(format!(
            "{}: must be a JSON object {{\"<typeId>\": <input>, ...}}",
            file.display()
        ))),
        Err(e) => Err(Failure::usage(format!("{}: not JSON: {e}", file.display()))),
    }
}

/// The addon's answer to `wopBudgetCheck`.
pub(crate) fn parse(v: &Value, addon: &Path) -> Result<BudgetCheck, Failure> {
    let bad =
        |why: String| Failure::failed(format!("{}: wopBudgetCheck(): {why}", addon.display()));
    if let Some(error) = v["error"].as_str() {
        return Err(bad(error.to_owned()));
    }
    let warnings = v["warnings"]
        .as_array()
        .ok_or_else(|| bad("`warnings` is not an array".into()))?
        .iter()
        .filter_map(|w| w.as_str().map(str::to_owned))
        .collect();
    let unchecked = v["unchecked"]
        .as_array()
        .ok_or_else(|| bad("`unchecked` is not an array".into()))?
        .iter()
        .filter_map(|u| Some((u[0].as_str()?.to_owned(), u[1].as_str()?.to_owned())))
        .collect();
    Ok(BudgetCheck {
        warnings,
        unchecked,
    })
}

/// Reports the check on standard error; with `deny`, a warning fails the build.
pub(crate) fn report(check: &BudgetCheck, file: Option<&Path>, deny: bool) -> Result<(), Failure> {
    let source = file.map_or_else(|| format!("no {INPUTS_FILE}"), |f| f.display().to_string());
    for (type_id, why) in &check.unchecked {
        progress(&format!(
            "budget: node `{type_id}` not checked ({source}): {why}"
        ));
    }
    for w in &check.warnings {
        progress(&format!("warning: budget: {w}"));
    }
    if check.warnings.is_empty() {
        let n = check.unchecked.len();
        progress(&format!(
            "budget: every checked node fits on a host with and without callAccounting{}",
            if n == 0 {
                String::new()
            } else {
                format!(" ({n} not checked)")
            }
        ));
        return Ok(());
    }
    if deny {
        return Err(Failure::failed(format!(
            "{} node(s) cannot fit their budget on a host without callAccounting (--deny-budget-warnings)",
            check.warnings.len()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_reads_and_an_error_is_named() {
        let addon = Path::new("lib.so");
        let ok = parse(
            &serde_json::json!({"warnings": ["node `a`: too small"], "unchecked": [["b", "no input"]]}),
            addon,
        )
        .expect("reads");
        assert_eq!(ok.warnings, ["node `a`: too small"]);
        assert_eq!(ok.unchecked, [("b".to_owned(), "no input".to_owned())]);
        let e = parse(
            &serde_json::json!({"error": "the inputs are not JSON"}),
            addon,
        )
        .expect_err("error");
        assert!(
            e.message
                .contains("lib.so: wopBudgetCheck(): the inputs are not JSON"),
            "{}",
            e.message
        );
        assert!(parse(&serde_json::json!([]), addon).is_err());
    }

    #[test]
    fn a_warning_fails_the_build_only_when_denied() {
        let check = BudgetCheck {
            warnings: vec!["node `a`: too small".into()],
            unchecked: vec![],
        };
        assert!(report(&check, None, false).is_ok());
        let e = report(&check, None, true).expect_err("denied");
        assert!(
            e.message.contains("--deny-budget-warnings"),
            "{}",
            e.message
        );
        assert!(report(&BudgetCheck::default(), None, true).is_ok());
    }

    #[test]
    fn an_inputs_file_that_is_not_an_object_is_refused_with_its_name() {
        let dir = std::env::temp_dir().join(format!("wop-budget-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let file = dir.join(INPUTS_FILE);
        std::fs::write(&file, "[1]").expect("write");
        let e = read_inputs(Some(&file)).expect_err("refused");
        assert!(
            e.message
                .contains("budget-inputs.json: must be a JSON object"),
            "{}",
            e.message
        );
        std::fs::write(&file, "{").expect("write");
        assert!(
            read_inputs(Some(&file))
                .expect_err("refused")
                .message
                .contains("not JSON")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
