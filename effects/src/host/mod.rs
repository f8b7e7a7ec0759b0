//! Host operations the core asks for (see `bernstein_core::protocol::host`): listings and file
//! reads under the project root, and the shutdown signal behind its containment barrier.
//!
//! [`ProjectHost`] is the one implementation: every path is taken relative to the project
//! root (the directory holding `.sdd`), resolved, and refused when it lands outside that root
//! or inside `.sdd`, through a symlink or otherwise (`files`). Nothing here follows a symlink
//! out of the root or into `.sdd`, and nothing here holds protocol or domain logic.

mod files;
mod shutdown;

use std::path::{Path, PathBuf};

use bernstein_core::protocol::host::{HostFailure, HostReply, HostRequest};

pub use shutdown::{SIGNAL_FILE, signal_shutdown};

/// Performs host requests for the engine (`Output::Host`).
pub trait HostIo: Send + Sync {
    fn perform(&self, request: &HostRequest) -> HostReply;
}

/// Host requests confined to one project directory.
#[derive(Clone, Debug)]
pub struct ProjectHost {
    root: PathBuf,
}

impl ProjectHost {
    /// A host rooted at `project_dir` (the directory holding `.sdd`).
    pub fn new(project_dir: &Path) -> ProjectHost {
        ProjectHost {
            root: project_dir.to_path_buf(),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }
}

impl HostIo for ProjectHost {
    fn perform(&self, request: &HostRequest) -> HostReply {
        match request {
            HostRequest::List { path, within } => files::list(&self.root, path, within.as_deref()),
            HostRequest::Read {
                path,
                max_bytes,
                within,
            } => files::read(&self.root, path, *max_bytes, within.as_deref()),
            HostRequest::SignalShutdown { workdir, body } => {
                match signal_shutdown(&self.root, workdir, body) {
                    Ok(path) => HostReply::Signalled {
                        path: path.display().to_string(),
                    },
                    Err(refusal) => HostReply::Failed(refusal.into()),
                }
            }
        }
    }
}

/// A host that serves nothing: every request answers [`HostFailure::Unsupported`]. For
/// embedders and tests that run the core without a project directory.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoHost;

impl HostIo for NoHost {
    fn perform(&self, _: &HostRequest) -> HostReply {
        HostReply::Failed(HostFailure::Unsupported)
    }
}
