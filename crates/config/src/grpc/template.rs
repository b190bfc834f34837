//! A templated gRPC message (`body = '{{"name": "user-{seq}"}}'` in a requests file;
//! docs/contract.md, "gRPC"): the JSON encoded once by its descriptor into the parts a request
//! renders — literal protobuf bytes, and around each string that holds a placeholder the
//! length prefixes that change with its value ([`Part::Framed`]). Each placeholder stands in
//! the JSON as a marker of private-use characters, so the descriptor reads the JSON as it
//! would read any; the markers are then found in the decoded strings.
//!
//! Placeholders go in string fields (a value that may be written as a string in JSON, as a
//! 64-bit integer may, is not one: its encoding is not a string's).

use prost::Message as _;
use prost_reflect::{DynamicMessage, FieldDescriptor, MessageDescriptor, ReflectMessage, Value};
use volley_plan::workload::{Part, Prefix, Template};

/// Opens a placeholder's marker: the marker is `OPEN`, the placeholder's number, `CLOSE`.
const OPEN: char = '\u{E000}';
/// Closes a placeholder's marker.
const CLOSE: char = '\u{E001}';

/// The framed message of `tpl` (JSON with placeholders) as `input` encodes it: `Err` says why
/// not (not the message in JSON, a placeholder outside a string field).
pub(crate) fn encode(input: &MessageDescriptor, tpl: &Template) -> Result<Vec<Part>, String> {
    let (json, holes) = marked_json(tpl)?;
    let mut de = serde_json::Deserializer::from_str(&json);
    let message = DynamicMessage::deserialize(input.clone(), &mut de)
        .and_then(|m| de.end().map(|()| m))
        .map_err(|e| {
            let why = e.to_string().replace(OPEN, "{").replace(CLOSE, "}");
            let hint = if holes.is_empty() {
                ""
            } else {
                " (placeholders go in string values only)"
            };
            format!("is not a {} in JSON: {why}{hint}", input.full_name())
        })?;
    let mut found = 0;
    let parts = message_parts(&message, &holes, &mut found)?;
    if found < holes.len() {
        return Err(format!(
            "a placeholder is outside a string field ({} of {} are in one): placeholders go in \
             string values, e.g. {{{{\"name\": \"user-{{seq}}\"}}}}",
            found,
            holes.len()
        ));
    }
    Ok(vec![Part::Framed {
        prefix: Prefix::Grpc,
        parts: merged(parts),
    }])
}

/// The template's text with each placeholder as its marker, and the placeholders by number.
fn marked_json(tpl: &Template) -> Result<(String, Vec<Part>), String> {
    let mut json = String::new();
    let mut holes = Vec::new();
    for p in &tpl.parts {
        match p {
            Part::Lit(b) => json.push_str(
                std::str::from_utf8(b).map_err(|_| "is not UTF-8 text (JSON is)".to_string())?,
            ),
            other => {
                json.push(OPEN);
                json.push_str(&holes.len().to_string());
                json.push(CLOSE);
                holes.push(other.clone());
            }
        }
    }
    Ok((json, holes))
}

/// The fields of `m`, each as protobuf encodes it; a field holding no marker is encoded by
/// prost-reflect itself (every type, packed lists, maps), one holding one by hand.
fn message_parts(
    m: &DynamicMessage,
    holes: &[Part],
    found: &mut usize,
) -> Result<Vec<Part>, String> {
    let mut out = Vec::new();
    for (field, value) in m.fields() {
        if !holds_marker(value) {
            let mut alone = DynamicMessage::new(m.descriptor());
            alone.set_field(&field, value.clone());
            out.push(Part::Lit(alone.encode_to_vec()));
            continue;
        }
        match value {
            Value::List(items) => {
                for item in items {
                    out.extend(value_parts(&field, item, holes, found)?);
                }
            }
            Value::Map(_) => {
                return Err(format!(
                    "field `{}`: placeholders in a map's keys or values are not supported",
                    field.name()
                ))
            }
            one => out.extend(value_parts(&field, one, holes, found)?),
        }
    }
    Ok(out)
}

/// One value of `field` holding a marker: its tag, then its bytes behind a varint length.
fn value_parts(
    field: &FieldDescriptor,
    v: &Value,
    holes: &[Part],
    found: &mut usize,
) -> Result<Vec<Part>, String> {
    let inner = match v {
        Value::String(s) => string_parts(s, holes, found),
        Value::Message(m) => message_parts(m, holes, found)?,
        _ if !holds_marker(v) => {
            let mut one = Vec::new();
            let mut alone = DynamicMessage::new(field.parent_message().clone());
            alone.set_field(field, Value::List(vec![v.clone()]));
            alone.encode_raw(&mut one);
            return Ok(vec![Part::Lit(one)]);
        }
        _ => {
            return Err(format!(
                "field `{}`: a placeholder in a value that is not a string",
                field.name()
            ))
        }
    };
    let mut tag = Vec::new();
    prost::encoding::encode_key(
        field.number(),
        prost::encoding::WireType::LengthDelimited,
        &mut tag,
    );
    Ok(vec![
        Part::Lit(tag),
        Part::Framed {
            prefix: Prefix::Varint,
            parts: merged(inner),
        },
    ])
}

