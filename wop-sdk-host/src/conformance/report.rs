//! Verdicts and the report: an aligned text table ([`std::fmt::Display`]) and JSON
//! ([`Report::to_json`]).

use serde_json::{Value, json};
use std::fmt;

/// How one leg ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The leg ran and its judge passed it.
    ExecutedPass,
    /// The leg ran and its judge failed it, for this reason.
    ExecutedFail(String),
    /// The leg could not be judged (e.g. the count run failed because the host did not retry).
    Blocked(String),
    /// The leg is gated out (the host does not advertise what it tests).
    Skipped(String),
}

impl Verdict {
    /// The spelling in reports: `executed-pass`, `executed-fail`, `blocked`, `skipped`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::ExecutedPass => "executed-pass",
            Self::ExecutedFail(_) => "executed-fail",
            Self::Blocked(_) => "blocked",
            Self::Skipped(_) => "skipped",
        }
    }

    /// The reason, for every verdict but a pass.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Self::ExecutedPass => None,
            Self::ExecutedFail(r) | Self::Blocked(r) | Self::Skipped(r) => Some(r),
        }
    }

    /// Whether this is `executed-pass`.
    pub fn is_pass(&self) -> bool {
        matches!(self, Self::ExecutedPass)
    }

    /// From a judge's answer.
    pub fn judged(answer: Result<(), String>) -> Self {
        match answer {
            Ok(()) => Self::ExecutedPass,
            Err(reason) => Self::ExecutedFail(reason),
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The verdict of every official leg and of every extra check, in the order they ran.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// The eight official `0248.*` legs: (leg id, verdict).
    pub legs: Vec<(String, Verdict)>,
    /// The extra checks (`extra.*`): the RFC 0248 MUSTs the official legs do not hold.
    pub extra: Vec<(String, Verdict)>,
}

impl Report {
    /// The verdict of leg `id`.
    pub fn verdict(&self, id: &str) -> Option<&Verdict> {
        self.legs.iter().find(|(l, _)| l == id).map(|(_, v)| v)
    }

    /// Whether every leg is `executed-pass` (a skipped or blocked leg is not a pass, and an
    /// empty report passes nothing).
    pub fn all_passed(&self) -> bool {
        !self.legs.is_empty() && self.legs.iter().all(|(_, v)| v.is_pass())
    }

    /// The verdict of extra check `id`.
    pub fn extra_verdict(&self, id: &str) -> Option<&Verdict> {
        self.extra.iter().find(|(l, _)| l == id).map(|(_, v)| v)
    }

    /// Whether every extra check is `executed-pass` (an empty list passes nothing).
    pub fn all_extra_passed(&self) -> bool {
        !self.extra.is_empty() && self.extra.iter().all(|(_, v)| v.is_pass())
    }

    /// The ids of the extra checks with this verdict spelling (`executed-fail`, …).
    pub fn extra_ids_with(&self, verdict: &str) -> Vec<&str> {
        self.extra
            .iter()
            .filter(|(_, v)| v.as_str() == verdict)
            .map(|(id, _)| id.as_str())
            .collect()
    }

    /// The ids of the official legs with this verdict spelling (`executed-fail`, …).
    pub fn ids_with(&self, verdict: &str) -> Vec<&str> {
        self.legs
            .iter()
            .filter(|(_, v)| v.as_str() == verdict)
            .map(|(id, _)| id.as_str())
            .collect()
    }

    /// The report as JSON: `{"legs": [{"id", "verdict", "reason"?}], "allPassed", "extra":
    /// [...], "allExtraPassed"}`.
    pub fn to_json(&self) -> Value {
        let rows = |list: &[(String, Verdict)]| -> Vec<Value> {
            list.iter()
                .map(|(id, v)| {
                    let mut leg = json!({"id": id, "verdict": v.as_str()});
                    if let Some(r) = v.reason() {
                        leg["reason"] = json!(r);
                    }
                    leg
                })
                .collect()
        };
        let mut out = json!({"legs": rows(&self.legs), "allPassed": self.all_passed()});
        if !self.extra.is_empty() {
            out["extra"] = json!(rows(&self.extra));
            out["allExtraPassed"] = json!(self.all_extra_passed());
        }
        out
    }
}

fn table(f: &mut fmt::Formatter<'_>, title: &str, rows: &[(String, Verdict)]) -> fmt::Result {
    let id_w = rows
        .iter()
        .map(|(id, _)| id.chars().count())
        .chain(std::iter::once(title.len()))
        .max()
        .unwrap_or(3);
    let v_w = "executed-pass".len();
    writeln!(f, "{:<id_w$}  {:<v_w$}  reason", title, "verdict")?;
    writeln!(
        f,
        "{}  {}  {}",
        "-".repeat(id_w),
        "-".repeat(v_w),
        "-".repeat(6)
    )?;
    for (id, v) in rows {
        let line = format!(
            "{id:<id_w$}  {:<v_w$}  {}",
            v.as_str(),
            v.reason().unwrap_or("")
        );
        writeln!(f, "{}", line.trim_end())?;
    }
    Ok(())
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        table(f, "leg", &self.legs)?;
        if !self.extra.is_empty() {
            writeln!(f)?;
            table(f, "extra check", &self.extra)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Report {
        Report {
            legs: vec![
                ("0248.attempts-count".into(), Verdict::ExecutedPass),
                (
                    "0248.usage-incomplete".into(),
                    Verdict::ExecutedFail("lied".into()),
                ),
                (
                    "0248.attempts-replayed".into(),
                    Verdict::Skipped("no replay".into()),
                ),
                ("0248.x".into(), Verdict::Blocked("no retry".into())),
            ],
            extra: Vec::new(),
        }
    }

    #[test]
    fn json_spells_verdicts_and_reasons() {
        let j = sample().to_json();
        assert_eq!(
            j["legs"][0],
            json!({"id": "0248.attempts-count", "verdict": "executed-pass"})
        );
        assert_eq!(j["legs"][1]["verdict"], "executed-fail");
        assert_eq!(j["legs"][1]["reason"], "lied");
        assert_eq!(j["legs"][2]["verdict"], "skipped");
        assert_eq!(j["legs"][3]["verdict"], "blocked");
        assert_eq!(j["allPassed"], false);
    }

    #[test]
    fn table_is_aligned() {
        let text = sample().to_string();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 6);
        let col = lines[0].find("verdict").expect("header");
        for line in &lines[2..] {
            assert!(line[col..].starts_with(['e', 's', 'b']), "{line}");
        }
        assert!(text.contains("executed-fail  lied"));
    }

    #[test]
    fn the_extra_checks_are_shown_apart_from_the_legs() {
        let mut report = sample();
        report.extra = vec![
            ("extra.a".into(), Verdict::ExecutedPass),
            ("extra.b".into(), Verdict::ExecutedFail("caught".into())),
        ];
        let text = report.to_string();
        let (legs, extra) = text.split_once("\n\n").expect("two tables");
        assert!(legs.contains("0248.attempts-count") && !legs.contains("extra.a"));
        assert!(extra.starts_with("extra check") && extra.contains("executed-fail  caught"));
        let j = report.to_json();
        assert_eq!(j["legs"].as_array().map(Vec::len), Some(4));
        assert_eq!(j["extra"][1]["verdict"], "executed-fail");
        assert_eq!(j["allExtraPassed"], false);
        assert!(!report.all_extra_passed());
        assert_eq!(report.extra_ids_with("executed-fail"), vec!["extra.b"]);
        assert_eq!(
            report.extra_verdict("extra.a"),
            Some(&Verdict::ExecutedPass)
        );
    }

    #[test]
    fn all_passed_needs_every_leg_executed_and_passing() {
        assert!(!Report::default().all_passed());
        assert!(!sample().all_passed());
        let ok = Report {
            legs: vec![("a".into(), Verdict::ExecutedPass)],
            extra: Vec::new(),
        };
        assert!(ok.all_passed());
        assert_eq!(
            sample().ids_with("executed-fail"),
            vec!["0248.usage-incomplete"]
        );
    }
}
