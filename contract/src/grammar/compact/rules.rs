//! The compact form's grammar and strict JSON Schema, made from the table (`table.rs`) and the
//! registry: the steps of the form in canonical order under their wire names, the optional ones
//! present or not, each holding the texts the model writes; a step that needs what another
//! writes (a link, its decision and evidence) only where the plan persists them or the frame
//! names them as existing.

use serde_json::{Map, Value, json};

use super::super::GrammarError;
use super::super::ir::{Expr, Rules};
use super::super::plan::{json_quoted, json_string, ordered_inner};
use super::frame::PlanFrame;
use super::table::{MAX_TEXT_CHARS, ModelField, Need, in_form, model_fields, needs};
use crate::contract::registry::{REGISTRY, StepType};

/// The steps of the compact form for `frame`, in canonical order.
pub(crate) fn form_steps(frame: &PlanFrame) -> Vec<StepType> {
    let other_vars = frame.other_vars();
    REGISTRY.iter().map(|s| s.step_type).filter(|ty| in_form(*ty, &other_vars)).collect()
}

/// Whether `need` is met without its step: the frame names one that exists.
pub(crate) fn exists(frame: &PlanFrame, need: Need) -> bool {
    match need {
        Need::Decision => frame.existing_decision.is_some(),
        Need::Evidence => frame.existing_evidence.is_some(),
    }
}

/// The compact form's rules, `root` first.
pub(crate) fn compact_rules(frame: &PlanFrame) -> Result<Rules, GrammarError> {
    let mut rules = Rules::default();
    let steps = form_steps(frame);
    let other_vars = frame.other_vars();
    let entries: Vec<(StepType, Expr)> = steps.iter().map(|ty| (*ty, entry(&mut rules, *ty, &other_vars))).collect();
    // Up to the first mandatory step the usual list (which comes first carries no comma); after
    // it each entry carries its own comma, so a group of steps can be written as its cases.
    let first_required = steps
        .iter()
        .position(|ty| ty.is_mandatory())
        .ok_or_else(|| GrammarError::Schema("the compact form has no mandatory step to start from".into()))?;
    let head: Vec<(Expr, bool)> =
        entries[..=first_required].iter().map(|(ty, e)| (e.clone(), ty.is_mandatory())).collect();
    let mut body = vec![Expr::lit("{"), ordered_inner(head)];
    let rest = &entries[first_required + 1..];
    let mut i = 0;
    while i < rest.len() {
        match group_from(frame, rest, i) {
            Some(end) => {
                body.push(group(frame, &rest[i..=end]));
                i = end + 1;
            }
            None => {
                body.push(with_comma(&rest[i]));
                i += 1;
            }
        }
    }
    body.push(Expr::lit("}"));
    rules.add("root", |_| Expr::seq(body));
    Ok(rules)
}

/// The needs of a step the frame does not meet by naming what exists.
fn unmet(frame: &PlanFrame, ty: StepType) -> Vec<Need> {
    needs(ty).iter().copied().filter(|n| !exists(frame, *n)).collect()
}

/// Where the group that starts at entry `i` ends: the step whose first unmet need's provider
/// is entry `i`.
fn group_from(frame: &PlanFrame, rest: &[(StepType, Expr)], i: usize) -> Option<usize> {
    rest.iter().enumerate().skip(i).find_map(|(j, (ty, _))| {
        let start = unmet(frame, *ty).iter().filter_map(|n| rest.iter().position(|(t, _)| *t == n.provider())).min();
        (start == Some(i)).then_some(j)
    })
}

/// `,"Wire":…`, optional unless the step is mandatory.
fn with_comma((ty, entry): &(StepType, Expr)) -> Expr {
    let e = Expr::seq(vec![Expr::lit(","), entry.clone()]);
    if ty.is_mandatory() { e } else { e.optional() }
}

