//! Default names: after a requests file is read (TOML or vegeta's targets), every request
//! without a `name` is named by its method and path as written (`GET /posts/{rand:1..100}`), as
//! k6 and locust name theirs, so a mix's 404s say which path. User names and default names share
//! the cap of [`MAX_ENDPOINTS`], and the requests of every template past it go to the reserved
//! name [`OTHER`]; the rules are docs/contract.md, "Workloads".
//!
//! One pass with a map from name to index: a file of 100,000 requests is named in
//! milliseconds.

use std::collections::HashMap;

use volley_plan::workload::{Entry, MAX_ENDPOINTS};

/// The name of the requests whose templates came past the cap.
pub(crate) const OTHER: &str = "other";

/// Names the entries without an endpoint, adding their names to `endpoints` (after the
/// user's); `columns` names the data file's columns for `{row.NAME}`. Returns the index of
/// `other` when it was added for the overflow (`None` when nothing overflowed, or when the
/// user named a request `other` and the overflow joined it).
pub(super) fn name_unnamed(
    entries: &mut [Entry],
    endpoints: &mut Vec<String>,
    (columns, vars): (&[String], &[String]),
) -> Option<u16> {
    let mut index: HashMap<String, u16> = endpoints
        .iter()
        .enumerate()
        .map(|(k, n)| (n.clone(), k as u16))
        .collect();
    let mut made_other = None;
    for e in entries.iter_mut().filter(|e| e.endpoint.is_none()) {
        let name = default_name(e, columns, vars);
        let k = match index.get(&name) {
            Some(&k) => k,
            None if endpoints.len() < MAX_ENDPOINTS => push(endpoints, &mut index, name),
            None => match index.get(OTHER) {
                Some(&k) => k,
                None => {
                    let k = push(endpoints, &mut index, OTHER.to_string());
                    made_other = Some(k);
                    k
                }
            },
        };
        e.endpoint = Some(k);
    }
    made_other
}

/// `METHOD path-as-written`.
fn default_name(e: &Entry, columns: &[String], vars: &[String]) -> String {
    format!("{} {}", e.method, e.path.text_with(columns, vars))
}

fn push(endpoints: &mut Vec<String>, index: &mut HashMap<String, u16>, name: String) -> u16 {
    let k = endpoints.len() as u16;
    endpoints.push(name.clone());
    index.insert(name, k);
    k
}

#[cfg(test)]
mod tests {
    use super::super::testing::{read, read_in};
    use super::*;
    use volley_plan::workload::{Body, Checks, Part, Template, Workload};

    fn entry(method: &str, path: Template, endpoint: Option<u16>) -> Entry {
        Entry {
            endpoint,
            method: method.into(),
            path,
            headers: Vec::new(),
            body: Body::None,
            weight: 1,
            checks: Checks::default(),
            step: Default::default(),
        }
    }

    fn get(path: &str) -> Entry {
        entry("GET", Template::literal(path), None)
    }

    #[test]
    fn unnamed_requests_are_named_by_method_and_template() {
        let seq = Template {
            parts: vec![Part::Lit(b"/items/".to_vec()), Part::Seq],
        };
        let mut entries = vec![
            get("/a?x=1"),
            entry("POST", seq.clone(), None),
            entry("GET", seq, Some(0)),
            get("/a?x=1"),
        ];
        let mut endpoints = vec!["mine".to_string()];
        assert_eq!(name_unnamed(&mut entries, &mut endpoints, (&[], &[])), None);
        assert_eq!(endpoints, ["mine", "GET /a?x=1", "POST /items/{seq}"]);
        let got: Vec<_> = entries.iter().map(|e| e.endpoint.unwrap()).collect();
        assert_eq!(got, [1, 2, 0, 1]);
    }

    #[test]
    fn a_user_name_equal_to_a_default_one_is_the_same_name() {
        let mut entries = vec![
            get("/a"),
            get("/b"),
            entry("GET", Template::literal("/x"), Some(0)),
        ];
        let mut endpoints = vec!["GET /b".to_string()];
        name_unnamed(&mut entries, &mut endpoints, (&[], &[]));
        assert_eq!(endpoints, ["GET /b", "GET /a"]);
        let got: Vec<_> = entries.iter().map(|e| e.endpoint.unwrap()).collect();
        assert_eq!(got, [1, 0, 0]);
    }

