//! What the server knows of the connection a request came on: the peer's
//! address, for the limits of keyless endpoints, and the connection's key
//! memo. The public router of a connection hands it to the direct path, and
//! puts it on each request for the axum router as one extension. A test that
//! drives the router directly has none, and the router answers as for an
//! unknown peer.

use std::net::SocketAddr;
use std::sync::Arc;

use crate::keys::memo::KeyMemo;

/// The connection a request came on.
#[derive(Debug, Clone)]
pub struct Connection {
    pub peer: SocketAddr,
    pub key_memo: Arc<KeyMemo>,
}
