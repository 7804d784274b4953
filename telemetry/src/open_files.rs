//! The process's limit of open files, raised at start from the soft limit
//! (often 1,024 or 4,096) to the hard one: every connection of the query
//! API holds a file (its connection cap is kept below the limit, see its
//! `ServeConfig`), and so does every spilled run a projector's sorted
//! catch-up merges (over 300 at 3,000,000 works).

use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

/// The soft limit before and after raising it, and the hard limit; `None`
/// stands for unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenFileLimits {
    pub soft_before: Option<u64>,
    pub soft: Option<u64>,
    pub hard: Option<u64>,
}

/// Raises the soft limit of open files to the hard limit, and logs both.
pub fn raise_open_file_limit() -> OpenFileLimits {
    let before = getrlimit(Resource::Nofile);
    let raised = Rlimit { current: before.maximum, maximum: before.maximum };
    let soft = match setrlimit(Resource::Nofile, raised) {
        Ok(()) => before.maximum,
        Err(error) => {
            tracing::warn!(%error, "failed to raise the open-file limit to the hard limit");
            before.current
        }
    };
    let limits = OpenFileLimits { soft_before: before.current, soft, hard: before.maximum };
    let text = |limit: Option<u64>| limit.map_or_else(|| "unlimited".to_owned(), |limit| limit.to_string());
    tracing::info!(
        soft_before = text(limits.soft_before),
        soft = text(limits.soft),
        hard = text(limits.hard),
        "open-file limit"
    );
    limits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_soft_limit_is_raised_to_the_hard_limit() {
        let limits = raise_open_file_limit();
        assert_eq!(limits.soft, limits.hard);
        assert_eq!(getrlimit(Resource::Nofile).current, limits.hard);
        assert!(limits.soft_before <= limits.soft || limits.soft.is_none());
    }
}
