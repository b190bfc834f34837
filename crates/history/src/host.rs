//! The host fingerprint: what must be equal for two runs to be compared — CPU model, CPUs
//! online, and where client and server were pinned. The kernel is recorded and shown, never
//! matched (an update does not make a machine another).

use sha2::{Digest, Sha256};

use volley_model::result::Env;

/// A machine as history matches it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Host {
    /// CPU model name.
    pub cpu_model: Option<String>,
    /// CPUs online.
    pub cores: usize,
    /// volley's CPU list.
    pub client_cpus: String,
    /// The server's CPU list, when pinned.
    pub server_cpus: Option<String>,
    /// Kernel release: shown, not matched.
    pub kernel: Option<String>,
}

impl Host {
    /// The host of a result's `env`.
    pub fn of(env: &Env) -> Host {
        Host {
            cpu_model: env.cpu_model.clone(),
            cores: env.cores,
            client_cpus: env.pinning.client_cpus.clone(),
            server_cpus: env.pinning.server_cpus.clone(),
            kernel: env.kernel.clone(),
        }
    }

    /// The fingerprint: 12 hex digits of the SHA-256 of the matched fields.
    pub fn id(&self) -> String {
        let mut h = Sha256::new();
        for part in [
            self.cpu_model.as_deref().unwrap_or(""),
            &self.cores.to_string(),
            &self.client_cpus,
            self.server_cpus.as_deref().unwrap_or(""),
        ] {
            h.update(part.as_bytes());
            h.update(b"\n");
        }
        h.finalize()[..6]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// What differs from `other`, in words (`CPU model "A" against "B"`), matched fields only.
    pub(crate) fn differences(&self, other: &Host) -> Vec<String> {
        let mut d = Vec::new();
        let q = |v: &Option<String>| {
            v.as_deref()
                .map_or("unknown".into(), |s| format!("\"{s}\""))
        };
        if self.cpu_model != other.cpu_model {
            d.push(format!(
                "CPU model {} against {}",
                q(&self.cpu_model),
                q(&other.cpu_model)
            ));
        }
        if self.cores != other.cores {
            d.push(format!("{} CPUs against {}", self.cores, other.cores));
        }
        if self.client_cpus != other.client_cpus {
            d.push(format!(
                "client pinned to {} against {}",
                self.client_cpus, other.client_cpus
            ));
        }
        if self.server_cpus != other.server_cpus {
            let s = |v: &Option<String>| v.clone().unwrap_or_else(|| "no pinning".into());
            d.push(format!(
                "server pinned to {} against {}",
                s(&self.server_cpus),
                s(&other.server_cpus)
            ));
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> Host {
        Host {
            cpu_model: Some("AMD EPYC".into()),
            cores: 2,
            client_cpus: "0".into(),
            server_cpus: Some("1".into()),
            kernel: Some("6.1".into()),
        }
    }

    #[test]
    fn the_kernel_is_not_matched_but_pinning_is() {
        let a = host();
        let mut b = host();
        b.kernel = Some("6.12".into());
        assert_eq!(a.id(), b.id());
        assert!(a.differences(&b).is_empty());
        b.server_cpus = None;
        assert_ne!(a.id(), b.id());
        assert_eq!(a.differences(&b), ["server pinned to 1 against no pinning"]);
        let mut c = host();
        c.cpu_model = Some("Intel Xeon".into());
        c.cores = 4;
        assert_eq!(
            a.differences(&c),
            [
                "CPU model \"AMD EPYC\" against \"Intel Xeon\"",
                "2 CPUs against 4"
            ]
        );
    }
}
