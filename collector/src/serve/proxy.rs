//! Who the client is, behind reverse proxies.
//!
//! Behind a proxy every TCP peer is the proxy, so the per-client rate limit would become one
//! global bucket. `X-Forwarded-For` names the client, but anyone can send that header: it is
//! believed only when the TCP peer is a `--trusted-proxy`, and then only up to the first hop
//! that is not itself trusted (nginx's `real_ip_recursive`): walking the list from the right,
//! trusted proxies are skipped, and the first untrusted address is the client. A client that
//! sends its own `X-Forwarded-For` through the proxy only adds entries to the left of the one
//! the proxy appended, which is where the walk stops.

use std::net::IpAddr;

/// An address block: `10.0.0.0/8`, `fd00::/8`, or one address (`127.0.0.1`, `::1`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cidr {
    net: IpAddr,
    prefix: u8,
}

impl Cidr {
    pub fn parse(s: &str) -> Result<Cidr, String> {
        let bad = || {
            format!("--trusted-proxy: expected an address or CIDR block like 10.0.0.0/8, got {s:?}")
        };
        let (ip, prefix) = match s.trim().split_once('/') {
            Some((ip, p)) => (ip, Some(p.parse::<u8>().map_err(|_| bad())?)),
            None => (s.trim(), None),
        };
        let net: IpAddr = ip.parse().map_err(|_| bad())?;
        let max = if net.is_ipv4() { 32 } else { 128 };
        let prefix = prefix.unwrap_or(max);
        if prefix > max {
            return Err(bad());
        }
        Ok(Cidr {
            net: net.to_canonical(),
            prefix,
        })
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        // IPv4-mapped IPv6 (`::ffff:10.0.0.1`, what a dual-stack socket reports) matches IPv4.
        match (self.net, ip.to_canonical()) {
            (IpAddr::V4(n), IpAddr::V4(a)) => prefix_eq(&n.octets(), &a.octets(), self.prefix),
            (IpAddr::V6(n), IpAddr::V6(a)) => prefix_eq(&n.octets(), &a.octets(), self.prefix),
            _ => false,
        }
    }
}

fn prefix_eq(a: &[u8], b: &[u8], bits: u8) -> bool {
    let (whole, rest) = ((bits / 8) as usize, bits % 8);
    if a[..whole] != b[..whole] {
        return false;
    }
    rest == 0 || (a[whole] ^ b[whole]) >> (8 - rest) == 0
}

/// Entries considered in one request (the header is bounded by the server's header limit; this
/// bounds the work).
const MAX_HOPS: usize = 32;

/// The client's address: the TCP peer, or, when the peer is a trusted proxy, the rightmost
/// untrusted address of `X-Forwarded-For` (all its header lines, in order). An entry that is
/// not an address ends the walk at the last hop known good.
pub fn client_ip<'a>(peer: IpAddr, xff: impl Iterator<Item = &'a str>, trusted: &[Cidr]) -> IpAddr {
    let peer = peer.to_canonical();
    let is_trusted = |ip: IpAddr| trusted.iter().any(|c| c.contains(ip));
    if !is_trusted(peer) {
        return peer;
    }
    let entries: Vec<&str> = xff.flat_map(|v| v.split(',')).collect();
    let mut client = peer;
    for e in entries.iter().rev().take(MAX_HOPS) {
        match parse_hop(e) {
            Some(ip) => {
                client = ip;
                if !is_trusted(ip) {
                    break;
                }
            }
            None => break,
        }
    }
    client
}

/// `203.0.113.7`, `2001:db8::1`, `[2001:db8::1]:443`, `203.0.113.7:5000`.
fn parse_hop(s: &str) -> Option<IpAddr> {
    let s = s.trim();
    if let Ok(ip) = s.parse::<IpAddr>() {
        return Some(ip.to_canonical());
    }
    if let Some(rest) = s.strip_prefix('[') {
        return rest
            .split_once(']')
            .and_then(|(ip, _)| ip.parse::<IpAddr>().ok())
            .map(|ip| ip.to_canonical());
    }
    s.rsplit_once(':')
        .and_then(|(ip, _)| ip.parse::<std::net::Ipv4Addr>().ok())
        .map(IpAddr::V4)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn cidr_matching() {
        let c = Cidr::parse("10.1.0.0/16").unwrap();
        assert!(c.contains(ip("10.1.255.3")) && !c.contains(ip("10.2.0.1")));
        assert!(
            c.contains(ip("::ffff:10.1.0.9")),
            "IPv4-mapped peers match IPv4 blocks"
        );
        assert!(Cidr::parse("127.0.0.1").unwrap().contains(ip("127.0.0.1")));
        assert!(!Cidr::parse("127.0.0.1").unwrap().contains(ip("127.0.0.2")));
        assert!(Cidr::parse("fd00::/8").unwrap().contains(ip("fd12::1")));
        assert!(!Cidr::parse("fd00::/8").unwrap().contains(ip("10.0.0.1")));
        assert!(Cidr::parse("0.0.0.0/0").unwrap().contains(ip("8.8.8.8")));
        assert!(Cidr::parse("10.0.0.0/7")
            .unwrap()
            .contains(ip("11.255.0.0")));
        for bad in ["10.0.0.0/33", "::/129", "x", "10.0.0.0/", "10.0.0/8"] {
            assert!(Cidr::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn forwarded_for_is_believed_from_trusted_peers_only() {
        let trusted = [
            Cidr::parse("127.0.0.1").unwrap(),
            Cidr::parse("10.0.0.0/8").unwrap(),
        ];
        let xff = |v: &[&'static str]| v.to_vec().into_iter();
        // Not from a trusted peer: the header is ignored.
        assert_eq!(
            client_ip(ip("203.0.113.9"), xff(&["1.2.3.4"]), &trusted),
            ip("203.0.113.9")
        );
        // From the proxy: the client it appended.
        assert_eq!(
            client_ip(ip("127.0.0.1"), xff(&["198.51.100.7"]), &trusted),
            ip("198.51.100.7")
        );
        // A spoofed entry from the client sits left of the proxy's: not believed.
        assert_eq!(
            client_ip(ip("127.0.0.1"), xff(&["6.6.6.6, 198.51.100.7"]), &trusted),
            ip("198.51.100.7")
        );
        // Two proxies (both trusted), repeated header lines, ports and brackets.
        assert_eq!(
            client_ip(
                ip("127.0.0.1"),
                xff(&["6.6.6.6", "198.51.100.7:5000, 10.0.0.2"]),
                &trusted
            ),
            ip("198.51.100.7")
        );
        assert_eq!(
            client_ip(ip("127.0.0.1"), xff(&["[2001:db8::1]:443"]), &trusted),
            ip("2001:db8::1")
        );
        // Garbage ends the walk at the last good hop; no header: the peer.
        assert_eq!(
            client_ip(ip("127.0.0.1"), xff(&["unknown, 10.0.0.2"]), &trusted),
            ip("10.0.0.2")
        );
        assert_eq!(
            client_ip(ip("127.0.0.1"), xff(&[]), &trusted),
            ip("127.0.0.1")
        );
        // Nothing trusted: the peer, whatever the header says.
        assert_eq!(
            client_ip(ip("127.0.0.1"), xff(&["1.2.3.4"]), &[]),
            ip("127.0.0.1")
        );
    }
}
