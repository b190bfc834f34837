//! A `[[request]]` of a `ws://` or `wss://` run (docs/contract.md, "WebSocket"): a message —
//! its `body` (templated), `body_file` or `body_size`, its `weight` or `sequence` and its
//! `name` (`message N` without one, N its number in the file). The upgrade is the run's, once
//! per connection: the keys of an HTTP request are refused.

use super::*;

/// Keys a message cannot have, and why.
const NOT_IN_A_MESSAGE: &[(&str, &str)] = &[
    ("path", "the upgrade's path is the URL's"),
    ("url", "the upgrade's URL is the run's"),
    ("method", "the upgrade is a GET"),
    ("headers", "the upgrade's headers are -H"),
    ("grpc", "a WebSocket run sends messages"),
    ("expect_status", "a message has no status"),
    ("expect_body_contains", "checks are HTTP responses'"),
    ("expect_body_regex", "checks are HTTP responses'"),
    ("expect_header", "a message has no headers"),
    ("expect_size", "checks are HTTP responses'"),
    ("expect_json", "checks are HTTP responses'"),
    ("capture", "journeys are HTTP's"),
    ("once", "journeys are HTTP's"),
    ("think", "journeys are HTTP's"),
];

impl Requests<'_, '_> {
    /// In a WebSocket run, refuses what a message cannot have and names an unnamed one
    /// `message N`; `None` outside one.
    pub(super) fn ws_message(
        &mut self,
        t: &DeTable,
        at: &str,
        number: usize,
    ) -> Result<Option<Option<u16>>, RequestsError> {
        if !self.run.ws {
            return Ok(None);
        }
        let r = self.r;
        for (key, why) in NOT_IN_A_MESSAGE {
            if let Some(v) = t.get(*key) {
                return Err(r.at(v, at, key, format!("not in a ws:// run: {why}")));
            }
        }
        let name = match t.get("name") {
            Some(v) => self.name(v, at)?,
            None => match self.intern(&format!("message {number}")) {
                Some(k) => k,
                None => return Ok(Some(None)),
            },
        };
        Ok(Some(Some(name)))
    }
}
