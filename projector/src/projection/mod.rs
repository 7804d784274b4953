//! Projection: from decoded events to the documents of the read model.
//!
//! [`rules`] changes one aggregate's [`state`]; [`render`] turns the states of
//! a work or license into documents; [`batch`] runs both over a batch of
//! events and produces the single [`read_model::WriteBatch`] that stores it;
//! [`exact_bytes`] serializes the bodies it holds without slack, as JSON
//! through [`compact_json`].

/// The maps of a batch hash many short ids that come from our own store and
/// events, where SipHash's protection against crafted keys buys nothing.
pub type FastMap<K, V> = foldhash::HashMap<K, V>;

pub mod batch;
pub mod compact_json;
pub mod exact_bytes;
pub mod render;
pub mod rules;
pub mod state;
