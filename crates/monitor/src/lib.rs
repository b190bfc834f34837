//! Monitoring: procfs parsers (pure), the server monitor (`--pid`: a sampler over a process
//! tree with perf syscall counters), and the client self-check with the machine view.

pub mod client;
pub mod gc;
pub(crate) mod others;
pub(crate) mod perf;
pub mod procfs;
pub mod profile;
pub mod read;
pub mod server;
pub mod settings;
pub(crate) mod tracefs;
pub mod tree;
pub mod watch;
