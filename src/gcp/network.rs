//! The network a new cluster runs in: VPC, the nodes' subnet with its `pods` and `services`
//! secondary ranges, the Cloud Router and Cloud NAT through which its private nodes reach the
//! internet, and the region's proxy-only subnet an internal Gateway needs.
//!
//! Its own module because CIDR ranges carry most of the checks (malformed, host bits, too
//! small, overlapping) and none of them concern the cluster or its pools.

use ipnet::Ipv4Net;

use super::spec::NetworkSpec;
use super::{
    Dependency, Gcp, Meta, NetworkPlan, Ref, RouterNatPlan, RouterPlan, SubnetPurpose,
    SubnetworkPlan, conflicts_with_existing, rule,
};
use crate::names;
use crate::plan::Planner;

/// A created-or-referenced VPC and subnet.
#[derive(Clone, Debug)]
pub struct NetworkHandle {
    pub(super) network: Ref,
    pub(super) subnetwork: Ref,
    pub(super) depends_on: Vec<Dependency>,
}

/// Default ranges of a new VPC: nodes, pods, services, and the region's proxy-only subnet.
const NODES_CIDR: &str = "10.129.0.0/20";
const PODS_CIDR: &str = "192.168.64.0/18";
const SERVICES_CIDR: &str = "192.168.128.0/20";
/// Right after the nodes' default range; /23 is what Google recommends for proxy-only subnets.
const PROXY_ONLY_CIDR: &str = "10.129.16.0/23";

impl Gcp {
    /// Plans the network of a new cluster: a VPC and subnet with `pods` and `services`
    /// secondary ranges, or references to existing ones.
    pub(super) fn network(
        &mut self,
        planner: &mut Planner<'_>,
        spec: &NetworkSpec,
    ) -> NetworkHandle {
        let name = self.given_or_derived(spec.name.as_ref(), "-network", 1, 63);
        let subnetwork = self.given_or_derived(spec.subnetwork.as_ref(), "-subnet", 1, 63);
        planner.check_name(
            rule::RESOURCE_NAME,
            "spec.network.name",
            &name,
            names::resource,
        );
        planner.check_name(
            rule::RESOURCE_NAME,
            "spec.network.subnetwork",
            &subnetwork,
            names::resource,
        );
        if spec.existing {
            for (field, set) in [
                ("spec.network.nodesCidr", spec.nodes_cidr.is_some()),
                ("spec.network.podsCidr", spec.pods_cidr.is_some()),
                ("spec.network.servicesCidr", spec.services_cidr.is_some()),
                ("spec.network.proxyOnlyCidr", spec.proxy_only_cidr.is_some()),
            ] {
                if set {
                    conflicts_with_existing(
                        planner,
                        field,
                        "an existing network keeps its own ranges",
                    );
                }
            }
            return NetworkHandle {
                network: Ref::external(format!("projects/{}/global/networks/{name}", self.project)),
                subnetwork: Ref::external(format!(
                    "projects/{}/regions/{}/subnetworks/{subnetwork}",
                    self.project, self.region
                )),
                depends_on: Vec::new(),
            };
        }
        let ranges = [
            ("spec.network.nodesCidr", &spec.nodes_cidr, NODES_CIDR),
            ("spec.network.podsCidr", &spec.pods_cidr, PODS_CIDR),
            (
                "spec.network.servicesCidr",
                &spec.services_cidr,
                SERVICES_CIDR,
            ),
        ];
        // A proxy range written down is checked with the others; the default one only when a
        // gateway needs it (`gateway_api`), so it never gets in the way of custom ranges.
        let ranges = if spec.proxy_only_cidr.is_some() {
            let [nodes, pods, services, proxies] = check_ranges(
                planner,
                [
                    ranges[0],
                    ranges[1],
                    ranges[2],
                    (
                        "spec.network.proxyOnlyCidr",
                        &spec.proxy_only_cidr,
                        PROXY_ONLY_CIDR,
                    ),
                ],
            );
            self.proxy_only_cidr = Some(proxies);
            [nodes, pods, services]
        } else {
            check_ranges(planner, ranges)
        };
        let compute = self.api("compute.googleapis.com");
        let network_dependency = self.dependency("compute", "ComputeNetwork", &name);
        let subnetwork_dependency = self.dependency("compute", "ComputeSubnetwork", &subnetwork);
        self.infra.networks.push(NetworkPlan {
            meta: Meta::new(name.clone(), [compute]),
        });
        let network_ref = Ref::name(name.clone());
        let [nodes_cidr, pods_cidr, services_cidr] = ranges;
        self.infra.subnetworks.push(SubnetworkPlan {
            meta: Meta::new(subnetwork.clone(), [network_dependency.clone()]),
            region: self.region.clone(),
            cidr: nodes_cidr,
            purpose: SubnetPurpose::Nodes {
                pods_cidr,
                services_cidr,
            },
            network: Ref::name(name.clone()),
        });
        let nat = self.cloud_nat(&name, network_dependency);
        NetworkHandle {
            network: network_ref,
            subnetwork: Ref::name(subnetwork),
            // Nodes pull their images from their first boot: the NAT comes first.
            depends_on: vec![subnetwork_dependency, nat],
        }
    }

