//! Sharded runs on a scheduler: `volley k8s` describes N shards of one load as a Kubernetes
//! Indexed Job (`manifest`, with the generator's arguments from `pod_args`), and
//! `volley k8s collect` reads the shards' RunResults back from their pods' logs (`collect`),
//! where each sits between the lines of `markers`. Merging them is `merge`'s job; the
//! command layer joins the two (docs/contract.md, "Kubernetes").

pub mod collect;
pub mod files;
pub mod manifest;
pub mod markers;
pub mod pod_args;
mod pods;

pub use collect::{CollectError, Collected, Kubectl, Missing, Shard};
pub use manifest::{JobPlan, ManifestError};
