//! `import planlock`: the validator and the plan hash of planlock's library for producers of
//! plans in Python (CONTRACT §17), as an abi3 extension module built by maturin. Every function
//! wraps one of `planlock::producer`'s, so the answers are the Rust library's own; the typed
//! interface is `planlock.pyi`.
//!
//! A plan is what a caller holds: its JSON text (`str`, `bytes`) or the value (`dict`, `list`),
//! which is written as JSON here, once, in Rust (`json.rs`): the same verdicts as its text. The
//! GIL is released while a plan is validated or hashed; nothing reads a file but a profile's
//! three documents.

mod json;

use planlock_core::producer::{self, ProducerError};
use planlock_core::{Failure, Problem as CoreProblem};
use pyo3::exceptions::{PyException, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

pyo3::create_exception!(
    planlock,
    PlanlockError,
    PyException,
    "A call planlock could not answer: `code` is its stable code (`plan-rejected`, `profile-unreadable`, `yaml`, `invalid-json`, …), `class_` its class (`CycleFail` or `FailFast`), `problems` a rejected plan's problems. It pickles (multiprocessing)."
);

/// One problem the validator found.
#[pyclass(frozen, module = "planlock")]
struct Problem {
    /// The stable code, such as `order-violation`.
    #[pyo3(get)]
    code: String,
    /// `CycleFail` or `FailFast`.
    #[pyo3(get)]
    class_: String,
    /// Where, as a JSON Pointer (`""` for the whole document).
    #[pyo3(get)]
    pointer: String,
    /// What was wrong and what is allowed.
    #[pyo3(get)]
    message: String,
}

#[pymethods]
impl Problem {
    #[new]
    fn new(code: String, class_: String, pointer: String, message: String) -> Problem {
        Problem { code, class_, pointer, message }
    }

    /// The problem as a dict: `code`, `class`, `pointer`, `message`.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("code", &self.code)?;
        d.set_item("class", &self.class_)?;
        d.set_item("pointer", &self.pointer)?;
        d.set_item("message", &self.message)?;
        Ok(d)
    }

    /// Pickles as its four fields.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, Fields)> {
        let p = slf.get();
        let fields = (p.code.clone(), p.class_.clone(), p.pointer.clone(), p.message.clone());
        Ok((slf.get_type().into_any(), fields))
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<Problem>().is_ok_and(|o| {
            let o = o.get();
            (&o.code, &o.class_, &o.pointer, &o.message) == (&self.code, &self.class_, &self.pointer, &self.message)
        })
    }

    fn __repr__(&self) -> String {
        format!(
            "Problem(code={:?}, class_={:?}, pointer={:?}, message={:?})",
            self.code, self.class_, self.pointer, self.message
        )
    }
}

/// A problem's four fields, as it pickles: code, class, pointer, message.
type Fields = (String, String, String, String);

impl From<&CoreProblem> for Problem {
    fn from(p: &CoreProblem) -> Problem {
        Problem {
            code: p.code().as_str().to_owned(),
            class_: p.class().as_str().to_owned(),
            pointer: p.pointer().to_owned(),
            message: p.message().to_owned(),
        }
    }
}

/// The validator's verdict on one plan.
#[pyclass(frozen, module = "planlock")]
struct Report {
    /// Whether the plan is valid.
    #[pyo3(get)]
    ok: bool,
    /// `FailFast` if any problem is, else `CycleFail`; `None` for a valid plan.
    #[pyo3(get)]
    class_: Option<&'static str>,
    /// Every problem, in the validator's order.
    #[pyo3(get)]
    problems: Vec<Py<Problem>>,
}

#[pymethods]
impl Report {
    fn __bool__(&self) -> bool {
        self.ok
    }

