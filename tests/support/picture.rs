//! Reading the report's picture (an SVG document), for the tests that check it
//! (`tests/book_ai.rs`, `tests/cli/`).

/// Every `<text>` of the picture, trimmed, in document order: its labels and figures.
pub fn labels<'a>(doc: &'a roxmltree::Document<'_>) -> Vec<&'a str> {
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .map(str::trim)
        .collect()
}
