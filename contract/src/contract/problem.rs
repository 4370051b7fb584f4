//! The vocabulary of a rejection: [`ProblemCode`] (one table: code, class, meaning), [`Problem`]
//! (code, JSON Pointer, message) and [`Rejection`] (every problem of a plan). The validator
//! reports with these, and so do the typed checks of the contract's own types.

use std::fmt;

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::contract::registry::{Failure, FailureKind};
use crate::json::pointer::JsonPointer;
use crate::json::type_name;

macro_rules! problem_codes {
    ($($variant:ident $code:literal $class:ident $doc:literal;)*) => {
        /// The stable code of a validation problem (docs/CONTRACT.md, "Validation").
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum ProblemCode {
            $(#[doc = concat!("`", $code, "` (", stringify!($class), "): ", $doc)] $variant,)*
        }

        impl ProblemCode {
            /// Every code, in the contract's order.
            pub const ALL: &'static [ProblemCode] = &[$(ProblemCode::$variant),*];

            /// The machine-readable code, e.g. `"order-violation"`.
            pub const fn as_str(self) -> &'static str {
                match self { $(ProblemCode::$variant => $code,)* }
            }

            /// The failure class this problem gives a rejection.
            pub const fn class(self) -> FailureKind {
                match self { $(ProblemCode::$variant => FailureKind::$class,)* }
            }
        }
    };
}

problem_codes! {
    UnsupportedVersion "unsupported-version" FailFast "`step_contract_version` missing, not a string, or not `\"1\"`.";
    InvalidExtensions "invalid-extensions" FailFast "`extensions` missing, not an array, or not empty.";
    MalformedJson "malformed-json" CycleFail "not JSON, or trailing garbage.";
    DuplicateKey "duplicate-key" CycleFail "an object repeats a key.";
    UnknownField "unknown-field" CycleFail "a field the contract does not define.";
    MissingField "missing-field" CycleFail "a required field is absent.";
    InvalidType "invalid-type" CycleFail "a value has the wrong JSON type.";
    InvalidValue "invalid-value" CycleFail "right type, wrong value.";
    UnknownStepType "unknown-step-type" CycleFail "a `type` outside the registry.";
    DuplicateStepType "duplicate-step-type" CycleFail "a step type appears twice.";
    DuplicateStepId "duplicate-step-id" CycleFail "a step id appears twice.";
    OrderViolation "order-violation" CycleFail "steps are not a subsequence of the canonical order.";
    MissingMandatoryStep "missing-mandatory-step" CycleFail "a mandatory step type is absent.";
    TopKMissing "top-k-missing" CycleFail "a `RetrieveMemory` step without `metadata.topK`.";
    TopKMismatch "top-k-mismatch" CycleFail "`RetrieveMemory` payload `topK` differs from `metadata.topK`.";
    TooLarge "too-large" CycleFail "input over the size limit.";
    TooDeep "too-deep" CycleFail "input over the nesting limit.";
}

impl fmt::Display for ProblemCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One problem found in a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    code: ProblemCode,
    pointer: String,
    message: String,
}

/// Fields that would turn the flat plan into a graph; named in the message when rejected.
const BRANCHING_FIELDS: &[&str] = &["onSuccess", "onFail", "condition", "next", "branches", "steps", "loop"];

impl Problem {
    pub fn new(code: ProblemCode, pointer: String, message: impl Into<String>) -> Problem {
        Problem { code, pointer, message: message.into() }
    }

    pub fn unknown_field(path: &JsonPointer<'_>, key: &str, allowed: &[&str]) -> Problem {
        let mut message = format!("unknown field `{key}`");
        if BRANCHING_FIELDS.contains(&key) {
            message.push_str(": plans are flat in contract v1 (no branching, conditions or nested steps)");
        }
        message.push_str("; allowed here: ");
        message.push_str(&allowed.iter().map(|a| format!("`{a}`")).collect::<Vec<_>>().join(", "));
        Problem::new(ProblemCode::UnknownField, path.child(key), message)
    }

    /// `missing-field`, pointing where the field belongs.
    pub fn missing_field(path: &JsonPointer<'_>, key: &str) -> Problem {
        Problem::new(ProblemCode::MissingField, path.child(key), format!("required field `{key}` is missing"))
    }

    /// `invalid-type`: what was expected, and the JSON type found instead.
    pub fn wrong_type(pointer: String, expected: &str, found: &Value) -> Problem {
        Problem::new(ProblemCode::InvalidType, pointer, format!("expected {expected}, found {}", type_name(found)))
    }

    /// The stable code.
    pub fn code(&self) -> ProblemCode {
        self.code
    }
    /// The failure class of this problem.
    pub fn class(&self) -> FailureKind {
        self.code.class()
    }
    /// Where in the document: an RFC 6901 JSON Pointer (`""` is the whole document). For a
    /// missing field it points where the field belongs.
    pub fn pointer(&self) -> &str {
        &self.pointer
    }
    /// What was wrong and what was expected.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.pointer.is_empty() { "(document)" } else { &self.pointer };
        write!(f, "{at}: {} [{}]: {}", self.code, self.class(), self.message)
    }
}

impl Serialize for Problem {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Problem", 4)?;
        st.serialize_field("code", self.code.as_str())?;
        st.serialize_field("class", self.class().as_str())?;
        st.serialize_field("pointer", &self.pointer)?;
        st.serialize_field("message", &self.message)?;
        st.end()
    }
}

/// A rejected plan: every problem found, never empty.
///
/// ```
/// use planlock_contract::{FailureKind, ValidPlan};
/// let err = ValidPlan::from_str(r#"{"step_contract_version":"2","extensions":[]}"#).unwrap_err();
/// assert_eq!(err.class(), FailureKind::FailFast);
/// assert_eq!(err.problems()[0].code().as_str(), "unsupported-version");
/// assert_eq!(err.problems()[0].pointer(), "/step_contract_version");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.summary())]
pub struct Rejection {
    problems: Vec<Problem>,
}

impl Rejection {
    pub fn new(problems: Vec<Problem>) -> Rejection {
        debug_assert!(!problems.is_empty());
        Rejection { problems }
    }

    /// Every problem: first those of single values (JSON, fields, types, values) in document
    /// order, then those of the step list as a whole (duplicates, order, mandatory steps, topK).
    pub fn problems(&self) -> &[Problem] {
        &self.problems
    }

    /// The problems, owned.
    pub fn into_problems(self) -> Vec<Problem> {
        self.problems
    }

    /// `FailFast` if any problem is, else `CycleFail`.
    pub fn class(&self) -> FailureKind {
        self.problems.iter().map(Problem::class).max().unwrap_or(FailureKind::CycleFail)
    }

    fn summary(&self) -> String {
        let n = self.problems.len();
        let mut s = format!("plan rejected ({}): {n} problem{}", self.class(), if n == 1 { "" } else { "s" });
        for p in &self.problems {
            s.push_str("\n  ");
            s.push_str(&p.to_string());
        }
        s
    }
}

impl Failure for Rejection {
    /// `"plan-rejected"`; each problem has its own code.
    fn code(&self) -> &'static str {
        "plan-rejected"
    }

    /// The [`class`](Rejection::class).
    fn kind(&self) -> FailureKind {
        self.class()
    }
}
