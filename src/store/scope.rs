//! A decision's scope, parsed once for every store.

/// The scope of a decision, parsed: `global`, `axis`, or `domain:<name>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope<'a> {
    Global,
    Axis,
    Domain(&'a str),
}

impl<'a> Scope<'a> {
    /// The scope of `scope`, which the contract already checked (`rules::decision_scope`).
    pub(crate) fn of(scope: &'a str) -> Scope<'a> {
        match scope {
            "global" => Scope::Global,
            "axis" => Scope::Axis,
            other => Scope::Domain(other.strip_prefix("domain:").unwrap_or(other)),
        }
    }

    /// Where a loaded decision of this scope sorts: global, axis, domain.
    pub(crate) fn rank(self) -> u8 {
        match self {
            Scope::Global => 0,
            Scope::Axis => 1,
            Scope::Domain(_) => 2,
        }
    }
}
