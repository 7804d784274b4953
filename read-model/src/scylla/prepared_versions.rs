//! The prepared statements of each model version, prepared once: on a
//! version switch every request in flight asks for the new version's
//! statements at the same moment, and only the first prepares them while
//! the others wait for its result. A failed preparation is not kept, so the
//! next request tries again.
//!
//! It knows nothing of CQL: it holds whatever a preparation produces.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::OnceCell;

use crate::store::{ModelVersion, StoreError};

/// One preparation per model version, shared by every caller.
#[derive(Debug)]
pub(super) struct PreparedVersions<T> {
    cells: Mutex<HashMap<ModelVersion, Arc<OnceCell<Arc<T>>>>>,
}

impl<T> Default for PreparedVersions<T> {
    fn default() -> PreparedVersions<T> {
        PreparedVersions { cells: Mutex::new(HashMap::new()) }
    }
}

impl<T> PreparedVersions<T> {
    /// The prepared value of `version`, from `prepare` when nobody has it yet.
    /// Concurrent callers of one version share one run of `prepare`.
    pub(super) async fn get_or_prepare<F>(&self, version: ModelVersion, prepare: F) -> Result<Arc<T>, StoreError>
    where
        F: Future<Output = Result<T, StoreError>>,
    {
        let cell = {
            let mut cells = self.cells.lock().unwrap_or_else(PoisonError::into_inner);
            Arc::clone(cells.entry(version).or_default())
        };
        cell.get_or_try_init(|| async { prepare.await.map(Arc::new) }).await.cloned()
    }

    /// Forgets a version (dropped, or every version after the keyspaces went).
    pub(super) fn forget(&self, version: ModelVersion) {
        self.cells.lock().unwrap_or_else(PoisonError::into_inner).remove(&version);
    }

    pub(super) fn forget_all(&self) {
        self.cells.lock().unwrap_or_else(PoisonError::into_inner).clear();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_callers_of_one_version_share_one_preparation() {
        let versions = Arc::new(PreparedVersions::<u32>::default());
        let preparations = Arc::new(AtomicU32::new(0));
        let callers: Vec<_> = (0..32)
            .map(|_| {
                let (versions, preparations) = (Arc::clone(&versions), Arc::clone(&preparations));
                tokio::spawn(async move {
                    versions
                        .get_or_prepare(ModelVersion(2), async {
                            preparations.fetch_add(1, Ordering::SeqCst);
                            // Long enough for every caller to arrive while it runs.
                            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                            Ok(39)
                        })
                        .await
                })
            })
            .collect();
        for caller in callers {
            assert_eq!(*caller.await.expect("caller").expect("prepared"), 39);
        }
        assert_eq!(preparations.load(Ordering::SeqCst), 1, "prepared once for all callers");
    }

    #[tokio::test]
    async fn a_failed_preparation_is_tried_again_and_a_forgotten_version_prepared_anew() {
        let versions = PreparedVersions::<u32>::default();
        let failed = versions.get_or_prepare(ModelVersion(1), async { Err(StoreError::Unavailable("down".into())) });
        assert!(matches!(failed.await, Err(StoreError::Unavailable(_))));
        assert_eq!(*versions.get_or_prepare(ModelVersion(1), async { Ok(1) }).await.expect("prepared"), 1);
        assert_eq!(*versions.get_or_prepare(ModelVersion(1), async { Ok(2) }).await.expect("kept"), 1);
        versions.forget(ModelVersion(1));
        assert_eq!(*versions.get_or_prepare(ModelVersion(1), async { Ok(3) }).await.expect("anew"), 3);
        versions.forget_all();
        assert_eq!(*versions.get_or_prepare(ModelVersion(1), async { Ok(4) }).await.expect("anew"), 4);
    }
}
