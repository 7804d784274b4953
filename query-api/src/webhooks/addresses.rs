//! Where a webhook endpoint may be reached: the addresses a production
//! deliverer refuses (loopback, private, link-local and cloud metadata
//! addresses, and the like), and the resolver that applies the rule to every
//! connection, so a name that resolves to a refused address at delivery time
//! is refused then, whatever it resolved to when the subscription was added.
//!
//! The resolver hands the HTTP client the very addresses it checked, so no
//! second lookup can answer differently between the check and the connection.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::sync::Arc;

use ureq::config::Config;
use ureq::http::Uri;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::NextTimeout;

/// Why an address is refused, when it is.
pub fn refusal(address: IpAddr) -> Option<&'static str> {
    match address {
        IpAddr::V4(v4) => refusal_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => refusal_v4(v4),
            None => refusal_v6(v6),
        },
    }
}

fn refusal_v4(address: Ipv4Addr) -> Option<&'static str> {
    let [first, second, ..] = address.octets();
    if address == Ipv4Addr::new(169, 254, 169, 254) {
        Some("a cloud metadata address")
    } else if address.is_loopback() {
        Some("a loopback address")
    } else if address.is_private() {
        Some("a private address")
    } else if address.is_link_local() {
        Some("a link-local address")
    } else if first == 100 && (64..128).contains(&second) {
        Some("a shared (carrier-grade NAT) address")
    } else if first == 0 || address.is_broadcast() || address.is_multicast() {
        Some("not a unicast host address")
    } else {
        None
    }
}

fn refusal_v6(address: Ipv6Addr) -> Option<&'static str> {
    let first = address.segments()[0];
    if address.is_loopback() {
        Some("a loopback address")
    } else if first & 0xfe00 == 0xfc00 {
        // Unique local addresses, AWS's IPv6 metadata address among them.
        Some("a private address")
    } else if first & 0xffc0 == 0xfe80 {
        Some("a link-local address")
    } else if address.is_unspecified() || address.is_multicast() {
        Some("not a unicast host address")
    } else {
        None
    }
}

/// Names pinned to an address (`--webhook-resolve HOST=ADDRESS`), as curl's
/// `--resolve`: for split-horizon DNS, and for showing that a refused address
/// is refused at delivery time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PinnedNames(HashMap<String, IpAddr>);

impl PinnedNames {
    /// Parses `HOST=ADDRESS` pins.
    pub fn parse<'a>(pins: impl IntoIterator<Item = &'a str>) -> Result<PinnedNames, String> {
        let mut names = HashMap::new();
        for pin in pins {
            let (host, address) = pin.split_once('=').ok_or_else(|| format!("{pin:?}: a pin is HOST=ADDRESS"))?;
            let address: IpAddr =
                address.trim().parse().map_err(|_| format!("{pin:?}: {address:?} is not an IP address"))?;
            names.insert(host.trim().to_ascii_lowercase(), address);
        }
        Ok(PinnedNames(names))
    }
}

/// How a deliverer resolves an endpoint's host.
#[derive(Debug, Clone)]
pub struct Resolution {
    pub pinned: PinnedNames,
    /// Whether refused addresses are refused (production), or allowed
    /// (development and tests, whose receivers listen on loopback).
    pub refuse_private: bool,
}

impl Resolution {
    /// The addresses of `host`, each checked; the first refused one fails the whole answer.
    pub fn addresses(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, String> {
        let host = host.trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
        let addresses: Vec<SocketAddr> = if let Some(address) = self.pinned.0.get(&host) {
            vec![SocketAddr::new(*address, port)]
        } else if let Ok(address) = host.parse::<IpAddr>() {
            vec![SocketAddr::new(address, port)]
        } else {
            (host.as_str(), port)
                .to_socket_addrs()
                .map_err(|error| format!("cannot resolve {host}: {error}"))?
                .collect()
        };
        self.checked(&host, addresses)
    }

    fn checked(&self, host: &str, addresses: Vec<SocketAddr>) -> Result<Vec<SocketAddr>, String> {
        if addresses.is_empty() {
            return Err(format!("{host} resolves to no address"));
        }
        if self.refuse_private {
            for address in &addresses {
                if let Some(reason) = refusal(address.ip()) {
                    return Err(format!("refused: {host} resolves to {}, {reason}", address.ip()));
                }
            }
        }
        Ok(addresses)
    }
}

/// The HTTP client's resolver: [`Resolution`] on every connection.
#[derive(Debug)]
pub(super) struct CheckedResolver(pub(super) Arc<Resolution>);

impl Resolver for CheckedResolver {
    fn resolve(&self, uri: &Uri, config: &Config, timeout: NextTimeout) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let host = uri.host().unwrap_or_default();
        let refused =
            |message: String| ureq::Error::Io(std::io::Error::new(std::io::ErrorKind::PermissionDenied, message));
        let pinned_or_literal = self.0.pinned.0.contains_key(&host.to_ascii_lowercase())
            || host.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>().is_ok();
        let addresses = if pinned_or_literal {
            let port = uri.port_u16().unwrap_or(if uri.scheme_str() == Some("http") { 80 } else { 443 });
            self.0.addresses(host, port).map_err(refused)?
        } else {
            let resolved = DefaultResolver::default().resolve(uri, config, timeout)?;
            let addresses = resolved.iter().copied().collect();
            self.0.checked(host, addresses).map_err(refused)?
        };
        let mut checked = self.empty();
        for address in addresses {
            if checked.try_push(address).is_err() {
                break;
            }
        }
        Ok(checked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_private_link_local_and_metadata_addresses_are_refused() {
        for (address, reason) in [
            ("127.0.0.1", "a loopback address"),
            ("127.8.9.10", "a loopback address"),
            ("10.1.2.3", "a private address"),
            ("172.16.0.1", "a private address"),
            ("192.168.1.1", "a private address"),
            ("169.254.169.254", "a cloud metadata address"),
            ("169.254.3.4", "a link-local address"),
            ("100.64.0.1", "a shared (carrier-grade NAT) address"),
            ("0.0.0.0", "not a unicast host address"),
            ("::1", "a loopback address"),
            ("::ffff:127.0.0.1", "a loopback address"),
            ("::ffff:10.0.0.1", "a private address"),
            ("fd00:ec2::254", "a private address"),
            ("fe80::1", "a link-local address"),
        ] {
            assert_eq!(refusal(address.parse().expect("an address")), Some(reason), "{address}");
        }
        for address in ["93.184.215.14", "172.32.0.1", "100.128.0.1", "2606:4700::1111", "192.0.2.10"] {
            assert_eq!(refusal(address.parse().expect("an address")), None, "{address}");
        }
    }

    #[test]
    fn a_name_is_checked_against_what_it_resolves_to_now() {
        let pinned = PinnedNames::parse(["hooks.partner.test=127.0.0.1"]).expect("pins");
        let production = Resolution { pinned: pinned.clone(), refuse_private: true };
        let refused = production.addresses("hooks.partner.test", 443).expect_err("pinned to loopback");
        assert_eq!(refused, "refused: hooks.partner.test resolves to 127.0.0.1, a loopback address");
        assert!(production.addresses("localhost", 443).is_err(), "localhost resolves to loopback");
        assert!(production.addresses("[::1]", 443).is_err());
        let development = Resolution { pinned, refuse_private: false };
        assert_eq!(development.addresses("hooks.partner.test", 8443), Ok(vec!["127.0.0.1:8443".parse().expect("")]));
        assert!(PinnedNames::parse(["no-address"]).is_err());
        assert!(PinnedNames::parse(["host=not-an-ip"]).is_err());
    }
}
