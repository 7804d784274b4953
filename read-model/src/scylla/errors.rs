//! Mapping driver failures onto [`StoreError`]: a failed request (a node
//! down, a timeout, a missing table before `migrate`) is `Unavailable`, so
//! the API answers 503 and the projector pauses and retries; a request the
//! cluster refuses as invalid is `Refused`, which nobody retries (a value
//! it does not accept, such as a timestamp too far ahead, would be refused
//! for ever); a row that does not have the shape the schema promises is
//! `Corrupt`.

use std::fmt::Display;

use scylla::errors::{DbError, ExecutionError, RequestAttemptError};

use crate::store::StoreError;

pub(super) fn unavailable(context: &str, error: impl Display) -> StoreError {
    StoreError::Unavailable(format!("{context}: {error}"))
}

pub(super) fn corrupt(context: &str, error: impl Display) -> StoreError {
    StoreError::Corrupt(format!("{context}: {error}"))
}

/// A statement's execution failed: refused when the cluster says the
/// request itself is wrong, otherwise unavailable.
pub(super) fn execution_failed(context: &str, error: &ExecutionError) -> StoreError {
    if is_refusal(error) { StoreError::Refused(format!("{context}: {error}")) } else { unavailable(context, error) }
}

fn is_refusal(error: &ExecutionError) -> bool {
    match error {
        ExecutionError::BadQuery(_) => true,
        ExecutionError::LastAttemptError(RequestAttemptError::DbError(error, _)) => matches!(
            error,
            DbError::SyntaxError
                | DbError::Invalid
                | DbError::AlreadyExists { .. }
                | DbError::FunctionFailure { .. }
                | DbError::Unauthorized
                | DbError::ConfigError
                | DbError::ProtocolError
        ),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn refused_by_the_cluster(error: DbError) -> ExecutionError {
        ExecutionError::LastAttemptError(RequestAttemptError::DbError(error, "refused".into()))
    }

    /// ScyllaDB refuses a timestamp too far ahead with an `Invalid` error;
    /// taken for unavailability, it would be retried for ever.
    #[test]
    fn a_request_the_cluster_refuses_as_invalid_is_refused_not_retried() {
        let future_timestamp = ExecutionError::LastAttemptError(RequestAttemptError::DbError(
            DbError::Invalid,
            "Cannot provide a timestamp more than 3 days into the future".into(),
        ));
        let refused = execution_failed("INSERT", &future_timestamp);
        assert!(matches!(&refused, StoreError::Refused(reason) if reason.contains("3 days")), "{refused:?}");
        assert!(matches!(
            execution_failed("SELECT", &refused_by_the_cluster(DbError::SyntaxError)),
            StoreError::Refused(_)
        ));
    }

    #[test]
    fn a_request_that_may_pass_later_is_unavailable() {
        for error in [
            refused_by_the_cluster(DbError::Overloaded),
            refused_by_the_cluster(DbError::IsBootstrapping),
            ExecutionError::RequestTimeout(Duration::from_secs(5)),
            ExecutionError::EmptyPlan,
        ] {
            assert!(matches!(execution_failed("INSERT", &error), StoreError::Unavailable(_)), "{error}");
        }
    }
}