/// `s` split at its markers: its text and the placeholders they stand for.
fn string_parts(s: &str, holes: &[Part], found: &mut usize) -> Vec<Part> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(at) = rest.find(OPEN) {
        out.push(Part::Lit(rest.as_bytes()[..at].to_vec()));
        let after = &rest[at + OPEN.len_utf8()..];
        let end = after.find(CLOSE).unwrap_or(after.len());
        if let Some(p) = after[..end]
            .parse::<usize>()
            .ok()
            .and_then(|k| holes.get(k))
        {
            out.push(p.clone());
            *found += 1;
        }
        rest = after.get(end + CLOSE.len_utf8()..).unwrap_or("");
    }
    out.push(Part::Lit(rest.as_bytes().to_vec()));
    out
}

/// Whether `v` holds a marker anywhere.
fn holds_marker(v: &Value) -> bool {
    match v {
        Value::String(s) => s.contains(OPEN),
        Value::Message(m) => m.fields().any(|(_, v)| holds_marker(v)),
        Value::List(items) => items.iter().any(holds_marker),
        Value::Map(m) => m.iter().any(|(k, v)| {
            matches!(k, prost_reflect::MapKey::String(s) if s.contains(OPEN)) || holds_marker(v)
        }),
        _ => false,
    }
}

/// `parts` with neighbouring literals joined and empty ones dropped.
fn merged(parts: Vec<Part>) -> Vec<Part> {
    let mut out: Vec<Part> = Vec::with_capacity(parts.len());
    for p in parts {
        match (out.last_mut(), p) {
            (_, Part::Lit(b)) if b.is_empty() => {}
            (Some(Part::Lit(a)), Part::Lit(b)) => a.extend_from_slice(&b),
            (_, p) => out.push(p),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use volley_plan::workload::Context;

    const PROTO: &str = r#"syntax = "proto3";
package t;
message Inner { string label = 1; int32 n = 2; }
message Req {
  string name = 1;
  int32 times = 2;
  Inner inner = 3;
  repeated string tags = 4;
  repeated int32 nums = 5;
  map<string, string> meta = 6;
}
"#;

    fn input() -> (tempfile::TempDir, MessageDescriptor) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.proto");
        std::fs::write(&p, PROTO).unwrap();
        let pool = super::super::compile(&p, &[]).unwrap();
        (dir, pool.get_message_by_name("t.Req").unwrap())
    }

    fn render(parts: Vec<Part>, index: u64) -> Vec<u8> {
        let ctx = Context {
            index,
            conn: 0,
            user: 0,
            seed: 1,
            row: None,
            vars: &[],
            cookie: None,
        };
        let mut out = Vec::new();
        Template { parts }.render(&ctx, &mut out);
        out
    }

    fn tpl(parts: Vec<Part>) -> Template {
        Template { parts }
    }

    fn lit(s: &str) -> Part {
        Part::Lit(s.as_bytes().to_vec())
    }

    /// What prost-reflect itself encodes for `json` (framed).
    fn expected(input: &MessageDescriptor, json: &str) -> Vec<u8> {
        let mut de = serde_json::Deserializer::from_str(json);
        let m = DynamicMessage::deserialize(input.clone(), &mut de).unwrap();
        super::super::frame(&m.encode_to_vec())
    }

    #[test]
    fn each_request_renders_what_the_descriptor_would_encode_for_its_values() {
        let (_d, input) = input();
        let t = tpl(vec![
            lit(r#"{"name": "user-"#),
            Part::Seq,
            lit(r#"", "times": 3, "inner": {"label": "#),
            lit(r#""L"#),
            Part::Seq,
            lit(r#"", "n": 7}, "tags": ["a", ""#),
            Part::Seq,
            lit(r#""], "nums": [1, 2, 300], "meta": {"k": "v"}}"#),
        ]);
        let parts = encode(&input, &t).unwrap();
        for (index, shown) in [(5u64, "5"), (123_456, "123456")] {
            let json = format!(
                r#"{{"name": "user-{shown}", "times": 3, "inner": {{"label": "L{shown}", "n": 7}}, "tags": ["a", "{shown}"], "nums": [1, 2, 300], "meta": {{"k": "v"}}}}"#
            );
            assert_eq!(
                render(parts.clone(), index),
                expected(&input, &json),
                "{index}"
            );
        }
    }

    #[test]
    fn a_long_value_takes_a_longer_length_prefix() {
        let (_d, input) = input();
        let long = "x".repeat(200);
        let t = tpl(vec![
            lit(&format!(r#"{{"name": "{long}"#)),
            Part::Seq,
            lit(r#""}"#),
        ]);
        let parts = encode(&input, &t).unwrap();
        let json = format!(r#"{{"name": "{long}42"}}"#);
        assert_eq!(render(parts, 42), expected(&input, &json));
    }

    #[test]
    fn a_placeholder_outside_a_string_is_refused() {
        let (_d, input) = input();
        for t in [
            tpl(vec![lit(r#"{"times": ""#), Part::Seq, lit(r#""}"#)]),
            tpl(vec![lit(r#"{"meta": {"k": ""#), Part::Seq, lit(r#""}}"#)]),
        ] {
            assert!(encode(&input, &t).is_err(), "{t:?}");
        }
        let e = encode(
            &input,
            &tpl(vec![lit(r#"{"times": "#), Part::Seq, lit("}")]),
        )
        .unwrap_err();
        assert!(e.contains("is not a t.Req in JSON"), "{e}");
    }
}
