//! NVIDIA GPUs on GKE: node label values, machine types and GPUs per machine, and the GPUs
//! GKE no longer offers.
//!
//! Sources, named on each entry:
//! - [CE] Compute Engine, "GPU machine types": <https://cloud.google.com/compute/docs/gpus>
//!   (labels, machine types and GPU counts of the A4X, A4, A3, A2, G4 and G2 series, and the
//!   GPUs that attach to N1).
//! - [X1] XPK system catalog, `src/xpk/core/system_characteristics.py` at
//!   `4f782c322f25cfbd318eb44314fedd93f75c112c` (GKE accelerator labels and GPUs per VM).
//! - [T1] Cluster Toolkit `pkg/config/hardware.go` at `d26f63542cfc5356d42cc7ece7c2a0087f66e392`
//!   (machine types behind its GPU shorthands, such as `rtx-6000-8` = `g4-standard-384`).
//! - [EOL] Compute Engine, "NVIDIA K80 end of support":
//!   <https://cloud.google.com/compute/docs/eol/k80-eol> (K80 gone since May 1, 2024; Config
//!   Connector's own tests then failed with `Accelerator type "nvidia-tesla-k80" does not
//!   exist`, GoogleCloudPlatform/k8s-config-connector PR #1902).

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

/// A GPU GKE used to offer and no longer creates nodes with.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct RetiredGpu {
    /// The `cloud.google.com/gke-accelerator` value it had.
    pub label: &'static str,
    /// Display name, e.g. `NVIDIA K80`.
    pub display_name: &'static str,
    /// When Compute Engine stopped offering it.
    pub since: &'static str,
    /// Current GPUs that take its place, most like it first.
    pub successors: &'static [&'static str],
}

/// Shorthand for the catalog table below.
const fn machine(name: &'static str, gpus: u32) -> GpuMachine {
    GpuMachine { name, gpus }
}

/// The catalog. Built-in machine types list every size GKE offers for the GPU; attached GPUs
/// list the machine family prefix and the per-VM maximum.
static GPUS: [Gpu; 13] = [
    Gpu {
        label: "nvidia-tesla-t4",
        display_name: "NVIDIA T4",
        // [CE] N1 only, 1, 2 or 4 per VM: T4 is not offered on N2 or any other
        // general-purpose family.
        machines: &[machine("n1-", 4)],
        attached: true,
    },
    Gpu {
        label: "nvidia-tesla-v100",
        display_name: "NVIDIA V100",
        // [CE] N1 only, 1, 2, 4 or 8 per VM.
        machines: &[machine("n1-", 8)],
        attached: true,
    },
    Gpu {
        label: "nvidia-tesla-p100",
        display_name: "NVIDIA P100",
        // [CE] N1 only, 1, 2 or 4 per VM.
        machines: &[machine("n1-", 4)],
        attached: true,
    },
    Gpu {
        label: "nvidia-tesla-p4",
        display_name: "NVIDIA P4",
        // [CE] N1 only, 1, 2 or 4 per VM.
        machines: &[machine("n1-", 4)],
        attached: true,
    },
    Gpu {
        label: "nvidia-l4",
        display_name: "NVIDIA L4",
        // [CE] G2; names count vCPUs. [X1] l4-1/2/4/8 = g2-standard-12/24/48/96.
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
        label: "nvidia-rtx-pro-6000",
        display_name: "NVIDIA RTX PRO 6000",
        // [CE] G4; names count vCPUs. [T1] rtx-6000-1/2/4/8 = g4-standard-48/96/192/384.
        machines: &[
            machine("g4-standard-48", 1),
            machine("g4-standard-96", 2),
            machine("g4-standard-192", 4),
            machine("g4-standard-384", 8),
        ],
        attached: false,
    },
    Gpu {
        label: "nvidia-tesla-a100",
        display_name: "NVIDIA A100 40GB",
        // [CE] A2 Standard. [X1] a100-40gb-1/2/4/8; [T1] a2-megagpu-16g.
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
        // [CE] A2 Ultra. [T1] a100-80gb-1/2/4/8.
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
        // [CE] A3 High (1, 2, 4 or 8) and A3 Edge (8) both carry `nvidia-h100-80gb`.
        // [X1] h100-80gb-8; [T1] h100-80gb-1/2/4.
        machines: &[
            machine("a3-highgpu-1g", 1),
            machine("a3-highgpu-2g", 2),
            machine("a3-highgpu-4g", 4),
            machine("a3-highgpu-8g", 8),
            machine("a3-edgegpu-8g", 8),
        ],
        attached: false,
    },
    Gpu {
        label: "nvidia-h100-mega-80gb",
        display_name: "NVIDIA H100 Mega 80GB",
        // [CE] A3 Mega. [X1] h100-mega-80gb-8.
        machines: &[machine("a3-megagpu-8g", 8)],
        attached: false,
    },
    Gpu {
        label: "nvidia-h200-141gb",
        display_name: "NVIDIA H200 141GB",
        // [CE] A3 Ultra. [X1] h200-141gb-8.
        machines: &[machine("a3-ultragpu-8g", 8)],
        attached: false,
    },
    Gpu {
        label: "nvidia-b200",
        display_name: "NVIDIA B200",
        // [CE] A4. [X1] b200-8.
        machines: &[machine("a4-highgpu-8g", 8)],
        attached: false,
    },
    Gpu {
        label: "nvidia-gb200",
        display_name: "NVIDIA GB200",
        // [CE] A4X: four B200 GPUs of GB200 Superchips per VM. [X1] gb200-4 and
        // gb200-4-nolssd = a4x-highgpu-4g and a4x-highgpu-4g-nolssd, 4 GPUs each.
        machines: &[
            machine("a4x-highgpu-4g", 4),
            machine("a4x-highgpu-4g-nolssd", 4),
        ],
        attached: false,
    },
];