    /// The report as a dict, as JSON writes it: `ok`, `class`, `problems` (each a dict).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("ok", self.ok)?;
        d.set_item("class", self.class_)?;
        let problems = PyList::empty(py);
        for p in &self.problems {
            problems.append(p.get().to_dict(py)?)?;
        }
        d.set_item("problems", problems)?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        format!("Report(ok={}, class_={:?}, problems=[{} problems])", self.ok, self.class_, self.problems.len())
    }
}

/// The JSON text of `plan`, named `argument` in a `TypeError`: `str` as UTF-8, `bytes` as they
/// are, a `dict` or `list` written as JSON (at most a plan's bound kept: past it, its length).
fn plan_bytes(plan: &Bound<'_, PyAny>, argument: &str) -> PyResult<json::Text> {
    if let Ok(s) = plan.cast::<PyString>() {
        return json::utf8(s).map(json::Text::Whole);
    }
    if let Ok(b) = plan.cast::<PyBytes>() {
        return Ok(json::Text::Whole(b.as_bytes().to_vec()));
    }
    if plan.cast::<PyDict>().is_ok() || plan.cast::<PyList>().is_ok() || plan.cast::<PyTuple>().is_ok() {
        return json::write(plan);
    }
    Err(PyTypeError::new_err(format!(
        "{argument} must be the plan: its JSON text (str or bytes) or its value (dict or list), not {}",
        type_name(plan)
    )))
}

/// The plan's bytes, or a `PlanlockError` for a value past a plan's bound (only `validate`
/// answers that with a report).
fn whole(text: json::Text) -> Result<Vec<u8>, ProducerError> {
    match text {
        json::Text::Whole(bytes) => Ok(bytes),
        json::Text::TooLarge(len) => Err(producer::too_large_error(len)),
    }
}

fn type_name(value: &Bound<'_, PyAny>) -> String {
    value.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "this value".to_owned())
}

/// A `PlanlockError` from planlock's error: `code`, `class_`, a rejected plan's `problems`.
fn error(py: Python<'_>, e: ProducerError) -> PyErr {
    let problems: Vec<Problem> = match &e {
        ProducerError::Rejected(r) => r.problems().iter().map(Problem::from).collect(),
        _ => Vec::new(),
    };
    planlock_error(py, e.code(), e.kind().as_str(), &e.to_string(), problems)
}

fn planlock_error(py: Python<'_>, code: &str, class: &str, message: &str, problems: Vec<Problem>) -> PyErr {
    let err = PlanlockError::new_err(message.to_owned());
    let value = err.value(py);
    let _ = value.setattr("code", code);
    let _ = value.setattr("class_", class);
    let problems: Vec<Py<Problem>> = problems.into_iter().filter_map(|p| Py::new(py, p).ok()).collect();
    let _ = value.setattr("problems", problems);
    err
}

/// Validates a plan, its JSON text (`str`, `bytes`) or its value (`dict`, `list`): every
/// problem, with its code, class, JSON Pointer and message.
#[pyfunction]
fn validate(py: Python<'_>, plan: &Bound<'_, PyAny>) -> PyResult<Report> {
    let report = match plan_bytes(plan, "plan")? {
        json::Text::Whole(bytes) => py.detach(|| producer::validate(&bytes)),
        json::Text::TooLarge(len) => producer::too_large(len),
    };
    let problems = report.problems.iter().map(|p| Py::new(py, Problem::from(p))).collect::<PyResult<_>>()?;
    Ok(Report { ok: report.ok, class_: report.class.map(|c| c.as_str()), problems })
}

/// The plan hash (64 hex digits) of a valid plan as `planlock hash --policy-root` computes it:
/// the profile is the plan's `metadata.policyProfile` under `policy_root`.
#[pyfunction]
fn plan_hash(py: Python<'_>, policy_root: std::path::PathBuf, plan: &Bound<'_, PyAny>) -> PyResult<String> {
    let text = plan_bytes(plan, "plan")?;
    let hashed = py.detach(|| producer::plan_hash_at(&policy_root, &whole(text)?));
    hashed.map(|d| d.to_string()).map_err(|e| error(py, e))
}