/// A group of entries whose last needs what earlier ones provide: one case per choice of the
/// providers, the needing step possible only where each need is met.
fn group(frame: &PlanFrame, entries: &[(StepType, Expr)]) -> Expr {
    let (last, members) = entries.split_last().expect("a group has its needing step");
    let providers: Vec<StepType> = unmet(frame, last.0).iter().map(|n| n.provider()).collect();
    let mut cases = Vec::new();
    for mask in 0..(1u32 << providers.len()) {
        let present = |ty: StepType| providers.iter().position(|p| *p == ty).map(|i| mask & (1 << i) != 0);
        let mut parts = Vec::new();
        for member in members {
            match present(member.0) {
                Some(true) => parts.push(Expr::seq(vec![Expr::lit(","), member.1.clone()])),
                Some(false) => {}
                None => parts.push(with_comma(member)),
            }
        }
        let met = needs(last.0).iter().all(|n| exists(frame, *n) || present(n.provider()) == Some(true));
        if met {
            parts.push(with_comma(last));
        }
        cases.push(Expr::seq(parts));
    }
    // The case of none is the group left out (an empty literal is not Lark).
    let none = cases.iter().any(Expr::is_empty);
    let group = Expr::alt(cases.into_iter().filter(|case| !case.is_empty()).collect());
    if none { group.optional() } else { group }
}

/// `"Wire":{…}`: the step's texts in the table's order.
fn entry(rules: &mut Rules, ty: StepType, other_vars: &[String]) -> Expr {
    let mut fields = Vec::new();
    for field in model_fields(ty) {
        match field {
            ModelField::Text { key, max } => fields.push(text_field(rules, key, *max)),
            ModelField::Vars => {
                let vars: Vec<Expr> = other_vars.iter().map(|k| text_field(rules, k, MAX_TEXT_CHARS)).collect();
                fields.push(Expr::seq(vec![Expr::lit(r#""vars":{"#), join(vars), Expr::lit("}")]));
            }
        }
    }
    let name = format!("compact-{}", super::super::ir::kebab(ty.wire_name()));
    rules.add(&name, |_| {
        Expr::seq(vec![Expr::lit(format!("{}:{{", json_quoted(ty.wire_name()))), join(fields), Expr::lit("}")])
    })
}

/// `"key":"…"` of 1 to `max` characters.
fn text_field(rules: &mut Rules, key: &str, max: u32) -> Expr {
    Expr::seq(vec![Expr::lit(format!("{}:", json_quoted(key))), json_string(rules, 1, max)])
}

/// These, with commas between.
fn join(parts: Vec<Expr>) -> Expr {
    let mut out = Vec::new();
    for (i, part) in parts.into_iter().enumerate() {
        if i > 0 {
            out.push(Expr::lit(","));
        }
        out.push(part);
    }
    Expr::seq(out)
}

/// The compact form as a JSON Schema that strict structured-output engines accept: every
/// step required, an optional one an object or `null` (not chosen). It cannot say that a link
/// needs its decision and evidence; reading the answer checks that.
pub(crate) fn compact_json_schema(frame: &PlanFrame) -> Value {
    let other_vars = frame.other_vars();
    let mut properties = Map::new();
    for ty in form_steps(frame) {
        let mut fields = Map::new();
        for field in model_fields(ty) {
            match field {
                ModelField::Text { key, max } => {
                    fields.insert((*key).to_owned(), text_schema(*max));
                }
                ModelField::Vars => {
                    let vars: Map<String, Value> =
                        other_vars.iter().map(|k| (k.clone(), text_schema(MAX_TEXT_CHARS))).collect();
                    fields.insert("vars".to_owned(), strict_object(vars));
                }
            }
        }
        let object = strict_object(fields);
        let schema = if ty.is_mandatory() { object } else { json!({ "anyOf": [object, { "type": "null" }] }) };
        properties.insert(ty.wire_name().to_owned(), schema);
    }
    let mut schema = strict_object(properties);
    schema["title"] = json!("planlock plan choices, contract version 1");
    schema
}

/// An object of exactly these properties, all required.
fn strict_object(properties: Map<String, Value>) -> Value {
    let required: Vec<&String> = properties.keys().collect();
    json!({ "type": "object", "properties": properties, "required": required, "additionalProperties": false })
}

/// A text of 1 to `max` characters.
fn text_schema(max: u32) -> Value {
    json!({ "type": "string", "minLength": 1, "maxLength": max })
}