/// GPUs GKE no longer offers. [EOL] for K80. P100, P4 and V100 are still listed as GPUs that
/// attach to N1 on [CE], so they are in the catalog above, not here.
static RETIRED: [RetiredGpu; 1] = [RetiredGpu {
    label: "nvidia-tesla-k80",
    display_name: "NVIDIA K80",
    since: "May 1, 2024",
    successors: &["nvidia-tesla-t4", "nvidia-l4"],
}];

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

    /// Whether `machine_type` carries this GPU in some count: a machine of a family it attaches
    /// to (T4 on `n1-*`), or a machine type it is built into (L4 on `g2-standard-8`).
    #[must_use]
    pub fn carried_by(&self, machine_type: &str) -> bool {
        if self.attached {
            self.machines.iter().any(|family| {
                machine_type
                    .strip_prefix(family.name)
                    .is_some_and(|rest| !rest.is_empty())
            })
        } else {
            self.gpus_on(machine_type).is_some()
        }
    }

    /// The most GPUs one VM of any machine type can carry.
    #[must_use]
    pub fn most_per_vm(&self) -> u32 {
        self.machines
            .iter()
            .map(|machine| machine.gpus)
            .max()
            .unwrap_or(0)
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

/// The GPU a misspelt label most likely means: the one label that has every `-`-separated part
/// of `value` (`nvidia-t4` means `nvidia-tesla-t4`, not the closer-spelt `nvidia-l4`), else the
/// one that has its last part, the model (`nvidia-tesla-l4` means `nvidia-l4`), else the
/// closest by spelling.
#[must_use]
pub fn suggest_gpu(value: &str) -> Option<&'static str> {
    let labels = || gpus().iter().map(|gpu| gpu.label);
    let has = |label: &str, part: &str| label.split('-').any(|own| own == part);
    let only = |matches: Vec<&'static str>| match matches.as_slice() {
        [label] => Some(*label),
        _ => None,
    };
    let model = value.rsplit('-').next().unwrap_or(value);
    only(
        labels()
            .filter(|label| value.split('-').all(|part| has(label, part)))
            .collect(),
    )
    .or_else(|| only(labels().filter(|label| has(label, model)).collect()))
    .or_else(|| super::closest(value, labels()))
}

