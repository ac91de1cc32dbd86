//! Names the install tool still reaches here: the checkout (now `build_topology::Checkout`)
//! and its "already reported" failure.

pub use build_topology::Checkout;

/// A failure whose explanation is already printed (the `ERROR:` lines): exit 1, nothing more.
/// Kept for the release look-up of `install_rocm_from_artifacts`; the transfers report this
/// through [`artifact_backend::pipeline::TransferError::is_reported`].
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Reported(pub String);
