//! `--verify` of a journey: one user walks it once — its once steps, then one pass of the
//! loop (a sequence in order; a mix's requests in file order) — taking the values its
//! responses give and sending its cookies, as a user of the load would. A step whose value
//! was not captured is shown as not sent. What was captured, and cookies set, never appear in
//! the printout: each value is shown as its `{var.NAME}`, each `Set-Cookie` value as
//! `<redacted>` (docs/contract.md, "Journeys").

use std::sync::Arc;

use volley_engine::h2::request as h2_request;
use volley_engine::h3::request as h3_request;
use volley_engine::journey::users::{absorb, unix_now_s, User};
use volley_engine::probe::session::H2Request;
use volley_engine::Route;
use volley_plan::workload::{Context, Order, Workload};
use volley_plan::{LoadSpec, MixRequest};

use super::{one, strict, Lone, Verified};

/// Walks `w` once as one user along `route`.
pub(crate) fn verify(route: &Route, load: &LoadSpec, seed: u64, w: &Workload) -> Vec<Verified> {
    let https = load.tls.is_some();
    let host = load.target.host.to_ascii_lowercase();
    let mut user = User::new(w.journey.vars.len());
    let mut out = Vec::new();
    for (n, k) in walk(w).into_iter().enumerate() {
        let e = &w.entries[k];
        let label = match e.endpoint {
            Some(x) => w.endpoints[x as usize].clone(),
            None => format!("{} {}", e.method, e.path.text_with(&[], &w.journey.vars)),
        };
        let missing = e.step.needs & !user.set;
        if missing != 0 {
            let name = &w.journey.vars[missing.trailing_zeros() as usize];
            out.push(not_sent(label, e, w, name));
            continue;
        }
        let r = MixRequest::compile(load, e);
        let mut ctx = Context {
            index: n as u64,
            conn: 0,
            user: 0,
            seed,
            row: w.row(n as u64, seed),
            vars: &user.vars,
            cookie: None,
        };
        let mut path = Vec::new();
        e.path.render(&ctx, &mut path);
        let mut cookie = Vec::new();
        let now = unix_now_s();
        if w.journey.cookies && user.jar.header_value(&path, https, now, &mut cookie) {
            ctx.cookie = Some(&cookie);
        }
        let mut bytes = Vec::new();
        r.render_http1(&ctx, &mut bytes, &mut Vec::new());
        let body = r.body_for(&ctx);
        let block = h2_request::for_mix(&r, &ctx, https, body.len());
        let h3 = h3_request::frames_for_mix(&r, &ctx, &body);
        let req = Lone {
            label,
            http1: &bytes,
            h2: H2Request {
                block: &block,
                body: Arc::clone(&body),
                head: r.head_request,
            },
            h3,
        };
        let checks = strict(&e.checks);
        let (mut v, offered) = one(route, load, &req, &checks);
        // The values the request was sent with: a capture may replace one of them.
        let sent_with = user.vars.clone();
        if let Some(state) = offered.filter(|_| v.error.is_none()) {
            let got = absorb(
                &mut user,
                &checks,
                &state.offered(),
                (&host, &path, https),
                now,
            );
            if got.missed.iter().any(|&n| n > 0) {
                v.failed.push("capture");
            }
        }
        redact(&mut v, [&sent_with, &user.vars], &w.journey.vars);
        out.push(v);
    }
    out
}

/// The entries one user walks: its once steps, then one pass of the loop.
fn walk(w: &Workload) -> Vec<usize> {
    let once = w.journey.once.iter().map(|&k| k as usize);
    let looped: Vec<usize> = match w.order {
        Order::Sequence if !w.journey.steps.is_empty() => {
            w.journey.steps.iter().map(|&k| k as usize).collect()
        }
        _ => (0..w.entries.len())
            .filter(|&k| !w.entries[k].step.once)
            .collect(),
    };
    once.chain(looped).collect()
}

