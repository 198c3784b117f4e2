//! NVIDIA GPUs on GKE: node label values, machine types and GPUs per machine.

/// A GPU model as GKE labels it.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Gpu {
    /// `cloud.google.com/gke-accelerator` value, e.g. `nvidia-tesla-t4`.
    pub label: &'static str,
    /// Display name, e.g. `NVIDIA T4`.
    pub display_name: &'static str,
    /// Machine types that carry this GPU and how many per VM.
    pub machines: &'static [GpuMachine],
    /// `true` when GPUs are attached to general-purpose VMs as `guestAccelerator`
    /// (T4 on N1) rather than built into an accelerator-optimized machine type.
    pub attached: bool,
}

/// A machine type offering a GPU.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct GpuMachine {
    /// Machine type, or for attached GPUs a machine family prefix such as `n1-`.
    pub name: &'static str,
    /// GPUs per VM; for attached GPUs, the largest count one VM can take.
    pub gpus: u32,
}

/// Shorthand for the catalog table below.
const fn machine(name: &'static str, gpus: u32) -> GpuMachine {
    GpuMachine { name, gpus }
}

/// The catalog. Built-in machine types list every size GKE offers for the GPU; attached GPUs
/// list the machine family prefix and the per-VM maximum.
static GPUS: [Gpu; 8] = [
    Gpu {
        label: "nvidia-tesla-t4",
        display_name: "NVIDIA T4",
        // N1 only: T4 is not offered on N2 or any other general-purpose family.
        machines: &[machine("n1-", 4)],
        attached: true,
    },
    Gpu {
        label: "nvidia-l4",
        display_name: "NVIDIA L4",
        machines: &[
            machine("g2-standard-4", 1),
            machine("g2-standard-8", 1),
            machine("g2-standard-12", 1),
            machine("g2-standard-16", 1),
            machine("g2-standard-24", 2),
            machine("g2-standard-32", 1),
            machine("g2-standard-48", 4),
            machine("g2-standard-96", 8),
        ],
        attached: false,
    },
    Gpu {
        label: "nvidia-tesla-a100",
        display_name: "NVIDIA A100 40GB",
        machines: &[
            machine("a2-highgpu-1g", 1),
            machine("a2-highgpu-2g", 2),
            machine("a2-highgpu-4g", 4),
            machine("a2-highgpu-8g", 8),
            machine("a2-megagpu-16g", 16),
        ],
        attached: false,
    },
    Gpu {
        label: "nvidia-a100-80gb",
        display_name: "NVIDIA A100 80GB",
        machines: &[
            machine("a2-ultragpu-1g", 1),
            machine("a2-ultragpu-2g", 2),
            machine("a2-ultragpu-4g", 4),
            machine("a2-ultragpu-8g", 8),
        ],
        attached: false,
    },
    Gpu {
        label: "nvidia-h100-80gb",
        display_name: "NVIDIA H100 80GB",
        machines: &[
            machine("a3-highgpu-1g", 1),
            machine("a3-highgpu-2g", 2),
            machine("a3-highgpu-4g", 4),
            machine("a3-highgpu-8g", 8),
        ],
        attached: false,
    },
    Gpu {
        label: "nvidia-h100-mega-80gb",
        display_name: "NVIDIA H100 Mega 80GB",
        machines: &[machine("a3-megagpu-8g", 8)],
        attached: false,
    },
    Gpu {
        label: "nvidia-h200-141gb",
        display_name: "NVIDIA H200 141GB",
        machines: &[machine("a3-ultragpu-8g", 8)],
        attached: false,
    },
    Gpu {
        label: "nvidia-b200",
        display_name: "NVIDIA B200",
        machines: &[machine("a4-highgpu-8g", 8)],
        attached: false,
    },
];

/// `a, b or c`.
fn either<T: ToString>(items: impl IntoIterator<Item = T>) -> String {
    let texts: Vec<String> = items.into_iter().map(|item| item.to_string()).collect();
    match texts.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => texts.concat(),
    }
}

impl Gpu {
    /// Whether `count` GPUs of this model fit on `machine_type`; `Err` says what would.
    pub fn check_machine(&self, machine_type: &str, count: u32) -> Result<(), String> {
        if self.attached {
            self.check_attached(machine_type, count)
        } else {
            self.check_built_in(machine_type, count)
        }
    }

