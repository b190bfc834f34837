//! An in-memory transport for the `h2_worker` fuzz target: a worker connects to a [`MemNet`]
//! instead of a TCP or Unix address, and the target plays the server on the other end of each
//! [`Pipe`]: what the server sends, how many bytes the client's socket takes, when the server
//! closes or resets. No syscall, and every input replays the same way. Not for runs.

use std::collections::VecDeque;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};

/// One connection as its server sees it.
#[derive(Debug, Default)]
pub struct Pipe {
    /// Its number, in the order the client connected (from 0).
    pub id: u64,
    /// Bytes the server sent that the client has not read yet.
    pub to_client: VecDeque<u8>,
    /// Bytes the client wrote, for the server to read (it may clear them).
    pub from_client: Vec<u8>,
    /// Bytes the client wrote so far (`from_client` may have been cleared).
    pub written: u64,
    /// How many more bytes the client's socket takes (its send buffer's room); a write with
    /// none left would block.
    pub room: usize,
    /// The server closed its side: once `to_client` is read, the client reads the end.
    pub closed: bool,
    /// The server reset the connection: the client's reads and writes fail.
    pub reset: bool,
    /// The client dropped its socket.
    pub dropped: bool,
}

/// The server side of every connection a worker opened on a [`MemNet`].
#[derive(Debug, Default)]
pub struct NetState {
    /// The connections, in the order they were opened.
    pub pipes: Vec<Arc<Mutex<Pipe>>>,
    /// Connects fail (ECONNREFUSED) while set.
    pub refuse: bool,
    /// The send room a new connection starts with.
    pub room: usize,
}

/// A network of in-memory connections (cloning shares it).
#[derive(Debug, Clone, Default)]
pub struct MemNet(Arc<Mutex<NetState>>);

impl PartialEq for MemNet {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for MemNet {}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A check that panicked while holding it leaves nothing half-written worth refusing.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl MemNet {
    /// A network whose new connections take `room` bytes before a write blocks.
    pub fn new(room: usize) -> Self {
        MemNet(Arc::new(Mutex::new(NetState {
            room,
            ..NetState::default()
        })))
    }

    /// The server's view.
    pub fn state(&self) -> MutexGuard<'_, NetState> {
        lock(&self.0)
    }

    /// A new connection (connected at once), or ECONNREFUSED while connects are refused.
    pub(crate) fn connect(&self) -> io::Result<MemSocket> {
        let mut net = self.state();
        if net.refuse {
            return Err(io::ErrorKind::ConnectionRefused.into());
        }
        let id = net.pipes.len() as u64;
        let pipe = Arc::new(Mutex::new(Pipe {
            id,
            room: net.room,
            ..Pipe::default()
        }));
        net.pipes.push(Arc::clone(&pipe));
        Ok(MemSocket { pipe, id })
    }
}

/// The client's end of a [`Pipe`].
#[derive(Debug)]
pub struct MemSocket {
    pipe: Arc<Mutex<Pipe>>,
    id: u64,
}

impl MemSocket {
    /// The pipe's number.
    pub fn id(&self) -> u64 {
        self.id
    }
}

impl io::Read for MemSocket {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut p = lock(&self.pipe);
        if p.reset {
            return Err(io::ErrorKind::ConnectionReset.into());
        }
        if p.to_client.is_empty() {
            return if p.closed {
                Ok(0)
            } else {
                Err(io::ErrorKind::WouldBlock.into())
            };
        }
        let n = p.to_client.len().min(buf.len());
        for (b, v) in buf.iter_mut().zip(p.to_client.drain(..n)) {
            *b = v;
        }
        Ok(n)
    }
}

impl io::Write for MemSocket {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut p = lock(&self.pipe);
        if p.reset {
            return Err(io::ErrorKind::ConnectionReset.into());
        }
        if p.room == 0 && !buf.is_empty() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = p.room.min(buf.len());
        p.room -= n;
        p.written += n as u64;
        p.from_client.extend_from_slice(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for MemSocket {
    fn drop(&mut self) {
        lock(&self.pipe).dropped = true;
    }
}
