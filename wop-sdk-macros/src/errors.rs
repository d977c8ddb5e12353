//! Collects independent errors so a macro reports them together (serde's `Ctxt`).

use proc_macro2::Span;
use std::fmt::Display;

/// Errors found so far; [`Errors::finish`] combines them into one `syn::Error`.
#[derive(Default)]
pub(crate) struct Errors {
    first: Option<syn::Error>,
}

impl Errors {
    /// Records an error at `span`.
    pub(crate) fn at(&mut self, span: Span, message: impl Display) {
        self.push(syn::Error::new(span, message));
    }

    /// Records an error (which may already combine several).
    pub(crate) fn push(&mut self, error: syn::Error) {
        match &mut self.first {
            Some(first) => first.combine(error),
            None => self.first = Some(error),
        }
    }

    /// Records every error of `other`.
    pub(crate) fn push_all(&mut self, other: Self) {
        if let Some(e) = other.first {
            self.push(e);
        }
    }

    /// Records the error of `result`, if any, and passes its value on.
    pub(crate) fn ok<T>(&mut self, result: syn::Result<T>) -> Option<T> {
        result.map_err(|e| self.push(e)).ok()
    }

    /// Whether nothing was recorded.
    pub(crate) fn is_empty(&self) -> bool {
        self.first.is_none()
    }

    /// `Ok(value)` when nothing was recorded, else every error combined.
    pub(crate) fn finish<T>(self, value: T) -> syn::Result<T> {
        match self.first {
            Some(e) => Err(e),
            None => Ok(value),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combines_every_error() {
        let mut errors = Errors::default();
        assert!(errors.is_empty());
        errors.at(Span::call_site(), "first");
        errors.at(Span::call_site(), "second");
        let Err(e) = errors.finish(()) else {
            unreachable!("two errors were recorded")
        };
        let messages: Vec<String> = e.into_iter().map(|e| e.to_string()).collect();
        assert_eq!(messages, ["first", "second"]);
    }
}
