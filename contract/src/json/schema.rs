//! Building blocks of a JSON Schema (draft 2020-12): named definitions and object schemas with
//! descriptions. The contract's types use them to state themselves
//! (`contract::json_schema`); nothing here knows the contract.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

/// The named definitions of a schema (`$defs`), filled as types are first met.
#[derive(Debug, Default)]
pub struct Defs(BTreeMap<String, Value>);

impl Defs {
    /// A `$ref` to the definition `name`, made by `make` the first time.
    pub fn reference(&mut self, name: &str, make: impl FnOnce(&mut Defs) -> Value) -> Value {
        if !self.0.contains_key(name) {
            let schema = make(self);
            self.0.insert(name.to_owned(), schema);
        }
        json!({ "$ref": format!("#/$defs/{name}") })
    }

    /// The definitions, as the value of `$defs`.
    pub fn into_value(self) -> Value {
        Value::Object(self.0.into_iter().collect())
    }
}

/// The schema of a contract object, built field by field.
pub struct ObjectSchema {
    description: String,
    properties: Map<String, Value>,
    required: Vec<&'static str>,
}

impl ObjectSchema {
    /// An object with these doc lines as its description.
    pub fn new(doc: &[&str]) -> Self {
        ObjectSchema { description: doc_text(doc), properties: Map::new(), required: Vec::new() }
    }

    /// Adds a field.
    pub fn field(&mut self, wire: &'static str, required: bool, schema: Value, doc: &[&str]) {
        let text = doc_text(doc);
        let schema = if text.is_empty() { schema } else { extended(schema, json!({ "description": text })) };
        self.properties.insert(wire.to_owned(), schema);
        if required {
            self.required.push(wire);
        }
    }

    /// The finished schema: no field but these.
    pub fn into_value(self) -> Value {
        let mut out = Map::new();
        if !self.description.is_empty() {
            out.insert("description".into(), Value::String(self.description));
        }
        out.insert("type".into(), json!("object"));
        out.insert("properties".into(), Value::Object(self.properties));
        out.insert("required".into(), json!(self.required));
        out.insert("additionalProperties".into(), Value::Bool(false));
        Value::Object(out)
    }
}

/// `schema` with `keywords` (an object) added.
pub fn extended(mut schema: Value, keywords: Value) -> Value {
    if let (Value::Object(map), Value::Object(keywords)) = (&mut schema, keywords) {
        map.extend(keywords);
    }
    schema
}

/// Doc comment lines as one text: `/// a` gives `" a"`; the one leading space goes.
fn doc_text(lines: &[&str]) -> String {
    let lines: Vec<&str> = lines.iter().map(|l| l.strip_prefix(' ').unwrap_or(l)).collect();
    lines.join("\n").trim().to_owned()
}
