//! Layer 0: JSON as the contract reads and writes it: the document limits, JSON Pointers
//! ([`pointer`](mod@pointer)), the canonical (RFC 8785) writer ([`canonical`]), the size bound of a plan's
//! JSON form ([`size`]) and JSON Schema building blocks ([`schema`]). It imports nothing else of
//! the crate; everything else may import it.

pub mod canonical;
mod limits;
pub mod pointer;
pub mod schema;
pub mod size;
mod type_name;

pub use limits::{FREE_FORM_DEPTH, MAX_DEPTH, MAX_PLAN_BYTES, MAX_SAFE_INTEGER};
pub use type_name::type_name;