/// The retired GPU with this `cloud.google.com/gke-accelerator` value.
#[must_use]
pub fn retired_gpu(label: &str) -> Option<&'static RetiredGpu> {
    RETIRED.iter().find(|retired| retired.label == label)
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
    fn machine_families_carry_their_gpus_only() {
        let l4 = gpu("nvidia-l4").unwrap();
        let a100 = gpu("nvidia-tesla-a100").unwrap();
        assert!(t4().carried_by("n1-standard-4") && t4().carried_by("n1-highmem-16"));
        assert!(!t4().carried_by("n2-standard-4") && !t4().carried_by("g2-standard-4"));
        assert!(l4.carried_by("g2-standard-24") && !l4.carried_by("n1-standard-4"));
        assert!(a100.carried_by("a2-highgpu-1g") && !a100.carried_by("g2-standard-4"));
        assert!(
            !a100.carried_by("a2-ultragpu-1g"),
            "A2 Ultra carries the 80 GB A100"
        );
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
            ("a3-edgegpu-8g", "nvidia-h100-80gb", 8),
            ("a4x-highgpu-4g", "nvidia-gb200", 4),
            ("a4x-highgpu-4g-nolssd", "nvidia-gb200", 4),
            ("g4-standard-48", "nvidia-rtx-pro-6000", 1),
            ("g4-standard-96", "nvidia-rtx-pro-6000", 2),
            ("g4-standard-192", "nvidia-rtx-pro-6000", 4),
            ("g4-standard-384", "nvidia-rtx-pro-6000", 8),
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
    fn older_n1_gpus_attach_in_powers_of_two() {
        let v100 = gpu("nvidia-tesla-v100").unwrap();
        assert_eq!(v100.check_machine("n1-standard-8", 8), Ok(()));
        for label in ["nvidia-tesla-p100", "nvidia-tesla-p4"] {
            let older = gpu(label).unwrap();
            assert_eq!(older.check_machine("n1-standard-8", 4), Ok(()), "{label}");
            assert!(older.check_machine("n1-standard-8", 8).is_err(), "{label}");
        }
        assert_eq!(v100.most_per_vm(), 8);
        assert_eq!(gpu("nvidia-l4").unwrap().most_per_vm(), 8);
    }

    #[test]
    fn suggests_the_label_that_has_every_part_written() {
        assert_eq!(suggest_gpu("nvidia-t4"), Some("nvidia-tesla-t4"));
        assert_eq!(suggest_gpu("nvidia-tesla-l4"), Some("nvidia-l4"));
        assert_eq!(suggest_gpu("nvidia-h100"), Some("nvidia-h100-80gb"));
    }

    #[test]
    fn retired_gpus_are_not_offered_and_name_current_ones() {
        let k80 = retired_gpu("nvidia-tesla-k80").unwrap();
        assert!(gpu(k80.label).is_none());
        for successor in k80.successors {
            assert!(gpu(successor).is_some(), "{successor}");
        }
        for retired in &RETIRED {
            assert!(gpu(retired.label).is_none(), "{}", retired.label);
            assert!(!retired.successors.is_empty(), "{}", retired.label);
        }
        assert!(retired_gpu("nvidia-tesla-t4").is_none());
    }

    #[test]
    fn catalog_is_consistent() {
        let mut labels: Vec<&str> = gpus().iter().map(|gpu| gpu.label).collect();
        labels.sort_unstable();
        labels.dedup();
        assert_eq!(labels.len(), gpus().len(), "duplicate labels");

        // Attached GPUs share the N1 family; built-in machine types carry one model each.
        let mut machine_types: Vec<&str> = gpus()
            .iter()
            .filter(|gpu| !gpu.attached)
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
