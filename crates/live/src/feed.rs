//! The feed: what a command has said so far, kept for pages that connect late or reload. The
//! observer appends ticks, a command of several runs (`capacity`) a `run` event before each
//! and a `progress` event after; every page's connection reads from the start (or from the
//! event after its `Last-Event-ID`) and then waits for more. Events are numbered in order.
//!
//! Memory is bounded: events are kept as their ready-to-send frames (a tick is a few KB, most
//! of it the second's two compressed histograms) up to [`TICK_BYTES_CAP`]; past it the oldest
//! are dropped and a page that connects then is told from which event the replay starts (a
//! `gap` event), so a window before it cannot be selected.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// The bytes of ticks kept for replay: at 2–4 KB a second, 4.5–9 hours of a run.
pub const TICK_BYTES_CAP: usize = 64 * 1024 * 1024;
/// Frames handed to a reader at once: a late page replays hours in batches, never holding
/// the lock (or a copy of the whole replay) for long.
const BATCH: usize = 256;

/// One server-sent event, framed.
#[derive(Debug, Clone)]
pub(crate) struct Frame {
    /// The event's id (`Last-Event-ID` on a reconnect), 0 for the meta event.
    pub id: u64,
    /// `event: …\nid: …\ndata: …\n\n`, shared by every reader that sends it.
    pub text: Arc<str>,
}

impl Frame {
    /// A frame of `kind` carrying `json` (one line: JSON has no raw newlines).
    pub fn new(kind: &str, id: u64, json: &str) -> Frame {
        let id_line = if id > 0 {
            format!("id: {id}\n")
        } else {
            String::new()
        };
        Frame {
            id,
            text: format!("event: {kind}\n{id_line}data: {json}\n\n").into(),
        }
    }
}

#[derive(Default)]
struct State {
    meta: Option<Frame>,
    ticks: VecDeque<(Frame, Option<u64>)>,
    tick_bytes: usize,
    /// The last event's number.
    seq: u64,
    /// Events dropped for the cap (the replay starts after them).
    dropped: u64,
    /// The `t_s` of the oldest tick kept once some were dropped.
    first_kept_t_s: u64,
    end: Option<Frame>,
    /// Connections that have not yet been sent the end.
    readers: usize,
    closed: bool,
}

/// What a reader takes from the feed in one call.
pub(crate) enum Next {
    /// Frames to send, in order.
    Frames(Vec<Frame>),
    /// Nothing new within the wait: send a keep-alive comment.
    Idle,
    /// The run's end was sent or the feed closed: close the connection.
    Done,
}

/// The shared feed of one run.
#[derive(Default)]
pub struct Feed {
    state: Mutex<State>,
    changed: Condvar,
}

impl Feed {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A reader thread that panicked left the state as it was: it is still usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sets the meta event (sent first to every reader).
    pub(crate) fn meta(&self, json: &str) {
        self.lock().meta = Some(Frame::new("meta", 0, json));
        self.changed.notify_all();
    }

    /// Appends the tick of second `t_s` as the next event.
    pub fn tick(&self, t_s: u64, json: &str) {
        self.append("tick", json, Some(t_s));
    }

    /// Appends a `run` event (a new measured run of the command begins) or a `progress` one.
    pub(crate) fn event(&self, kind: &str, json: &str) {
        self.append(kind, json, None);
    }

    fn append(&self, kind: &str, json: &str, t_s: Option<u64>) {
        let mut s = self.lock();
        s.seq += 1;
        let frame = Frame::new(kind, s.seq, json);
        s.tick_bytes += frame.text.len();
        s.ticks.push_back((frame, t_s));
        while s.tick_bytes > TICK_BYTES_CAP && s.ticks.len() > 1 {
            let (old, _) = s.ticks.pop_front().expect("more than one");
            s.tick_bytes -= old.text.len();
            s.dropped += 1;
            if let Some(t) = s.ticks.iter().find_map(|(_, t)| *t) {
                s.first_kept_t_s = t;
            }
        }
        drop(s);
        self.changed.notify_all();
    }

    /// Sets the end event: readers send it, then close.
    pub(crate) fn end(&self, json: &str) {
        self.lock().end = Some(Frame::new("end", u64::MAX, json));
        self.changed.notify_all();
    }

    /// Ends every reader (the process is leaving).
    pub(crate) fn close(&self) {
        self.lock().closed = true;
        self.changed.notify_all();
    }

    /// A reader joins; it must call [`Feed::leave`] when it is gone.
    pub(crate) fn join(&self) {
        self.lock().readers += 1;
    }

    /// A reader left (it sent the end, or its page went away).
    pub(crate) fn leave(&self) {
        let mut s = self.lock();
        s.readers = s.readers.saturating_sub(1);
        drop(s);
        self.changed.notify_all();
    }

    /// Waits until every reader has left or `limit` passed; true when none is left.
    pub(crate) fn wait_readers(&self, limit: Duration) -> bool {
        let s = self.lock();
        let (s, _) = self
            .changed
            .wait_timeout_while(s, limit, |s| s.readers > 0)
            .unwrap_or_else(|e| e.into_inner());
        s.readers == 0
    }