/// The plan hash of a valid plan with the profile in `profile_dir` (its `modes.yaml`,
/// `triggers.yaml` and `bundles.yaml`; nothing else is read).
#[pyfunction]
fn plan_hash_in(py: Python<'_>, profile_dir: std::path::PathBuf, plan: &Bound<'_, PyAny>) -> PyResult<String> {
    let text = plan_bytes(plan, "plan")?;
    let hashed = py.detach(|| producer::plan_hash_in(&profile_dir, &whole(text)?));
    hashed.map(|d| d.to_string()).map_err(|e| error(py, e))
}

/// The plan hash of a valid plan with the profile's three documents given as text: `modes`,
/// `triggers`, `bundles` (the YAML of `modes.yaml`, `triggers.yaml`, `bundles.yaml`).
#[pyfunction]
fn plan_hash_of(py: Python<'_>, documents: &Bound<'_, PyAny>, plan: &Bound<'_, PyAny>) -> PyResult<String> {
    let documents: (String, String, String) = documents.extract().map_err(|_| {
        PyTypeError::new_err(format!(
            "documents must be a tuple of three str (modes, triggers, bundles), not {}",
            type_name(documents)
        ))
    })?;
    let text = plan_bytes(plan, "plan")?;
    let (m, t, b) = documents;
    let hashed = py.detach(|| producer::plan_hash_of([&m, &t, &b], &whole(text)?));
    hashed.map(|d| d.to_string()).map_err(|e| error(py, e))
}

/// A value's canonical JSON (RFC 8785), as the plan hash writes it: `None`, `bool`, `int`,
/// `float`, `str` (a JSON string: JSON text is `canonical_json_text`'s), `list`, `tuple` and
/// `dict` with `str` keys. NaN, infinities, other types (a `datetime`, a `set`) and lone
/// surrogates raise `PlanlockError` (`invalid-json`).
#[pyfunction]
fn canonical_json(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<String> {
    let text = json::write(value)?;
    py.detach(|| producer::canonical_json(&whole(text)?)).map_err(|e| error(py, e))
}

/// JSON text (`str` or `bytes`) written canonically, read as a plan is read (a key twice, a lone
/// surrogate, a number past the double range or a text past 1 MiB is refused, never repaired).
#[pyfunction]
fn canonical_json_text(py: Python<'_>, text: &Bound<'_, PyAny>) -> PyResult<String> {
    let bytes = if let Ok(s) = text.cast::<PyString>() {
        json::utf8(s)?
    } else if let Ok(b) = text.cast::<PyBytes>() {
        b.as_bytes().to_vec()
    } else {
        return Err(PyTypeError::new_err(format!("text must be JSON text (str or bytes), not {}", type_name(text))));
    };
    py.detach(|| producer::canonical_json(&bytes)).map_err(|e| error(py, e))
}

/// The plan's JSON Schema (draft 2020-12), as text.
#[pyfunction]
fn schema() -> String {
    producer::schema()
}

/// The step registry, in canonical order, as JSON text: each step's `type`, `mandatory`,
/// `failureClass` and `timeout`.
#[pyfunction]
fn registry() -> String {
    producer::registry().to_string()
}

#[pymodule]
fn planlock(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("PlanlockError", m.py().get_type::<PlanlockError>())?;
    m.add("ERROR_CODES", producer::ProducerError::CODES.to_vec())?;
    m.add_class::<Report>()?;
    m.add_class::<Problem>()?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(plan_hash, m)?)?;
    m.add_function(wrap_pyfunction!(plan_hash_in, m)?)?;
    m.add_function(wrap_pyfunction!(plan_hash_of, m)?)?;
    m.add_function(wrap_pyfunction!(canonical_json, m)?)?;
    m.add_function(wrap_pyfunction!(canonical_json_text, m)?)?;
    m.add_function(wrap_pyfunction!(schema, m)?)?;
    m.add_function(wrap_pyfunction!(registry, m)?)?;
    Ok(())
}
