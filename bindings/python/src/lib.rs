//! `import planlock`: the validator and the plan hash of planlock's library for producers of
//! plans in Python (CONTRACT §17), as an abi3 extension module built by maturin. Every function
//! wraps one of `planlock::producer`'s, so the answers are the Rust library's own; the typed
//! interface is `planlock.pyi`.
//!
//! The GIL is released while a plan is validated or hashed; nothing reads a file but a
//! profile's three documents in the directory given to `plan_hash`.

use planlock_core::producer::{self, ProducerError};
use planlock_core::{Failure, Problem as CoreProblem};
use pyo3::exceptions::{PyException, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

pyo3::create_exception!(
    planlock,
    PlanlockError,
    PyException,
    "A call planlock could not answer; `code` is its stable code (`plan-rejected`, `profile-unreadable`, `yaml`, `invalid-json`, …), `problems` a rejected plan's problems."
);

/// One problem the validator found.
#[pyclass(frozen, module = "planlock")]
struct Problem {
    /// The stable code, such as `order-violation`.
    #[pyo3(get)]
    code: &'static str,
    /// `CycleFail` or `FailFast`.
    #[pyo3(get)]
    class_: &'static str,
    /// Where, as a JSON Pointer (`""` for the whole document).
    #[pyo3(get)]
    pointer: String,
    /// What was wrong and what is allowed.
    #[pyo3(get)]
    message: String,
}

#[pymethods]
impl Problem {
    /// The problem as a dict: `code`, `class`, `pointer`, `message`.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        let d = pyo3::types::PyDict::new(py);
        d.set_item("code", self.code)?;
        d.set_item("class", self.class_)?;
        d.set_item("pointer", &self.pointer)?;
        d.set_item("message", &self.message)?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        format!(
            "Problem(code={:?}, class={:?}, pointer={:?}, message={:?})",
            self.code, self.class_, self.pointer, self.message
        )
    }
}

impl From<&CoreProblem> for Problem {
    fn from(p: &CoreProblem) -> Problem {
        Problem {
            code: p.code().as_str(),
            class_: p.class().as_str(),
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

    fn __repr__(&self) -> String {
        format!("Report(ok={}, class={:?}, problems=[{} problems])", self.ok, self.class_, self.problems.len())
    }
}

/// The plan's bytes: `str` as UTF-8, `bytes` as they are.
fn plan_bytes(plan: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(s) = plan.cast::<PyString>() {
        Ok(s.to_cow()?.as_bytes().to_vec())
    } else if let Ok(b) = plan.cast::<PyBytes>() {
        Ok(b.as_bytes().to_vec())
    } else {
        Err(PyTypeError::new_err("a plan is its JSON text: str or bytes"))
    }
}

fn error(py: Python<'_>, e: ProducerError) -> PyErr {
    let err = PlanlockError::new_err(e.to_string());
    let value = err.value(py);
    let _ = value.setattr("code", e.code());
    let _ = value.setattr("class_", e.kind().as_str());
    let problems: Vec<Problem> = match &e {
        ProducerError::Rejected(r) => r.problems().iter().map(Problem::from).collect(),
        _ => Vec::new(),
    };
    let problems: Vec<Py<Problem>> = problems.into_iter().filter_map(|p| Py::new(py, p).ok()).collect();
    let _ = value.setattr("problems", problems);
    err
}

/// Validates a plan's JSON text: every problem, with its code, class, JSON Pointer and message.
#[pyfunction]
fn validate(py: Python<'_>, plan: &Bound<'_, PyAny>) -> PyResult<Report> {
    let bytes = plan_bytes(plan)?;
    let report = py.detach(|| producer::validate(&bytes));
    let problems = report.problems.iter().map(|p| Py::new(py, Problem::from(p))).collect::<PyResult<_>>()?;
    Ok(Report { ok: report.ok, class_: report.class.map(|c| c.as_str()), problems })
}

/// The plan hash (64 hex digits) of a valid plan with the profile in `profile_dir` (its
/// `modes.yaml`, `triggers.yaml` and `bundles.yaml`).
#[pyfunction]
fn plan_hash(py: Python<'_>, profile_dir: std::path::PathBuf, plan: &Bound<'_, PyAny>) -> PyResult<String> {
    let bytes = plan_bytes(plan)?;
    py.detach(|| producer::plan_hash_in(&profile_dir, &bytes)).map(|d| d.to_string()).map_err(|e| error(py, e))
}

/// The plan hash of a valid plan with the profile's three documents given as text: `modes`,
/// `triggers`, `bundles` (the YAML of `modes.yaml`, `triggers.yaml`, `bundles.yaml`).
#[pyfunction]
fn plan_hash_of(py: Python<'_>, documents: (String, String, String), plan: &Bound<'_, PyAny>) -> PyResult<String> {
    let bytes = plan_bytes(plan)?;
    let (m, t, b) = documents;
    py.detach(|| producer::plan_hash_of([&m, &t, &b], &bytes)).map(|d| d.to_string()).map_err(|e| error(py, e))
}

/// A value's canonical JSON (RFC 8785), as the plan hash writes it. `value` is JSON text
/// (`str` or `bytes`), or any value `json.dumps` takes.
#[pyfunction]
fn canonical_json(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<String> {
    let text = match plan_bytes(value) {
        Ok(bytes) => bytes,
        Err(_) => {
            let json = py.import("json")?;
            json.call_method1("dumps", (value,))?.extract::<String>()?.into_bytes()
        }
    };
    py.detach(|| producer::canonical_json(&text)).map_err(|e| error(py, e))
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
    m.add("PlanlockError", m.py().get_type::<PlanlockError>())?;
    m.add_class::<Report>()?;
    m.add_class::<Problem>()?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(plan_hash, m)?)?;
    m.add_function(wrap_pyfunction!(plan_hash_of, m)?)?;
    m.add_function(wrap_pyfunction!(canonical_json, m)?)?;
    m.add_function(wrap_pyfunction!(schema, m)?)?;
    m.add_function(wrap_pyfunction!(registry, m)?)?;
    Ok(())
}