    /// What a reader that has sent everything up to event `after` sends next (`None`: nothing
    /// yet, not even the meta), waiting at most `wait`.
    pub(crate) fn next(&self, after: Option<u64>, wait: Duration) -> Next {
        let s = self.lock();
        let (s, _) = self
            .changed
            .wait_timeout_while(s, wait, |s| !s.closed && !Self::has_pending(s, after))
            .unwrap_or_else(|e| e.into_inner());
        if s.closed {
            return Next::Done;
        }
        let frames = Self::pending(&s, after);
        if frames.is_empty() {
            Next::Idle
        } else {
            Next::Frames(frames)
        }
    }

    /// Whether a reader past event `after` has something to send (cheap: no copy).
    fn has_pending(s: &State, after: Option<u64>) -> bool {
        match after {
            _ if s.meta.is_none() => false,
            None => true,
            Some(u64::MAX) => false,
            Some(id) => s.seq > id || s.end.is_some(),
        }
    }

    fn gap(s: &State) -> Frame {
        let gap = format!(
            "{{\"first_t_s\":{},\"dropped\":{},\"cap_bytes\":{TICK_BYTES_CAP}}}",
            s.first_kept_t_s, s.dropped
        );
        Frame::new("gap", 0, &gap)
    }

    /// The next frames for a reader past event `after`: at most [`BATCH`] events, then the
    /// end once every event before it went.
    fn pending(s: &State, after: Option<u64>) -> Vec<Frame> {
        let mut out = Vec::new();
        let Some(meta) = &s.meta else {
            return out;
        };
        let after = match after {
            None => {
                out.push(meta.clone());
                if s.dropped > 0 {
                    out.push(Self::gap(s));
                }
                0
            }
            Some(u64::MAX) => return out,
            Some(id) => id,
        };
        let start = s.ticks.partition_point(|(f, _)| f.id <= after);
        // A reconnect past events the cap dropped meanwhile: say so.
        if after > 0 && start == 0 && s.ticks.front().is_some_and(|(f, _)| f.id > after + 1) {
            out.push(Self::gap(s));
        }
        out.extend(
            s.ticks
                .iter()
                .skip(start)
                .take(BATCH)
                .map(|(f, _)| f.clone()),
        );
        if s.ticks.len() - start <= BATCH {
            if let Some(end) = &s.end {
                out.push(end.clone());
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(n: Next) -> Vec<u64> {
        match n {
            Next::Frames(f) => f.iter().map(|f| f.id).collect(),
            Next::Idle => vec![],
            Next::Done => vec![999],
        }
    }

    #[test]
    fn a_late_reader_replays_from_the_start_and_a_reconnect_from_its_last_id() {
        let feed = Feed::default();
        assert!(matches!(feed.next(None, Duration::ZERO), Next::Idle));
        feed.meta("{}");
        feed.tick(0, "{\"t_s\":0}");
        feed.tick(1, "{\"t_s\":1}");
        assert_eq!(ids(feed.next(None, Duration::ZERO)), vec![0, 1, 2]);
        assert_eq!(ids(feed.next(Some(1), Duration::ZERO)), vec![2]);
        assert_eq!(ids(feed.next(Some(2), Duration::ZERO)), Vec::<u64>::new());
        feed.end("{}");
        assert_eq!(ids(feed.next(Some(2), Duration::ZERO)), vec![u64::MAX]);
        // After the end nothing more: the reader closes.
        assert!(ids(feed.next(Some(u64::MAX), Duration::ZERO)).is_empty());
        feed.close();
        assert_eq!(ids(feed.next(Some(2), Duration::ZERO)), vec![999]);
    }

    #[test]
    fn the_cap_drops_the_oldest_ticks_and_says_so() {
        let feed = Feed::default();
        feed.meta("{}");
        let big = "x".repeat(TICK_BYTES_CAP / 3);
        for t in 0..5 {
            feed.tick(t, &big);
        }
        let Next::Frames(f) = feed.next(None, Duration::ZERO) else {
            panic!("frames")
        };
        assert!(
            f[1].text.starts_with("event: gap\n"),
            "{}",
            &f[1].text[..40]
        );
        assert!(f[1].text.contains("\"first_t_s\":3"), "{}", f[1].text);
        assert_eq!(
            f.iter().skip(2).map(|f| f.id).collect::<Vec<_>>(),
            vec![4, 5]
        );
    }

    #[test]
    fn a_long_replay_comes_in_batches_and_the_end_last() {
        let feed = Feed::default();
        feed.meta("{}");
        for t in 0..(BATCH as u64 * 2 + 10) {
            feed.tick(t, "{}");
        }
        feed.end("{}");
        let mut after = None;
        let mut got = Vec::new();
        while let Next::Frames(f) = feed.next(after, Duration::ZERO) {
            assert!(f.len() <= BATCH + 2, "{}", f.len());
            after = f.iter().map(|f| f.id).max();
            got.extend(f.iter().map(|f| f.id));
            if after == Some(u64::MAX) {
                break;
            }
        }
        assert_eq!(
            got.len(),
            1 + BATCH * 2 + 10 + 1,
            "meta, every tick, the end"
        );
        assert_eq!(got.last(), Some(&u64::MAX));
    }

    #[test]
    fn readers_are_waited_for_within_a_limit() {
        let feed = Feed::default();
        assert!(feed.wait_readers(Duration::ZERO));
        feed.join();
        assert!(!feed.wait_readers(Duration::from_millis(10)));
        feed.leave();
        assert!(feed.wait_readers(Duration::ZERO));
    }
}
