//! Signatures over what the service states, so that a partner can prove
//! later, to anyone, what this registry told it and when.
//!
//! Evidence packages and snapshot manifests carry a `signature` member: a
//! detached JWS (RFC 7515, EdDSA with Ed25519) over the RFC 8785 canonical
//! JSON of the document without that member ([`jws`]). The keys live in a
//! keyring with their rotation rules ([`keyring`]); replicas sign with the
//! active key of the answer's audience ([`signer`]) and publish the public
//! halves as a JWK Set per audience at `/keys` ([`key_set`]);
//! [`verification`] checks a saved document offline.
//!
//! Private keys never leave the keyring: no served document, log line or
//! `Debug` output carries one.

pub mod jws;
pub mod key_set;
pub mod keyring;
pub mod signer;
pub mod verification;

pub use key_set::KeySet;
pub use keyring::{KeyStatus, Keyring, KeyringError};
pub use signer::{KeyringSource, Signer, SigningError, keyring_kept_in};
pub use verification::{Rejection, SIGNATURE_MEMBER, Verified, verify_document};
