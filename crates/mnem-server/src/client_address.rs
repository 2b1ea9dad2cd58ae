//! The client address a request's per-address budgets are charged to. Behind a reverse
//! proxy every connection comes from the proxy, so one address would carry every
//! client's unverified key checks (an attacker there could spend them for all). With
//! `--trusted-proxy CIDR`, a request whose peer is inside a trusted range is charged to
//! the client its `X-Forwarded-For` names: the rightmost address that is not itself a
//! trusted proxy (each proxy appends the peer it saw, so addresses to the left of that
//! are whatever the client wrote and are never believed). From any other peer the header
//! is ignored: anyone can send it.

use std::net::IpAddr;

use axum::http::HeaderMap;
pub use ipnet::IpNet;

const FORWARDED_FOR: &str = "x-forwarded-for";

/// The proxies whose `X-Forwarded-For` is believed; empty: none is.
#[derive(Debug, Clone, Default)]
pub struct TrustedProxies {
    ranges: Vec<IpNet>,
}

impl TrustedProxies {
    pub fn new(ranges: Vec<IpNet>) -> Self {
        Self { ranges }
    }

    fn trusts(&self, address: IpAddr) -> bool {
        let address = address.to_canonical();
        self.ranges.iter().any(|range| range.contains(&address))
    }

    /// The address to charge for a request from `peer` carrying `headers`.
    pub fn client(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        if !self.trusts(peer) {
            return peer;
        }
        // Several headers are one list, in order.
        let hops: Vec<&str> = headers
            .get_all(FORWARDED_FOR)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(','))
            .map(str::trim)
            .collect();
        let mut client = peer;
        for hop in hops.into_iter().rev() {
            // A hop that is not an address ends the walk: what is left of it is unknown.
            let Some(address) = parse_hop(hop) else {
                break;
            };
            client = address;
            if !self.trusts(address) {
                break;
            }
        }
        client
    }
}

/// One `X-Forwarded-For` entry: an address, bracketed or with a port as some proxies
/// write it (`[2001:db8::1]:443`, `203.0.113.7:5120`).
fn parse_hop(hop: &str) -> Option<IpAddr> {
    if let Ok(address) = hop.parse() {
        return Some(address);
    }
    if let Some(rest) = hop.strip_prefix('[') {
        return rest.split_once(']')?.0.parse().ok();
    }
    let (host, port) = hop.rsplit_once(':')?;
    port.parse::<u16>().ok()?;
    host.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("address")
    }

    fn forwarded(values: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append(FORWARDED_FOR, HeaderValue::from_str(value).expect("header"));
        }
        headers
    }

    fn proxies(ranges: &[&str]) -> TrustedProxies {
        TrustedProxies::new(ranges.iter().map(|r| r.parse().expect("cidr")).collect())
    }

    #[test]
    fn without_a_trusted_proxy_the_header_is_ignored() {
        let headers = forwarded(&["198.51.100.9"]);
        assert_eq!(
            TrustedProxies::default().client(ip("10.0.0.5"), &headers),
            ip("10.0.0.5")
        );
        let trusted = proxies(&["10.0.0.0/8"]);
        assert_eq!(
            trusted.client(ip("192.0.2.1"), &headers),
            ip("192.0.2.1"),
            "a peer outside the range cannot name another client"
        );
    }

    #[test]
    fn a_trusted_proxy_names_the_client_and_a_forged_hop_is_not_believed() {
        let trusted = proxies(&["10.0.0.0/8", "::1/128"]);
        let from_proxy = ip("10.0.0.5");
        let client = trusted.client(from_proxy, &forwarded(&["198.51.100.9"]));
        assert_eq!(client, ip("198.51.100.9"));
        let chained = forwarded(&["6.6.6.6, 198.51.100.9", "10.0.0.7"]);
        assert_eq!(trusted.client(from_proxy, &chained), ip("198.51.100.9"));
        let bracketed = forwarded(&["[2001:db8::1]:443"]);
        assert_eq!(trusted.client(ip("::1"), &bracketed), ip("2001:db8::1"));
        let ported = forwarded(&["203.0.113.7:5120"]);
        assert_eq!(trusted.client(from_proxy, &ported), ip("203.0.113.7"));
    }

    #[test]
    fn a_trusted_proxy_without_a_usable_header_is_charged_itself() {
        let trusted = proxies(&["10.0.0.0/8"]);
        let proxy = ip("10.0.0.5");
        assert_eq!(trusted.client(proxy, &HeaderMap::new()), proxy);
        assert_eq!(trusted.client(proxy, &forwarded(&["unknown"])), proxy);
        assert_eq!(
            trusted.client(proxy, &forwarded(&["198.51.100.9, garbage"])),
            proxy,
            "the walk stops at the first hop it cannot read"
        );
    }

    #[test]
    fn an_ipv4_mapped_peer_matches_its_ipv4_range() {
        let trusted = proxies(&["10.0.0.0/8"]);
        let mapped = ip("::ffff:10.0.0.5");
        assert_eq!(
            trusted.client(mapped, &forwarded(&["198.51.100.9"])),
            ip("198.51.100.9")
        );
    }
}