    /// Attached GPUs: the machine must belong to a listed family, and a VM takes a power of
    /// two up to the family's maximum (1, 2 or 4 T4s on N1).
    fn check_attached(&self, machine_type: &str, count: u32) -> Result<(), String> {
        let Some(family) = self.machines.iter().find(|family| {
            machine_type
                .strip_prefix(family.name)
                .is_some_and(|rest| !rest.is_empty())
        }) else {
            // General-purpose series share the standard/highmem/highcpu shapes, so naming
            // them shows what to write without a table of machine types.
            let series = either(
                self.machines
                    .iter()
                    .map(|family| family.name.trim_end_matches('-').to_uppercase()),
            );
            let shapes = self
                .machines
                .iter()
                .flat_map(|family| {
                    ["standard", "highmem", "highcpu"]
                        .map(|shape| format!("{}{shape}-*", family.name))
                })
                .collect::<Vec<_>>()
                .join(", ");
            return Err(format!(
                "{} attaches to {series} machine types only ({shapes}), not `{machine_type}`",
                self.display_name
            ));
        };
        let counts: Vec<u32> = std::iter::successors(Some(1_u32), |&n| n.checked_mul(2))
            .take_while(|&n| n <= family.gpus)
            .collect();
        if counts.contains(&count) {
            Ok(())
        } else {
            Err(format!(
                "a `{machine_type}` VM takes {} {} GPUs, not {count}",
                either(&counts),
                self.display_name
            ))
        }
    }

    /// Built-in GPUs: the machine type fixes the count.
    fn check_built_in(&self, machine_type: &str, count: u32) -> Result<(), String> {
        let fitting: Vec<&str> = self
            .machines
            .iter()
            .filter(|machine| machine.gpus == count)
            .map(|machine| machine.name)
            .collect();
        let hint = if fitting.is_empty() {
            format!(
                "{} comes {}",
                self.display_name,
                either(
                    self.machines
                        .iter()
                        .map(|machine| format!("{} per `{}`", machine.gpus, machine.name))
                )
            )
        } else {
            format!("for {count} use `{}`", fitting.join("`, `"))
        };
        match self.gpus_on(machine_type) {
            Some(gpus) if gpus == count => Ok(()),
            Some(gpus) => Err(format!(
                "`{machine_type}` has {gpus} {} GPUs, not {count}; {hint}",
                self.display_name
            )),
            None => Err(format!(
                "`{machine_type}` does not carry {} GPUs; {hint}",
                self.display_name
            )),
        }
    }

    /// GPUs per node on `machine_type` (built-in GPUs), or `None` for attached GPUs, whose
    /// count is set on the node pool.
    #[must_use]
    pub fn gpus_on(&self, machine_type: &str) -> Option<u32> {
        if self.attached {
            return None;
        }
        self.machines
            .iter()
            .find(|machine| machine.name == machine_type)
            .map(|machine| machine.gpus)
    }
}

/// Every GPU in the catalog.
#[must_use]
pub fn gpus() -> &'static [Gpu] {
    &GPUS
}

/// The GPU with this `cloud.google.com/gke-accelerator` value.
#[must_use]
pub fn gpu(label: &str) -> Option<&'static Gpu> {
    gpus().iter().find(|g| g.label == label)
}

