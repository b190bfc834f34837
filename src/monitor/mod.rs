//! Monitoring: procfs parsers (pure) and samplers for volley itself and the machine.
//! (The server-side monitor, `--pid`, grows here too.)

pub mod client;
pub mod procfs;
