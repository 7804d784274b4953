//! Signed webhooks: the operator subscribes a partner's production key to
//! an HTTPS endpoint, and the API replicas post the key's notifications
//! there, in order, at least once, signed as Standard Webhooks asks.
//!
//! - [`addresses`]: where an endpoint may be reached, checked at every connection;
//! - [`signature`]: the `v1a` Ed25519 signature with the published key;
//! - [`payload`]: what is posted (notifications, a gap, the challenge);
//! - [`state`]: what a subscription's deliverer saves after each attempt;
//! - [`schedule`]: when a failed delivery is tried again;
//! - [`sending`]: one HTTP attempt;
//! - [`settings`]: how a replica delivers;
//! - [`deliverer`]: the replica's loop, one task per subscription it holds.
//!
//! It reads the notification feed and writes only the subscriptions'
//! delivery state and attempts; it never writes documents.

pub mod addresses;
pub mod deliverer;
pub mod payload;
pub mod schedule;
pub mod sending;
pub mod settings;
pub mod signature;
pub mod state;

use read_model::webhooks::WebhookSubscription;
use serde::Serialize;
use ureq::http::Uri;
use utoipa::ToSchema;

use self::addresses::Resolution;
use self::state::DeliveryState;

/// Where a subscription stands, as a partner and the operator see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum WebhookStatus {
    /// Waiting for the endpoint to answer the challenge.
    Challenging,
    /// Delivering, or caught up.
    Active,
    /// The last attempt failed; the next follows the retry schedule.
    Retrying,
    /// Paused by the operator, or by the deliverer after a `410` or a spent
    /// retry schedule; resumed by the operator, from where it stopped.
    Paused,
}

impl WebhookStatus {
    pub fn name(self) -> &'static str {
        match self {
            WebhookStatus::Challenging => "challenging",
            WebhookStatus::Active => "active",
            WebhookStatus::Retrying => "retrying",
            WebhookStatus::Paused => "paused",
        }
    }
}

/// The status of a subscription with this delivery state.
pub fn status_of(subscription: &WebhookSubscription, state: &DeliveryState) -> WebhookStatus {
    let paused_by_deliverer = state.paused.as_ref().is_some_and(|pause| pause.at_ms >= subscription.resumed_at_ms);
    if !subscription.enabled || paused_by_deliverer {
        WebhookStatus::Paused
    } else if state.failures > 0 {
        WebhookStatus::Retrying
    } else if !state.verified {
        WebhookStatus::Challenging
    } else {
        WebhookStatus::Active
    }
}

/// Why an endpoint is not accepted now, or `Ok` with it normalized.
pub fn check_endpoint(endpoint: &str, https_only: bool, resolution: &Resolution) -> Result<String, String> {
    let uri: Uri = endpoint.trim().parse().map_err(|_| format!("{endpoint:?} is not a URL"))?;
    let scheme = uri.scheme_str().unwrap_or_default();
    match scheme {
        "https" => {}
        "http" if !https_only => {}
        "http" => return Err("an endpoint must be https:// in production".into()),
        _ => return Err(format!("{endpoint:?} is not an http(s) URL")),
    }
    let host = uri.host().filter(|host| !host.is_empty()).ok_or_else(|| format!("{endpoint:?} names no host"))?;
    if uri.authority().is_some_and(|authority| authority.as_str().contains('@')) {
        return Err("an endpoint carries no user name or password".into());
    }
    let port = uri.port_u16().unwrap_or(if scheme == "http" { 80 } else { 443 });
    resolution.addresses(host, port)?;
    Ok(uri.to_string())
}

/// A new subscription id.
pub fn new_id() -> std::io::Result<String> {
    Ok(format!("wh_{}", read_model::hex::lower_hex(&crate::keys::random_bytes::<8>()?)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::webhooks::addresses::PinnedNames;

    #[test]
    fn endpoints_are_https_with_a_host_that_resolves_to_an_allowed_address() {
        let pinned = PinnedNames::parse(["hooks.partner.test=192.0.2.10", "inside.test=10.0.0.5"]).expect("pins");
        let production = Resolution { pinned, refuse_private: true };
        assert_eq!(
            check_endpoint("https://hooks.partner.test/lcc", true, &production),
            Ok("https://hooks.partner.test/lcc".into())
        );
        assert!(check_endpoint("http://hooks.partner.test/lcc", true, &production).is_err());
        assert!(check_endpoint("https://inside.test/", true, &production).expect_err("private").contains("10.0.0.5"));
        assert!(check_endpoint("https://169.254.169.254/latest", true, &production).is_err());
        assert!(check_endpoint("https://user:pw@hooks.partner.test/", true, &production).is_err());
        assert!(check_endpoint("ftp://hooks.partner.test/", true, &production).is_err());
        assert!(check_endpoint("not a url", true, &production).is_err());
    }
}