/// The GPU built into an accelerator-optimized machine type, and how many.
#[must_use]
pub fn gpu_for_machine(machine_type: &str) -> Option<(&'static Gpu, u32)> {
    gpus()
        .iter()
        .find_map(|gpu| gpu.gpus_on(machine_type).map(|count| (gpu, count)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t4() -> &'static Gpu {
        gpu("nvidia-tesla-t4").unwrap()
    }

    #[test]
    fn t4_attaches_to_n1_with_one_two_or_four_gpus() {
        let t4 = t4();
        assert!(t4.attached);
        for count in [1, 2, 4] {
            assert_eq!(t4.check_machine("n1-standard-4", count), Ok(()), "{count}");
        }
        assert_eq!(t4.check_machine("n1-highmem-8", 2), Ok(()));

        let wrong_series = t4.check_machine("n2-standard-4", 1).unwrap_err();
        assert!(wrong_series.contains("N1"), "{wrong_series}");
        assert!(wrong_series.contains("n1-standard-*"), "{wrong_series}");
        assert!(wrong_series.contains("n2-standard-4"), "{wrong_series}");
        // A bare prefix is not a machine type.
        assert!(t4.check_machine("n1-", 1).is_err());

        let three = t4.check_machine("n1-standard-4", 3).unwrap_err();
        assert!(three.contains("1, 2 or 4"), "{three}");
        assert!(t4.check_machine("n1-standard-4", 0).is_err());
        assert!(t4.check_machine("n1-standard-4", 8).is_err());
    }

    #[test]
    fn attached_gpus_have_no_fixed_count_and_no_machine_lookup() {
        assert_eq!(t4().gpus_on("n1-standard-4"), None);
        assert_eq!(gpu_for_machine("n1-standard-4"), None);
        assert_eq!(gpu_for_machine("n1-"), None);
    }

    #[test]
    fn built_in_machines_resolve_to_their_gpu_and_count() {
        let (h100, count) = gpu_for_machine("a3-highgpu-8g").unwrap();
        assert_eq!((h100.label, count), ("nvidia-h100-80gb", 8));
        let cases = [
            ("g2-standard-4", "nvidia-l4", 1),
            ("g2-standard-24", "nvidia-l4", 2),
            ("g2-standard-48", "nvidia-l4", 4),
            ("g2-standard-96", "nvidia-l4", 8),
            ("a2-highgpu-2g", "nvidia-tesla-a100", 2),
            ("a2-megagpu-16g", "nvidia-tesla-a100", 16),
            ("a2-ultragpu-4g", "nvidia-a100-80gb", 4),
            ("a3-highgpu-1g", "nvidia-h100-80gb", 1),
            ("a3-megagpu-8g", "nvidia-h100-mega-80gb", 8),
            ("a3-ultragpu-8g", "nvidia-h200-141gb", 8),
            ("a4-highgpu-8g", "nvidia-b200", 8),
        ];
        for (machine_type, label, count) in cases {
            let (found, gpus) = gpu_for_machine(machine_type).unwrap();
            assert_eq!((found.label, gpus), (label, count), "{machine_type}");
            assert_eq!(found.check_machine(machine_type, count), Ok(()));
        }
        assert_eq!(gpu_for_machine("a3-highgpu-3g"), None);
        assert_eq!(gpu_for_machine("n2-standard-4"), None);
    }

    #[test]
    fn built_in_count_must_match_the_machine() {
        let h100 = gpu("nvidia-h100-80gb").unwrap();
        let wrong_count = h100.check_machine("a3-highgpu-8g", 4).unwrap_err();
        assert!(wrong_count.contains("a3-highgpu-4g"), "{wrong_count}");

        let wrong_machine = h100.check_machine("a2-highgpu-8g", 8).unwrap_err();
        assert!(wrong_machine.contains("a3-highgpu-8g"), "{wrong_machine}");

        // No machine has 3: the message lists what exists instead.
        let no_such_count = h100.check_machine("a3-highgpu-8g", 3).unwrap_err();
        for machine in h100.machines {
            assert!(no_such_count.contains(machine.name), "{no_such_count}");
        }

        let l4 = gpu("nvidia-l4").unwrap();
        let several = l4.check_machine("g2-standard-24", 1).unwrap_err();
        assert!(
            several.contains("g2-standard-4") && several.contains("g2-standard-32"),
            "{several}"
        );
    }

    #[test]
    fn catalog_is_consistent() {
        let mut labels: Vec<&str> = gpus().iter().map(|gpu| gpu.label).collect();
        labels.sort_unstable();
        labels.dedup();
        assert_eq!(labels.len(), gpus().len(), "duplicate labels");

        let mut machine_types: Vec<&str> = gpus()
            .iter()
            .flat_map(|gpu| gpu.machines)
            .map(|machine| machine.name)
            .collect();
        let total = machine_types.len();
        machine_types.sort_unstable();
        machine_types.dedup();
        assert_eq!(
            machine_types.len(),
            total,
            "a machine type carries one GPU model"
        );

        for gpu in gpus() {
            assert!(!gpu.machines.is_empty(), "{}", gpu.label);
            assert!(gpu.label.starts_with("nvidia-"), "{}", gpu.label);
            assert!(
                gpu.display_name.starts_with("NVIDIA "),
                "{}",
                gpu.display_name
            );
            for machine in gpu.machines {
                assert!(machine.gpus >= 1, "{}", machine.name);
                // Accelerator-optimized names end in the GPU count (`-8g`); G2 names count vCPUs.
                if let Some(count) = machine
                    .name
                    .rsplit('-')
                    .next()
                    .and_then(|last| last.strip_suffix('g'))
                {
                    assert_eq!(
                        count.parse::<u32>().ok(),
                        Some(machine.gpus),
                        "{}",
                        machine.name
                    );
                }
                if gpu.attached {
                    assert_eq!(gpu.gpus_on(machine.name), None);
                } else {
                    assert_eq!(gpu.check_machine(machine.name, machine.gpus), Ok(()));
                    assert_eq!(
                        gpu_for_machine(machine.name).map(|(found, _)| found.label),
                        Some(gpu.label)
                    );
                }
            }
        }
    }
}
