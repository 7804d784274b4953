//! What the server knows of the connection a request came on, put on each
//! of its requests as one extension: the peer's address, for the limits of
//! keyless endpoints, and the connection's key memo. A test that drives the
//! router directly has none, and the router answers as for an unknown peer.

use std::net::SocketAddr;
use std::sync::Arc;

use crate::keys::memo::KeyMemo;

/// The connection a request came on.
#[derive(Debug, Clone)]
pub struct Connection {
    pub peer: SocketAddr,
    pub key_memo: Arc<KeyMemo>,
}
