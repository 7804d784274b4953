//! The notification feed's cursor (`NotificationCursor::decode`), as
//! `since` carries it to `/notifications`.

use read_model::notifications::NotificationCursor;

use crate::feed_cursor::check_cursor;
use crate::service::service;

/// The properties of [`crate::feed_cursor::check`], for the notification
/// feed's cursors as `since` of `/notifications`.
pub fn check(input: &[u8]) {
    check_cursor(input, "/notifications", NotificationCursor::decode, NotificationCursor::encode);
}

/// The cursors of every notification of the fixtures' feeds, both audiences.
pub fn seeds() -> Vec<Vec<u8>> {
    service().notification_cursors.iter().map(|cursor| cursor.clone().into_bytes()).collect()
}
