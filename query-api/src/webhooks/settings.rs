//! How a replica delivers webhooks, as the configuration sets it. Apart
//! from the deliverer, so that the configuration names it without naming
//! the application state the deliverer reads.

use std::time::Duration;

use super::sending::SenderSettings;

/// How a replica delivers.
#[derive(Debug, Clone)]
pub struct DeliverySettings {
    /// How often the subscriptions are listed, the feed is looked at for
    /// the caught-up ones, and a waiting one looks again.
    pub poll: Duration,
    /// How long a lease lasts unrenewed; a holder renews it every third of it.
    pub lease: Duration,
    /// The most notifications one message holds.
    pub batch: u32,
    pub sender: SenderSettings,
}
