//! What every decoded event and every parked one must satisfy, whichever
//! source read it.

use projector::contract::Topic;
use projector::events::Event;
use projector::events::validate::validate;
use projector::source::Rejection;

/// An accepted event is of the topic it was read from, and validating it
/// again accepts it unchanged: its identifiers are already in their one
/// normalized spelling, so documents and indexes agree on them.
pub fn assert_accepted(event: &Event, topic: Option<Topic>) {
    if let Some(topic) = topic {
        assert_eq!(event.topic, topic, "an event decoded from {} names another topic", topic.name());
    }
    let mut again = event.clone();
    assert_eq!(validate(&mut again), Ok(()), "validation refuses an event it accepted");
    assert_eq!(&again, event, "validation is not idempotent");
}

/// A parked event carries a reason an operator can read.
pub fn assert_parked(rejection: &Rejection) {
    assert!(!rejection.reason.trim().is_empty(), "an event was parked without a reason: {rejection:?}");
}
