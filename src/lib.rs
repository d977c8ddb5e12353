//! The workspace root package: it owns `examples/` and `tests/`.