    /// Plans the Cloud Router and Cloud NAT of the new VPC `network` in the blueprint's region:
    /// private nodes have no external address, yet pull images from nvcr.io and Docker Hub,
    /// models from Hugging Face, packages and git repositories. Google APIs need no NAT (the
    /// subnet has Private Google Access). Returns the dependency on the NAT.
    fn cloud_nat(&mut self, network: &str, network_dependency: Dependency) -> Dependency {
        let router = names::derived(&self.blueprint, "-router", 1, 63);
        let nat = names::derived(&self.blueprint, "-nat", 1, 63);
        let router_dependency = self.dependency("compute", "ComputeRouter", &router);
        let nat_dependency = self.dependency("compute", "ComputeRouterNAT", &nat);
        self.infra.routers.push(RouterPlan {
            meta: Meta::new(router.clone(), [network_dependency]),
            region: self.region.clone(),
            network: Ref::name(network),
        });
        self.infra.router_nats.push(RouterNatPlan {
            meta: Meta::new(nat, [router_dependency]),
            region: self.region.clone(),
            router: Ref::name(router),
        });
        nat_dependency
    }

    /// Plans the region's proxy-only subnet in the VPC this blueprint creates, next to the
    /// nodes' subnet whose network is `network_ref`: the range written down (checked with the
    /// others already), else the default one, checked against the cluster's ranges now that it
    /// is used. `false` when there is no nodes' subnet to put it next to.
    pub(super) fn proxy_only_subnet(
        &mut self,
        planner: &mut Planner<'_>,
        network_ref: Ref,
    ) -> bool {
        let Some((nodes, pods, services, depends_on)) =
            self.infra
                .subnetworks
                .iter()
                .find_map(|subnet| match &subnet.purpose {
                    SubnetPurpose::Nodes {
                        pods_cidr,
                        services_cidr,
                    } => Some((
                        subnet.cidr.clone(),
                        pods_cidr.clone(),
                        services_cidr.clone(),
                        subnet.meta.depends_on.clone(),
                    )),
                    SubnetPurpose::ProxyOnly => None,
                })
        else {
            return false;
        };
        let field = "spec.network.proxyOnlyCidr";
        let cidr = match self.proxy_only_cidr.clone() {
            Some(cidr) => cidr,
            None => {
                // The default range, checked against the cluster's ranges only now that it
                // is used.
                let overlapping = [nodes, pods, services].into_iter().find(|range| {
                    let (Ok(range), Ok(proxies)) =
                        (range.parse::<Ipv4Net>(), PROXY_ONLY_CIDR.parse::<Ipv4Net>())
                    else {
                        return false;
                    };
                    overlap(&range, &proxies)
                });
                if let Some(range) = overlapping {
                    let d = planner.error(
                        rule::NETWORK_CIDR,
                        field,
                        format!(
                            "the default proxy-only range `{PROXY_ONLY_CIDR}` overlaps `{range}`"
                        ),
                    );
                    d.fix = Some(format!("set `{field}` to a free range of /26 or larger"));
                }
                PROXY_ONLY_CIDR.to_string()
            }
        };
        if let Ok(net) = cidr.parse::<Ipv4Net>()
            && net.prefix_len() > 26
        {
            let d = planner.error(
                rule::NETWORK_CIDR,
                field,
                format!("`{cidr}` is too small for a proxy-only subnet"),
            );
            d.expected = Some("a prefix length of /26 or shorter (/23 recommended)".into());
        }
        let name = names::derived(&self.blueprint, "-proxy-subnet", 1, 63);
        self.infra.subnetworks.push(SubnetworkPlan {
            meta: Meta::new(name, depends_on),
            region: self.region.clone(),
            cidr,
            purpose: SubnetPurpose::ProxyOnly,
            network: network_ref,
        });
        true
    }
}

/// Parses the subnet's ranges (each defaulted), reporting malformed ranges, host bits set
/// and overlaps; returns them as written (or defaulted).
fn check_ranges<const N: usize>(
    planner: &mut Planner<'_>,
    ranges: [(&str, &Option<String>, &str); N],
) -> [String; N] {
    let mut parsed: Vec<(&str, Ipv4Net)> = Vec::new();
    let texts = ranges.map(|(field, value, default)| {
        let text = value.clone().unwrap_or_else(|| default.to_string());
        match text.parse::<Ipv4Net>() {
            Ok(net) if net.addr() != net.network() => {
                let d = planner.error(
                    rule::NETWORK_CIDR,
                    field,
                    format!("`{text}` has host bits set"),
                );
                d.found = Some(text.clone());
                d.expected = Some(format!("the network address of a /{}", net.prefix_len()));
                d.fix = Some(format!("use `{}`", net.trunc()));
            }
            Ok(net) if net.prefix_len() > 29 => {
                let d = planner.error(
                    rule::NETWORK_CIDR,
                    field,
                    format!("`{text}` is too small for a GKE range"),
                );
                d.expected = Some("a prefix length of /29 or shorter".into());
            }
            Ok(net) => parsed.push((field, net)),
            Err(_) => {
                let d = planner.error(
                    rule::NETWORK_CIDR,
                    field,
                    format!("invalid CIDR range `{text}`"),
                );
                d.found = Some(text.clone());
                d.expected = Some("an IPv4 range such as `10.129.0.0/20`".into());
            }
        }
        text
    });
    for (index, (field, net)) in parsed.iter().enumerate() {
        for (other_field, other) in &parsed[index + 1..] {
            if overlap(net, other) {
                let d = planner.error(
                    rule::NETWORK_CIDR,
                    other_field,
                    format!("`{other}` overlaps `{net}` of `{field}`"),
                );
                d.expected = Some("node, pod and service ranges that do not overlap".into());
            }
        }
    }
    texts
}

/// Whether two ranges share addresses (one holds the other's first address).
fn overlap(a: &Ipv4Net, b: &Ipv4Net) -> bool {
    a.contains(&b.network()) || b.contains(&a.network())
}
