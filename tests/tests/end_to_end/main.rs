//! The end-to-end tests, one module per concern, linked into one test binary:
//! every test binary links the whole workspace, so one binary instead of
//! sixteen saves most of the suite's link time and disk. cargo-nextest still
//! runs each test in its own process.

mod api_access;
mod api_conformance;
mod balancer;
mod catalogue_copy;
mod concurrent_readers;
mod conditional_requests;
mod cql_cluster_faults;
mod cql_crash_and_resume;
mod cql_statement_coverage;
mod crash_and_resume;
mod cross_origin_page;
mod dead_letters;
mod deployment_files;
mod generated_clients;
mod graceful_shutdown;
mod idempotence;
mod kafka_faults;
mod kafka_group;
mod kafka_projection;
mod kafka_rebuild;
mod module_imports;
mod notification_stream;
mod operator_keys;
mod ops_files;
mod personal_data;
mod production_shape;
mod provenance_chain;
mod public_record_page;
mod rate_limit_flood;
mod rebuild_progress;
mod rights_sync;
mod sandbox_fixtures;
mod service;
mod signed_evidence;
mod stalled_connections;
mod stop_while_waiting;
mod stored_bodies;
mod webhooks;