    #[test]
    fn templates_past_the_cap_go_to_other_and_user_names_keep_their_places() {
        let mut entries: Vec<Entry> = (0..150).map(|i| get(&format!("/p/{i}"))).collect();
        entries.push(entry("GET", Template::literal("/login"), Some(0)));
        entries.push(get("/p/149"));
        let mut endpoints = vec!["login".to_string()];
        let other = name_unnamed(&mut entries, &mut endpoints, (&[], &[]));
        assert_eq!(endpoints.len(), MAX_ENDPOINTS + 1);
        assert_eq!(other, Some(MAX_ENDPOINTS as u16));
        assert_eq!(endpoints[0], "login");
        assert_eq!(endpoints[99], "GET /p/98");
        assert_eq!(endpoints[100], OTHER);
        let at = |k: usize| entries[k].endpoint.unwrap() as usize;
        assert_eq!(
            (at(0), at(98), at(99), at(149), at(150), at(151)),
            (1, 99, 100, 100, 0, 100)
        );
        let in_other = entries.iter().filter(|e| e.endpoint == other).count();
        assert_eq!(in_other, 51 + 1);
    }

    #[test]
    fn a_users_other_takes_the_overflow_without_a_place_more() {
        let mut entries: Vec<Entry> = (0..120).map(|i| get(&format!("/p/{i}"))).collect();
        entries.push(entry("GET", Template::literal("/misc"), Some(0)));
        let mut endpoints = vec![OTHER.to_string()];
        assert_eq!(name_unnamed(&mut entries, &mut endpoints, (&[], &[])), None);
        assert_eq!(endpoints.len(), MAX_ENDPOINTS);
        assert_eq!(entries[99].endpoint, Some(0));
        assert_eq!(entries[98].endpoint, Some(99));
    }

    #[test]
    fn unnamed_requests_are_named_by_method_and_path_as_written() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("u.csv"), "id\n7\n").unwrap();
        let w = read_in(
            dir.path(),
            "mix.toml",
            r#"
[data]
file = "u.csv"
[[request]]
path = "/posts/{rand:1..100}?x={{y}}"
[[request]]
name = "login"
method = "POST"
path = "/login"
[[request]]
method = "DELETE"
path = "/users/{row.id}"
[[request]]
name = "GET /posts/{rand:1..100}?x={{y}}"
path = "/elsewhere"
[[request]]
path = "/posts/{rand:1..100}?x={{y}}"
"#,
        )
        .unwrap();
        // User names first, then default names; a user name equal to a default one is it.
        assert_eq!(
            w.endpoints,
            [
                "login",
                "GET /posts/{rand:1..100}?x={{y}}",
                "DELETE /users/{row.id}"
            ]
        );
        let named: Vec<_> = w.entries.iter().map(|e| e.endpoint.unwrap()).collect();
        assert_eq!(named, [1, 0, 2, 1, 1]);
        assert_eq!(w.other, None);
    }

    #[test]
    fn a_hundred_and_fifty_paths_are_a_hundred_names_and_other() {
        let mut text = String::from("[[request]]\nname = \"other\"\npath = \"/misc\"\n");
        for i in 0..150 {
            text += &format!("[[request]]\npath = \"/p/{i}\"\n");
        }
        // A user's `other` keeps its place; the overflow joins it: 100 names in all.
        let w = read(&text).unwrap();
        assert_eq!(w.endpoints.len(), 100);
        assert_eq!((w.endpoints[0].as_str(), w.other), ("other", None));
        assert_eq!(under_of(&w)(0), 1 + 51);
        // Without it, `other` is the 101st name and every request is under one name.
        let w = read(&text[text.find("[[request]]\npath").unwrap()..]).unwrap();
        assert_eq!(w.endpoints.len(), 101);
        assert_eq!((w.endpoints[100].as_str(), w.other), ("other", Some(100)));
        assert_eq!(w.endpoints[99], "GET /p/99");
        let total: usize = (0..101).map(under_of(&w)).sum();
        assert_eq!((under_of(&w)(100), total), (50, 150));
    }

    fn under_of(w: &Workload) -> impl Fn(u16) -> usize + '_ {
        move |k| w.entries.iter().filter(|e| e.endpoint == Some(k)).count()
    }
}