/// A step not sent because `var` was not captured.
fn not_sent(label: String, e: &volley_plan::workload::Entry, w: &Workload, var: &str) -> Verified {
    Verified {
        label,
        request_line: format!("{} {}", e.method, e.path.text_with(&[], &w.journey.vars)),
        status: 0,
        headers: Vec::new(),
        body: Vec::new(),
        body_bytes: 0,
        trailers: Vec::new(),
        decoded: None,
        failed: Vec::new(),
        error: Some(format!(
            "not sent: no earlier step captured `{{var.{var}}}` (its capture failed)"
        )),
    }
}

/// Each captured value in `v`'s request line, header values and body shown as its
/// `{var.NAME}` (longest first), those the request was sent with and those its response
/// gave (`sets`), and each `Set-Cookie` value as `<redacted>`.
fn redact(v: &mut Verified, sets: [&[Vec<u8>]; 2], names: &[String]) {
    let mut values: Vec<(&[u8], &str)> = sets
        .iter()
        .flat_map(|set| set.iter().zip(names))
        .filter(|(val, _)| !val.is_empty())
        .map(|(val, n)| (val.as_slice(), n.as_str()))
        .collect();
    values.sort_by_key(|(val, _)| std::cmp::Reverse(val.len()));
    let hide = |text: &[u8]| -> Vec<u8> {
        let mut t = text.to_vec();
        for (val, name) in &values {
            t = replace(&t, val, format!("{{var.{name}}}").as_bytes());
        }
        t
    };
    v.request_line = String::from_utf8_lossy(&hide(v.request_line.as_bytes())).into_owned();
    for (n, val) in &mut v.headers {
        *val = if n.eq_ignore_ascii_case("set-cookie") {
            cookie_redacted(val)
        } else {
            String::from_utf8_lossy(&hide(val.as_bytes())).into_owned()
        };
    }
    v.body = hide(&v.body);
}

/// `name=value; attrs` → `name=<redacted>; attrs`.
fn cookie_redacted(field: &str) -> String {
    let (pair, rest) = field
        .split_once(';')
        .map_or((field, None), |(p, r)| (p, Some(r)));
    let name = pair.split_once('=').map_or(pair, |(n, _)| n);
    match rest {
        Some(r) => format!("{name}=<redacted>;{r}"),
        None => format!("{name}=<redacted>"),
    }
}

/// `hay` with every `needle` replaced by `with`.
fn replace(hay: &[u8], needle: &[u8], with: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(hay.len());
    let mut i = 0;
    while i < hay.len() {
        if hay[i..].starts_with(needle) {
            out.extend_from_slice(with);
            i += needle.len();
        } else {
            out.push(hay[i]);
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captured_values_and_cookies_never_show() {
        let mut user = User::new(2);
        user.vars[0] = b"tok-secret-1".to_vec();
        user.vars[1] = b"c9".to_vec();
        user.set = 3;
        let mut v = Verified {
            label: "cart".into(),
            request_line: "GET /cart/c9 HTTP/1.1".into(),
            status: 200,
            headers: vec![
                ("set-cookie".into(), "sid=abc; Path=/; HttpOnly".into()),
                ("x-echo".into(), "Bearer tok-secret-1".into()),
            ],
            body: br#"{"accessToken":"tok-secret-1","cart":"c9"}"#.to_vec(),
            body_bytes: 40,
            trailers: Vec::new(),
            decoded: None,
            failed: Vec::new(),
            error: None,
        };
        let before = vec![b"tok-old".to_vec(), Vec::new()];
        v.request_line = "GET /cart/c9?old=tok-old HTTP/1.1".into();
        redact(
            &mut v,
            [&before, &user.vars],
            &["token".into(), "cart".into()],
        );
        assert_eq!(
            v.request_line,
            "GET /cart/{var.cart}?old={var.token} HTTP/1.1"
        );
        assert_eq!(v.headers[0].1, "sid=<redacted>; Path=/; HttpOnly");
        assert_eq!(v.headers[1].1, "Bearer {var.token}");
        assert_eq!(
            String::from_utf8_lossy(&v.body),
            r#"{"accessToken":"{var.token}","cart":"{var.cart}"}"#
        );
        assert_eq!(cookie_redacted("a=b"), "a=<redacted>");
    }
}
