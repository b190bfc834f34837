//! The run's request as HTTP/3 frames, built once: HEADERS (its field section QPACK-encoded
//! with static references only, so valid on every stream) and, for a body, one DATA frame —
//! the same fields as the HTTP/1.1 and HTTP/2 forms, `Host` as `:authority`.

use volley_plan::{LoadSpec, RequestTemplate};

use super::{frame, qpack};

/// The frames of every request of the run.
pub fn for_spec(spec: &LoadSpec) -> Vec<u8> {
    let fields = RequestTemplate::header_fields(spec);
    let authority = fields
        .iter()
        .rev()
        .find(|(n, _)| n.eq_ignore_ascii_case("host"))
        .map_or(spec.target.host_header.as_str(), |(_, v)| v.as_str());
    let body = &spec.body[..];
    let section = qpack::encode_request(
        &spec.method,
        "https",
        authority,
        &spec.target.path,
        &fields,
        (!body.is_empty()).then_some(body.len()),
    );
    let mut out = Vec::with_capacity(section.len() + body.len() + 16);
    frame::headers(&section, &mut out);
    if !body.is_empty() {
        frame::data(body, &mut out);
    }
    out
}
