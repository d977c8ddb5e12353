//! Issue 33: what the help and the README say is what the program does.

use super::*;

#[test]
fn conformance_older_host_document_exit_code_and_help_agree() {
    let o = run(&["conformance", "--older-host", "--json"]);
    let report: Value = serde_json::from_str(&stdout(&o)).expect("JSON report");
    assert_eq!(report["result"], "skipped-by-design");
    assert_eq!(report["allPassed"], false, "no leg was judged, none passed");
    assert_eq!(code(&o), 0, "`result` is not `failed`: exit 0");
    let o = run(&["conformance", "--older-host"]);
    assert!(
        stdout(&o).contains("result: skipped-by-design"),
        "{}",
        stdout(&o)
    );
    let help = stdout(&run(&["conformance", "--help"]));
    for needle in [
        "skipped-by-design",
        "`allPassed` stays false",
        "exit code 0",
    ] {
        assert!(
            help.contains(needle),
            "`{needle}` missing from the help:\n{help}"
        );
    }
}

#[test]
fn the_demo_takes_its_flags_alone_and_progress_goes_to_standard_error() {
    for flags in [&["--json"][..], &["-v"][..]] {
        let o = run(flags);
        assert_eq!(code(&o), 0, "{flags:?}: {}", stderr(&o));
    }
    let o = run(&[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(
        err.contains("Estimate (host ceiling") && err.contains("outline: started"),
        "{err}"
    );
    assert!(
        !out.contains("Estimate (host ceiling") && !out.contains("outline: started"),
        "{out}"
    );
    assert!(out.contains("Report for run"), "{out}");
    let help = stdout(&run(&["run", "--help"]));
    assert!(help.contains("standard error"), "{help}");
}

#[test]
fn the_readme_says_the_timeout_the_verbosity_and_where_progress_goes() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    let at = readme.find("## Against a real model").expect("the section");
    let section = &readme[at..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |e| e + 3)];
    for needle in [
        "--timeout",
        "120",
        "`-v`",
        "`-vv`",
        "standard error",
        "request N",
        "maxAttempts",
    ] {
        assert!(section.contains(needle), "`{needle}` missing:\n{section}");
    }
}
