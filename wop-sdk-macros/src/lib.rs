//! Implementation detail of `wop-sdk`: depend on `wop-sdk` and use its re-exports.
