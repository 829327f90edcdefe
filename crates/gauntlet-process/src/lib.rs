//! Process plumbing the agents, real-service worlds and the shadow proxy share: the bubblewrap
//! sandbox a command runs in (`sandbox`), the per-trial scratch folders it may write
//! (`scratch`), standard streams that cannot block the harness (`stdio`), and loopback servers
//! with their per-trial tokens (`net`). Nothing here knows what an agent or a world is.
#![warn(missing_docs)]

pub mod net;
pub mod sandbox;
pub mod scratch;
pub mod stdio;

pub use sandbox::{Isolation, Sandbox, SandboxError};
pub use scratch::ScratchError;
