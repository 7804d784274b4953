//! The query API: the stateless public HTTP service over the read model.
//!
//! It reads documents through `read_model::DocumentReads` only, and never
//! decodes Avro or writes documents. The endpoints arrive with issue #3; this
//! crate exists now so that the workspace shows the architecture.
