//! The test server on a thread of its own ([`Server::spawn`]), pumping its socket until
//! stopped, for tests that run the `volley` binary against it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::Server;

/// A server running on its thread.
pub struct Running {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Server>>,
    /// Its address.
    pub addr: std::net::SocketAddr,
}

impl Server {
    /// Runs the server on a thread until [`Running::stop`] (or its drop).
    pub fn spawn(mut self) -> Running {
        let addr = self.addr();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                if !self.pump(Instant::now()) {
                    std::thread::sleep(Duration::from_micros(500));
                }
            }
            self
        });
        Running {
            stop,
            thread: Some(thread),
            addr,
        }
    }
}

impl Running {
    /// Stops the thread: the server, with its counts.
    pub fn stop(mut self) -> Server {
        self.end().expect("the server thread ran")
    }

    fn end(&mut self) -> Option<Server> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take()?.join().ok()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.end();
    }
}
