//! Projection: from decoded events to the documents of the read model.
//!
//! [`rules`] changes one aggregate's [`state`]; [`render`] turns the states of
//! a work or license into documents; [`batch`] runs both over a batch of
//! events and produces the single [`read_model::WriteBatch`] that stores it.

pub mod batch;
pub mod render;
pub mod rules;
pub mod state;
