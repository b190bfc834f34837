//! CPU pinning with `sched_setaffinity` (no external `taskset`).

/// A `cpu_set_t` holding `cpus`.
pub(crate) fn cpu_set(cpus: &[usize]) -> libc::cpu_set_t {
    // SAFETY: cpu_set_t is plain data; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        // SAFETY: CPU_SET bounds-checks against the set's size (1024 CPUs).
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    set
}

/// Pins the calling thread (and so every thread it creates afterwards) to `cpus`.
pub(crate) fn pin_current_thread(cpus: &[usize]) -> std::io::Result<()> {
    let set = cpu_set(cpus);
    // SAFETY: a valid set of the right size for the calling thread (pid 0).
    let rc = unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
